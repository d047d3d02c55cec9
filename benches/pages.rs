//! Lead pages and the API side by side with nginx, in one run: a running `lps serve` (release,
//! SQLite) with 10,000 leads in a published campaign, and wrk (32 connections, random leads)
//! against
//! - nginx (one worker) serving the very same page bytes as static files at the same paths, and
//!   the very same JSON bytes `GET /hello-world-user` answers;
//! - lps's warm lead pages (with the tracking script, as visitors get them, from memory);
//! - lps's first visits: the same pages from a process keeping none (`--page-cache-mb 0`), so
//!   core renders each, as a lead's first visit;
//! - lps's router-only floor (an unknown path: a 404 JSON answered by the edge alone);
//! - authenticated `GET /api/external/v1/hello-world-user`;
//!
//! - ingest: 100,000 leads through `POST /leads/upsert-leads` (100 requests of 1,000, 4 in
//!   flight, until every job completed; the server on CPU 0, the client on CPU 1) against
//!   Python's `sqlite3` inserting the same leads into tables made like lps's, indexes included,
//!   1,000 rows a transaction (`support/plain_insert.py`, on CPU 0);
//! - beacons stored: a person's mix of beacons from 2,000 visitors (`support/beacon_mix.rs`)
//!   until every acknowledged one is in the database, against nginx answering them 204 into a
//!   buffered access log;
//! - warm pages, first visits and beacons while 1,000-lead requests stream in, p99 beside p99
//!   idle;
//! - with `BENCH_DATABASE_URL` (a PostgreSQL server; `benches/side-by-side` sets it when one
//!   answers on 127.0.0.1:5432): first visits on PostgreSQL against the same nginx, and ingest
//!   against `COPY` of the same rows into tables made like lps's;
//!
//! each figure and its anchor measured alternately in rounds (`BENCH_ROUNDS`, 3, each run after
//! `BENCH_WARMUP_SECONDS`, 1, of unmeasured warm-up), then a table of the medians, each ratio
//! the median of the rounds' own ratios, beside issue 50's goal; then pages and
//! hello-world-user on the measured process and on one started with `--metrics off` (or
//! tracing, or another build: see benches/README.md), alternately for several rounds
//! (`BENCH_METRICS_ROUNDS`, 5, of `BENCH_METRICS_SECONDS`, 3), compared by the median of the
//! rounds' ratios. With two CPUs or more, the servers run on CPU 0 and wrk on CPU 1. Also
//! prints the memory a kept page costs: resident memory before and after every page was
//! visited twice, on the measured process less on the first-visits process (which keeps none,
//! but fills SQLite's page caches the same way), divided by the pages.
//!
//! `benches/side-by-side` runs it (it checks for wrk and nginx first); or
//! `cargo bench --bench pages` (env: `BENCH_SECONDS`, default 5; `BENCH_CONNECTIONS`, 32;
//! `BENCH_LEADS`, 10,000).

#[path = "support/beacon_mix.rs"]
mod beacon_mix;
#[path = "../tests/api/common.rs"]
#[allow(dead_code)] // a benchmark uses part of the test harness
mod common;
#[path = "support/ingest.rs"]
mod ingest;
#[path = "support/load.rs"]
mod load;
#[path = "support/nginx.rs"]
mod nginx;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Server, TestDb, bootstrap, leads, live_campaign_with, rss_kib};
use load::env_or;
use nginx::Nginx;

/// Visits every page twice, as a lead's first visit and a repeat; the first round's bodies.
async fn visit_every_page_twice(server: &Server, paths: &[String]) -> Vec<Vec<u8>> {
    let mut bodies = Vec::with_capacity(paths.len());
    for round in 0..2 {
        for path in paths {
            let response = server.client.get(server.url_of(path)).send().await.unwrap();
            assert_eq!(response.status(), 200);
            let body = response.bytes().await.unwrap();
            assert!(
                body.windows(b"/p/track.js".len())
                    .any(|w| w == b"/p/track.js"),
                "pages carry the tracking script"
            );
            if round == 0 {
                bodies.push(body.to_vec());
            }
        }
    }
    bodies
}

fn main() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pinned = cpus >= 2;
    if pinned {
        // This process (and the servers it starts, which inherit it) on CPU 0; wrk on CPU 1.
        pin_self_to("0");
    }
    if Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("wrk is needed: sudo apt-get install wrk (or see benches/side-by-side)");
        std::process::exit(2);
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run(pinned));
}

