//! Link-preview cards (`/p/{campaign}/{lead}/og.png`, 1200x630 PNG) from a running
//! `lps serve` (release, SQLite): every card of `BENCH_LEADS` leads (default 300) fetched once
//! cold (each one drawn: fonts, text fitting, PNG encoding), then the same cards for
//! `BENCH_SECONDS` (default 5) with `BENCH_CONNECTIONS` (default 8) at random (kept in
//! memory: at most 128, so a random lead of more than 128 is drawn again now and then).
//! `BENCH_VALUE_CHARS` (default 0: short names) gives every lead a first name and company of
//! that many characters (at most 10,000, the documented maximum): a card's cost must not grow
//! with them. `cargo bench --bench preview_images`.

#[path = "../tests/api/common.rs"]
#[allow(dead_code)] // a benchmark uses part of the test harness
mod common;
#[path = "support/load.rs"]
mod load;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Server, TestDb, bootstrap, leads, live_campaign_with};
use load::{drive, env_or, print};
use serde_json::Value;

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run());
}

async fn run() {
    let count = env_or("BENCH_LEADS", 300) as usize;
    let seconds = env_or("BENCH_SECONDS", 5);
    let connections = env_or("BENCH_CONNECTIONS", 8) as usize;
    let value_chars = env_or("BENCH_VALUE_CHARS", 0) as usize;
    let db = TestDb::on(None);
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000000"]);
    let (_, pages) = live_campaign_with(
        &server,
        &account.api_key,
        account.workspace_id,
        "Cards",
        "Personal Spotlight",
        leads_with_values("card-", count, value_chars),
    )
    .await;
    let cards: Arc<Vec<String>> = Arc::new(
        pages
            .iter()
            .map(|(_, url)| format!("{url}/og.png"))
            .collect(),
    );

    let started = Instant::now();
    let mut bytes = 0;
    for card in cards.iter() {
        let response = server.client.get(card).send().await.unwrap();
        assert_eq!(response.status(), 200);
        bytes += response.bytes().await.unwrap().len();
    }
    let cold = started.elapsed();
    println!(
        "preview cards, cold (each drawn)  {:>9.0} cards/s   {:.1} ms each   {} KB on average   ({} cards, {} characters a value)",
        cards.len() as f64 / cold.as_secs_f64(),
        cold.as_secs_f64() * 1e3 / cards.len() as f64,
        bytes / cards.len() / 1024,
        cards.len(),
        value_chars
    );

    // The 128 most recent are kept: ask for those.
    let kept: Arc<Vec<String>> = Arc::new(cards.iter().rev().take(128).cloned().collect());
    let client = server.client.clone();
    let figures = drive(connections, Duration::from_secs(seconds), move || {
        let (client, kept) = (client.clone(), kept.clone());
        async move {
            let card = &kept[fastrand_index(kept.len())];
            let response = client.get(card).send().await.unwrap();
            assert_eq!(response.status(), 200);
            let _ = response.bytes().await.unwrap();
        }
    })
    .await;
    print("preview cards, kept", &figures);
    drop(server);
}

/// The test harness's leads, with a first name and company of `chars` characters each when
/// `chars` is not 0.
fn leads_with_values(prefix: &str, count: usize, chars: usize) -> Vec<Value> {
    let mut leads = leads(prefix, count);
    if chars > 0 {
        for (n, lead) in leads.iter_mut().enumerate() {
            let value = |what: &str| {
                format!("{what} {n} ")
                    .chars()
                    .cycle()
                    .take(chars)
                    .collect::<String>()
            };
            lead["values"]["first_name"] = value("Alexandria").into();
            lead["values"]["company_name"] = value("Northwind Engines").into();
        }
    }
    leads
}

/// A cheap pseudo-random index (no extra dependency).
fn fastrand_index(len: usize) -> usize {
    use std::cell::Cell;
    thread_local!(static STATE: Cell<u64> = const { Cell::new(0x9e37_79b9_7f4a_7c15) });
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        (x % len as u64) as usize
    })
}
