//! `/leads/...`, one file per concern: `upserts.rs` (upserts and imports, queued as durable
//! jobs), `jobs.rs` (a job's status and the leads it stored), `lead.rs` (one lead read whole),
//! `activity.rs` (what visitors did on a lead's pages, and the leads people engaged with),
//! `privacy.rs` (a lead's export and erasure), and `summary.rs` (core's lead summary shaped once
//! for every body that shows one). Lists of leads: `lead_lists.rs`.

pub(super) mod activity;
pub(super) mod jobs;
pub(super) mod lead;
pub(super) mod privacy;
mod summary;
pub(super) mod upserts;

use lps::proto;
use serde::Serialize;
use utoipa::ToSchema;

pub use summary::LeadSummary;

#[derive(Serialize, ToSchema)]
pub struct JobIdBody {
    pub job_id: String,
}

#[derive(Serialize, ToSchema)]
pub struct RowErrorBody {
    /// Position of the lead in the request, from 0.
    pub index: i64,
    pub message: String,
}

fn row_error(error: proto::RowError) -> RowErrorBody {
    RowErrorBody {
        index: error.index,
        message: error.message,
    }
}