async fn run(pinned: bool) {
    let seconds = env_or("BENCH_SECONDS", 5);
    let connections = env_or("BENCH_CONNECTIONS", 32);
    let count = env_or("BENCH_LEADS", 10_000) as usize;
    // BENCH_ONLY_POSTGRES=URL: the PostgreSQL rows alone (to measure a change to them quickly).
    if let Ok(url) = std::env::var("BENCH_ONLY_POSTGRES") {
        let dir = std::env::temp_dir().join(format!("lps-bench-pages-{}", std::process::id()));
        let rounds = env_or("BENCH_ROUNDS", 3).max(1) as usize;
        let load = Load {
            seconds,
            warm_up: env_or("BENCH_WARMUP_SECONDS", 1),
            connections,
            pinned,
        };
        let postgres = on_postgres(&url, &dir, count, rounds, &load).await;
        postgres.print();
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    // BENCH_ONLY_INGEST=1: the ingest row alone, on SQLite (to measure a change to it quickly).
    if std::env::var("BENCH_ONLY_INGEST").is_ok_and(|only| only == "1") {
        let rounds = env_or("BENCH_ROUNDS", 3).max(1) as usize;
        ingest_rounds(rounds, pinned).await.print();
        return;
    }
    let db = TestDb::on(None);
    let (account, paths) = published_pages(&db, count).await;
    // BENCH_ONLY_BEACONS=1: the beacons row alone, on SQLite (to measure a change to it
    // quickly; swap `target/.../lps` between runs to compare two builds).
    if std::env::var("BENCH_ONLY_BEACONS").is_ok_and(|only| only == "1") {
        let dir = std::env::temp_dir().join(format!("lps-bench-pages-{}", std::process::id()));
        beacons_alone(&db, &dir, &paths, pinned).await.row();
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let key = account.api_key.clone();
    let server = quiet_server(&db, &[]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = rss_kib(server.pid());

    // Every page visited twice (kept in memory), its bytes written where nginx serves them.
    let dir = std::env::temp_dir().join(format!("lps-bench-pages-{}", std::process::id()));
    let root = dir.join("www");
    let bodies = visit_every_page_twice(&server, &paths).await;
    let grown = rss_kib(server.pid()).saturating_sub(idle);
    let mut page_bytes = 0;
    for (path, body) in paths.iter().zip(&bodies) {
        page_bytes += body.len();
        let file = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    }
    // The bytes `GET /hello-world-user` answers, where nginx serves them too.
    let authorization = format!("Authorization: Bearer {key}");
    let hello_body = server
        .client
        .get(server.url("/hello-world-user"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    std::fs::write(root.join("hello.json"), &hello_body).unwrap();
    let script = dir.join("paths.lua");
    write_wrk_script(&script, &dir.join("paths.txt"), &paths);

    println!(
        "{count} leads, pages of {} bytes on average (tracking script included); {}",
        page_bytes / count.max(1),
        if pinned {
            "servers on CPU 0, wrk on CPU 1"
        } else {
            "one CPU: servers and wrk share it"
        }
    );
    println!(
        "resident memory: {:.1} MiB idle; grew {:.1} MiB once {count} pages were kept: {:.2} KiB per page",
        idle as f64 / 1024.0,
        grown as f64 / 1024.0,
        grown as f64 / count.max(1) as f64
    );
    // First visits: every page rendered by core, as a lead's first visit is (no page kept).
    let cold = first_visits_server(&db);
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The same visits on a process that keeps no page: what it grows by is what serving them
    // costs besides keeping them (SQLite's page caches filling up, the allocator's arenas), so
    // the difference is what keeping a page costs.
    let cold_idle = rss_kib(cold.pid());
    visit_every_page_twice(&cold, &paths).await;
    let served_unkept = rss_kib(cold.pid()).saturating_sub(cold_idle);
    let kept_page = grown.saturating_sub(served_unkept) as f64 / count.max(1) as f64;
    println!(
        "a process keeping no page grew {:.1} MiB over the same visits: a kept page costs {kept_page:.2} KiB",
        served_unkept as f64 / 1024.0,
    );

    // nginx serves the pages and the JSON, and answers beacons 204 into a buffered access log.
    let nginx = Nginx::start_with(&dir, &root, &nginx_beacons(&dir.join("beacons.log")));
    if nginx.is_none() {
        println!("nginx not installed (sudo apt-get install nginx): no static reference");
    }
    let nginx_url = nginx.as_ref().map(|nginx| nginx.url.clone());
    let pages_script = ["-s", script.to_str().unwrap()];
    let hello_header = ["-H", authorization.as_str()];
    let hello_json = nginx_url.as_ref().map(|url| format!("{url}/hello.json"));
    let json_label = format!("nginx, the same {} JSON bytes", hello_body.len());
    // Each figure of the table and its anchor, measured alternately: this machine's throughput
    // drifts by more than the goals' margins within a minute, so an anchor measured once at the
    // start and compared with figures taken minutes later says more about the drift than about
    // lps. Each run follows an unmeasured warm-up of the same kind (the first seconds pay for
    // new connections' buffers and cold caches, on either side).
    let figures = [
        Figure {
            label: "lps, random lead pages",
            pid: server.pid(),
            url: server.http.clone(),
            extra: &pages_script,
            anchor_label: "nginx, same bytes (static)",
            anchor_url: nginx_url.clone(),
            anchor_extra: &pages_script,
        },
        Figure {
            label: "lps, first visits (--page-cache-mb 0)",
            pid: cold.pid(),
            url: cold.http.clone(),
            extra: &pages_script,
            anchor_label: "nginx, same bytes (static)",
            anchor_url: nginx_url.clone(),
            anchor_extra: &pages_script,
        },
        Figure {
            label: "lps, GET /hello-world-user",
            pid: server.pid(),
            url: server.url("/hello-world-user"),
            extra: &hello_header,
            anchor_label: &json_label,
            anchor_url: hello_json.clone(),
            anchor_extra: &[],
        },
        Figure {
            label: "lps, router only (404)",
            pid: server.pid(),
            url: server.url_of("/no-such-path"),
            extra: &[],
            anchor_label: &json_label,
            anchor_url: hello_json.clone(),
            anchor_extra: &[],
        },
    ];
    let rounds = env_or("BENCH_ROUNDS", 3).max(1) as usize;
    let warm_up = env_or("BENCH_WARMUP_SECONDS", 1);
    println!(
        "each figure and its anchor alternately, {rounds} rounds of {seconds} s each after {warm_up} s of warm-up; medians in the table"
    );
    let load = Load {
        seconds,
        warm_up,
        connections,
        pinned,
    };
    let wrk = |label: &str, url: &str, extra: &[&str]| load.run(label, url, extra);
    let mut measured: Vec<(Vec<Figures>, Vec<Figures>)> =
        figures.iter().map(|_| (Vec::new(), Vec::new())).collect();
    for round in 0..rounds {
        for (figure, (lps, anchor)) in figures.iter().zip(&mut measured) {
            // Which goes first alternates, so neither always runs on a warmer machine.
            let lps_first = round % 2 == 1;
            for lps_turn in [lps_first, !lps_first] {
                if lps_turn {
                    // BENCH_PERF=FILE: a CPU profile of lps while it serves a figure (perf
                    // record) in the first round: the table's BENCH_PERF_FIGURE-th (from 0;
                    // warm pages unless told).
                    let profiled = env_or("BENCH_PERF_FIGURE", 0) as usize;
                    let profile = (round == 0
                        && figures
                            .get(profiled)
                            .is_some_and(|f| f.label == figure.label))
                    .then(|| std::env::var("BENCH_PERF").ok())
                    .flatten()
                    .map(|file| record_profile(&file, figure.pid));
                    lps.push(wrk(figure.label, &figure.url, figure.extra));
                    if let Some(profile) = profile {
                        stop_profile(profile);
                    }
                } else if let Some(url) = &figure.anchor_url {
                    anchor.push(wrk(figure.anchor_label, url, figure.anchor_extra));
                }
            }
        }
    }
    // BENCH_ONLY_REQUESTS=1: the four rows above alone (warm pages, first visits,
    // `GET /hello-world-user`, the router floor), to measure a change to a request's fixed costs
    // quickly; swap `target/.../lps` between runs to compare two builds.
    if std::env::var("BENCH_ONLY_REQUESTS").is_ok_and(|only| only == "1") {
        println!();
        request_rows(&measured);
        drop((nginx, cold, server));
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let beaconing = beacon_server(&db);
    let beacon_script = beacon_mix::write_wrk_script(&dir, &paths, common::DESKTOP_BROWSER);
    let database = beacon_mix::connect(&db.url).await;
    let beacons = beacon_rounds(
        &beaconing,
        &database,
        &beacon_script,
        nginx_url.as_deref(),
        pinned,
    )
    .await;
    drop(nginx);
    let under_import = under_an_import(
        &db,
        &key,
        account.workspace_id,
        &paths,
        [&cold, &beaconing],
        [&script, &beacon_script],
        &database,
        pinned,
    )
    .await;
    drop(cold);
    drop(beaconing);
    // What a full beacon queue takes: its bounds as this build documents them.
    let default_of = |flag: &str| serve_flag_default(flag).unwrap_or_else(|| "?".to_owned());
    println!(
        "a full beacon queue takes at most {} MiB of memory (--beacon-queue-mb), then {} MiB of disk (--beacon-spill-mb)",
        default_of("--beacon-queue-mb"),
        default_of("--beacon-spill-mb"),
    );
    let ingest = ingest_rounds(rounds, pinned).await;
    // The same first visits and ingest on PostgreSQL (BENCH_DATABASE_URL, which
    // benches/side-by-side sets when a server answers on 127.0.0.1:5432).
    let postgres = match std::env::var("BENCH_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(on_postgres(&url, &dir, count, rounds, &load).await),
        _ => None,
    };
    println!();
    println!(
        "medians of {rounds} rounds; a ratio is the median of the rounds' own ratios (each lps run over the anchor run beside it)"
    );
    request_rows(&measured);
    beacons.row();
    for row in &under_import {
        row.print();
    }
    println!(
        "| a kept page (resident growth, keeping pages less not keeping them) | {kept_page:.2} KiB | - | - (<= 4.5 KiB) | - |"
    );
    ingest.print();
    match &postgres {
        Some(postgres) => postgres.print(),
        None => println!(
            "(no PostgreSQL rows: benches/side-by-side adds them when PostgreSQL answers on 127.0.0.1:5432, or set BENCH_DATABASE_URL)"
        ),
    }

    // The cost of metrics: the same routes on a process that measures nothing, run alternately
    // with the measuring one (this machine's throughput drifts by more than the cost between
    // runs minutes apart), several rounds, compared by the median of the rounds' own ratios.
    // BENCH_BASELINE=PATH: instead, the same routes on another build of lps (an older commit's
    // `target/release/lps`), metrics on like this one: before and after in one sitting.
    // BENCH_COMPARE=tracing: instead, the same routes on a process exporting OpenTelemetry
    // traces of every request (OTLP/HTTP to a collector in this process that accepts them).
    let baseline = std::env::var("BENCH_BASELINE").ok();
    let tracing = std::env::var("BENCH_COMPARE").is_ok_and(|compare| compare == "tracing");
    let collector = match tracing {
        true => Some(accepting_collector().await),
        false => None,
    };
    let mut quiet_flags = QUIET.to_vec();
    let sample_ratio = std::env::var("BENCH_OTLP_SAMPLE_RATIO").unwrap_or_else(|_| "1".into());
    if let Some(collector) = &collector {
        quiet_flags.extend(["--otlp-endpoint", collector, "--otlp-protocol", "http"]);
        quiet_flags.extend(["--otlp-sample-ratio", sample_ratio.as_str()]);
    } else if baseline.is_none() {
        quiet_flags.extend(["--metrics", "off"]);
    }
    let quiet = match &baseline {
        Some(bin) => {
            let mut args = common::serve_args(&db);
            args.extend(&quiet_flags);
            Server::spawn_binary(bin, &args, true, true)
        }
        None => Server::serve(&db, &quiet_flags),
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    for path in &paths {
        let response = quiet.client.get(quiet.url_of(path)).send().await.unwrap();
        assert_eq!(response.status(), 200);
        response.bytes().await.unwrap();
    }
    let rounds = env_or("BENCH_METRICS_ROUNDS", 5) as usize;
    let round_seconds = env_or("BENCH_METRICS_SECONDS", 3);
    println!();
    let (this, other) = match (&baseline, tracing) {
        (Some(_), _) => ("this build", "baseline"),
        (None, true) => ("tracing off", "tracing on"),
        (None, false) => ("metrics on", "metrics off"),
    };
    println!("{this} and {other}, alternately, {rounds} rounds of {round_seconds} s per route:");
    let quick = |label: &str, url: &str, extra: &[&str]| {
        wrk_run(label, url, extra, round_seconds, connections, pinned).per_second
    };
    let pages_script = ["-s", script.to_str().unwrap()];
    let hello_header = ["-H", authorization.as_str()];
    let (mut pages_on, mut pages_off, mut hello_on, mut hello_off) =
        (vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        // Alternate which goes first, so neither always runs on a warmer machine.
        let on_first = round % 2 == 0;
        for on in [on_first, !on_first] {
            let (target, label, into) = if on {
                (&server, format!("pages, {this}"), &mut pages_on)
            } else {
                (&quiet, format!("pages, {other}"), &mut pages_off)
            };
            into.push(quick(&label, &target.http, &pages_script));
        }
        for on in [on_first, !on_first] {
            let (target, label, into) = if on {
                (&server, format!("hello, {this}"), &mut hello_on)
            } else {
                (&quiet, format!("hello, {other}"), &mut hello_off)
            };
            into.push(quick(
                &label,
                &target.url("/hello-world-user"),
                &hello_header,
            ));
        }
    }
    // The cost from the median of the rounds' own ratios (a round's two runs are next to each
    // other), as in the table above; the medians of the runs are shown beside it.
    let overhead = |on: &mut Vec<f64>, off: &mut Vec<f64>| {
        let ratio = median_ratio(on.iter().copied(), off.iter().copied());
        (median(on), median(off), (1.0 - ratio) * 100.0)
    };
    let (on, off, pages_cost) = overhead(&mut pages_on, &mut pages_off);
    println!("lead pages: median {on:.0} req/s {this}, {off:.0} {other}: cost {pages_cost:+.1}%");
    let (on, off, hello_cost) = overhead(&mut hello_on, &mut hello_off);
    println!(
        "GET /hello-world-user: median {on:.0} req/s {this}, {off:.0} {other}: cost {hello_cost:+.1}%"
    );
    if tracing {
        // The cost is the traced process's shortfall against the untraced one.
        let cost = |percent: f64| (1.0 - 1.0 / (1.0 - percent / 100.0)) * 100.0;
        println!(
            "tracing overhead (requests traced as --otlp-sample-ratio says, exported): lead pages {:+.1}%, GET /hello-world-user {:+.1}%",
            cost(pages_cost),
            cost(hello_cost)
        );
    } else if baseline.is_none() {
        println!(
            "metrics overhead (aim: under 3%): lead pages {pages_cost:+.1}%, GET /hello-world-user {hello_cost:+.1}%"
        );
    }
    drop(server);
    drop(quiet);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A published campaign of `count` leads on `db`, stored by a process that is then stopped
/// (its memory says little about pages: every measured server is a fresh process); the
/// account and the pages' paths.
async fn published_pages(db: &TestDb, count: usize) -> (common::Account, Vec<String>) {
    let account = bootstrap(db, &[]);
    let loading = Server::serve(db, &["--rate-limit-per-minute", "100000000"]);
    let (_, pages) = live_campaign_with(
        &loading,
        &account.api_key,
        account.workspace_id,
        "Bench",
        "Demo Invitation",
        leads("bench-", count),
    )
    .await;
    let paths = pages
        .iter()
        .map(|(_, url)| url.strip_prefix(&loading.http).unwrap().to_owned())
        .collect();
    (account, paths)
}

/// A process keeping no page (`--page-cache-mb 0`): every visit is a first visit, rendered by
/// core.
fn first_visits_server(db: &TestDb) -> Server {
    quiet_server(db, &["--page-cache-mb", "0"])
}

/// What every measured process is started with: no rate limit (the load is one client) and no
/// job worker (nothing runs beside the requests).
const QUIET: [&str; 4] = ["--rate-limit-per-minute", "100000000", "--job-workers", "0"];

/// A process started with [`QUIET`] and `more`.
fn quiet_server(db: &TestDb, more: &[&str]) -> Server {
    let flags: Vec<&str> = QUIET.iter().chain(more).copied().collect();
    Server::serve(db, &flags)
}

/// The ingest row on SQLite: each round's leads per second through the API and, right after,
/// Python's plain insert of the same leads.
struct IngestRow {
    ingested: Vec<f64>,
    plain_inserted: Vec<f64>,
}

impl IngestRow {
    fn print(&self) {
        ingest_row(
            "ingest, 100,000 leads (leads/s) : plain insert, same indexes",
            &self.ingested,
            &self.plain_inserted,
            "no python3",
            ">= 0.9x",
        );
    }
}

/// An ingest row of the table: lps's median beside its anchor's (`missing` when the anchor
/// could not run) and the median of the rounds' own ratios, which pair up like the HTTP
/// figures' (each anchor run right after its lps run).
fn ingest_row(label: &str, ingested: &[f64], anchor: &[f64], missing: &str, goal: &str) {
    let ratio = (anchor.len() == ingested.len() && !anchor.is_empty())
        .then(|| median_ratio(ingested.iter().copied(), anchor.iter().copied()));
    let anchor = match anchor.is_empty() {
        true => missing.to_owned(),
        false => format!("{:.0}", median(&mut anchor.to_vec())),
    };
    println!(
        "| {label} | {:.0} | {anchor} | {} ({goal}) | - |",
        median(&mut ingested.to_vec()),
        ratio.map_or("-".to_owned(), |ratio| format!("{ratio:.2}x")),
    );
}

/// Ingest: 100,000 leads through the API (the server on CPU 0, this process sending them from
/// CPU 1), then Python's sqlite3 inserting the same leads into tables made like lps's, on CPU
/// 0; each round on a new database.
async fn ingest_rounds(rounds: usize, pinned: bool) -> IngestRow {
    let (mut ingested, mut plain_inserted) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let ingest_db = TestDb::on(None);
        let per_second = ingest_round(&ingest_db, pinned, "lps, ingest through the API").await;
        ingested.push(per_second);
        match ingest::plain_insert(&ingest_db, pinned.then_some("0")) {
            Some(anchor) => {
                println!(
                    "{:<30} {anchor:>9.0} leads/s",
                    "plain insert (Python sqlite3)"
                );
                plain_inserted.push(anchor);
            }
            None => println!("python3 not found or failed: no plain-insert anchor"),
        }
    }
    IngestRow {
        ingested,
        plain_inserted,
    }
}

/// One round of ingest through the API on `db` (the server on CPU 0, this process sending
/// from CPU 1 when `pinned`), printed as `label`; leads per second.
async fn ingest_round(db: &TestDb, pinned: bool, label: &str) -> f64 {
    let (per_second, _, _) = ingest::through_the_api(db, || {
        if pinned {
            pin_self_to("1");
        }
    })
    .await;
    if pinned {
        pin_self_to("0");
    }
    println!("{label:<30} {per_second:>9.0} leads/s");
    per_second
}

/// The PostgreSQL rows: first visits beside nginx serving the same bytes, and ingest beside
/// `COPY` of the same rows into the same tables.
struct OnPostgres {
    first_visits: Summary,
    ingested: Vec<f64>,
    copied: Vec<f64>,
}

impl OnPostgres {
    fn print(&self) {
        Summary::row(
            "first visits on PostgreSQL : nginx, same bytes",
            &self.first_visits,
            ">= 0.3x",
        );
        ingest_row(
            "ingest on PostgreSQL, 100,000 leads (leads/s) : COPY, same rows, same indexes",
            &self.ingested,
            &self.copied,
            "COPY failed",
            ">= 0.5x",
        );
    }
}

/// First visits and ingest on a database of their own on the PostgreSQL server `server`: the
/// same `count` leads in a published campaign served by a process keeping no page, beside
/// nginx serving the very same bytes, alternately; then ingest through the API beside `COPY`,
/// each round on a new database. With two CPUs or more, PostgreSQL's processes run on the
/// clients' CPU, off lps's ([`PostgresOffServersCpu`]).
async fn on_postgres(
    server: &str,
    dir: &Path,
    count: usize,
    rounds: usize,
    load: &Load,
) -> OnPostgres {
    println!("on PostgreSQL:");
    // Off lps's CPU for the whole section (back as they were when it ends): see
    // `PostgresOffServersCpu`.
    let _off_lps_cpu = load.pinned.then(PostgresOffServersCpu::move_to_clients_cpu);
    let db = TestDb::on(Some(server.to_owned()));
    let (_, paths) = published_pages(&db, count).await;
    let cold = first_visits_server(&db);
    let dir = dir.join("postgres");
    let root = dir.join("www");
    for (path, body) in paths
        .iter()
        .zip(visit_every_page_twice(&cold, &paths).await)
    {
        let file = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    }
    let script = dir.join("paths.lua");
    write_wrk_script(&script, &dir.join("paths.txt"), &paths);
    let nginx = Nginx::start(&dir, &root);
    let extra = ["-s", script.to_str().unwrap()];
    let (mut lps, mut anchor) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let lps_first = round % 2 == 1;
        for lps_turn in [lps_first, !lps_first] {
            if lps_turn {
                // BENCH_PERF_POSTGRES=FILE: a CPU profile of the whole machine (lps, PostgreSQL,
                // wrk, the kernel: `perf report --sort comm`) in the first round's run.
                // BENCH_PERF_POSTGRES_LPS=FILE: lps's own process alone, with DWARF call graphs.
                let profile = (round == 0)
                    .then(|| {
                        let machine = std::env::var("BENCH_PERF_POSTGRES").ok();
                        let lps = std::env::var("BENCH_PERF_POSTGRES_LPS").ok();
                        machine
                            .map(|file| record_machine_profile(&file))
                            .or_else(|| lps.map(|file| record_profile(&file, cold.pid())))
                    })
                    .flatten();
                lps.push(load.run("lps, first visits (PostgreSQL)", &cold.http, &extra));
                if let Some(profile) = profile {
                    stop_profile(profile);
                }
            } else if let Some(nginx) = &nginx {
                anchor.push(load.run("nginx, same bytes (static)", &nginx.url, &extra));
            }
        }
    }
    drop(nginx);
    drop(cold);
    let first_visits = Summary::of(&lps, &anchor);
    let (mut ingested, mut copied) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let ingest_db = TestDb::on(Some(server.to_owned()));
        let per_second = ingest_round(&ingest_db, load.pinned, "lps, ingest (PostgreSQL)").await;
        ingested.push(per_second);
        if let Some(anchor) = ingest::copy_anchor(&ingest_db).await {
            println!("{:<30} {anchor:>9.0} leads/s", "COPY (PostgreSQL)");
            copied.push(anchor);
        }
    }
    OnPostgres {
        first_visits,
        ingested,
        copied,
    }
}

/// The beacons row: lps's runs (stored per second, the share refused) and nginx's beside each.
struct BeaconRounds {
    /// Each round's beacons stored per second: acknowledged ones, over the time from the run's
    /// start until the last of them was in the database.
    stored: Vec<f64>,
    /// Each round's beacons acknowledged (204) per second, and the share refused (503).
    accepted: Vec<f64>,
    refused: Vec<f64>,
    /// Each round's nginx, answering the same beacons 204 into a buffered access log.
    anchor: Vec<f64>,
}

impl BeaconRounds {
    fn row(&self) {
        let (mut stored, mut accepted, mut refused) = (
            self.stored.clone(),
            self.accepted.clone(),
            self.refused.clone(),
        );
        let mut anchor = self.anchor.clone();
        let (ratio, anchor) = match anchor.len() == stored.len() && !anchor.is_empty() {
            true => (
                format!(
                    "{:.2}x",
                    median_ratio(self.stored.iter().copied(), self.anchor.iter().copied())
                ),
                format!("{:.0}", median(&mut anchor)),
            ),
            false => ("-".to_owned(), "no nginx".to_owned()),
        };
        println!(
            "| beacons stored (/s; {:.0} acknowledged/s, {:.1}% refused, goal < 1%) : nginx 204 + access log | {:.0} | {anchor} | {ratio} (>= 0.5x) | - |",
            median(&mut accepted),
            median(&mut refused) * 100.0,
            median(&mut stored),
        );
    }
}

/// A process of its own for beacons, trusting loopback as its proxy (each visitor's address is
/// its own), with budgets that start empty.
fn beacon_server(db: &TestDb) -> Server {
    quiet_server(db, &["--trusted-proxies", "127.0.0.1/32"])
}

/// nginx's anchor for beacons: each answered 204 and written to a buffered access log at `log`.
fn nginx_beacons(log: &Path) -> String {
    format!(
        "location ~ /beacon$ {{ access_log {} combined buffer=64k flush=1s; return 204; }}",
        log.display()
    )
}

/// The table's head and its four request rows (warm pages, first visits, `GET
/// /hello-world-user`, the router floor), from each figure's runs and its anchor's.
fn request_rows(measured: &[(Vec<Figures>, Vec<Figures>)]) {
    println!(
        "| figure | lps req/s (p99) | anchor req/s (p99) | ratio (goal) | p99 ratio (goal <= 1.5x) |"
    );
    println!("|---|---|---|---|---|");
    let rows = [
        ("warm pages : nginx, same bytes", ">= 1.2x"),
        ("first visits : nginx, same bytes", ">= 0.6x"),
        ("GET /hello-world-user : nginx, same JSON", ">= 0.9x"),
        ("router floor (404) : nginx, same JSON", ">= 1.0x"),
    ];
    for ((label, goal), (lps, anchor)) in rows.into_iter().zip(measured) {
        Summary::row(label, &Summary::of(lps, anchor), goal);
    }
}

/// The beacons row alone (`BENCH_ONLY_BEACONS`): nginx answering them into its log, and lps's
/// beacon process, on `db`'s published `paths`, files under `dir`.
async fn beacons_alone(db: &TestDb, dir: &Path, paths: &[String], pinned: bool) -> BeaconRounds {
    let root = dir.join("www");
    std::fs::create_dir_all(&root).unwrap();
    let nginx = Nginx::start_with(dir, &root, &nginx_beacons(&dir.join("beacons.log")));
    let server = beacon_server(db);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let script = beacon_mix::write_wrk_script(dir, paths, common::DESKTOP_BROWSER);
    let database = beacon_mix::connect(&db.url).await;
    let url = nginx.as_ref().map(|nginx| nginx.url.clone());
    beacon_rounds(&server, &database, &script, url.as_deref(), pinned).await
}

/// Beacons (`beacon_mix.rs`) sent by wrk to a fresh `lps serve` on `db` and to nginx at
/// `nginx`, alternately, in the rounds the other figures run; lps's count once every beacon it
/// acknowledged is in the database.
async fn beacon_rounds(
    server: &Server,
    database: &sqlx::AnyPool,
    script: &Path,
    nginx: Option<&str>,
    pinned: bool,
) -> BeaconRounds {
    let seconds = env_or("BENCH_SECONDS", 5);
    let connections = env_or("BENCH_CONNECTIONS", 32);
    let rounds = env_or("BENCH_ROUNDS", 3).max(1) as usize;
    let warm_up = env_or("BENCH_WARMUP_SECONDS", 1);
    let database = database.clone();
    // Every run from a set of visitors of its own (`beacon_mix::wrk_args`).
    let send = |label: &str, url: &str, seconds: u64| {
        let args = beacon_mix::wrk_args(script);
        wrk_run(label, url, &args, seconds, connections, pinned)
    };
    let mut out = BeaconRounds {
        stored: Vec::new(),
        accepted: Vec::new(),
        refused: Vec::new(),
        anchor: Vec::new(),
    };
    println!(
        "beacons (a person's mix from 2,000 visitors; until every acknowledged one is stored):"
    );
    for round in 0..rounds {
        let lps_first = round % 2 == 1;
        for lps_turn in [lps_first, !lps_first] {
            if !lps_turn {
                if let Some(url) = nginx {
                    if warm_up > 0 {
                        send("(warm-up)", url, warm_up);
                    }
                    let run = send("nginx, 204 + access log", url, seconds);
                    out.anchor.push(run.per_second);
                }
                continue;
            }
            // Warm-up, and everything it sent stored, before the measured run starts.
            let url = server.http.as_str();
            let before = beacon_mix::stored(&database).await;
            if warm_up > 0 {
                let run = send("(warm-up)", url, warm_up);
                until_stored(&database, before + (run.requests - run.refused) as i64).await;
            }
            let before = beacon_mix::stored(&database).await;
            // BENCH_PERF_BEACONS=FILE: a CPU profile of lps from the first round's start until
            // what it acknowledged is stored.
            let profile = (round == 0)
                .then(|| std::env::var("BENCH_PERF_BEACONS").ok())
                .flatten()
                .map(|file| record_profile(&file, server.pid()));
            let started = std::time::Instant::now();
            let run = send("lps, beacons answered", url, seconds);
            let acknowledged = run.requests - run.refused;
            until_stored(&database, before + acknowledged as i64).await;
            if let Some(profile) = profile {
                stop_profile(profile);
            }
            let stored_per_second = acknowledged as f64 / started.elapsed().as_secs_f64();
            println!(
                "{:<30} {stored_per_second:>9.0} beacons/s (all {acknowledged} in the database after {:.2} s)",
                "lps, beacons stored",
                started.elapsed().as_secs_f64()
            );
            out.stored.push(stored_per_second);
            out.accepted.push(acknowledged as f64 / seconds as f64);
            out.refused
                .push(run.refused as f64 / run.requests.max(1) as f64);
        }
    }
    out
}

/// A row of the p99 latencies of one kind of request with an import running beside them.
struct UnderImport {
    label: &'static str,
    idle_p99_ms: Vec<f64>,
    importing_p99_ms: Vec<f64>,
    leads_accepted: Vec<usize>,
}

impl UnderImport {
    fn print(&self) {
        let mut idle = self.idle_p99_ms.clone();
        let mut importing = self.importing_p99_ms.clone();
        let mut leads: Vec<f64> = self.leads_accepted.iter().map(|&n| n as f64).collect();
        println!(
            "| {} while an import runs ({:.0} leads accepted a run), p99 : the same idle | {:.2} ms | {:.2} ms | - | {:.2}x (<= 2x) |",
            self.label,
            median(&mut leads),
            median(&mut importing),
            median(&mut idle),
            median_ratio(
                self.importing_p99_ms.iter().copied(),
                self.idle_p99_ms.iter().copied()
            ),
        );
    }
}

/// Warm pages, first visits and beacons, each idle and then while leads are imported through
/// the API (requests of 1,000 new leads, 4 in flight, for the whole run), in rounds: the p99
/// of each beside its idle p99. The import runs in a process of its own that also serves the
/// warm pages (its job worker storing the leads beside the requests on the same runtime);
/// first visits and beacons are `processes`' (a process keeping no page, and the beacons'),
/// on the same database and CPU. `scripts` are their wrk scripts (pages, beacons).
#[allow(clippy::too_many_arguments)]
async fn under_an_import(
    db: &TestDb,
    key: &str,
    workspace_id: i64,
    paths: &[String],
    processes: [&Server; 2],
    scripts: [&Path; 2],
    database: &sqlx::AnyPool,
    pinned: bool,
) -> Vec<UnderImport> {
    let seconds = env_or("BENCH_SECONDS", 5);
    let connections = env_or("BENCH_CONNECTIONS", 32);
    let rounds = env_or("BENCH_ROUNDS", 3).max(1) as usize;
    let importing = Server::serve(db, &["--rate-limit-per-minute", "100000000"]);
    // The import's client (this process: 1,000 leads made into JSON each request) on the
    // clients' CPU, beside wrk, as ingest's is: on the servers' CPU it took their time.
    if pinned {
        pin_self_to("1");
    }
    // Its pages kept, as the measured process's are.
    visit_every_page_twice(&importing, paths).await;
    let (campaign, _) =
        common::create_campaign(&importing, key, workspace_id, "Imported meanwhile").await;
    let [cold, beaconing] = processes;
    let [pages_script, beacon_script] = scripts;
    let targets = [
        ("warm pages", importing.http.clone(), pages_script),
        ("first visits", cold.http.clone(), pages_script),
        ("beacons answered", beaconing.http.clone(), beacon_script),
    ];
    let is_beacons = |script: &Path| script == beacon_script;
    let mut rows: Vec<UnderImport> = targets
        .iter()
        .map(|(label, _, _)| UnderImport {
            label,
            idle_p99_ms: Vec::new(),
            importing_p99_ms: Vec::new(),
            leads_accepted: Vec::new(),
        })
        .collect();
    println!("idle, then while an import runs:");
    for _ in 0..rounds {
        for ((label, url, script), row) in targets.iter().zip(&mut rows) {
            let run = |label: String| {
                let url = url.clone();
                let args = if is_beacons(script) {
                    beacon_mix::wrk_args(script).to_vec()
                } else {
                    vec!["-s".to_owned(), script.display().to_string()]
                };
                tokio::task::spawn_blocking(move || {
                    wrk_run(&label, &url, &args, seconds, connections, pinned)
                })
            };
            // Idle: what the last run imported is stored first.
            until_imported(database).await;
            let stored = beacon_mix::stored(database).await;
            let idle = run(format!("lps, {label}, idle")).await.unwrap();
            if is_beacons(script) {
                until_stored(database, stored + (idle.requests - idle.refused) as i64).await;
            }
            row.idle_p99_ms.push(idle.p99_ms);
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let import = {
                let (importing, key, stop) = (&importing, key.to_owned(), stop.clone());
                async move { ingest::import_until(importing, &key, campaign, stop).await }
            };
            let measured = async {
                // The import under way (its first requests stored) before the run starts.
                tokio::time::sleep(Duration::from_millis(500)).await;
                let stored = beacon_mix::stored(database).await;
                let run = run(format!("lps, {label}, importing")).await.unwrap();
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                (run, stored)
            };
            let (leads, (during, stored)) = tokio::join!(import, measured);
            if is_beacons(script) {
                until_stored(database, stored + (during.requests - during.refused) as i64).await;
            }
            row.importing_p99_ms.push(during.p99_ms);
            row.leads_accepted.push(leads);
        }
    }
    if pinned {
        pin_self_to("0");
    }
    rows
}

/// Waits until no import job is left to finish (two minutes at most).
async fn until_imported(database: &sqlx::AnyPool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let left: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM jobs WHERE status IN ('pending', 'processing')",
        )
        .fetch_one(database)
        .await
        .expect("jobs left");
        if left == 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{left} import jobs not finished in two minutes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the database holds `target` events (the largest id); two minutes without is a
/// failure that says so (acknowledged beacons lost, or dropped by a budget), never a hang.
async fn until_stored(database: &sqlx::AnyPool, target: i64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let stored = beacon_mix::stored(database).await;
        if stored >= target {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "acknowledged beacons not all stored within two minutes: {stored} of {target}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// An OTLP/HTTP collector on loopback that accepts every export and keeps nothing: the traced
/// process pays for building and sending its spans, not for a slow receiver.
async fn accepting_collector() -> String {
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(|_body: axum::body::Bytes| async { axum::http::StatusCode::OK }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// PostgreSQL's processes on this machine moved to the clients' CPU ([`CLIENTS_CPU`]) while the
/// PostgreSQL rows are measured, and back to the CPUs each had when dropped. Left where the
/// kernel put them, the backend answering lps's lookups ran on lps's CPU in some rounds and not
/// in others (sampled 20 times a second: up to 90% of a second on CPU 0 in rounds of 17-20k
/// first visits a second, 0-5% in one of 31k), so the figure measured the scheduler's placement
/// more than lps: on a machine of its own, a database takes none of lps's CPU. Processes forked
/// later (a new connection's backend) inherit the postmaster's CPU. `BENCH_POSTGRES_UNPINNED=1`
/// leaves them where they are; so does a server that is not on this machine, or one this user
/// may not move.
struct PostgresOffServersCpu {
    /// Each process moved, with the CPUs it had.
    moved: Vec<(String, String)>,
}

impl PostgresOffServersCpu {
    fn move_to_clients_cpu() -> Self {
        let mut moved = Vec::new();
        if std::env::var("BENCH_POSTGRES_UNPINNED").is_ok_and(|v| !v.is_empty()) {
            println!(
                "PostgreSQL's processes stay where the kernel puts them (BENCH_POSTGRES_UNPINNED)"
            );
            return Self { moved };
        }
        let online = online_cpus();
        for (pid, cpus) in postgres_processes() {
            // One already on the clients' CPU alone is taken to be one a killed run (no drop)
            // left there: it goes back to every CPU online.
            let cpus = match &online {
                Some(online) if cpus == CLIENTS_CPU => online.clone(),
                _ => cpus,
            };
            if set_cpus(&pid, CLIENTS_CPU) {
                moved.push((pid, cpus));
            }
        }
        if moved.is_empty() {
            println!(
                "PostgreSQL's processes stay where the kernel puts them (none found or moved)"
            );
        } else {
            println!(
                "PostgreSQL's {} processes on CPU {CLIENTS_CPU} (the clients')",
                moved.len()
            );
        }
        Self { moved }
    }
}

impl Drop for PostgresOffServersCpu {
    /// Each process moved back to the CPUs it had; one forked meanwhile (it inherited the
    /// clients' CPU from the postmaster: another client's backend, say) to every CPU online.
    fn drop(&mut self) {
        if self.moved.is_empty() {
            return;
        }
        let online = online_cpus();
        for (pid, cpus) in postgres_processes() {
            let back = match self.moved.iter().find(|(moved, _)| *moved == pid) {
                Some((_, had)) => Some(had),
                None if cpus == CLIENTS_CPU => online.as_ref(),
                None => None,
            };
            if let Some(back) = back {
                set_cpus(&pid, back);
            }
        }
    }
}

/// Every `postgres` process on this machine, with the CPUs it may run on (a `taskset` list).
fn postgres_processes() -> Vec<(String, String)> {
    let pids = Command::new("pgrep")
        .args(["-x", "postgres"])
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default();
    pids.split_whitespace()
        .filter_map(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let cpus = status
                .lines()
                .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))?;
            Some((pid.to_owned(), cpus.trim().to_owned()))
        })
        .collect()
}

/// The CPU PostgreSQL's processes run on while its rows are measured (wrk's and the clients').
const CLIENTS_CPU: &str = "1";

/// The CPUs this machine has online (a `taskset` list such as `0-1`).
fn online_cpus() -> Option<String> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .map(|cpus| cpus.trim().to_owned())
        .filter(|cpus| !cpus.is_empty())
}

/// Moves every thread of process `pid` to `cpus` (a `taskset` list); whether it could.
fn set_cpus(pid: &str, cpus: &str) -> bool {
    Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, pid])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Moves every thread of this process to `cpu` (processes it starts later inherit it).
fn pin_self_to(cpu: &str) {
    if !set_cpus(&std::process::id().to_string(), cpu) {
        eprintln!("taskset failed: the benchmark's threads stay where they were");
    }
}

fn median(figures: &mut [f64]) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures[figures.len() / 2]
}

/// The median of the rounds' own ratios: each of `over`'s runs over the run of `under` beside
/// it (a round's two runs are next to each other, so their ratio carries less of the machine's
/// drift than a ratio of medians taken from different rounds).
fn median_ratio(over: impl IntoIterator<Item = f64>, under: impl IntoIterator<Item = f64>) -> f64 {
    let mut ratios: Vec<f64> = over.into_iter().zip(under).map(|(o, u)| o / u).collect();
    median(&mut ratios)
}

/// What one wrk run measured.
#[derive(Default)]
struct Figures {
    per_second: f64,
    p99_ms: f64,
    /// Requests answered in all, and of them answered other than 2xx or 3xx.
    requests: u64,
    refused: u64,
}

/// A figure of the table: lps's run and its anchor's (none without nginx).
struct Figure<'a> {
    label: &'a str,
    /// The lps process that answers it (the one a profile records).
    pid: u32,
    url: String,
    extra: &'a [&'a str],
    anchor_label: &'a str,
    anchor_url: Option<String>,
    anchor_extra: &'a [&'a str],
}

