//! Beacon benchmark: a running `lps serve` (release, SQLite) with 10,000 leads in a published
//! campaign; 32 concurrent clients send a realistic mix of beacons (view 40%, time 25%, scroll
//! 20%, click 15%, from 2,000 cookie visitors) to random pages, then the benchmark waits until
//! every acknowledged beacon is in the database. Beside it, the same server's cheapest route
//! (an unknown path, answered by the edge's router alone). Prints beacons persisted per second,
//! accept latency, the floor and the ratio.
//!
//! `cargo bench --bench beacons` (env: `BENCH_SECONDS`, default 10; `BENCH_CONCURRENCY`, 32).

#[path = "../tests/api/common.rs"]
#[allow(dead_code)] // a benchmark uses part of the test harness
mod common;
#[path = "support/load.rs"]
mod load;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{DESKTOP_BROWSER, Server, TestDb, bootstrap, live_campaign};
use load::{drive, env_or, print};
use serde_json::json;

#[tokio::main]
async fn main() {
    let seconds = Duration::from_secs(env_or("BENCH_SECONDS", 10));
    let concurrency = env_or("BENCH_CONCURRENCY", 32) as usize;
    let db = TestDb::on(None);
    let account = bootstrap(&db, &[]);
    // 2,000 visitors, each at an address of its own (behind a trusted proxy): a crowd, not one
    // address over its beacon budget.
    let server = Server::serve(
        &db,
        &[
            "--rate-limit-per-minute",
            "100000000",
            "--trusted-proxies",
            "127.0.0.1/32",
        ],
    );
    let (_, pages) = live_campaign(
        &server,
        &account.api_key,
        account.workspace_id,
        "Bench",
        10_000,
    )
    .await;
    let beacon_urls: Arc<Vec<String>> = Arc::new(
        pages
            .iter()
            .map(|(_, url)| format!("{url}/beacon"))
            .collect(),
    );
    let store = lps::bench_internals::Db::connect_existing(&db.url)
        .await
        .expect("database");

    let client = reqwest::Client::new();
    let next = Arc::new(AtomicUsize::new(0));
    // Acknowledged (204); a full queue answers 503 and the client waits as Retry-After says.
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let beacon = {
        let (client, urls, next) = (client.clone(), beacon_urls.clone(), next.clone());
        let (acknowledged, refused) = (acknowledged.clone(), refused.clone());
        move || {
            let n = next.fetch_add(1, Ordering::Relaxed);
            let url = &urls[n.wrapping_mul(7_919) % urls.len()];
            let body = match n % 20 {
                0..8 => json!({"type": "view"}),
                8..13 => json!({"type": "time", "seconds": 5 + n % 60}),
                13..17 => json!({"type": "scroll"}),
                _ => json!({"type": "click", "target": "https://cal.example/book"}),
            };
            let request = client
                .post(url)
                .header("user-agent", DESKTOP_BROWSER)
                .header("cookie", format!("lps_vid={:032x}", n % 2_000))
                .header(
                    "x-forwarded-for",
                    format!("10.0.{}.{}", n % 2_000 / 256, n % 2_000 % 256),
                )
                .body(body.to_string())
                .send();
            let (acknowledged, refused) = (acknowledged.clone(), refused.clone());
            async move {
                let response = request.await.expect("beacon");
                match response.status().as_u16() {
                    204 => {
                        acknowledged.fetch_add(1, Ordering::Relaxed);
                    }
                    503 => {
                        refused.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    other => panic!("beacon answered {other}"),
                }
            }
        }
    };
    drive(concurrency, Duration::from_secs(1), beacon.clone()).await;
    // Start from an empty queue: everything acknowledged so far is stored.
    while stored(&store).await < acknowledged.load(Ordering::Relaxed) as i64 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stored_before = stored(&store).await;
    let acknowledged_before = acknowledged.load(Ordering::Relaxed);
    let refused_before = refused.load(Ordering::Relaxed);
    let started = Instant::now();
    let accepted = drive(concurrency, seconds, beacon).await;
    let sent = acknowledged.load(Ordering::Relaxed) - acknowledged_before;
    let refused = refused.load(Ordering::Relaxed) - refused_before;
    // Persisted: until every beacon acknowledged in the run is in the database.
    while stored(&store).await - stored_before < sent as i64 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let persisted_in = started.elapsed();
    let persisted_per_second = sent as f64 / persisted_in.as_secs_f64();

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
    let floor = drive(concurrency, seconds, cheapest).await;

    println!(
        "\nBeacons over 10,000 leads' pages, {concurrency} concurrent clients, {}s each, SQLite, \
         2 cores shared with the load generator",
        seconds.as_secs()
    );
    print("beacon answered", &accepted);
    println!("{:<28} {refused} answered 503 (queue full)", "refused");
    println!(
        "{:<28} {:>9.0} beacons/s ({sent} acknowledged, all in the database after {:.2}s)",
        "beacons persisted",
        persisted_per_second,
        persisted_in.as_secs_f64()
    );
    print("router floor (404)", &floor);
    println!(
        "persisted beacons relative to the router floor: {:.2}x",
        persisted_per_second / floor.per_second
    );
}

/// Beacons stored so far.
async fn stored(store: &lps::bench_internals::Db) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM page_events")
        .fetch_one(store.pool())
        .await
        .expect("count")
}
