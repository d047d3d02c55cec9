//! `GET /metrics`: scraped and parsed with a Prometheus text-format parser after known traffic,
//! the counts match what was sent; no tenant data in it; `--metrics ADDR` moves it off the
//! HTTP port.

use std::time::{Duration, Instant};

use crate::common::*;
use prometheus_parse::{Sample, Scrape, Value as Metric};
use serde_json::json;

async fn scrape(server: &Server) -> (Scrape, String) {
    let reply = server
        .send(server.client.get(server.url_of("/metrics")))
        .await
        .expect(200);
    assert!(
        reply
            .header("content-type")
            .is_some_and(|v| v.starts_with("text/plain; version=0.0.4")),
        "{:?}",
        reply.header("content-type")
    );
    let text = reply.text.clone();
    let lines = text.lines().map(|line| Ok(line.to_owned()));
    (Scrape::parse(lines).expect("Prometheus text format"), text)
}

/// The value of the one sample of `metric` with these labels (0 when there is none); a
/// histogram's value is its count.
fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let matching: Vec<&Sample> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect();
    assert!(matching.len() <= 1, "{metric} {labels:?}: {matching:?}");
    match matching.first().map(|s| &s.value) {
        None => 0.0,
        Some(Metric::Counter(v) | Metric::Gauge(v) | Metric::Untyped(v)) => *v,
        Some(Metric::Histogram(buckets)) => buckets.last().map_or(0.0, |b| b.count),
        Some(other) => panic!("{metric}: unexpected {other:?}"),
    }
}

#[tokio::test]
async fn a_scrape_after_known_traffic_counts_exactly_what_was_sent() {
    let db = TestDb::new();
    let account = bootstrap(&db, &["--workspace-name", "Secret Workspace Name"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);

    for _ in 0..7 {
        server.get(key, "/hello-world-user").await.expect(200);
    }
    for _ in 0..3 {
        server.get(key, "/no-such-route").await.expect(404);
    }
    // Two calls from a gRPC client: counted with the edge's seven, and the only ones timed.
    let mut identity = lps::proto::identity_service_client::IdentityServiceClient::new(
        server.grpc_channel().await,
    );
    for _ in 0..2 {
        identity
            .who_am_i(grpc_request(key, lps::proto::WhoAmIRequest {}))
            .await
            .unwrap();
    }
    // Two leads through one job, then ten more and a bad row through another.
    let (campaign, pages) = live_campaign(&server, key, ws, "Measured", 2).await;
    let mut rows = leads("counted", 10);
    rows.push(json!({"values": {"first_name": "No email"}}));
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": rows}),
    )
    .await;
    wait_for_job(&server, key, &job).await;

    // A page three times: core renders it once at most twice (before the cache is live), the
    // rest come from memory.
    let page = &pages[0].1;
    for _ in 0..3 {
        server.send(server.client.get(page)).await.expect(200);
    }
    // Beacons: two from a browser, one from automation, each after loading the page as a
    // browser does (three more page answers).
    for agent in [
        DESKTOP_BROWSER,
        DESKTOP_BROWSER,
        "Mozilla/5.0 HeadlessChrome/126.0",
    ] {
        send_person_beacon(&server, page, json!({"type": "view"}), agent, "")
            .await
            .expect(204);
    }

    // Beacons are written in batches: wait for them.
    let started = Instant::now();
    let (metrics, text) = loop {
        let (metrics, text) = scrape(&server).await;
        let recorded = value(
            &metrics,
            "lps_beacons_recorded_total",
            &[("outcome", "recorded"), ("class", "person")],
        ) + value(
            &metrics,
            "lps_beacons_recorded_total",
            &[("outcome", "recorded"), ("class", "automated")],
        );
        if recorded >= 3.0 || started.elapsed() > Duration::from_secs(10) {
            break (metrics, text);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    let hello = [
        ("route", "/api/external/v1/hello-world-user"),
        ("method", "GET"),
    ];
    let with_status = |status| {
        let mut labels = hello.to_vec();
        labels.push(("status", status));
        labels
    };
    assert_eq!(
        value(&metrics, "lps_http_requests_total", &with_status("200")),
        7.0
    );
    assert_eq!(
        value(&metrics, "lps_http_request_duration_seconds", &hello),
        7.0
    );
    assert_eq!(
        value(
            &metrics,
            "lps_http_requests_total",
            &[
                ("route", "(unmatched)"),
                ("method", "GET"),
                ("status", "404")
            ]
        ),
        3.0
    );
    assert!(
        value(
            &metrics,
            "lps_grpc_requests_total",
            &[("method", "/lps.v1.IdentityService/WhoAmI"), ("code", "OK")]
        ) == 9.0
    );
    assert_eq!(
        value(
            &metrics,
            "lps_grpc_request_duration_seconds",
            &[("method", "/lps.v1.IdentityService/WhoAmI")]
        ),
        2.0
    );
    assert_eq!(
        value(
            &metrics,
            "lps_grpc_requests_total",
            &[
                ("method", "/lps.v1.JobsService/GetJobStatus"),
                ("code", "NOT_FOUND")
            ]
        ),
        0.0
    );
    assert_eq!(
        value(&metrics, "lps_lead_rows_total", &[("outcome", "stored")]),
        12.0
    );
    assert_eq!(
        value(&metrics, "lps_lead_rows_total", &[("outcome", "failed")]),
        1.0
    );
    assert_eq!(
        value(
            &metrics,
            "lps_jobs_finished_total",
            &[("status", "completed")]
        ),
        2.0
    );
    assert_eq!(value(&metrics, "lps_job_duration_seconds", &[]), 2.0);
    let hits = value(
        &metrics,
        "lps_page_cache_requests_total",
        &[("result", "hit")],
    );
    let misses = value(
        &metrics,
        "lps_page_cache_requests_total",
        &[("result", "miss")],
    );
    assert_eq!(hits + misses, 6.0, "hits {hits}, misses {misses}");
    // Pages answered from memory (ahead of the router) are counted like the others (read
    // from the text: prometheus-parse does not take the braces of a route template).
    let page_route = r#"route="/p/{campaign_slug}/{lead_slug}",method="GET""#;
    assert!(
        text.contains(&format!(
            "lps_http_requests_total{{{page_route},status=\"200\"}} 6\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "lps_http_request_duration_seconds_count{{{page_route}}} 6\n"
        )),
        "{text}"
    );
    assert!(hits >= 1.0 && misses >= 1.0, "hits {hits}, misses {misses}");
    assert!(value(&metrics, "lps_page_cache_pages", &[]) >= 1.0);
    assert_eq!(
        value(
            &metrics,
            "lps_beacons_received_total",
            &[("outcome", "accepted")]
        ),
        3.0
    );
    assert_eq!(
        value(
            &metrics,
            "lps_beacons_recorded_total",
            &[("outcome", "recorded"), ("class", "person")]
        ),
        2.0
    );
    assert_eq!(
        value(
            &metrics,
            "lps_beacons_recorded_total",
            &[("outcome", "recorded"), ("class", "automated")]
        ),
        1.0
    );
    // The deployment's state, read from the database.
    assert_eq!(
        value(
            &metrics,
            "lps_jobs",
            &[("kind", "upsert"), ("status", "pending")]
        ),
        0.0
    );
    assert!(
        text.contains("lps_callbacks{status=\"pending\"} 0"),
        "{text}"
    );
    assert!(
        text.contains("lps_design_runs{status=\"queued\"}"),
        "{text}"
    );
    assert!(
        text.contains("lps_db_connections{state=\"idle\"}"),
        "{text}"
    );
    assert!(text.contains("# HELP lps_http_requests_total"), "{text}");

    // Never a tenant's data: no slug, email, name or key.
    let lead_slug = page.rsplit('/').next().unwrap();
    for secret in [
        lead_slug,
        "counted0@example.com",
        "Secret Workspace Name",
        key.as_str(),
    ] {
        assert!(!text.contains(secret), "{secret} in the scrape");
    }
}

#[tokio::test]
async fn refusals_for_the_rate_limit_are_counted() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "3"]);
    let mut refused = 0;
    for _ in 0..5 {
        let reply = server.get(&account.api_key, "/hello-world-user").await;
        if reply.status == 429 {
            refused += 1;
        }
    }
    assert_eq!(refused, 2);
    let (metrics, _) = scrape(&server).await;
    assert_eq!(
        value(
            &metrics,
            "lps_rate_limit_refusals_total",
            &[("bucket", "credential")]
        ),
        2.0
    );
    assert_eq!(
        value(
            &metrics,
            "lps_http_requests_total",
            &[
                ("route", "/api/external/v1/hello-world-user"),
                ("status", "429")
            ]
        ),
        2.0
    );
}

