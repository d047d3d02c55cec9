//! Metrics in the Prometheus text format (`metrics` with `metrics-exporter-prometheus`), every
//! name in this file. Two kinds:
//!
//! - events this process saw, counted as they happen: HTTP requests, gRPC calls, rate-limit
//!   refusals, page cache hits and misses, beacons, lead rows stored, jobs finished, callback
//!   attempts. Summed across processes.
//! - the state of the whole deployment, read from the database every [`SAMPLE_EVERY`] by
//!   each core process ([`sample_forever`]): jobs waiting or running, callbacks, design runs and
//!   enrichments by status, credits spent and given back. Every core process reports the same
//!   figures: aggregate them with `max`, not `sum`.
//!
//! No label ever carries tenant data: routes are templates, gRPC methods are the fixed method
//! names, statuses are fixed words.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics::{Counter, counter, describe_counter, describe_gauge, gauge};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

mod histogram;
use histogram::{Family, Histogram};

use crate::App;
use crate::store::deployment;

/// How often core reads the deployment's state from the database.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// Latency buckets, in seconds: sub-millisecond page hits to slow bulk calls.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Job latency buckets, in seconds: from a one-lead upsert to a large import.
const JOB_BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process's recorder (once; later calls return the same handle). Histograms are
/// this module's own ([`histogram`]: counted into their buckets as values are recorded), so the
/// exporter keeps no values and needs no upkeep.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let handle = PrometheusBuilder::new()
            .install_recorder()
            .expect("no other metrics recorder is installed");
        describe();
        handle
    })
}

/// Whether metrics are kept (`--metrics off` installs nothing: nothing is recorded).
fn installed() -> bool {
    HANDLE.get().is_some()
}

static HTTP_LATENCY: Family = Family::new(
    HTTP_DURATION,
    "HTTP request latency, by route template and method.",
    &LATENCY_BUCKETS,
);
static GRPC_LATENCY: Family = Family::new(
    GRPC_DURATION,
    "Latency of calls into core from gRPC clients (not from this process's own edge, timed as HTTP requests) until their answer starts, by method.",
    &LATENCY_BUCKETS,
);
static JOB_LATENCY: Family = Family::new(
    JOB_DURATION,
    "Time from a lead job's acceptance to its last row stored.",
    &JOB_BUCKETS,
);

/// What a scrape runs first: gauges of this process's own state that are cheapest to read
/// when asked (the page cache's size).
type ScrapeHook = Box<dyn Fn() + Send + Sync>;
static SCRAPE_HOOKS: std::sync::Mutex<Vec<ScrapeHook>> = std::sync::Mutex::new(Vec::new());

/// Runs `hook` at the start of every scrape.
pub fn on_scrape(hook: impl Fn() + Send + Sync + 'static) {
    SCRAPE_HOOKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Box::new(hook));
}

/// The scrape: every metric in the Prometheus text format (empty before [`install`]).
pub fn render() -> String {
    for hook in SCRAPE_HOOKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
    {
        hook();
    }
    let Some(handle) = HANDLE.get() else {
        return String::new();
    };
    let mut text = handle.render();
    for family in [&HTTP_LATENCY, &GRPC_LATENCY, &JOB_LATENCY] {
        family.render(&mut text);
    }
    text
}

const HTTP_REQUESTS: &str = "lps_http_requests_total";
const HTTP_DURATION: &str = "lps_http_request_duration_seconds";
const GRPC_CALLS: &str = "lps_grpc_requests_total";
const GRPC_DURATION: &str = "lps_grpc_request_duration_seconds";
const RATE_LIMITED: &str = "lps_rate_limit_refusals_total";
const PAGE_CACHE: &str = "lps_page_cache_requests_total";
const PAGE_CACHE_BYTES: &str = "lps_page_cache_bytes";
const PAGE_CACHE_PAGES: &str = "lps_page_cache_pages";
const PREVIEW_CARDS_DRAWN: &str = "lps_preview_cards_drawn_total";
const PREVIEW_CARDS_ANSWERED: &str = "lps_preview_cards_answered_total";
const BEACONS_QUEUED: &str = "lps_beacons_received_total";
const BEACONS_RECORDED: &str = "lps_beacons_recorded_total";
const LEAD_ROWS: &str = "lps_lead_rows_total";
const JOBS_FINISHED: &str = "lps_jobs_finished_total";
const JOB_DURATION: &str = "lps_job_duration_seconds";
const CALLBACK_ATTEMPTS: &str = "lps_callback_attempts_total";
const ACME_ORDERS: &str = "lps_acme_orders_total";
const JOBS: &str = "lps_jobs";
const LEADS_QUEUED: &str = "lps_job_leads_queued";
const CALLBACKS: &str = "lps_callbacks";
const DESIGN_RUNS: &str = "lps_design_runs";
const ENRICHMENTS: &str = "lps_enrichments";
const CREDITS_SPENT: &str = "lps_credits_spent_total";
const CREDITS_REFUNDED: &str = "lps_credits_refunded_total";
const DB_CONNECTIONS: &str = "lps_db_connections";
use crate::store::DB_WAITING;