/// A figure of the table from its rounds: the medians of lps's runs and of its anchor's, and
/// the medians of the rounds' own ratios ([`median_ratio`]: throughput, then p99). The
/// machine's speed drifts between rounds by more than the goals' margins.
struct Summary {
    lps: Figures,
    anchor: Option<Figures>,
    ratios: Option<(f64, f64)>,
}

impl Summary {
    /// The figure's line of the table, beside its anchor, with its goal.
    fn row(figure: &str, summary: &Summary, goal: &str) {
        let lps = &summary.lps;
        let (anchor, ratio, p99_ratio) = match (&summary.anchor, summary.ratios) {
            (Some(anchor), Some((ratio, p99_ratio))) => (
                format!("{:.0} ({:.2} ms)", anchor.per_second, anchor.p99_ms),
                format!("{ratio:.2}x"),
                format!("{p99_ratio:.2}x"),
            ),
            _ => ("no nginx".to_owned(), "-".to_owned(), "-".to_owned()),
        };
        println!(
            "| {figure} | {:.0} ({:.2} ms) | {anchor} | {ratio} ({goal}) | {p99_ratio} |",
            lps.per_second, lps.p99_ms
        );
    }

    fn of(lps: &[Figures], anchor: &[Figures]) -> Self {
        let ratios = (!anchor.is_empty() && anchor.len() == lps.len()).then(|| {
            let of = |runs: &[Figures], figure: fn(&Figures) -> f64| {
                runs.iter().map(figure).collect::<Vec<_>>()
            };
            (
                median_ratio(of(lps, |f| f.per_second), of(anchor, |f| f.per_second)),
                median_ratio(of(lps, |f| f.p99_ms), of(anchor, |f| f.p99_ms)),
            )
        });
        Self {
            lps: median_figures(lps).expect("every figure is measured"),
            anchor: median_figures(anchor),
            ratios,
        }
    }
}

