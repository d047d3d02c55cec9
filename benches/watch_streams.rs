//! Memory of many watchers: a running `lps serve` (release, SQLite, no job worker, so jobs stay
//! queued and their watchers stay open) with `BENCH_STREAMS` (10,000) `WatchJob` streams held
//! at once over 20 HTTP/2 connections; prints the resident memory idle, with the streams open,
//! and per stream.
//!
//! `cargo bench --bench watch_streams` (env: `BENCH_STREAMS`, default 10,000).

#[path = "../tests/api/common.rs"]
#[allow(dead_code)] // a benchmark uses part of the test harness
mod common;
#[path = "support/load.rs"]
mod load;

use std::time::Duration;

use common::{Server, TestDb, bootstrap, create_campaign, grpc_request, rss_kib, upsert};
use load::env_or;
use lps::proto::{WatchJobRequest, jobs_service_client::JobsServiceClient};
use serde_json::json;

#[tokio::main]
async fn main() {
    let streams = env_or("BENCH_STREAMS", 10_000) as usize;
    let db = TestDb::on(None);
    let account = bootstrap(&db, &[]);
    let server = Server::serve(
        &db,
        &["--job-workers", "0", "--rate-limit-per-minute", "100000000"],
    );
    let key = account.api_key.clone();
    let (campaign, _) = create_campaign(&server, &key, account.workspace_id, "Watched").await;
    let job = upsert(
        &server,
        &key,
        json!({"campaign_id": campaign, "leads": [{"values": {"email": "watched@example.com"}}]}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = rss_kib(server.pid());

    let connections = 20;
    let mut channels = Vec::new();
    for _ in 0..connections {
        channels.push(server.grpc_channel().await);
    }
    let mut open = Vec::with_capacity(streams);
    for n in 0..streams {
        let mut client = JobsServiceClient::new(channels[n % connections].clone());
        let stream = client
            .watch_job(grpc_request(
                &key,
                WatchJobRequest {
                    job_id: Some(job.clone()),
                },
            ))
            .await
            .expect("a watch starts")
            .into_inner();
        open.push(stream);
    }
    // Every stream has its first message (the job as it is).
    for stream in &mut open {
        stream.message().await.expect("a message").expect("the job");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let held = rss_kib(server.pid());
    println!(
        "{streams} WatchJob streams open: resident memory {:.1} MiB (idle {:.1} MiB): {:.1} KiB per stream",
        held as f64 / 1024.0,
        idle as f64 / 1024.0,
        held.saturating_sub(idle) as f64 / streams as f64
    );
    drop(open);
}