fn describe() {
    describe_counter!(
        HTTP_REQUESTS,
        "HTTP requests answered, by route template, method and status."
    );
    describe_counter!(
        GRPC_CALLS,
        "Calls into core (over the network or from the edge in process), by method and code."
    );
    describe_counter!(
        RATE_LIMITED,
        "Calls refused with 429, by bucket (credential or client address)."
    );
    describe_counter!(
        PAGE_CACHE,
        "Lead page requests by result: hit (from memory) or miss (rendered by core)."
    );
    describe_gauge!(
        PAGE_CACHE_BYTES,
        "Bytes of pages kept in memory (bounded by --page-cache-mb)."
    );
    describe_gauge!(PAGE_CACHE_PAGES, "Pages kept in memory.");
    describe_counter!(
        PREVIEW_CARDS_DRAWN,
        "Link-preview cards drawn, by card: lead, campaign (the stand-in without the lead's \
         values, once per published version) or plain (the brand colour alone)."
    );
    describe_counter!(
        PREVIEW_CARDS_ANSWERED,
        "Link-preview card requests answered, by the card that answered: lead, or a stand-in \
         (campaign, plain) when the lead's card could not be made in time."
    );
    describe_counter!(
        BEACONS_QUEUED,
        "Beacons from visitors' browsers, by outcome: accepted (queued) or refused (queue full)."
    );
    describe_counter!(
        BEACONS_RECORDED,
        "Beacons by outcome: recorded (with their class: person, counted; unconfirmed, \
         automated, scanner_network, kept but not counted), dropped (unknown page), throttled \
         (past an address's beacon budget)."
    );
    describe_counter!(
        LEAD_ROWS,
        "Input leads handled by the job worker, by outcome: stored or failed."
    );
    describe_counter!(JOBS_FINISHED, "Lead jobs this process finished, by status.");
    describe_counter!(
        CALLBACK_ATTEMPTS,
        "Callback deliveries tried, by outcome: delivered, retrying, failed (given up)."
    );
    describe_gauge!(
        JOBS,
        "Lead and enrichment jobs not yet ended, by kind and status (whole deployment)."
    );
    describe_gauge!(
        LEADS_QUEUED,
        "Input leads waiting for the job worker (whole deployment)."
    );
    describe_gauge!(
        CALLBACKS,
        "Callbacks by status: pending, delivered, failed (whole deployment)."
    );
    describe_gauge!(DESIGN_RUNS, "Design runs by status (whole deployment).");
    describe_gauge!(
        ENRICHMENTS,
        "Lead enrichments by status (whole deployment)."
    );
    describe_counter!(
        CREDITS_SPENT,
        "Credits spent since this process started, by reason (whole deployment)."
    );
    describe_counter!(
        CREDITS_REFUNDED,
        "Credits given back since this process started, by reason (whole deployment)."
    );
    describe_counter!(
        ACME_ORDERS,
        "Certificates this process ordered from the ACME server, by outcome: issued or failed."
    );
    describe_gauge!(
        DB_CONNECTIONS,
        "Database pool connections of this process, by state: in_use or idle."
    );
    describe_gauge!(
        DB_WAITING,
        "Write transactions of this process waiting for a connection or, on SQLite, their turn."
    );
}

/// One HTTP request answered.
pub fn http_request(route: &str, method: &http::Method, status: u16, seconds: f64) {
    let method = method_name(method);
    HTTP_HANDLES.with_borrow_mut(|handles| {
        let by_route = match handles.get_mut(route) {
            Some(by_route) => by_route,
            None => handles.entry(route.to_owned()).or_default(),
        };
        let (requests, duration) = by_route.entry((method, status)).or_insert_with(|| {
            (
                counter!(HTTP_REQUESTS, "route" => route.to_owned(), "method" => method,
                         "status" => status.to_string()),
                installed().then(|| HTTP_LATENCY.with(&[("route", route), ("method", method)])),
            )
        });
        requests.increment(1);
        if let Some(duration) = duration {
            duration.record(seconds);
        }
    });
}

