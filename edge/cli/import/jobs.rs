//! Following the jobs `lps import` made, four at a time, each until it ends (gRPC `WatchJob`,
//! else its Server-Sent Events, else polling), and what each made of its rows.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::bail;
use indicatif::ProgressBar;
use serde_json::Value;

use super::BATCHES_IN_FLIGHT;
use super::api::{Api, ended};

/// What a job made of its batch.
pub(super) struct Outcome {
    pub(super) job: String,
    /// The failed rows: (index in the batch, why).
    pub(super) failed: Vec<(usize, String)>,
    /// Its stored rows that made a new lead (the others updated one).
    pub(super) created: u64,
}

/// Follows the jobs as they are made, four at a time, each until it ends (moving the bar by
/// the rows stored), then takes what it made of its rows from its last status; answers in the order they were made.
pub(super) async fn follow_all(
    api: Api,
    grpc: Option<String>,
    mut made: tokio::sync::mpsc::UnboundedReceiver<String>,
    progress: ProgressBar,
) -> anyhow::Result<Vec<Outcome>> {
    let stored = Arc::new(AtomicU64::new(0));
    let mut outcomes = Vec::new();
    let mut following: VecDeque<tokio::task::JoinHandle<anyhow::Result<Outcome>>> = VecDeque::new();
    while let Some(job) = made.recv().await {
        let (api, grpc, stored, progress) =
            (api.clone(), grpc.clone(), stored.clone(), progress.clone());
        following.push_back(tokio::spawn(async move {
            // Each job adds what it stored since it last said.
            let mut counted = 0u64;
            let advance = move |processed: u64| {
                if processed > counted {
                    let added = processed - counted;
                    let total = stored.fetch_add(added, Ordering::Relaxed) + added;
                    progress.set_position(total);
                    counted = processed;
                }
            };
            let last = follow(&api, grpc.as_deref(), &job, advance).await?;
            outcome(&api, job, last).await
        }));
        if following.len() == BATCHES_IN_FLIGHT
            && let Some(oldest) = following.pop_front()
        {
            outcomes.push(oldest.await??);
        }
    }
    for followed in following {
        outcomes.push(followed.await??);
    }
    Ok(outcomes)
}

/// What an ended job made of its rows (its last status, when it was read following it).
async fn outcome(api: &Api, job: String, last: Option<Value>) -> anyhow::Result<Outcome> {
    let status: Value = match last {
        Some(status) => status,
        None => api.get(&format!("/leads/get-status?job_id={job}")).await?,
    };
    let mut failed = Vec::new();
    for error in status["errors"].as_array().into_iter().flatten() {
        if let (Some(index), Some(message)) = (error["index"].as_u64(), error["message"].as_str()) {
            failed.push((index as usize, message.to_owned()));
        }
    }
    let failed_rows = status["failed_rows"].as_u64().unwrap_or(0);
    if failed_rows > failed.len() as u64 {
        bail!("job {job}: more failed rows than the status lists ({failed_rows})");
    }
    let created = status["created_rows"].as_u64().unwrap_or(0);
    Ok(Outcome {
        job,
        failed,
        created,
    })
}

/// Follows one job until it ends: its gRPC stream (`--grpc`), else its Server-Sent Events
/// (`GET /leads/get-status/stream`, one request however long it runs), else polling
/// `GET /leads/get-status`. Answers its last status as `GET /leads/get-status` does, when it
/// was read that way.
async fn follow(
    api: &Api,
    grpc: Option<&str>,
    job: &str,
    mut advance: impl FnMut(u64),
) -> anyhow::Result<Option<Value>> {
    if let Some(url) = grpc
        && let Ok(mut stream) = watch(url, &api.key, job).await
    {
        while let Ok(Some(status)) = stream.message().await {
            advance(status.processed_rows.max(0) as u64);
        }
        return Ok(None);
    }
    if let Ok(Some(last)) = api.events(job, &mut advance).await {
        return Ok(Some(last));
    }
    loop {
        let status: Value = api.get(&format!("/leads/get-status?job_id={job}")).await?;
        advance(status["processed_rows"].as_u64().unwrap_or(0));
        if ended(&status) {
            return Ok(Some(status));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `JobsService.WatchJob` for the job, with the key.
async fn watch(
    url: &str,
    key: &str,
    job: &str,
) -> anyhow::Result<tonic::Streaming<lps::proto::JobStatus>> {
    let channel = tonic::transport::Endpoint::from_shared(url.to_owned())?
        .connect_timeout(Duration::from_secs(3))
        .connect()
        .await?;
    let mut request = tonic::Request::new(lps::proto::WatchJobRequest {
        job_id: Some(job.to_owned()),
    });
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {key}").parse()?);
    let mut client = lps::proto::jobs_service_client::JobsServiceClient::new(channel);
    Ok(client.watch_job(request).await?.into_inner())
}
