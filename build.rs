//! Compiles `proto/lps/v1/*.proto` with the pure-Rust `protox` compiler (no system `protoc`),
//! writes the encoded descriptor set for gRPC reflection, and generates tonic clients and servers,
//! and the direct in-process calls (`core/direct.rs`) with the edge's clients over them
//! (`edge/core_client/mod.rs`).

use std::{env, fs, path::PathBuf};

use heck::{ToSnakeCase, ToUpperCamelCase};
use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from("proto/lps/v1");
    let mut files: Vec<PathBuf> = fs::read_dir(&proto_dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|path| path.extension().is_some_and(|ext| ext == "proto"));
    files.sort();

    let descriptors = protox::Compiler::new(["proto"])?
        .include_imports(true)
        .include_source_info(true)
        .open_files(&files)?
        .file_descriptor_set();

    // `file_descriptor_set_path` is ignored when compiling from descriptors, so reflection's
    // copy is written here by hand.
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(
        out_dir.join("lps_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;

    write_direct_calls(&descriptors, &out_dir)?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    println!("cargo:rerun-if-changed=proto");
    // `sqlx::migrate!` embeds the migrations when `core/store/mod.rs` compiles, and a proc
    // macro cannot ask cargo to watch a folder: a migration added without a Rust change would
    // leave a binary (and its tests) migrating to the last build's schema. sqlx's own advice.
    println!("cargo:rerun-if-changed=migrations");
    Ok(())
}

/// One unary or server-streaming RPC, as the generated Rust names it.
struct Rpc {
    /// `/lps.v1.IdentityService/HelloWorld`
    path: String,
    /// `hello_world`
    method: String,
    input: String,
    output: String,
    streaming: bool,
}

/// Writes, for every lps service, `DirectCore`'s method per unary RPC (core's side,
/// `lps.v1.direct_core.rs`) and the edge's client of the service (`lps.v1.core_client.rs`):
/// each unary call direct when core runs in the process, else over gRPC; streaming calls always
/// over gRPC.
fn write_direct_calls(
    descriptors: &prost_types::FileDescriptorSet,
    out_dir: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    use std::fmt::Write;
    let mut core = String::from("impl DirectCore {\n");
    let mut edge = String::new();
    for file in &descriptors.file {
        if file.package() != "lps.v1" {
            continue;
        }
        for service in &file.service {
            let name = service.name();
            let short = name.strip_suffix("Service").unwrap_or(name);
            let field = short.to_snake_case();
            let client = format!("{short}Client");
            let tonic_module = format!("{}_client", name.to_snake_case());
            let server_module = format!("{}_server", name.to_snake_case());
            let rpcs: Vec<Rpc> = service
                .method
                .iter()
                .map(|method| Rpc {
                    path: format!("/lps.v1.{name}/{}", method.name()),
                    method: method.name().to_snake_case(),
                    input: message_type(method.input_type()),
                    output: message_type(method.output_type()),
                    streaming: method.server_streaming() || method.client_streaming(),
                })
                .collect();
            writeln!(
                edge,
                "/// Core's `{name}`: unary calls direct to core when it runs in this process, \
                 else (and streaming calls always) over gRPC.\n\
                 #[derive(Clone)]\npub struct {client}(Core);\n\n#[allow(dead_code)] // not every RPC has a face in the edge yet\nimpl {client} {{"
            )?;
            for rpc in &rpcs {
                let Rpc {
                    path,
                    method,
                    input,
                    output,
                    streaming,
                } = rpc;
                let remote = format!(
                    "limited!(lps::proto::{tonic_module}::{name}Client::new(self.0.0.transport.clone())).{method}(request).await"
                );
                if *streaming {
                    writeln!(
                        edge,
                        "    pub async fn {method}(&mut self, request: impl tonic::IntoRequest<lps::proto::{input}>) \
                         -> Result<tonic::Response<tonic::Streaming<lps::proto::{output}>>, tonic::Status> {{\n        {remote}\n    }}"
                    )?;
                    continue;
                }
                writeln!(
                    core,
                    "    pub async fn {field}_{method}(&self, request: tonic::Request<crate::proto::{input}>) \
                     -> Result<tonic::Response<crate::proto::{output}>, tonic::Status> {{\n        \
                     self.call({path:?}, request, |services, request| async move {{\n            \
                     crate::proto::{server_module}::{name}::{method}(&services.{field}, request).await\n        \
                     }}).await\n    }}"
                )?;
                let direct = format!(
                    "self.0.caught_up({path:?}, direct.{field}_{method}(request.into_request()).await).await"
                );
                writeln!(
                    edge,
                    "    pub async fn {method}(&mut self, request: impl tonic::IntoRequest<lps::proto::{input}>) \
                     -> Result<tonic::Response<lps::proto::{output}>, tonic::Status> {{\n        \
                     match &self.0.0.direct {{\n            Some(direct) => {direct},\n            \
                     None => {remote},\n        }}\n    }}"
                )?;
            }
            edge.push_str("}\n\n");
        }
    }
    core.push_str("}\n");
    fs::write(out_dir.join("lps.v1.direct_core.rs"), core)?;
    fs::write(out_dir.join("lps.v1.core_client.rs"), edge)?;
    Ok(())
}

/// The Rust type prost generates for a message of this package (`.lps.v1.HelloWorldRequest`).
fn message_type(proto: &str) -> String {
    let name = proto
        .strip_prefix(".lps.v1.")
        .unwrap_or_else(|| panic!("lps RPCs take and return lps.v1 messages, not {proto}"));
    name.to_upper_camel_case()
}