/// One call into core, with its gRPC code (as a name, `OK`, `NOT_FOUND`, ...) and, unless the
/// edge already timed it, its latency.
pub fn grpc_call(method: &str, code: tonic::Code, seconds: Option<f64>) {
    let code = code_name(code);
    GRPC_HANDLES.with_borrow_mut(|handles| {
        let by_method = match handles.get_mut(method) {
            Some(by_method) => by_method,
            None => handles.entry(method.to_owned()).or_default(),
        };
        let (calls, duration) = by_method.entry(code).or_insert_with(|| {
            (
                counter!(GRPC_CALLS, "method" => method.to_owned(), "code" => code),
                installed().then(|| GRPC_LATENCY.with(&[("method", method)])),
            )
        });
        calls.increment(1);
        if let (Some(seconds), Some(duration)) = (seconds, duration) {
            duration.record(seconds);
        }
    });
}

// The registry's handles for the per-request metrics, kept per thread: finding a handle by its
// labels in the registry allocates the labels and looks them up under a shared lock on every
// request; here it is a lookup in a map no other thread touches.
// Routes and methods are templates and fixed names, so these maps stay small.
type Handles = (Counter, Option<Arc<Histogram>>);
type HttpHandles = HashMap<String, HashMap<(&'static str, u16), Handles>>;
type GrpcHandles = HashMap<String, HashMap<&'static str, Handles>>;
thread_local! {
    static HTTP_HANDLES: RefCell<HttpHandles> = RefCell::new(HashMap::new());
    static GRPC_HANDLES: RefCell<GrpcHandles> = RefCell::new(HashMap::new());
    static PAGE_CACHE_HIT: Counter = counter!(PAGE_CACHE, "result" => "hit");
    static PAGE_CACHE_MISS: Counter = counter!(PAGE_CACHE, "result" => "miss");
}

/// The method's name as a label; a method outside HTTP's own is `OTHER` (clients choose those).
fn method_name(method: &http::Method) -> &'static str {
    use http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "OTHER",
    }
}

fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "CANCELLED",
        Unknown => "UNKNOWN",
        InvalidArgument => "INVALID_ARGUMENT",
        DeadlineExceeded => "DEADLINE_EXCEEDED",
        NotFound => "NOT_FOUND",
        AlreadyExists => "ALREADY_EXISTS",
        PermissionDenied => "PERMISSION_DENIED",
        ResourceExhausted => "RESOURCE_EXHAUSTED",
        FailedPrecondition => "FAILED_PRECONDITION",
        Aborted => "ABORTED",
        OutOfRange => "OUT_OF_RANGE",
        Unimplemented => "UNIMPLEMENTED",
        Internal => "INTERNAL",
        Unavailable => "UNAVAILABLE",
        DataLoss => "DATA_LOSS",
        Unauthenticated => "UNAUTHENTICATED",
    }
}

/// A call refused for its rate limit; `bucket` is `credential` or `address`.
pub fn rate_limited(bucket: &'static str) {
    counter!(RATE_LIMITED, "bucket" => bucket).increment(1);
}

/// A lead page request answered from memory (`hit`) or by core (a miss).
pub fn page_cache(hit: bool) {
    // Every warm page counts one: its handle is this thread's own (see HTTP_HANDLES), not
    // found in the registry, nor in a map.
    let handle = match hit {
        true => &PAGE_CACHE_HIT,
        false => &PAGE_CACHE_MISS,
    };
    handle.with(|counter| counter.increment(1));
}

/// A link-preview card drawn (`card`: `domain::preview_cards::CardKind::name`).
pub fn preview_card_drawn(card: &'static str) {
    counter!(PREVIEW_CARDS_DRAWN, "card" => card).increment(1);
}

/// A link-preview card request answered with this card.
pub fn preview_card_answered(card: &'static str) {
    counter!(PREVIEW_CARDS_ANSWERED, "card" => card).increment(1);
}

/// The page cache's size.
pub fn page_cache_size(bytes: u64, pages: u64) {
    gauge!(PAGE_CACHE_BYTES).set(bytes as f64);
    gauge!(PAGE_CACHE_PAGES).set(pages as f64);
}

/// A beacon received by the edge: `accepted` into the queue or `refused`.
pub fn beacon_received(outcome: &'static str) {
    counter!(BEACONS_QUEUED, "outcome" => outcome).increment(1);
}

/// Beacons recorded, by class (`person`, `unconfirmed`, `automated`, `scanner_network`), and
/// those not recorded (`dropped`: for no page; `throttled`: past an address's budget).
pub fn beacons_recorded(recorded: &crate::domain::engagement::Recorded) {
    let stored = recorded
        .stored
        .iter()
        .map(|(class, n)| ("recorded", class.as_str(), n));
    let not_stored = [
        ("dropped", "", recorded.dropped),
        ("throttled", "", recorded.throttled),
    ];
    for (outcome, class, n) in stored.chain(not_stored) {
        if n > 0 {
            counter!(BEACONS_RECORDED, "outcome" => outcome, "class" => class).increment(n as u64);
        }
    }
}

