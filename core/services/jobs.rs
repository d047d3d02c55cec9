//! `lps.v1.JobsService`: job status, results, and the live `WatchJob` stream.

use std::pin::Pin;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use super::leads::summary;
use crate::App;
use crate::auth::Principal;
use crate::domain::jobs::{self, JobStatus};
use crate::proto::job_status::State;
use crate::proto::{self, jobs_service_server};
use crate::validate::{Validated, required_text};

/// How often a watch re-reads the status when no event arrives (events from another SQLite
/// process, say, are only seen this way).
const WATCH_POLL: Duration = Duration::from_secs(1);

pub struct JobsService {
    app: App,
}

impl JobsService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

type JobStatusStream = Pin<Box<dyn Stream<Item = Result<proto::JobStatus, Status>> + Send>>;

#[tonic::async_trait]
impl jobs_service_server::JobsService for JobsService {
    async fn get_job_status(
        &self,
        request: Request<proto::GetJobStatusRequest>,
    ) -> Result<Response<proto::JobStatus>, Status> {
        let principal = Principal::of(&request)?;
        let (job_id,) = (required_text(
            "job_id",
            request.get_ref().job_id.clone(),
            64,
        ),)
            .validated()?;
        let status = jobs::status(&self.app.db, principal, &job_id).await?;
        Ok(Response::new(job_status(status)))
    }

    async fn get_job_leads(
        &self,
        request: Request<proto::GetJobLeadsRequest>,
    ) -> Result<Response<proto::GetJobLeadsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (job_id,) = (required_text(
            "job_id",
            request.get_ref().job_id.clone(),
            64,
        ),)
            .validated()?;
        let leads = jobs::leads(&self.app, principal, &job_id).await?;
        Ok(Response::new(proto::GetJobLeadsResponse {
            leads: leads.into_iter().map(summary).collect(),
        }))
    }

    type WatchJobStream = JobStatusStream;

    async fn watch_job(
        &self,
        request: Request<proto::WatchJobRequest>,
    ) -> Result<Response<Self::WatchJobStream>, Status> {
        let principal = Principal::of(&request)?.clone();
        let (job_id,) = (required_text(
            "job_id",
            request.get_ref().job_id.clone(),
            64,
        ),)
            .validated()?;
        let first = jobs::status(&self.app.db, &principal, &job_id).await?;
        let (sender, receiver) = mpsc::channel(16);
        let app = self.app.clone();
        let mut events = app.events.subscribe();
        tokio::spawn(async move {
            let mut last: Option<JobStatus> = None;
            let mut current = Ok(first);
            loop {
                let status = match current {
                    Ok(status) => status,
                    Err(err) => {
                        let _ = sender.send(Err(Status::from(err))).await;
                        return;
                    }
                };
                let terminal = status.is_terminal();
                if last.as_ref() != Some(&status) {
                    if sender.send(Ok(job_status(status.clone()))).await.is_err() {
                        return;
                    }
                    last = Some(status);
                }
                if terminal {
                    return;
                }
                // Until this job changes (or a poll is due, or the client goes away).
                let deadline = tokio::time::sleep(WATCH_POLL);
                tokio::pin!(deadline);
                loop {
                    tokio::select! {
                        event = events.recv() => match event {
                            Ok(id) if id == job_id => break,
                            Ok(_) => continue,
                            Err(_) => break,
                        },
                        _ = &mut deadline => break,
                        _ = sender.closed() => return,
                    }
                }
                current = jobs::status(&app.db, &principal, &job_id).await;
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(receiver))))
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
        errors,
        error,
    } = status;
    proto::JobStatus {
        job_id,
        status: job_state(&status) as i32,
        processed_rows,
        total_rows,
        failed_rows,
        errors: errors
            .into_iter()
            .map(|(index, message)| proto::RowError { index, message })
            .collect(),
        error,
    }
}
