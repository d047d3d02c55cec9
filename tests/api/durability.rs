//! Durable jobs: a killed process resumes its jobs without losing or duplicating a lead;
//! several core processes on one PostgreSQL share the work; `WatchJob` streams progress.

use std::time::{Duration, Instant};

use crate::common::*;
use lps::proto::WatchJobRequest;
use lps::proto::job_status::State;
use lps::proto::jobs_service_client::JobsServiceClient;
use serde_json::json;

#[tokio::test]
async fn a_server_killed_mid_import_resumes_and_stores_every_lead_once() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let key = &account.api_key;
    let mut server = Server::serve(&db, &[]);
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Big").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": leads("kill", 20_000)}),
    )
    .await;

    // Wait until the worker is part-way through, then kill the process outright.
    let started = Instant::now();
    loop {
        let status = server
            .poll(key, &format!("/leads/get-status?job_id={job}"))
            .await
            .expect(200)
            .json();
        let processed = status["processed_rows"].as_i64().unwrap();
        if processed > 0 && processed < 20_000 {
            break;
        }
        assert!(
            processed < 20_000,
            "finished before it could be interrupted"
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never started: {status}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill();

    let server = Server::serve(&db, &[]);
    let status = wait_for_job(&server, key, &job).await;
    assert_eq!(status["status"], "completed");
    assert_eq!(status["processed_rows"], 20_000);
    assert_eq!(status["failed_rows"], 0);
    assert_eq!(lead_total(&server, key, account.workspace_id).await, 20_000);
    let stored = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json();
    assert_eq!(stored.as_array().unwrap().len(), 20_000);
}

/// `LPS_TEST_DATABASE_URL` names a PostgreSQL server (CI sets it); these tests need one.
fn postgres_only(db: &TestDb) -> bool {
    if !db.is_postgres() {
        eprintln!("skipped: needs LPS_TEST_DATABASE_URL (PostgreSQL)");
    }
    db.is_postgres()
}

#[tokio::test]
async fn two_core_processes_on_postgres_share_one_job_without_duplicates() {
    let db = TestDb::new();
    if !postgres_only(&db) {
        return;
    }
    let account = bootstrap(&db, &[]);
    let key = &account.api_key;
    let cores: Vec<Server> = (0..2)
        .map(|_| {
            Server::spawn(
                &[
                    "core",
                    "--database-url",
                    &db.url,
                    "--grpc",
                    "127.0.0.1:0",
                    "--job-workers",
                    "2",
                ],
                false,
                true,
            )
        })
        .collect();
    let edge = Server::spawn(
        &[
            "edge",
            "--core-url",
            cores[0].grpc.as_deref().unwrap(),
            "--http",
            "127.0.0.1:0",
        ],
        true,
        false,
    );
    let (campaign, _) = create_campaign(&edge, key, account.workspace_id, "Shared").await;
    let mut rows = leads("shared", 20_000);
    // The same person twice in the batch, far apart, must still be one lead.
    rows[19_999] = json!({"values": {"email": "SHARED0@example.com", "first_name": "Again"}});
    let job = upsert(&edge, key, json!({"campaign_id": campaign, "leads": rows})).await;
    let status = wait_for_job(&edge, key, &job).await;
    assert_eq!(status["status"], "completed");
    assert_eq!(status["processed_rows"], 20_000);
    assert_eq!(status["failed_rows"], 0);
    assert_eq!(lead_total(&edge, key, account.workspace_id).await, 19_999);
    drop(cores);
}

#[tokio::test]
async fn watch_job_streams_processing_then_completed() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let key = &account.api_key;
    let server = Server::serve(&db, &[]);
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Watched").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": leads("watch", 10_000)}),
    )
    .await;
    let statuses = watch(&server, key, &job).await;
    assert_progress(&statuses);
}

