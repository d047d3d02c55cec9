//! Page-serving benchmark: a running `lps serve` (release, SQLite) with 10,000 leads in a
//! published campaign; random leads' pages requested by 32 concurrent clients, beside the same
//! server's cheapest route (an unknown path, answered by the edge's router alone), with the
//! ratio. Prints requests per second and p50/p99 latency.
//!
//! `cargo bench --bench pages` (env: `BENCH_SECONDS`, default 10; `BENCH_CONCURRENCY`, 32).

#[path = "../tests/api/common.rs"]
#[allow(dead_code)] // a benchmark uses part of the test harness
mod common;
#[path = "support/load.rs"]
mod load;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Server, TestDb, bootstrap, create_campaign, upsert, wait_for_job};
use load::{drive, env_or, print};
use serde_json::{Value, json};

#[tokio::main]
async fn main() {
    let seconds = Duration::from_secs(env_or("BENCH_SECONDS", 10));
    let concurrency = env_or("BENCH_CONCURRENCY", 32) as usize;
    let db = TestDb::on(None);
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000000"]);
    let key = account.api_key.clone();
    let (campaign, _) = create_campaign(&server, &key, account.workspace_id, "Bench").await;
    let leads: Vec<Value> = (0..10_000)
        .map(|n| json!({"values": {"email": format!("p{n}@example.com"), "first_name": format!("Lead{n}"), "company_name": format!("Company {n}")}}))
        .collect();
    let job = upsert(
        &server,
        &key,
        json!({"campaign_id": campaign, "leads": leads}),
    )
    .await;
    wait_for_job(&server, &key, &job).await;
    let templates = server
        .get(
            &key,
            &format!("/templates/get-list?workspace_id={}", account.workspace_id),
        )
        .await
        .json();
    let template = templates[0]["template_id"].clone();
    let body = json!({"workspace_id": account.workspace_id, "campaign_id": campaign, "template_id": template});
    server
        .post(&key, "/templates/apply", body.clone())
        .await
        .expect(200);
    server.post(&key, "/pages/publish", body).await.expect(200);
    let urls: Arc<Vec<String>> = Arc::new(
        server
            .get(&key, &format!("/leads/get-leads?job_id={job}"))
            .await
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["service_page_url"].as_str().unwrap().to_owned())
            .collect(),
    );
    assert_eq!(urls.len(), 10_000);

    let client = reqwest::Client::new();
    // A cheap, well-spread sequence of leads (a multiplicative walk through the list).
    let next = Arc::new(AtomicUsize::new(0));
    let page = {
        let (client, urls, next) = (client.clone(), urls.clone(), next.clone());
        move || {
            let n = next.fetch_add(1, Ordering::Relaxed).wrapping_mul(7_919) % urls.len();
            let request = client.get(&urls[n]).send();
            async move {
                let response = request.await.expect("page");
                assert_eq!(response.status(), 200);
                response.bytes().await.expect("body");
            }
        }
    };
    drive(concurrency, Duration::from_secs(1), page.clone()).await;
    let pages = drive(concurrency, seconds, page).await;

    let unknown = format!("{}/no-such-route", server.http);
    let cheapest = move || {
        let request = client.get(&unknown).send();
        async move {
            let response = request.await.expect("route");
            assert_eq!(response.status(), 404);
            response.bytes().await.expect("body");
        }
    };
    drive(concurrency, Duration::from_secs(1), cheapest.clone()).await;
    let ceiling = drive(concurrency, seconds, cheapest).await;

    println!(
        "\nPages of 10,000 leads (random), {concurrency} concurrent clients, {}s each, SQLite, \
         2 cores shared with the load generator",
        seconds.as_secs()
    );
    print("lead page GET /p/{c}/{l}", &pages);
    print("cheapest route (404)", &ceiling);
    println!(
        "cost of a page relative to the cheapest route: {:.2}x (throughput), {:.2}x (p50 latency)",
        ceiling.per_second / pages.per_second,
        pages.p50.as_secs_f64() / ceiling.p50.as_secs_f64()
    );
}
