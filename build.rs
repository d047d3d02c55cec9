//! Compiles `proto/lps/v1/*.proto` with the pure-Rust `protox` compiler (no system `protoc`),
//! writes the encoded descriptor set for gRPC reflection, and generates tonic clients and servers.

use std::{env, fs, path::PathBuf};

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

    tonic_prost_build::configure().compile_fds(descriptors)?;
    println!("cargo:rerun-if-changed=proto");
    Ok(())
}