/// Input leads the job worker handled in a committed batch.
pub fn lead_rows(stored: u64, failed: u64) {
    counter!(LEAD_ROWS, "outcome" => "stored").increment(stored);
    counter!(LEAD_ROWS, "outcome" => "failed").increment(failed);
}

/// A lead job's last rows were stored (`completed` or `failed`), `seconds` after it was accepted.
pub fn job_finished(status: &str, seconds: f64) {
    let status = if status == "failed" {
        "failed"
    } else {
        "completed"
    };
    counter!(JOBS_FINISHED, "status" => status).increment(1);
    if installed() {
        JOB_LATENCY.with(&[]).record(seconds);
    }
}

/// One callback delivery tried: `delivered`, `retrying` or `failed`.
pub fn callback_attempt(outcome: &'static str) {
    counter!(CALLBACK_ATTEMPTS, "outcome" => outcome).increment(1);
}

/// One certificate order finished: `issued` or `failed`.
pub fn acme_order(outcome: &'static str) {
    counter!(ACME_ORDERS, "outcome" => outcome).increment(1);
}

/// Reads the deployment's state every [`SAMPLE_EVERY`] until the process ends; credits are
/// counted from those recorded at `started` (the process's start) on.
pub async fn sample_forever(app: App, started: crate::time::Micros) {
    let mut credits = CreditCursor {
        last_id: None,
        started,
    };
    loop {
        if let Err(err) = sample(&app, &mut credits).await {
            tracing::warn!(error = %err, "metrics could not be read from the database");
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
}

/// Where the credit counters have read the ledger up to.
struct CreditCursor {
    last_id: Option<i64>,
    started: crate::time::Micros,
}

/// Ledger rows are read once they are this old, so a transaction still open when its row was
/// numbered has committed by then.
const LEDGER_SETTLE_MICROS: i64 = 2_000_000;

/// Statuses a gauge always shows (as 0 when none), so a series does not vanish when empty.
const OPEN_JOB_STATUSES: [&str; 4] = ["pending", "processing", "step_social", "step_import"];

async fn sample(app: &App, credits: &mut CreditCursor) -> crate::Result<()> {
    let pool = app.db.pool();
    let size = pool.size() as f64;
    let idle = pool.num_idle() as f64;
    gauge!(DB_CONNECTIONS, "state" => "in_use").set(size - idle);
    gauge!(DB_CONNECTIONS, "state" => "idle").set(idle);

    let open = deployment::open_jobs(pool, &OPEN_JOB_STATUSES).await?;
    for kind in ["upsert", "import", "enrich"] {
        for status in OPEN_JOB_STATUSES {
            let n = open
                .iter()
                .find(|(k, s, _)| k == kind && s == status)
                .map_or(0, |(_, _, n)| *n);
            gauge!(JOBS, "kind" => kind, "status" => status).set(n as f64);
        }
    }
    let queued = deployment::queued_leads(pool).await?;
    gauge!(LEADS_QUEUED).set(queued as f64);

    for (table, name, statuses) in [
        (
            "callbacks",
            CALLBACKS,
            &["pending", "delivered", "failed"][..],
        ),
        (
            "design_runs",
            DESIGN_RUNS,
            &["queued", "running", "success", "error", "cancelled"][..],
        ),
        (
            "enrichments",
            ENRICHMENTS,
            &["pending", "running", "done", "failed"][..],
        ),
    ] {
        let counts = deployment::counts_by_status(pool, table).await?;
        for status in statuses {
            let n = counts
                .iter()
                .find(|(s, _)| s == status)
                .map_or(0, |(_, n)| *n);
            gauge!(name, "status" => *status).set(n as f64);
        }
    }

    // Credits: the ledger since the last read (from the process's start).
    let settled = crate::time::now() - LEDGER_SETTLE_MICROS;
    let last_id = match credits.last_id {
        Some(id) => id,
        None => {
            let before = deployment::last_ledger_entry_before(pool, credits.started).await?;
            credits.last_id = Some(before.unwrap_or(0));
            return Ok(());
        }
    };
    let rows = deployment::ledger_entries_after(pool, last_id, settled).await?;
    for (id, amount, reason) in rows {
        credits.last_id = Some(id);
        let reason = match reason.as_str() {
            "design_run" | "design_run_refund" => "design_run",
            "enrichment" | "enrichment_refund" => "enrichment",
            _ => continue, // grants and renewals are neither spent nor given back
        };
        if amount < 0 {
            counter!(CREDITS_SPENT, "reason" => reason).increment(amount.unsigned_abs());
        } else {
            counter!(CREDITS_REFUNDED, "reason" => reason).increment(amount as u64);
        }
    }
    Ok(())
}
