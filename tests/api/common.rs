//! Test harness: runs the real `lps` binary on free ports against a database of its own, and
//! talks to it as clients do (REST over HTTP, gRPC over TCP).
//!
//! The database is a fresh SQLite file, or, when `LPS_TEST_DATABASE_URL` names a PostgreSQL
//! server, a fresh database created on it for this one test. `LPS_TEST_REDIS_URL` makes every
//! server share rate limits through that Redis.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use std::collections::HashMap;

pub const BIN: &str = env!("CARGO_BIN_EXE_lps");

/// The `lps` the harness runs ([`lps`], [`Server::spawn`]): this build's, or the one
/// `LPS_BENCH_BINARY` names, for a benchmark comparing builds (`benches/before-after` sets it
/// for the earlier build's runs; tests never do).
pub fn lps_binary() -> &'static str {
    static CHOSEN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        std::env::var("LPS_BENCH_BINARY").unwrap_or_else(|_| BIN.to_owned())
    });
    &CHOSEN
}
pub const BASE: &str = "/api/external/v1";

/// A database only this test uses.
pub struct TestDb {
    pub url: String,
    _dir: tempfile::TempDir,
    postgres: Option<(String, String)>,
}

impl TestDb {
    /// On the PostgreSQL server `LPS_TEST_DATABASE_URL` names, else SQLite.
    pub fn new() -> Self {
        Self::on(std::env::var("LPS_TEST_DATABASE_URL").ok())
    }

    /// A fresh database on that PostgreSQL server, or a SQLite file when `None` (or empty).
    pub fn on(postgres_server: Option<String>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        match postgres_server {
            Some(server) if !server.is_empty() => {
                let name = format!("lps_test_{}", uuid::Uuid::new_v4().simple());
                run_sql(&server, &format!("CREATE DATABASE {name}"));
                let url = with_database(&server, &name);
                Self {
                    url,
                    _dir: dir,
                    postgres: Some((server, name)),
                }
            }
            _ => {
                let url = format!("sqlite://{}", dir.path().join("lps.db").display());
                Self {
                    url,
                    _dir: dir,
                    postgres: None,
                }
            }
        }
    }

    pub fn is_postgres(&self) -> bool {
        self.postgres.is_some()
    }

    /// A connection of the test's own to its database, to read what the server stored.
    pub async fn connect(&self) -> sqlx::AnyConnection {
        use sqlx::Connection;
        sqlx::any::install_default_drivers();
        sqlx::AnyConnection::connect(&self.url)
            .await
            .expect("the test database opens")
    }

    /// PostgreSQL: drops the database now, under any server still using it.
    pub fn drop_database(&self) {
        if let Some((server, name)) = &self.postgres {
            run_sql(
                server,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            );
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some((server, name)) = &self.postgres {
            run_sql(
                server,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            );
        }
    }
}

/// Runs one statement on the PostgreSQL server (outside any test's runtime).
fn run_sql(server: &str, sql: &str) {
    let (server, sql) = (server.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(&server)
                    .await
                    .expect("LPS_TEST_DATABASE_URL reachable");
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&mut conn)
                    .await
                    .expect("statement runs");
            })
    })
    .join()
    .expect("sql thread");
}

/// The server URL with its path replaced by `/name`.
fn with_database(server: &str, name: &str) -> String {
    let (base, query) = server.split_once('?').unwrap_or((server, ""));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut url = format!("{}/{name}", &base[..host_end]);
    if !query.is_empty() {
        url = format!("{url}?{query}");
    }
    url
}

