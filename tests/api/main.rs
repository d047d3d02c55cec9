//! Black-box tests in one binary: each module starts the real `lps` binary on free ports with a
//! database of its own and talks to it as a client would (REST over HTTP, gRPC over TCP).

mod account;
mod api_tokens;
mod attacks;
mod audiences;
mod automation;
mod backup;
mod browser;
mod callbacks;
mod campaigns;
mod cli;
mod common;
mod dashboard;
mod durability;
mod engagement;
mod enrichment;
mod errors;
mod generate;
mod grpc;
mod hardening;
mod health;
mod idempotency;
mod identity;
mod import;
mod isolation;
mod leads;
mod logs;
mod mcp;
mod metrics;
mod oauth;
mod openapi;
mod page_cache;
mod pages;
mod rate_limits;
mod tracking;
mod workspaces;
