//! Credit spends under contention: 32 concurrent clients call `POST /pages/generate` on one
//! account (every call takes credits in one atomic step; `--job-workers 0`, so runs only
//! queue), on SQLite and, with `LPS_BENCH_POSTGRES_URL`, on PostgreSQL. Prints spends per
//! second and latency, and checks that the pool went down by exactly what was accepted.
//!
//! `cargo bench --bench credits` (env: `BENCH_SECONDS`, default 10; `BENCH_CONCURRENCY`, 32).

#[path = "../tests/api/common.rs"]
#[allow(dead_code)] // a benchmark uses part of the test harness
mod common;
#[path = "support/load.rs"]
mod load;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Server, TestDb, bootstrap, create_campaign, lps};
use load::{drive, env_or, print};
use serde_json::json;

#[tokio::main]
async fn main() {
    let seconds = Duration::from_secs(env_or("BENCH_SECONDS", 10));
    let concurrency = env_or("BENCH_CONCURRENCY", 32) as usize;
    println!(
        "\nCredit spends, {concurrency} concurrent clients on one account, {}s each, 2 cores \
         shared with the load generator",
        seconds.as_secs()
    );
    spends("SQLite", TestDb::on(None), seconds, concurrency).await;
    match std::env::var("LPS_BENCH_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => {
            spends("PostgreSQL", TestDb::on(Some(url)), seconds, concurrency).await;
        }
        _ => println!("(set LPS_BENCH_POSTGRES_URL for the PostgreSQL figure)"),
    }
}

async fn spends(label: &str, db: TestDb, seconds: Duration, concurrency: usize) {
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
        "1000000000",
    ]);
    let server = Server::serve(
        &db,
        &[
            "--rate-limit-per-minute",
            "100000000",
            "--job-workers",
            "0",
            "--credits-per-design-run",
            "1",
        ],
    );
    let (campaign, _) =
        create_campaign(&server, &account.api_key, account.workspace_id, "Bench").await;
    let url = server.url("/pages/generate");
    let body = json!({"workspace_id": account.workspace_id, "campaign_id": campaign,
                      "prompt": "A page", "replace": true})
    .to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let spend = {
        let (client, key, accepted) = (
            server.client.clone(),
            account.api_key.clone(),
            accepted.clone(),
        );
        move || {
            let request = client
                .post(&url)
                .bearer_auth(&key)
                .header("content-type", "application/json")
                .body(body.clone())
                .send();
            let accepted = accepted.clone();
            async move {
                let response = request.await.expect("generate");
                assert_eq!(response.status(), 200);
                accepted.fetch_add(1, Ordering::Relaxed);
            }
        }
    };
    drive(concurrency, Duration::from_secs(1), spend.clone()).await;
    let figures = drive(concurrency, seconds, spend).await;
    print(&format!("spend ({label})"), &figures);
    let credits = server
        .get(
            &account.api_key,
            &format!("/account/credits?workspace_id={}", account.workspace_id),
        )
        .await
        .json();
    let spent = 1_000_000_000 - credits["remaining"].as_i64().unwrap();
    assert_eq!(
        spent,
        accepted.load(Ordering::Relaxed) as i64,
        "the pool went down by what was accepted"
    );
    println!(
        "{:<28} {spent} credits spent, equal to the accepted requests",
        ""
    );
}
