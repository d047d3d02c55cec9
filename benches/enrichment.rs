//! Enrichment throughput against a fake site on loopback: N leads (default 1,000) enriched
//! with `social_profile_url`, `company_domain` and `social_posts_company` through one
//! `POST /leads/enrich` job, timed from the request to `completed`; beside it, in the same
//! run, the floor: a plain client fetching the same pages with the worker's concurrency (16)
//! and parsing nothing. The site answers each request after `BENCH_SITE_LATENCY_MS` (default
//! 20), as a real site would not answer at once.
//!
//! `cargo bench --bench enrichment` (env: `BENCH_LEADS`, `BENCH_SITE_LATENCY_MS`).

#[path = "../tests/api/common.rs"]
#[allow(dead_code)] // a benchmark uses part of the test harness
mod common;
#[path = "support/load.rs"]
mod load;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::header;
use axum::response::IntoResponse;
use common::{Server, TestDb, bootstrap, lps};
use load::env_or;
use serde_json::{Value, json};

const PROFILE: &str = r#"<!doctype html><html><head><title>Jane Doe</title>
<meta property="og:description" content="Builds growth teams.">
<script type="application/ld+json">{"@type":"Person","name":"Jane Doe","jobTitle":"Head of Growth"}</script>
</head><body></body></html>"#;
const HOME: &str = r#"<!doctype html><html><head><title>Acme</title>
<meta name="description" content="Acme makes invoicing painless.">
<link rel="alternate" type="application/rss+xml" href="/feed.xml"></head><body></body></html>"#;
const FEED: &str = r#"<?xml version="1.0"?><rss version="2.0"><channel><title>Acme</title>
<item><title>Series B</title><link>https://acme.test/b</link><pubDate>Fri, 20 Nov 2026 10:00:00 GMT</pubDate></item>
</channel></rss>"#;

#[tokio::main]
async fn main() {
    let leads = env_or("BENCH_LEADS", 1_000) as usize;
    let latency = Duration::from_millis(env_or("BENCH_SITE_LATENCY_MS", 20));
    let served = Arc::new(AtomicUsize::new(0));
    let port = fake_site(latency, served.clone()).await;
    println!(
        "\nEnrichment of {leads} leads (profile page, company home page + analysis, company feed), \
         site latency {} ms, 2 cores shared with the site",
        latency.as_millis()
    );

    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    lps(&[
        "admin",
        "account",
        "set-plan",
        "--database-url",
        &db.url,
        "--account",
        &account.account_id.to_string(),
        "--plan",
        "pro_monthly",
        "--credits",
        "100000000",
    ]);
    let resolve = format!("acme.test=127.0.0.1:{port},people.test=127.0.0.1:{port}");
    let server = Server::serve(
        &db,
        &[
            "--rate-limit-per-minute",
            "100000000",
            "--allow-private-network",
            "--resolve",
            &resolve,
        ],
    );
    let mut ids = Vec::new();
    for chunk in (0..leads).collect::<Vec<_>>().chunks(1_000) {
        let values: Vec<Value> = chunk
            .iter()
            .map(|i| json!({"values": {"email": format!("lead{i}@acme.test"), "company_domain": "acme.test",
                                       "social_profile_url": format!("http://people.test/in/{i}")}}))
            .collect();
        let body = json!({"workspace_id": account.workspace_id, "sync": true, "leads": values});
        let imported = server
            .post(&account.api_key, "/leads/import-to-workspace", body)
            .await
            .expect(200)
            .json();
        ids.extend(
            imported["lead_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| id.as_i64().unwrap()),
        );
    }

    // The floor: the same pages fetched by a plain client, 16 at a time.
    let client = reqwest::Client::new();
    let started = Instant::now();
    let paths: Vec<String> = (0..leads)
        .flat_map(|i| [format!("/in/{i}"), "/".to_owned(), "/feed.xml".to_owned()])
        .collect();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(16));
    let mut fetching = tokio::task::JoinSet::new();
    for chunk in paths.chunks(3) {
        let (client, chunk, permit) = (client.clone(), chunk.to_vec(), semaphore.clone());
        fetching.spawn(async move {
            let _permit = permit.acquire_owned().await.unwrap();
            for path in chunk {
                let url = format!("http://127.0.0.1:{port}{path}");
                client.get(url).send().await.unwrap().bytes().await.unwrap();
            }
        });
    }
    while fetching.join_next().await.is_some() {}
    let floor = started.elapsed();

    served.store(0, Ordering::Relaxed);
    let started = Instant::now();
    let mut job_ids = Vec::new();
    for chunk in ids.chunks(1_000) {
        let body = json!({"workspace_id": account.workspace_id, "lead_ids": chunk,
                          "enrichment_types": ["social_profile_url", "company_domain", "social_posts_company"]});
        let accepted = server
            .post(&account.api_key, "/leads/enrich", body)
            .await
            .expect(200)
            .json();
        job_ids.push(accepted["job_id"].as_str().unwrap().to_owned());
    }
    for job in &job_ids {
        let done = common::wait_for_job(&server, &account.api_key, job).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert!(done.get("enrichment_errors").is_none(), "{done}");
    }
    let took = started.elapsed();
    let rate = |d: Duration| leads as f64 / d.as_secs_f64();
    println!(
        "{:<34} {:>9.1} leads/s  ({:.2} s, {} site requests)",
        "lps enrichment job",
        rate(took),
        took.as_secs_f64(),
        served.load(Ordering::Relaxed)
    );
    println!(
        "{:<34} {:>9.1} leads/s  ({:.2} s; same pages, 16 at a time, nothing parsed or stored)",
        "floor: plain fetches",
        rate(floor),
        floor.as_secs_f64()
    );
    println!(
        "{:<34} {:>9.2}x",
        "lps / floor",
        floor.as_secs_f64() / took.as_secs_f64()
    );
}

async fn fake_site(latency: Duration, served: Arc<AtomicUsize>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let served = served.clone();
        async move {
            served.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(latency).await;
            let (kind, body) = match uri.path() {
                "/" => ("text/html", HOME),
                "/feed.xml" => ("application/rss+xml", FEED),
                _ => ("text/html", PROFILE),
            };
            ([(header::CONTENT_TYPE, kind)], body).into_response()
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}
