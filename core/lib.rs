//! The lps core: every business decision, all storage and the gRPC services that expose them.
//!
//! The REST edge (`edge/`) and internal callers reach this crate only through the tonic services
//! built by [`grpc::routes`]; the admin CLI uses [`admin`] directly against the database.

pub mod admin;
pub mod app;
pub mod auth;
pub mod backup;
pub mod credentials;
pub mod domain;
pub mod enricher;
pub mod error;
pub mod generator;
pub mod grpc;
pub mod jobs;
pub mod llm;
pub mod memory;
pub mod metrics;
pub mod outbound;
pub mod random;
pub mod ratelimit;
pub mod render;
pub mod services;
pub mod store;
pub mod time;
pub mod validate;

/// Generated protobuf messages, clients and servers of `proto/lps/v1`.
pub mod proto {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("lps.v1");

    /// Encoded descriptors of every lps service, for gRPC server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/lps_descriptor.bin"));
}

pub use app::{App, CoreConfig};
pub use error::{Error, Result};
