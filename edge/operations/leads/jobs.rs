//! A job's progress (`/leads/get-status`, and as a stream of events) and the leads it stored
//! (`/leads/get-leads`, and `/automation/get-leads-from-job` through [`job_leads`]).

use lps::proto;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::summary::LeadSummary;
use super::{RowErrorBody, row_error};
use crate::operations::caller::{Caller, Reply};
use crate::operations::error::{ApiError, ErrorBody, JobNotFoundBody, NoLeadsBody};
use crate::operations::input::{Check, Input, Lenient};

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobQuery {
    /// The `job_id` an upsert or import returned.
    #[param(value_type = String, max_length = 64)]
    pub job_id: Lenient<String>,
}

#[derive(Serialize, ToSchema)]
pub struct JobStatusBody {
    /// `pending`, `processing`, `step_social` (enrichment: leads being fetched and analysed),
    /// `step_import` (enrichment: the last results being written), `completed` or `failed`.
    pub status: String,
    /// Rows stored so far (an enrichment job: leads handled).
    pub processed_rows: i64,
    pub total_rows: i64,
    /// Rows that could not be stored (an enrichment job: leads none of whose types worked).
    pub failed_rows: i64,
    /// Extension: stored rows that made a new lead; the other stored rows updated one (a lead
    /// already in the workspace, or one an earlier row of the same import made).
    pub created_rows: i64,
    /// Why each failed row failed (the first 1,000).
    pub errors: Vec<RowErrorBody>,
    /// Why the job failed, when it did.
    pub error: Option<String>,
    /// Leads whose enrichment failed, wholly or for some types, with why (the first 1,000);
    /// what a failed type cost is given back.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub enrichment_errors: Vec<EnrichmentErrorBody>,
}

#[derive(Serialize, ToSchema)]
pub struct EnrichmentErrorBody {
    pub lead_id: i64,
    pub message: String,
}

#[derive(Serialize, ToSchema)]
pub struct JobLeadBody {
    pub lead_id: i64,
    pub service_page_url: Option<String>,
    pub name: String,
    pub email: Option<String>,
    pub company_name: Option<String>,
}

impl From<LeadSummary> for JobLeadBody {
    fn from(lead: LeadSummary) -> Self {
        let LeadSummary {
            lead_id,
            service_page_url,
            name,
            email,
            company_name,
            ..
        } = lead;
        Self {
            lead_id,
            service_page_url,
            name,
            email,
            company_name,
        }
    }
}

/// A job's state as the documented word: `pending`, `processing`, `completed`, `failed`, ...
pub fn job_state(state: i32) -> String {
    proto::job_status::State::try_from(state)
        .ok()
        .filter(|state| *state != proto::job_status::State::Unspecified)
        .map_or("pending", |state| state.as_str_name())
        .to_ascii_lowercase()
}

/// A job's progress. An unknown job answers 404 `{"status": "not_found"}`.
#[utoipa::path(get, path = "/leads/get-status", tag = "Leads", params(JobQuery),
    responses((status = 200, body = JobStatusBody),
        (status = 404, body = JobNotFoundBody, description = "Unknown job: `{\"status\": \"not_found\"}`"),
        (status = 422, body = ErrorBody)))]
pub(crate) async fn get_status(
    caller: Caller,
    Input(query, mut check): Input<JobQuery>,
) -> Result<Reply<JobStatusBody>, ApiError> {
    let request = proto::GetJobStatusRequest {
        job_id: check.field("job_id", query.job_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.jobs().get_job_status(request).await },
            job_status_body,
        )
        .await
        .map_err(|error| error.job_not_found_as("not_found"))
}

/// Beyond the specification, for browsers and tools that cannot speak gRPC: the job's
/// progress as Server-Sent Events (`text/event-stream`), one event whenever it moves, each
/// event's data the object `GET /leads/get-status` answers; the stream ends after `completed`
/// or `failed`. Errors before the stream starts are those of `GET /leads/get-status`.
#[utoipa::path(get, path = "/leads/get-status/stream", tag = "Leads", params(JobQuery),
    responses((status = 200, content_type = "text/event-stream", body = JobStatusBody,
            description = "Events whose `data` is the job status object, until the job ends"),
        (status = 404, body = JobNotFoundBody, description = "Unknown job: `{\"status\": \"not_found\"}`"),
        (status = 422, body = ErrorBody)))]
pub(crate) async fn get_status_stream(
    caller: Caller,
    Input(query, mut check): Input<JobQuery>,
) -> Result<axum::response::Response, ApiError> {
    let request = proto::WatchJobRequest {
        job_id: check.field("job_id", query.job_id),
    };
    caller
        .stream(
            check,
            request,
            |core, request| async move { core.jobs().watch_job(request).await },
            job_status_body,
        )
        .await
        .map_err(|error| error.job_not_found_as("not_found"))
}

fn job_status_body(r: proto::JobStatus) -> JobStatusBody {
    JobStatusBody {
        status: job_state(r.status),
        processed_rows: r.processed_rows,
        total_rows: r.total_rows,
        failed_rows: r.failed_rows,
        created_rows: r.created_rows,
        errors: r.errors.into_iter().map(row_error).collect(),
        error: r.error,
        enrichment_errors: r
            .enrichment_errors
            .into_iter()
            .map(|e| EnrichmentErrorBody {
                lead_id: e.lead_id,
                message: e.message,
            })
            .collect(),
    }
}

/// Reads the leads a job produced (`GET /leads/get-leads`, `GET /automation/get-leads-from-job`).
pub async fn job_leads(
    caller: Caller,
    query: JobQuery,
    mut check: Check,
) -> Result<Reply<Vec<JobLeadBody>>, ApiError> {
    let request = proto::GetJobLeadsRequest {
        job_id: check.field("job_id", query.job_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.jobs().get_job_leads(request).await },
            |r| {
                r.leads
                    .into_iter()
                    .map(|lead| JobLeadBody::from(LeadSummary::from(lead)))
                    .collect()
            },
        )
        .await
        .map_err(|error| error.job_not_found_as("NOT_FOUND"))
}

/// The leads a job has stored. Unknown job: 404 `{"status": "NOT_FOUND"}`; none yet: 503
/// `{"status": "NO_LEADS", "message"}`, retry later.
#[utoipa::path(get, path = "/leads/get-leads", tag = "Leads", params(JobQuery),
    responses((status = 200, body = Vec<JobLeadBody>),
        (status = 404, body = JobNotFoundBody, description = "Unknown job: `{\"status\": \"NOT_FOUND\"}`"),
        (status = 422, body = ErrorBody),
        (status = 503, body = NoLeadsBody, description = "No leads yet: `{\"status\": \"NO_LEADS\", \"message\": ...}`")))]
pub(crate) async fn get_leads(
    caller: Caller,
    Input(query, check): Input<JobQuery>,
) -> Result<Reply<Vec<JobLeadBody>>, ApiError> {
    job_leads(caller, query, check).await
}
