//! `lps.v1.JobsService`: job status, results, and the live `WatchJob` stream.

use tonic::{Request, Response, Status};

use super::leads::summary;
use super::{WatchStream, watch_until_ended};
use crate::App;
use crate::auth::Principal;
use crate::domain::jobs::{self, JobStatus};
use crate::proto::job_status::State;
use crate::proto::{self, jobs_service_server};
use crate::validate::{Validated, required_text};

pub struct JobsService {
    app: App,
}

/// The job a request names: its `job_id`, checked with the request's other violations.
fn job_id<T>(request: &Request<T>, job_id: &Option<String>) -> Result<String, Status> {
    let (job_id,) = (required_text("job_id", job_id.clone(), 64),).validated(request)?;
    Ok(job_id)
}

impl JobsService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl jobs_service_server::JobsService for JobsService {
    async fn get_job_status(
        &self,
        request: Request<proto::GetJobStatusRequest>,
    ) -> Result<Response<proto::JobStatus>, Status> {
        let principal = Principal::of(&request)?;
        let job_id = job_id(&request, &request.get_ref().job_id)?;
        let status = jobs::status(&self.app.db, principal, &job_id).await?;
        Ok(Response::new(job_status(status)))
    }

    async fn get_job_leads(
        &self,
        request: Request<proto::GetJobLeadsRequest>,
    ) -> Result<Response<proto::GetJobLeadsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let job_id = job_id(&request, &request.get_ref().job_id)?;
        let leads = jobs::leads(&self.app, principal, &job_id).await?;
        Ok(Response::new(proto::GetJobLeadsResponse {
            leads: leads.into_iter().map(summary).collect(),
        }))
    }

    type WatchJobStream = WatchStream<proto::JobStatus>;

    async fn watch_job(
        &self,
        request: Request<proto::WatchJobRequest>,
    ) -> Result<Response<Self::WatchJobStream>, Status> {
        let principal = Principal::of(&request)?.clone();
        let job_id = job_id(&request, &request.get_ref().job_id)?;
        let app = self.app.clone();
        let events = app.events.subscribe();
        let first = job_status(jobs::status(&app.db, &principal, &job_id).await?);
        let id = job_id.clone();
        let read = move || {
            let (app, principal, job_id) = (app.clone(), principal.clone(), id.clone());
            async move {
                let status = jobs::status(&app.db, &principal, &job_id).await?;
                Ok(job_status(status))
            }
        };
        Ok(Response::new(watch_until_ended(
            events,
            job_id,
            first,
            read,
            |status| matches!(status.status(), State::Completed | State::Failed),
        )))
    }
}

/// The stored status word as the proto enum.
fn job_state(status: &str) -> State {
    match status {
        "pending" => State::Pending,
        "processing" => State::Processing,
        "step_social" => State::StepSocial,
        "step_import" => State::StepImport,
        "completed" => State::Completed,
        "failed" | "error" => State::Failed,
        _ => State::Unspecified,
    }
}

fn job_status(status: JobStatus) -> proto::JobStatus {
    let JobStatus {
        job_id,
        status,
        processed_rows,
        total_rows,
        failed_rows,
        created_rows,
        errors,
        error,
        enrichment_errors,
    } = status;
    proto::JobStatus {
        job_id,
        status: job_state(&status) as i32,
        processed_rows,
        total_rows,
        failed_rows,
        created_rows,
        errors: errors
            .into_iter()
            .map(|(index, message)| proto::RowError { index, message })
            .collect(),
        error,
        enrichment_errors: enrichment_errors
            .into_iter()
            .map(|(lead_id, message)| proto::EnrichmentError { lead_id, message })
            .collect(),
    }
}
