//! Ingest benchmark: 100,000 leads through `POST /leads/upsert-leads` in 100 requests of 1,000
//! (4 in flight) against a running `lps serve` (release build), waiting until every job has
//! completed; beside it the same leads as one CSV file through `POST /leads/import-csv`, through
//! the dashboard's upload (signed in, the recognised mapping accepted) and through `lps import`,
//! each until its jobs completed (a fresh server and database each), and each path's rate as a
//! share of the API's: the median of rounds run alternately (`LPS_BENCH_ROUNDS`, default 3). Prints leads per second end to end and the server's peak resident memory, for
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

/// Rounds of the four paths (`LPS_BENCH_ROUNDS`, default 3): each path's share of the API's
/// rate is the median of the rounds' shares, each round's taken in the same stretch of time,
/// so a slow minute of a shared machine moves both sides of a ratio.
fn rounds() -> usize {
    std::env::var("LPS_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3)
}

fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    let middle = figures.len() / 2;
    if figures.len().is_multiple_of(2) {
        (figures[middle - 1] + figures[middle]) / 2.0
    } else {
        figures[middle]
    }
}

/// One round's figures: leads per second and the server's peak memory per path.
struct Round {
    api: f64,
    api_peak: f64,
    settled: f64,
    csv: (f64, f64),
    app: (f64, f64),
    /// Rate, the server's peak and `lps import`'s own peak.
    cli: (f64, f64, f64),
}

/// Each path, and the ceiling, on a database of its own (`fresh`): one sharing the database
/// would pay for the rows the paths before it stored (larger indexes). The paths run in a
/// different order each round, so none always goes first.
async fn run(label: &str, fresh: impl Fn() -> TestDb) {
    println!("\n{label}");
    let mut all = Vec::new();
    for round in 0..rounds() {
        let mut api = None;
        let mut csv = None;
        let mut app = None;
        let mut cli = None;
        for path in 0..4 {
            match (path + round) % 4 {
                0 => api = Some(through_the_api(&fresh(), || {}).await),
                1 => csv = Some(ingest::through_import_csv(&fresh()).await),
                2 => app = Some(ingest::through_the_app(&fresh()).await),
                _ => cli = Some(ingest::through_lps_import(&fresh()).await),
            }
        }
        let (api, api_peak, settled) = api.expect("the API ran");
        let round = Round {
            api,
            api_peak,
            settled,
            csv: csv.expect("import-csv ran"),
            app: app.expect("the app ran"),
            cli: cli.expect("lps import ran"),
        };
        println!(
            "    round {}: API {:.0}/s; import-csv {:.2}x, the app {:.2}x, lps import {:.2}x",
            all.len() + 1,
            round.api,
            round.csv.0 / round.api,
            round.app.0 / round.api,
            round.cli.0 / round.api
        );
        all.push(round);
    }
    let db = fresh();
    let ceiling = storage_ceiling(&db).await;
    let rates = |path: fn(&Round) -> f64| median(all.iter().map(path).collect());
    let shares = |path: fn(&Round) -> f64| median(all.iter().map(|r| path(r) / r.api).collect());
    let peak = |path: fn(&Round) -> f64| all.iter().map(path).fold(0.0, f64::max);
    let api = rates(|r| r.api);
    println!(
        "    end to end through the API : {api:>9.0} leads/s   server RSS peak {:.0} MiB, \
         {:.0} MiB once idle",
        peak(|r| r.api_peak),
        peak(|r| r.settled)
    );
    println!(
        "    POST /leads/import-csv     : {:>9.0} leads/s   server RSS peak {:.0} MiB",
        rates(|r| r.csv.0),
        peak(|r| r.csv.1)
    );
    println!(
        "    the app's upload           : {:>9.0} leads/s   server RSS peak {:.0} MiB",
        rates(|r| r.app.0),
        peak(|r| r.app.1)
    );
    println!(
        "    lps import                 : {:>9.0} leads/s   server RSS peak {:.0} MiB, \
         lps import's {:.0} MiB",
        rates(|r| r.cli.0),
        peak(|r| r.cli.1),
        peak(|r| r.cli.2)
    );
    println!(
        "    share of the API's rate (median of {} rounds): import-csv {:.2}x, the app {:.2}x, \
         lps import {:.2}x",
        all.len(),
        shares(|r| r.csv.0),
        shares(|r| r.app.0),
        shares(|r| r.cli.0)
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
