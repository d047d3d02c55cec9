//! Logs an operator reads: one line per request with its request id, route, status, latency
//! and credential id (never the key), as JSON on request; startup errors that name the cause.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;

#[tokio::test]
async fn each_request_logs_one_json_line_with_its_request_id_and_never_the_key() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("lps.log");
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--database-url",
            &db.url,
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ])
        .env("LPS_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let http = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("HTTP listening on ").map(str::to_owned))
        .unwrap();
    let client = reqwest::Client::new();
    let response = client
        .get(format!("{http}{BASE}/hello-world"))
        .bearer_auth(&account.api_key)
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-request-id"], "trace-me-42");
    let generated = client
        .get(format!("{http}{BASE}/hello-world"))
        .send()
        .await
        .unwrap();
    assert_eq!(generated.status(), 401);
    assert_eq!(generated.headers()["x-request-id"].len(), 36);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        !log.contains(&account.api_key),
        "the key leaked into the log"
    );
    assert!(!log.contains("\u{1b}["), "colour codes in a file");
    let line: serde_json::Value = log
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|line| line["span"]["request_id"] == "trace-me-42")
        .unwrap_or_else(|| panic!("no line for the request in {log}"));
    assert_eq!(line["fields"]["status"], 200);
    assert_eq!(line["fields"]["route"], "/api/external/v1/hello-world");
    assert_eq!(line["fields"]["method"], "GET");
    assert!(line["fields"]["latency_ms"].is_number());
    assert!(line["fields"]["credential"].as_str().unwrap().len() > 1);
}

#[test]
fn a_database_path_that_cannot_be_written_is_named_as_the_cause() {
    let output = Command::new(BIN)
        .args([
            "serve",
            "--database-url",
            "sqlite:///nonexistent-dir/for/lps.db",
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent-dir/for"), "{stderr}");
    assert!(stderr.to_lowercase().contains("directory"), "{stderr}");
}

#[test]
fn an_unreachable_postgres_is_reported_within_seconds() {
    let started = std::time::Instant::now();
    let output = Command::new(BIN)
        .args([
            "admin",
            "workspace",
            "create",
            "--database-url",
            "postgres://postgres@127.0.0.1:1/lps",
            "--account",
            "1",
            "--name",
            "x",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.to_lowercase().contains("connection refused"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
}