/// The median of several runs' requests per second and, apart, of their p99 latencies.
fn median_figures(runs: &[Figures]) -> Option<Figures> {
    if runs.is_empty() {
        return None;
    }
    let mut per_second: Vec<f64> = runs.iter().map(|run| run.per_second).collect();
    let mut p99_ms: Vec<f64> = runs.iter().map(|run| run.p99_ms).collect();
    Some(Figures {
        per_second: median(&mut per_second),
        p99_ms: median(&mut p99_ms),
        ..Figures::default()
    })
}

/// The default of a flag of `lps serve`, as its `--help` says (`[default: N]`).
fn serve_flag_default(flag: &str) -> Option<String> {
    let help = Command::new(common::lps_binary())
        .args(["serve", "--help"])
        .output()
        .ok()?;
    let help = String::from_utf8_lossy(&help.stdout);
    let after = &help[help.find(&format!("{flag} <"))?..];
    let default = &after[after.find("[default: ")? + "[default: ".len()..];
    Some(default[..default.find(']')?].to_owned())
}

/// `perf record` of every CPU (frame-pointer call graphs) into `file`, until interrupted.
fn record_machine_profile(file: &str) -> std::process::Child {
    Command::new("perf")
        .args(["record", "-a", "-g", "-F", "999", "-o", file])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("perf runs")
}

