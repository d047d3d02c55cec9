//! Ingest benchmark: 100,000 leads through `POST /leads/upsert-leads` in 100 requests of 1,000
//! (4 in flight) against a running `lps serve` (release build), waiting until every job has
//! completed. Prints leads per second end to end and the server's peak resident memory, for
//! SQLite and for PostgreSQL, beside the storage's own ceiling: the same rows written straight
//! into the same tables (`leads`, `campaign_leads`) in one bulk transaction, and the ratio.
//!
//! `cargo bench --bench ingest`. PostgreSQL: `LPS_BENCH_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`; skipped if unreachable).

#[path = "../tests/api/common.rs"]
#[allow(dead_code)] // a benchmark uses part of the test harness
mod common;

use std::time::{Duration, Instant};

use common::{Server, TestDb, bootstrap, create_campaign, lead_total, memory_kib};
use lps::bench_internals::LeadValues;
use lps::bench_internals::{Db, campaigns, leads};
use serde_json::{Value, json};

const REQUESTS: usize = 100;
const PER_REQUEST: usize = 1_000;
const TOTAL: usize = REQUESTS * PER_REQUEST;
const IN_FLIGHT: usize = 4;

fn lead(n: usize) -> Value {
    json!({"values": {
        "email": format!("bench{n}@example.com"),
        "first_name": format!("Lead{n}"),
        "company_name": format!("Company {}", n % 500),
        "company_domain": format!("company{}.example", n % 500),
        "job_title": "Head of Sales",
    }})
}

/// A memory figure of a process (`VmHWM:` the peak, `VmRSS:`), in MiB.
fn memory_mib(pid: u32, field: &str) -> f64 {
    memory_kib(pid, field) as f64 / 1024.0
}

/// End to end through the API; returns (leads per second, peak MiB, MiB resident once idle).
async fn through_the_api(db: &TestDb) -> (f64, f64, f64) {
    let account = bootstrap(db, &[]);
    let server = Server::serve(db, &["--rate-limit-per-minute", "1000000"]);
    let key = account.api_key.clone();
    let (campaign, _) = create_campaign(&server, &key, account.workspace_id, "Bench").await;
    let bodies: Vec<String> = (0..REQUESTS)
        .map(|r| {
            let leads: Vec<Value> = (r * PER_REQUEST..(r + 1) * PER_REQUEST).map(lead).collect();
            json!({"campaign_id": campaign, "leads": leads}).to_string()
        })
        .collect();
    let url = server.url("/leads/upsert-leads");
    let started = Instant::now();
    let queue = std::sync::Arc::new(std::sync::Mutex::new(bodies));
    let senders: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let (queue, url, key, client) = (
                queue.clone(),
                url.clone(),
                key.clone(),
                server.client.clone(),
            );
            tokio::spawn(async move {
                let mut jobs = Vec::new();
                loop {
                    let next = queue.lock().unwrap().pop();
                    let Some(body) = next else { break };
                    let reply: Value = client
                        .post(&url)
                        .bearer_auth(&key)
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await
                        .expect("upsert")
                        .json()
                        .await
                        .expect("job id");
                    jobs.push(reply["job_id"].as_str().expect("job_id").to_owned());
                }
                jobs
            })
        })
        .collect();
    let mut jobs = Vec::new();
    for sender in senders {
        jobs.extend(sender.await.unwrap());
    }
    let accepted = started.elapsed();
    for job in &jobs {
        loop {
            let status = server
                .get(&key, &format!("/leads/get-status?job_id={job}"))
                .await
                .json();
            if status["status"] == "completed" {
                break;
            }
            assert_ne!(status["status"], "failed", "{status}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(
        lead_total(&server, &key, account.workspace_id).await,
        TOTAL as i64
    );
    println!(
        "    {REQUESTS} requests accepted in {:.2} s; all jobs completed after {:.2} s",
        accepted.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    // The worker gives freed memory back once it is idle; let it notice.
    tokio::time::sleep(Duration::from_secs(2)).await;
    (
        TOTAL as f64 / elapsed.as_secs_f64(),
        memory_mib(server.pid(), "VmHWM:"),
        memory_mib(server.pid(), "VmRSS:"),
    )
}

/// The same rows straight into the same tables in one transaction; returns leads per second.
async fn storage_ceiling(db: &TestDb) -> f64 {
    let account = bootstrap(db, &["--workspace-name", "Ceiling"]);
    let store = Db::connect(&db.url).await.expect("database");
    let now = lps::bench_internals::now();
    let new_campaign = campaigns::NewCampaign {
        workspace_id: account.workspace_id,
        branding_id: 1,
        name: "Ceiling",
        slug: "ceiling",
        prompt: None,
        cta_url: None,
    };
    let campaign = campaigns::insert(store.pool(), &new_campaign, now)
        .await
        .expect("campaign");
    let rows: Vec<(String, LeadValues)> = (0..TOTAL)
        .map(|n| {
            let values = lead(n);
            let v = &values["values"];
            let text = |k: &str| v[k].as_str().map(str::to_owned);
            (
                format!("ceiling{n:011}"),
                LeadValues {
                    first_name: text("first_name"),
                    email: text("email"),
                    company_name: text("company_name"),
                    company_domain: text("company_domain"),
                    social_profile_url: None,
                    custom_values: json!({"job_title": v["job_title"]}).to_string(),
                },
            )
        })
        .collect();
    let started = Instant::now();
    let mut tx = store.pool().begin().await.expect("transaction");
    // The same statements the worker uses, so the comparison is of the pipeline, not of SQL.
    let ids = leads::insert_many(&mut tx, account.workspace_id, &rows, None, now)
        .await
        .expect("insert");
    let pairs: Vec<(i64, i64)> = ids.iter().map(|(id, _)| (campaign, *id)).collect();
    campaigns::attach_leads(&mut tx, &pairs, now)
        .await
        .expect("pages");
    tx.commit().await.expect("commit");
    TOTAL as f64 / started.elapsed().as_secs_f64()
}

async fn run(label: &str, db: TestDb) {
    println!("\n{label}");
    let (api, peak, settled) = through_the_api(&db).await;
    let ceiling = storage_ceiling(&db).await;
    println!(
        "    end to end through the API : {api:>9.0} leads/s   server RSS peak {peak:.0} MiB, \
         {settled:.0} MiB once idle"
    );
    println!("    storage ceiling (1 bulk tx): {ceiling:>9.0} leads/s");
    println!("    ratio API / ceiling        : {:.2}", api / ceiling);
}

#[tokio::main]
async fn main() {
    println!(
        "Ingest of {TOTAL} leads as {REQUESTS} x {PER_REQUEST} (release build, 2 cores shared with the client)"
    );
    run("SQLite", TestDb::on(None)).await;
    let postgres = std::env::var("LPS_BENCH_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let reachable = tokio::net::TcpStream::connect(
        postgres
            .split('@')
            .nth(1)
            .and_then(|h| h.split('/').next())
            .unwrap_or("127.0.0.1:5432"),
    )
    .await
    .is_ok();
    if reachable {
        run("PostgreSQL", TestDb::on(Some(postgres))).await;
    } else {
        println!("\nPostgreSQL: skipped ({postgres} unreachable)");
    }
}