#[tokio::test]
async fn metrics_on_their_own_address_leave_the_http_port() {
    let db = TestDb::new();
    let server = Server::serve(&db, &["--metrics", "127.0.0.1:0"]);
    let line = server
        .stdout
        .iter()
        .find(|line| line.starts_with("Metrics on "))
        .unwrap_or_else(|| panic!("no metrics address printed: {:?}", server.stdout));
    let url = line.trim_start_matches("Metrics on ").to_owned();
    server
        .send(server.client.get(server.url_of("/metrics")))
        .await
        .expect(404);
    let reply = server.send(server.client.get(&url)).await.expect(200);
    assert!(reply.text.contains("lps_"), "{}", reply.text);
}

#[tokio::test]
async fn credits_spent_are_counted_from_the_ledger() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let model = loopback_model().await;
    let server = Server::serve(&db, &["--llm-base-url", &model]);
    let (campaign, _) = create_campaign(&server, key, ws, "Paid for").await;
    // Counted from the ledger, from the process's start on.
    for prompt in ["One", "Two"] {
        let body = json!({"workspace_id": ws, "campaign_id": campaign, "prompt": prompt,
                          "replace": true});
        server.post(key, "/pages/generate", body).await.expect(200);
    }
    let started = Instant::now();
    loop {
        let (metrics, _) = scrape(&server).await;
        let spent = value(
            &metrics,
            "lps_credits_spent_total",
            &[("reason", "design_run")],
        );
        if spent == 20.0 {
            break;
        }
        assert!(spent < 20.0, "spent {spent}");
        assert!(started.elapsed() < Duration::from_secs(20), "spent {spent}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn metrics_can_be_turned_off() {
    let db = TestDb::new();
    let server = Server::serve(&db, &["--metrics", "off"]);
    server
        .send(server.client.get(server.url_of("/metrics")))
        .await
        .expect(404);
}