#[tokio::test]
async fn the_job_status_stream_sends_the_polled_object_until_completed() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let key = &account.api_key;
    let server = Server::serve(&db, &[]);
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Streamed").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": leads("sse", 10_000)}),
    )
    .await;
    let mut stream = SseReader::open(
        &server,
        key,
        &format!("/leads/get-status/stream?job_id={job}"),
    )
    .await
    .unwrap_or_else(|reply| panic!("not a stream: {} {}", reply.status, reply.text));
    let events = stream.rest().await;
    assert!(
        events.iter().all(|(name, _)| name == "message"),
        "{events:?}"
    );
    let statuses: Vec<&str> = events
        .iter()
        .map(|(_, data)| data["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.last(), Some(&"completed"), "{statuses:?}");
    assert!(
        statuses.contains(&"processing") || statuses.contains(&"pending"),
        "{statuses:?}"
    );
    let processed: Vec<i64> = events
        .iter()
        .map(|(_, data)| data["processed_rows"].as_i64().unwrap())
        .collect();
    assert!(processed.windows(2).all(|w| w[0] <= w[1]), "{processed:?}");
    // Each event is exactly the object the polling path answers.
    let polled = server
        .get(key, &format!("/leads/get-status?job_id={job}"))
        .await
        .expect(200)
        .json();
    assert_eq!(events.last().unwrap().1, polled);

    // Refusals before a stream starts are the polling path's.
    let unknown = SseReader::open(&server, key, "/leads/get-status/stream?job_id=nope").await;
    let reply = unknown.err().expect("no stream for an unknown job");
    assert_eq!(reply.status, 404);
    assert_eq!(reply.json(), json!({"status": "not_found"}));
    let missing = SseReader::open(&server, key, "/leads/get-status/stream").await;
    assert_eq!(
        missing.err().expect("no stream without a job id").status,
        422
    );
    let anonymous = SseReader::open(
        &server,
        "wrong",
        &format!("/leads/get-status/stream?job_id={job}"),
    )
    .await;
    assert_eq!(
        anonymous.err().expect("no stream without a key").status,
        401
    );
}

/// Every status `WatchJob` sends until its stream ends.
async fn watch(server: &Server, key: &str, job: &str) -> Vec<lps::proto::JobStatus> {
    drain(open_watch(server, key, job).await).await
}

async fn open_watch(
    server: &Server,
    key: &str,
    job: &str,
) -> tonic::Streaming<lps::proto::JobStatus> {
    let mut client = JobsServiceClient::new(server.grpc_channel().await);
    client
        .watch_job(grpc_request(
            key,
            WatchJobRequest {
                job_id: Some(job.to_owned()),
            },
        ))
        .await
        .expect("watch starts")
        .into_inner()
}

async fn drain(mut stream: tonic::Streaming<lps::proto::JobStatus>) -> Vec<lps::proto::JobStatus> {
    let mut statuses = Vec::new();
    while let Some(status) = tokio::time::timeout(Duration::from_secs(120), stream.message())
        .await
        .expect("a status within two minutes")
        .expect("stream ok")
    {
        statuses.push(status);
    }
    statuses
}

fn assert_progress(statuses: &[lps::proto::JobStatus]) {
    let names: Vec<State> = statuses.iter().map(|s| s.status()).collect();
    assert!(names.contains(&State::Processing), "{names:?}");
    assert_eq!(names.last(), Some(&State::Completed), "{names:?}");
    let processed: Vec<i64> = statuses.iter().map(|s| s.processed_rows).collect();
    assert!(processed.windows(2).all(|w| w[0] <= w[1]), "{processed:?}");
    assert_eq!(processed.last(), Some(&10_000));
}

#[tokio::test]
async fn watch_job_follows_work_done_by_another_process_on_postgres() {
    let db = TestDb::new();
    if !postgres_only(&db) {
        return;
    }
    let account = bootstrap(&db, &[]);
    let key = &account.api_key;
    // This process serves the watch but processes nothing; the other one does the work.
    let watcher = Server::serve(&db, &["--job-workers", "0"]);
    let (campaign, _) = create_campaign(&watcher, key, account.workspace_id, "Remote").await;
    let job = upsert(
        &watcher,
        key,
        json!({"campaign_id": campaign, "leads": leads("remote", 10_000)}),
    )
    .await;
    let stream = open_watch(&watcher, key, &job).await;
    let worker = Server::spawn(
        &["core", "--database-url", &db.url, "--grpc", "127.0.0.1:0"],
        false,
        true,
    );
    let statuses = drain(stream).await;
    assert_eq!(statuses[0].status(), State::Pending);
    assert_progress(&statuses);
    drop(worker);
}

#[tokio::test]
async fn watching_an_unknown_or_foreign_job_is_not_found() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (campaign, _) =
        create_campaign(&server, &stranger.api_key, stranger.workspace_id, "T").await;
    let theirs = upsert(
        &server,
        &stranger.api_key,
        json!({"campaign_id": campaign, "leads": leads("t", 1)}),
    )
    .await;
    let mut client = JobsServiceClient::new(server.grpc_channel().await);
    for job in ["nope".to_owned(), theirs] {
        let status = client
            .watch_job(grpc_request(
                &account.api_key,
                WatchJobRequest { job_id: Some(job) },
            ))
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::NotFound);
    }
}