/// Runs `lps ARGS` to completion and returns its standard output, asserting it succeeded.
pub fn lps(args: &[&str]) -> String {
    let output = Command::new(lps_binary())
        .args(args)
        .output()
        .expect("lps runs");
    assert!(
        output.status.success(),
        "lps {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

/// Runs `lps ARGS --json` and parses its one JSON object.
pub fn lps_json(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    serde_json::from_str(lps(&args).trim()).expect("JSON output")
}

/// What `lps admin bootstrap` made.
#[derive(Debug, Clone)]
pub struct Account {
    pub account_id: i64,
    pub user_id: i64,
    pub workspace_id: i64,
    pub api_key: String,
}

pub fn bootstrap(db: &TestDb, extra: &[&str]) -> Account {
    let mut args = vec!["admin", "bootstrap", "--database-url", &db.url];
    args.extend_from_slice(extra);
    let made = lps_json(&args);
    Account {
        account_id: made["account_id"].as_i64().unwrap(),
        user_id: made["user_id"].as_i64().unwrap(),
        workspace_id: made["workspace_id"].as_i64().unwrap(),
        api_key: made["api_key"].as_str().unwrap().to_owned(),
    }
}

/// A second workspace in the account and a key bound to it.
pub fn add_workspace(db: &TestDb, account_id: i64, name: &str) -> (i64, String) {
    let made = lps_json(&[
        "admin",
        "workspace",
        "create",
        "--database-url",
        &db.url,
        "--account",
        &account_id.to_string(),
        "--name",
        name,
    ]);
    let workspace_id = made["workspace_id"].as_i64().unwrap();
    let key = lps_json(&[
        "admin",
        "key",
        "create",
        "--database-url",
        &db.url,
        "--workspace",
        &workspace_id.to_string(),
    ]);
    (workspace_id, key["api_key"].as_str().unwrap().to_owned())
}

pub fn legacy_key(db: &TestDb, account_id: i64) -> String {
    let key = lps_json(&[
        "admin",
        "key",
        "create",
        "--database-url",
        &db.url,
        "--account",
        &account_id.to_string(),
        "--legacy",
    ]);
    key["api_key"].as_str().unwrap().to_owned()
}

/// A running `lps` process, killed when dropped.
pub struct Server {
    child: Child,
    pub http: String,
    pub grpc: Option<String>,
    pub stdout: Vec<String>,
    pub client: reqwest::Client,
}

/// `lps serve`'s arguments for `db` on free ports (the addresses it announces).
pub fn serve_args(db: &TestDb) -> Vec<&str> {
    vec![
        "serve",
        "--database-url",
        &db.url,
        "--http",
        "127.0.0.1:0",
        "--grpc",
        "127.0.0.1:0",
    ]
}

impl Server {
    /// `lps serve` on free ports, with the test's Redis if one is configured.
    pub fn serve(db: &TestDb, extra: &[&str]) -> Self {
        let mut args = serve_args(db);
        let redis = std::env::var("LPS_TEST_REDIS_URL").unwrap_or_default();
        if !redis.is_empty() && !extra.contains(&"--redis-url") {
            args.extend(["--redis-url", redis.as_str()]);
        }
        args.extend_from_slice(extra);
        Self::spawn(&args, true, true)
    }

    /// Any `lps` subcommand that announces its listening addresses.
    pub fn spawn(args: &[&str], wants_http: bool, wants_grpc: bool) -> Self {
        Self::spawn_binary(lps_binary(), args, wants_http, wants_grpc)
    }

    /// As [`Server::spawn`], with another build of `lps` (a benchmark's baseline).
    pub fn spawn_binary(bin: &str, args: &[&str], wants_http: bool, wants_grpc: bool) -> Self {
        let mut child = Command::new(bin)
            .args(args)
            .env("LPS_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("lps starts");
        let stdout = child.stdout.take().unwrap();
        let (lines_tx, lines_rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (mut http, mut grpc, mut seen) = (None, None, Vec::new());
        while (wants_http && http.is_none()) || (wants_grpc && grpc.is_none()) {
            let line = lines_rx
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| {
                    panic!("lps {args:?} did not announce its addresses: {seen:?}")
                });
            if let Some(url) = line.strip_prefix("HTTP listening on ") {
                http = Some(url.to_owned());
            }
            if let Some(url) = line.strip_prefix("gRPC listening on ") {
                grpc = Some(url.to_owned());
            }
            seen.push(line);
        }
        // Keep what else it prints at start (the first-start banner) for tests that read it.
        std::thread::sleep(Duration::from_millis(50));
        seen.extend(lines_rx.try_iter());
        Self {
            child,
            http: http.unwrap_or_default(),
            grpc,
            stdout: seen,
            client: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{BASE}{path}", self.http)
    }

    /// An address of this server outside the API (`/p/...`, `/mcp`, ...).
    pub fn url_of(&self, path: &str) -> String {
        format!("{}{path}", self.http)
    }

    /// A GET asked over and over (a job's status until it finishes): a 429 is waited out as
    /// its `Retry-After` says, as a polling client does, for two minutes at most (then the
    /// 429 is the answer). On a slow machine a job can outlast the minute the rate limit
    /// counts over, and a tight loop then meets the limit.
    pub async fn poll(&self, key: &str, path: &str) -> Reply {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            let reply = self.get(key, path).await;
            if reply.status != 429 || std::time::Instant::now() > deadline {
                return reply;
            }
            let wait = reply
                .header("retry-after")
                .and_then(|seconds| seconds.parse::<u64>().ok())
                .unwrap_or(1);
            tokio::time::sleep(Duration::from_secs(wait)).await;
        }
    }

    pub async fn get(&self, key: &str, path: &str) -> Reply {
        Reply::read(
            self.client
                .get(self.url(path))
                .bearer_auth(key)
                .send()
                .await,
        )
        .await
    }

    pub async fn post(&self, key: &str, path: &str, body: Value) -> Reply {
        Reply::read(
            self.client
                .post(self.url(path))
                .bearer_auth(key)
                .json(&body)
                .send()
                .await,
        )
        .await
    }

    /// A POST whose JSON body is sent exactly as written (numbers serde would not produce,
    /// oversized bodies).
    pub async fn post_raw(&self, key: &str, path: &str, body: String) -> Reply {
        Reply::read(
            self.client
                .post(self.url(path))
                .bearer_auth(key)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await,
        )
        .await
    }

    pub async fn delete(&self, key: &str, path: &str) -> Reply {
        Reply::read(
            self.client
                .delete(self.url(path))
                .bearer_auth(key)
                .send()
                .await,
        )
        .await
    }

    /// Any request, built by the test.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        Reply::read(request.send().await).await
    }

    pub async fn grpc_channel(&self) -> tonic::transport::Channel {
        tonic::transport::Endpoint::from_shared(self.grpc.clone().expect("gRPC address"))
            .unwrap()
            .connect()
            .await
            .expect("gRPC connects")
    }

    /// The process id, e.g. to read its memory use.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM, the polite stop.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// Waits for the process to exit by itself; panics after `limit`.
    pub fn wait_for_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("lps can be waited for") {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "lps did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends SIGKILL: no chance to finish anything.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// An HTTP response read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Reply {
    async fn read(response: reqwest::Result<reqwest::Response>) -> Self {
        let response = response.expect("request reaches the server");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body reads");
        Self {
            status,
            headers,
            text,
        }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status, showing the body when it differs.
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.text
        );
        self
    }
}

/// A gRPC request carrying `key` as its credential.
pub fn grpc_request<T>(key: &str, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {key}").parse().expect("ascii key"),
    );
    request
}

/// A timestamp as the specification shows them: ISO 8601 with microseconds and `Z`.
pub fn is_iso8601_micros(value: &Value) -> bool {
    let Some(s) = value.as_str() else {
        return false;
    };
    chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.6fZ").is_ok()
        && s.len() == "2026-11-22T06:54:38.123456Z".len()
}

/// Creates a campaign through the API; returns (campaign_id, slug).
pub async fn create_campaign(
    server: &Server,
    key: &str,
    workspace_id: i64,
    name: &str,
) -> (i64, String) {
    let body = server
        .post(
            key,
            "/campaigns/create",
            serde_json::json!({"workspace_id": workspace_id, "name": name}),
        )
        .await
        .expect(200)
        .json();
    (
        body["campaign_id"].as_i64().unwrap(),
        body["slug"].as_str().unwrap().to_owned(),
    )
}

/// Applies the premade template called `template` to the campaign and publishes it.
pub async fn publish_premade(
    server: &Server,
    key: &str,
    workspace: i64,
    campaign: i64,
    template: &str,
) {
    apply_premade(server, key, workspace, campaign, template).await;
    let ids = serde_json::json!({"workspace_id": workspace, "campaign_id": campaign});
    server.post(key, "/pages/publish", ids).await.expect(200);
}

/// Applies a premade template to the campaign's draft (not published).
pub async fn apply_premade(
    server: &Server,
    key: &str,
    workspace: i64,
    campaign: i64,
    template: &str,
) {
    let templates = server
        .get(
            key,
            &format!("/templates/get-list?workspace_id={workspace}"),
        )
        .await
        .expect(200)
        .json();
    let template_id = templates
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == template)
        .unwrap_or_else(|| panic!("no premade template {template}"))["template_id"]
        .clone();
    let apply = serde_json::json!({"workspace_id": workspace, "campaign_id": campaign,
                                   "template_id": template_id});
    server
        .post(key, "/templates/apply", apply)
        .await
        .expect(200);
}

