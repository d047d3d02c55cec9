//! Durable jobs: what a job was asked to do ([`JobOptions`]), and reading them back (status
//! with row errors, the leads stored so far).

use serde::{Deserialize, Serialize};

use crate::auth::Principal;
use crate::domain::lead::LeadView;
use crate::store::Db;
use crate::store::jobs::{self, JobRow};
use crate::{App, Error, Result};

/// At most this many row errors are listed with a status (`failed_rows` counts them all).
pub const MAX_LISTED_ERRORS: usize = 1_000;

/// A job's progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobStatus {
    pub job_id: String,
    pub status: String,
    pub processed_rows: i64,
    pub total_rows: i64,
    pub failed_rows: i64,
    /// Stored rows that made a new lead.
    pub created_rows: i64,
    pub errors: Vec<(i64, String)>,
    pub error: Option<String>,
    /// Leads whose enrichment failed (or partly failed), `(lead_id, why)`.
    pub enrichment_errors: Vec<(i64, String)>,
}

/// The job if it is in a workspace the principal reaches.
pub(crate) async fn reachable(db: &Db, principal: &Principal, job_id: &str) -> Result<JobRow> {
    let job = jobs::get(db.pool(), job_id)
        .await?
        .ok_or(Error::JobNotFound)?;
    principal
        .reach(db, job.workspace_id)
        .await
        .map_err(|err| err.unreachable_as(Error::JobNotFound))?;
    Ok(job)
}

pub async fn status(db: &Db, principal: &Principal, job_id: &str) -> Result<JobStatus> {
    let job = reachable(db, principal, job_id).await?;
    let errors = if job.failed_rows > 0 {
        jobs::row_errors(db.pool(), &job.id, MAX_LISTED_ERRORS).await?
    } else {
        Vec::new()
    };
    let enrichment_errors = if job.kind == "enrich" || job.status != "pending" {
        crate::store::enrichments::errors_of_job(db.pool(), &job.id, MAX_LISTED_ERRORS).await?
    } else {
        Vec::new()
    };
    Ok(JobStatus {
        job_id: job.id,
        status: job.status,
        processed_rows: job.processed_rows,
        total_rows: job.total_rows,
        failed_rows: job.failed_rows,
        created_rows: job.created_rows,
        errors,
        error: job.error,
        enrichment_errors,
    })
}

/// The leads the job stored so far; [`Error::NoLeads`] while it is still running and has none.
pub async fn leads(app: &App, principal: &Principal, job_id: &str) -> Result<Vec<LeadView>> {
    let job = reachable(&app.db, principal, job_id).await?;
    let mut conn = app.db.pool().acquire().await?;
    let rows = jobs::stored_leads(&mut conn, &job).await?;
    let finished = matches!(job.status.as_str(), "completed" | "failed");
    if rows.is_empty() && !finished {
        return Err(Error::NoLeads);
    }
    let addresses = crate::domain::domains::page_addresses(app).await?;
    Ok(rows
        .into_iter()
        .map(|row| LeadView::new(&addresses, row))
        .collect())
}

/// What a job was asked to do besides storing leads, kept as requested on the job
/// (`jobs.options`); the enrichment flags are acted on by
/// [`crate::domain::enrichment::kinds_of_flags`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOptions {
    #[serde(default)]
    pub from: Option<String>,
    /// Every campaign whose pages the leads get (the job's `campaign_id` is the first).
    #[serde(default)]
    pub campaign_ids: Vec<i64>,
    #[serde(default)]
    pub send_email: bool,
    #[serde(default)]
    pub is_generate_ai_analysis: bool,
    #[serde(default)]
    pub is_generate_person_analysis: bool,
    #[serde(default)]
    pub is_scrape_person_posts: bool,
    #[serde(default)]
    pub is_scrape_company_posts: bool,
    #[serde(default)]
    pub enrich_data: bool,
    #[serde(default)]
    pub generate_ai_variables: bool,
    #[serde(default)]
    pub trigger_audience_summary: bool,
    /// A CSV file's import (`domain::csv_imports`): its header row and mapping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv: Option<CsvJob>,
}

/// The header row of a CSV file being imported and where each column goes (`Header=target`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CsvJob {
    pub headers: Vec<String>,
    pub choices: Vec<String>,
}

impl JobOptions {
    /// Whether any enrichment or AI work was requested (these always run queued).
    pub fn wants_enrichment(&self) -> bool {
        self.is_generate_ai_analysis
            || self.is_generate_person_analysis
            || self.is_scrape_person_posts
            || self.is_scrape_company_posts
            || self.enrich_data
            || self.generate_ai_variables
            || self.trigger_audience_summary
    }
}
