//! Ingest benchmark: 100,000 leads through `POST /leads/upsert-leads` in 100 requests of 1,000
//! (4 in flight) against a running `lps serve` (release build), waiting until every job has
//! completed; beside it the same leads as one CSV file through `POST /leads/import-csv`, through
//! the dashboard's upload (signed in, the recognised mapping accepted) and through `lps import`,
//! each until its jobs completed (a fresh server and database each), and each path's rate as a
//! share of the API's. Prints leads per second end to end and the server's peak resident memory, for
//! SQLite and for PostgreSQL, beside the storage's own ceiling: the same rows written straight
//! into the same tables (`leads`, `campaign_leads`) in one bulk transaction, and the ratio.
//!
//! `cargo bench --bench ingest`. PostgreSQL: `LPS_BENCH_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`; skipped if unreachable).

#[path = "../tests/api/common.rs"]
#[allow(dead_code)] // a benchmark uses part of the test harness
mod common;

#[path = "support/ingest.rs"]
mod ingest;

use std::time::Instant;

use common::{TestDb, bootstrap};
use ingest::{TOTAL, lead, through_the_api};
use lps::bench_internals::LeadValues;
use lps::bench_internals::{Db, campaigns, leads};
use serde_json::json;

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

/// Each path, and the ceiling, on a database of its own (`fresh`): one sharing the database
/// would pay for the rows the paths before it stored (larger indexes), and the API goes first.
async fn run(label: &str, fresh: impl Fn() -> TestDb) {
    println!("\n{label}");
    let (api, peak, settled) = through_the_api(&fresh(), || {}).await;
    let (csv, csv_peak) = ingest::through_import_csv(&fresh()).await;
    let (app, app_peak) = ingest::through_the_app(&fresh()).await;
    let (cli, cli_server_peak, cli_peak) = ingest::through_lps_import(&fresh()).await;
    let db = fresh();
    let ceiling = storage_ceiling(&db).await;
    println!(
        "    end to end through the API : {api:>9.0} leads/s   server RSS peak {peak:.0} MiB, \
         {settled:.0} MiB once idle"
    );
    println!(
        "    POST /leads/import-csv     : {csv:>9.0} leads/s   server RSS peak {csv_peak:.0} MiB"
    );
    println!(
        "    the app's upload           : {app:>9.0} leads/s   server RSS peak {app_peak:.0} MiB"
    );
    println!(
        "    lps import                 : {cli:>9.0} leads/s   server RSS peak \
         {cli_server_peak:.0} MiB, lps import's {cli_peak:.0} MiB"
    );
    println!(
        "    share of the API's rate    : import-csv {:.2}x, the app {:.2}x, lps import {:.2}x",
        csv / api,
        app / api,
        cli / api
    );
    println!("    storage ceiling (1 bulk tx): {ceiling:>9.0} leads/s");
    println!("    ratio API / ceiling        : {:.2}", api / ceiling);
    if !db.is_postgres() {
        match ingest::plain_insert(&db, None) {
            Some(anchor) => {
                println!(
                    "    plain insert (Python sqlite3, same indexes, 1,000 rows a tx): {anchor:>9.0} leads/s"
                );
                println!("    ratio API / plain insert   : {:.2}", api / anchor);
            }
            None => println!("    plain insert: python3 not found or failed"),
        }
    }
}

#[tokio::main]
async fn main() {
    println!(
        "Ingest of {TOTAL} leads as {} x {} (release build, 2 cores shared with the client)",
        ingest::REQUESTS,
        ingest::PER_REQUEST
    );
    run("SQLite", || TestDb::on(None)).await;
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
        run("PostgreSQL", || TestDb::on(Some(postgres.clone()))).await;
    } else {
        println!("\nPostgreSQL: skipped ({postgres} unreachable)");
    }
}