/// `count` leads with distinct emails `{prefix}{n}@example.com`.
pub fn leads(prefix: &str, count: usize) -> Vec<Value> {
    (0..count)
        .map(|n| {
            serde_json::json!({"values": {
                "email": format!("{prefix}{n}@example.com"),
                "first_name": format!("Lead{n}"),
                "company_name": format!("Company {}", n % 50),
            }})
        })
        .collect()
}

/// Queues leads into a campaign and returns the job id.
pub async fn upsert(server: &Server, key: &str, body: Value) -> String {
    server
        .post(key, "/leads/upsert-leads", body)
        .await
        .expect(200)
        .json()["job_id"]
        .as_str()
        .expect("job_id")
        .to_owned()
}

/// Polls `GET /leads/get-status` until the job is completed or failed; returns the status.
pub async fn wait_for_job(server: &Server, key: &str, job_id: &str) -> Value {
    let started = std::time::Instant::now();
    loop {
        let status = server
            .poll(key, &format!("/leads/get-status?job_id={job_id}"))
            .await
            .expect(200)
            .json();
        if status["status"] == "completed" || status["status"] == "failed" {
            return status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "job never finished: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many leads the workspace has (via search).
pub async fn lead_total(server: &Server, key: &str, workspace_id: i64) -> i64 {
    server
        .get(
            key,
            &format!("/leads/search?workspace_id={workspace_id}&limit=1"),
        )
        .await
        .expect(200)
        .json()["total"]
        .as_i64()
        .unwrap()
}

/// A loopback port for a child that binds it later (Pebble, its DNS server, an SMTP server
/// stopped and started again). Chosen below the kernel's ephemeral range
/// (`net.ipv4.ip_local_port_range`, 32768 up by default), where `bind(0)` and outgoing
/// connections, which the rest of the suite makes by the thousand, never land: a port taken
/// from `bind(0)` and released could be handed to someone else before the child binds it.
/// Free on TCP and UDP when chosen, never the same twice in one run.
pub fn free_port() -> u16 {
    use std::sync::Mutex;
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap();
    loop {
        let port = rand::random_range(10_000..32_000);
        if given.contains(&port) {
            continue;
        }
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
        let udp = std::net::UdpSocket::bind(("127.0.0.1", port));
        if tcp.is_ok() && udp.is_ok() {
            given.push(port);
            return port;
        }
    }
}

/// Resident memory of a process, in KiB (Linux).
pub fn rss_kib(pid: u32) -> u64 {
    memory_kib(pid, "VmRSS:")
}

/// A memory figure of a process's status (`VmRSS:`, `VmHWM:` the peak), in KiB (Linux).
pub fn memory_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Waits (at most ten seconds) until the lead's page has one view counted.
pub async fn one_view_counted(server: &Server, key: &str, lead: i64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = server
            .get(key, &format!("/leads/get?lead_id={lead}"))
            .await
            .expect(200)
            .json();
        if body["engagement"]["views"] == 1 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the view was never counted: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A live campaign on the premade Demo Invitation design with `count` leads; returns the
/// campaign id and each lead's (lead_id, page address), in upsert order.
pub async fn live_campaign(
    server: &Server,
    key: &str,
    workspace: i64,
    name: &str,
    count: usize,
) -> (i64, Vec<(i64, String)>) {
    let prefix = format!("{}-", name.to_lowercase().replace(' ', "-"));
    live_campaign_with(
        server,
        key,
        workspace,
        name,
        "Demo Invitation",
        leads(&prefix, count),
    )
    .await
}

/// A live campaign on a premade design with these leads; returns the campaign id and each
/// lead's (lead_id, page address), by lead id.
pub async fn live_campaign_with(
    server: &Server,
    key: &str,
    workspace: i64,
    name: &str,
    template: &str,
    leads: Vec<Value>,
) -> (i64, Vec<(i64, String)>) {
    let (campaign, _) = create_campaign(server, key, workspace, name).await;
    publish_premade(server, key, workspace, campaign, template).await;
    if leads.is_empty() {
        return (campaign, Vec::new());
    }
    let job = upsert(
        server,
        key,
        serde_json::json!({"campaign_id": campaign, "leads": leads}),
    )
    .await;
    wait_for_job(server, key, &job).await;
    let listed = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json();
    let mut pages: Vec<(i64, String)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|lead| {
            (
                lead["lead_id"].as_i64().unwrap(),
                lead["service_page_url"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    pages.sort();
    (campaign, pages)
}

/// A desktop browser's User-Agent.
pub const DESKTOP_BROWSER: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 \
    (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36";

/// Sends one beacon the way the tracking script does (`text/plain` JSON), from `user_agent`
/// with the visitor cookie `visitor` (none when empty), exactly as given: no page load id, so
/// a view is never confirmed (see [`send_person_beacon`]).
pub async fn send_beacon(
    server: &Server,
    page: &str,
    body: Value,
    user_agent: &str,
    visitor: &str,
) -> Reply {
    let mut request = server
        .client
        .post(format!("{page}/beacon"))
        .header("content-type", "text/plain;charset=UTF-8")
        .header("user-agent", user_agent)
        .body(body.to_string());
    if !visitor.is_empty() {
        request = request.header("cookie", format!("lps_vid={visitor}"));
    }
    server.send(request).await
}

/// The page load each (page, visitor) is on: a view starts a new one.
static PAGE_LOADS: std::sync::LazyLock<std::sync::Mutex<HashMap<(String, String), String>>> =
    std::sync::LazyLock::new(Default::default);

/// Loads `page` as a browser does and answers the page load's id lps made with it (the
/// `lps_load` cookie the tracking script reads), if it made one.
pub async fn load_page(server: &Server, page: &str, user_agent: &str) -> Option<String> {
    load_page_from(server, page, user_agent, None).await
}

/// [`load_page`] from `address` (through a trusted proxy's `X-Forwarded-For`), if given.
pub async fn load_page_from(
    server: &Server,
    page: &str,
    user_agent: &str,
    address: Option<&str>,
) -> Option<String> {
    let mut request = server.client.get(page).header("user-agent", user_agent);
    if let Some(address) = address {
        request = request.header("x-forwarded-for", address);
    }
    let response = request.send().await.expect("the page answers");
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|cookie| cookie.strip_prefix("lps_load="))
        .and_then(|rest| rest.split(';').next())
        .map(str::to_owned)
}

/// Sends a beacon as the script does in a person's browser: a view starts a page load (the
/// page fetched, its load id taken as the script takes it), every beacon carries the load's id
/// and an interaction (a pointer moved), so views count.
pub async fn send_person_beacon(
    server: &Server,
    page: &str,
    mut body: Value,
    user_agent: &str,
    visitor: &str,
) -> Reply {
    let key = (page.to_owned(), visitor.to_owned());
    let new_load = body["type"] == "view" || !PAGE_LOADS.lock().unwrap().contains_key(&key);
    if new_load {
        let id = load_page(server, page, user_agent)
            .await
            .unwrap_or_else(|| {
                (0..32)
                    .map(|_| char::from_digit(rand::random_range(0..16u32), 16).unwrap())
                    .collect()
            });
        PAGE_LOADS.lock().unwrap().insert(key.clone(), id);
    }
    let view_id = PAGE_LOADS.lock().unwrap()[&key].clone();
    body["view_id"] = json!(view_id);
    body["interaction"] = json!("pointer");
    send_beacon(server, page, body, user_agent, visitor).await
}

/// Polls `GET /campaigns/analytics` for one campaign until `done` holds (beacons are written
/// in batches), for at most 10 seconds; returns the last entry.
pub async fn analytics_until(
    server: &Server,
    key: &str,
    workspace: i64,
    campaign: i64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let body = server
            .get(
                key,
                &format!("/campaigns/analytics?workspace_id={workspace}&campaign_ids={campaign}"),
            )
            .await
            .expect(200)
            .json();
        let entry = body["campaigns"][0].clone();
        if done(&entry) || std::time::Instant::now() > deadline {
            return entry;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Server-Sent Events read as they arrive from a streaming response.
pub struct SseReader {
    response: reqwest::Response,
    buffer: String,
}

impl SseReader {
    /// Opens `GET path` (under the API base) with `key`; returns the response if it is not a
    /// stream (an error), else the reader.
    pub async fn open(server: &Server, key: &str, path: &str) -> Result<Self, Reply> {
        let response = server
            .client
            .get(server.url(path))
            .bearer_auth(key)
            .send()
            .await
            .expect("request");
        let streaming = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !streaming {
            let status = response.status().as_u16();
            let text = response.text().await.unwrap_or_default();
            return Err(Reply {
                status,
                headers: Default::default(),
                text,
            });
        }
        Ok(Self {
            response,
            buffer: String::new(),
        })
    }

    /// The next event as (name, data as JSON), skipping keep-alive comments; `None` once the
    /// stream has ended. Waits at most 30 s.
    pub async fn next_event(&mut self) -> Option<(String, Value)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut name = "message".to_owned();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        name = value.trim().to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim_start());
                    }
                }
                if data.is_empty() {
                    continue;
                }
                return Some((name, serde_json::from_str(&data).expect("JSON data")));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.response.chunk())
                .await
                .expect("an event in time")
                .expect("stream");
            match chunk {
                Some(bytes) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                None => return None,
            }
        }
    }

    /// Every event until the stream ends.
    pub async fn rest(&mut self) -> Vec<(String, Value)> {
        let mut events = Vec::new();
        while let Some(event) = self.next_event().await {
            events.push(event);
        }
        events
    }
}

/// A model server on loopback (OpenAI-compatible) that answers every chat with one small
/// design, for tests that need generation to be possible without caring what it writes
/// (`generate.rs` has the fake that records and holds requests). Its base URL.
pub async fn loopback_model() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let design = json!({"html": "<h1>{{ copy.headline }}</h1>", "css": ""}).to_string();
    let reply = json!({"choices": [{"message": {"role": "assistant", "content": design}}]});
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || {
            let reply = reply.clone();
            async move { axum::Json(reply) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}
