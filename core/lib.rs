//! The lps core: every business decision, all storage and the gRPC services that expose them.
//!
//! What is public is all a caller may use, and the compiler holds every caller to it (the
//! edge in `edge/` included): [`proto`] (the messages, clients and servers), [`grpc`] (core as
//! a tower service or a gRPC server, and its metadata names), [`direct`] (core called in the
//! edge's own process without encoding), [`app`] (starting a core),
//! [`wire`] (what both sides agree on beyond the proto), [`keys`] (what one process signs
//! and another checks), [`admin`] (operator commands against
//! the database, and backups), [`csv_import`] (CSV files of leads read and their columns
//! mapped: the one recognition every import uses), [`metrics`] (the process's Prometheus registry, which the
//! edge records its HTTP figures in) and [`memory`] (the process's allocator, which the edge
//! asks to give back what starting up freed). Everything else (domain, store, render,
//! services, jobs) is core's own.

pub mod admin;
pub mod app;
pub(crate) mod auth;
pub(crate) mod backup;
pub(crate) mod credentials;
pub mod csv_import;
pub mod direct;
pub(crate) mod dns;
pub(crate) mod domain;
pub(crate) mod enricher;
pub(crate) mod error;
pub(crate) mod generator;
pub mod grpc;
pub(crate) mod jobs;
pub mod keys;
pub(crate) mod llm;
pub(crate) mod local_days;
pub(crate) mod mailer;
pub mod memory;
pub mod metrics;
pub(crate) mod outbound;
pub(crate) mod principal;
pub mod priority;
pub(crate) mod random;
pub(crate) mod ratelimit;
pub(crate) mod render;
pub(crate) mod services;
pub(crate) mod store;
pub mod telemetry;
pub(crate) mod time;
pub(crate) mod validate;
pub mod wire;

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

/// Store internals for the benchmarks that compare the API with the same statements run
/// directly (`cargo bench --features bench-internals`); never part of a normal build.
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_internals {
    pub use crate::store::leads::LeadValues;
    pub use crate::store::{Db, campaigns, leads};
    pub use crate::time::now;
}