/// Stops a `perf record` as Ctrl-C would, so that it writes its file out.
fn stop_profile(mut profile: std::process::Child) {
    let _ = Command::new("kill")
        .args(["-INT", &profile.id().to_string()])
        .status();
    let _ = profile.wait();
}

/// `perf record` of the process `pid` (DWARF call graphs) into `file`, until interrupted.
fn record_profile(file: &str, pid: u32) -> std::process::Child {
    Command::new("perf")
        .args([
            "record",
            "-F",
            "999",
            "--call-graph",
            "dwarf,16384",
            "-o",
            file,
            "-p",
        ])
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("perf runs")
}

fn wrk_run(
    label: &str,
    url: &str,
    extra: &[impl AsRef<std::ffi::OsStr>],
    seconds: u64,
    connections: u64,
    pinned: bool,
) -> Figures {
    // wrk hands its script what follows the address: `extra`'s part from "--" goes there.
    let script_args = extra
        .iter()
        .position(|arg| arg.as_ref() == "--")
        .unwrap_or(extra.len());
    let output = wrk_command(pinned)
        .args([
            "-t1",
            &format!("-c{connections}"),
            &format!("-d{seconds}s"),
            "--latency",
        ])
        .args(&extra[..script_args])
        .arg(url)
        .args(&extra[script_args..])
        .output()
        .expect("wrk runs");
    let text = String::from_utf8_lossy(&output.stdout);
    let per_second = text
        .lines()
        .find_map(|line| line.strip_prefix("Requests/sec:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0.0);
    let p99_ms = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("99%"))
        .map_or(0.0, |latency| milliseconds(latency.trim()));
    let count = |line: Option<&str>| {
        line.and_then(|n| n.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let requests = count(text.lines().find(|line| line.contains(" requests in ")));
    let refused = count(
        text.lines()
            .find_map(|line| line.trim().strip_prefix("Non-2xx or 3xx responses:")),
    );
    let errors = text
        .lines()
        .filter(|line| line.contains("Non-2xx") || line.contains("Socket errors"))
        .collect::<Vec<_>>()
        .join("; ");
    println!(
        "{label:<30} {per_second:>9.0} req/s   p99 {p99_ms:>6.2} ms{}",
        if errors.is_empty() {
            String::new()
        } else {
            format!("   ({})", errors.trim())
        }
    );
    Figures {
        per_second,
        p99_ms,
        requests,
        refused,
    }
}

/// How every figure of the table is measured: wrk with `connections` for `seconds`, after
/// `warm_up` seconds of the same, unmeasured (the first seconds pay for new connections'
/// buffers and cold caches, on either side); on CPU 1 when `pinned`.
struct Load {
    seconds: u64,
    warm_up: u64,
    connections: u64,
    pinned: bool,
}

impl Load {
    fn run(&self, label: &str, url: &str, extra: &[&str]) -> Figures {
        if self.warm_up > 0 {
            let _ = wrk_command(self.pinned)
                .args([
                    "-t1",
                    &format!("-c{}", self.connections),
                    &format!("-d{}s", self.warm_up),
                ])
                .args(extra)
                .arg(url)
                .output();
        }
        wrk_run(
            label,
            url,
            extra,
            self.seconds,
            self.connections,
            self.pinned,
        )
    }
}

/// wrk, on CPU 1 when `pinned`.
fn wrk_command(pinned: bool) -> Command {
    if pinned {
        let mut command = Command::new("taskset");
        command.args(["-c", "1", "wrk"]);
        command
    } else {
        Command::new("wrk")
    }
}

/// wrk's latency (`812.00us`, `1.20ms`, `2.01s`) in milliseconds.
fn milliseconds(latency: &str) -> f64 {
    let split = latency
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(latency.len());
    let (number, unit) = latency.split_at(split);
    let number: f64 = number.parse().unwrap_or(0.0);
    match unit {
        "us" => number / 1000.0,
        "s" => number * 1000.0,
        "m" => number * 60_000.0,
        _ => number,
    }
}

/// A wrk script requesting the listed paths in random order (every connection its own).
fn write_wrk_script(script: &Path, list: &Path, paths: &[String]) {
    std::fs::write(list, paths.join("\n")).unwrap();
    std::fs::write(
        script,
        format!(
            r#"local paths = {{}}
for line in io.lines("{}") do paths[#paths + 1] = line end
request = function()
  return wrk.format("GET", paths[math.random(#paths)])
end
"#,
            list.display()
        ),
    )
    .unwrap();
}
