//! A process confined to one CPU (`taskset`, a container's quota) runs every task on one thread
//! (`runtime_for` in `edge/main.rs`): everything that waits on another task or on the blocking
//! pool still finishes there. An import streamed into a blocking reader, a job's worker, a
//! page rendered on first visit, a beacon through the recorder's batches into a counted view,
//! and a gRPC call.

use serde_json::json;

use crate::common::*;
use lps::proto::{WhoAmIRequest, identity_service_client::IdentityServiceClient};

/// `lps serve` on free ports, allowed to run on CPU 0 alone.
fn serve_on_one_cpu(db: &TestDb) -> Option<Server> {
    let taskset = std::process::Command::new("taskset")
        .arg("--version")
        .output();
    if taskset.is_err() {
        eprintln!("taskset (util-linux) is missing: the one-CPU process is not tested");
        return None;
    }
    let mut args = vec!["-c", "0", lps_binary()];
    args.extend(serve_args(db));
    Some(Server::spawn_binary("taskset", &args, true, true))
}

#[tokio::test]
async fn a_process_given_one_cpu_imports_serves_pages_counts_views_and_answers_grpc() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let Some(server) = serve_on_one_cpu(&db) else {
        return;
    };
    let (key, ws) = (account.api_key.as_str(), account.workspace_id);
    // What the kernel lets the process run on, as it sees it.
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    assert!(
        status.contains("Cpus_allowed_list:\t0\n"),
        "the process is confined to CPU 0: {status}"
    );

    // A job's worker and a page rendered on its first visit.
    let (campaign, pages) = live_campaign(&server, key, ws, "One CPU", 3).await;
    let (lead, page) = &pages[0];
    let visit = server.send(server.client.get(page)).await.expect(200);
    assert!(visit.text.contains("/p/track.js"), "{}", visit.text);

    // A CSV streamed to a reader on the blocking pool, which calls core back on the runtime.
    let file = "email,first_name,company\nada@example.com,Ada,Analytical\n";
    let reply = server
        .send(
            server
                .client
                .post(server.url(&format!(
                    "/leads/import-csv?workspace_id={ws}&campaign_id={campaign}"
                )))
                .bearer_auth(key)
                .header("content-type", "text/csv")
                .body(file),
        )
        .await
        .expect(200);
    let job = reply.json()["job_id"].as_str().unwrap().to_owned();
    let status = wait_for_job(&server, key, &job).await;
    assert_eq!(status["status"], "completed", "{status}");
    assert_eq!(lead_total(&server, key, ws).await, 4);

    // A person's view through the recorder's batches, counted.
    send_person_beacon(
        &server,
        page,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        "one-cpu",
    )
    .await
    .expect(204);
    one_view_counted(&server, key, *lead).await;

    // The API and gRPC, on the same thread as everything else.
    let hello = server.get(key, "/hello-world-user").await.expect(200);
    assert!(hello.json().is_object(), "{}", hello.text);
    let mut client = IdentityServiceClient::new(server.grpc_channel().await);
    let reply = client
        .who_am_i(grpc_request(key, WhoAmIRequest {}))
        .await
        .expect("gRPC answers")
        .into_inner();
    assert_eq!(reply.user.unwrap().id, account.user_id);
}
