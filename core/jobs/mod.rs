//! Durable background work: lead jobs (`worker`, storing rows through
//! [`crate::domain::ingest`]), their callbacks (`callbacks`), and the status events that feed
//! `WatchJob` (`events`).

pub mod assets;
pub mod callbacks;
pub mod design_runs;
pub mod enrichment;
pub mod events;
pub mod worker;
