//! Ingest through the API, shared by the ingest benchmark and `benches/side-by-side`: 100,000
//! leads through `POST /leads/upsert-leads` in 100 requests of 1,000 (4 in flight) against a
//! running `lps serve`, until every job has completed; and its outside anchors: on SQLite, a
//! plain insert of the same leads by Python's `sqlite3` (`plain_insert.py`); on PostgreSQL,
//! `COPY` of the same rows into tables made like lps's.

#![allow(dead_code)] // each benchmark uses its part

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Server, TestDb, bootstrap, create_campaign, lead_total, memory_kib};

pub const REQUESTS: usize = 100;
pub const PER_REQUEST: usize = 1_000;
pub const TOTAL: usize = REQUESTS * PER_REQUEST;
const IN_FLIGHT: usize = 4;

pub fn lead(n: usize) -> Value {
    json!({"values": {
        "email": format!("bench{n}@example.com"),
        "first_name": format!("Lead{n}"),
        "company_name": format!("Company {}", n % 500),
        "company_domain": format!("company{}.example", n % 500),
        "job_title": "Head of Sales",
    }})
}

/// One request of leads (a JSON body) to `url` with the API key.
async fn post_leads(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    body: String,
) -> reqwest::Response {
    client
        .post(url)
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("upsert")
}

/// A memory figure of a process (`VmHWM:` the peak, `VmRSS:`), in MiB.
fn memory_mib(pid: u32, field: &str) -> f64 {
    memory_kib(pid, field) as f64 / 1024.0
}

/// End to end through the API (`started_server` runs once the server is up, e.g. to move the
/// client to another CPU); returns (leads per second, peak MiB, MiB resident once idle).
pub async fn through_the_api(db: &TestDb, started_server: impl FnOnce()) -> (f64, f64, f64) {
    let account = bootstrap(db, &[]);
    let server = Server::serve(db, &["--rate-limit-per-minute", "1000000"]);
    started_server();
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
                    let reply: Value = post_leads(&client, &url, &key, body)
                        .await
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

/// Leads per second of a plain insert of the same leads into SQLite tables made like those of
/// `db` (their indexes included), 1,000 rows a transaction, in a file beside it (on `cpu` when
/// given); `None` for a PostgreSQL `db`, or when `python3` is missing or fails.
pub fn plain_insert(db: &TestDb, cpu: Option<&str>) -> Option<f64> {
    let lps_db = Path::new(db.url.strip_prefix("sqlite://")?);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/support/plain_insert.py"
    );
    let mut command = match cpu {
        Some(cpu) => {
            let mut command = std::process::Command::new("taskset");
            command.args(["-c", cpu, "python3"]);
            command
        }
        None => std::process::Command::new("python3"),
    };
    let output = command
        .arg(script)
        .arg(lps_db)
        .arg(lps_db.parent()?)
        .arg(TOTAL.to_string())
        .output()
        .ok()?;
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        return None;
    }
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

/// Leads per second of PostgreSQL's `COPY` of the same leads, as lps stores them, into tables
/// made like those of `db` (`LIKE ... INCLUDING ALL`: columns, defaults and every index; foreign
/// keys are not copied, so the anchor checks none), 1,000 leads a transaction, one `COPY` per
/// table in each; `None` for a SQLite `db`. The rows are made before the clock starts.
pub async fn copy_anchor(db: &TestDb) -> Option<f64> {
    use sqlx::Connection;
    if !db.is_postgres() {
        return None;
    }
    let copied = async {
        let mut conn = sqlx::PgConnection::connect(&db.url).await?;
        sqlx::raw_sql(
            "DROP SCHEMA IF EXISTS anchor CASCADE; CREATE SCHEMA anchor; \
         CREATE TABLE anchor.leads (LIKE public.leads INCLUDING ALL); \
         CREATE TABLE anchor.campaign_leads (LIKE public.campaign_leads INCLUDING ALL);",
        )
        .execute(&mut conn)
        .await?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros();
        // COPY's text format: tab-separated columns, a row a line (none of these values holds a
        // tab, a newline or a backslash).
        let batches: Vec<(String, String)> = (0..REQUESTS)
        .map(|r| {
            let (mut leads, mut links) = (String::new(), String::new());
            for n in r * PER_REQUEST..(r + 1) * PER_REQUEST {
                let id = n + 1;
                let email = format!("bench{n}@example.com");
                leads.push_str(&format!(
                    "{id}\t1\t{}\tLead{n}\t{email}\t{email}\tCompany {c}\tcompany{c}.example\t{{\"job_title\":\"Head of Sales\"}}\tapi\t{now}\t{now}\n",
                    uuid::Uuid::new_v4().simple(),
                    c = n % 500,
                ));
                links.push_str(&format!("1\t{id}\t{now}\n"));
            }
            (leads, links)
        })
        .collect();
        let started = Instant::now();
        for (leads, links) in &batches {
            sqlx::raw_sql("BEGIN").execute(&mut conn).await?;
            let mut copy = conn
                .copy_in_raw(
                    "COPY anchor.leads (id, workspace_id, slug, first_name, email, email_key, \
                 company_name, company_domain, custom_values, source, created_at, updated_at) \
                 FROM STDIN",
                )
                .await?;
            copy.send(leads.as_bytes()).await?;
            copy.finish().await?;
            let mut copy = conn
                .copy_in_raw(
                    "COPY anchor.campaign_leads (campaign_id, lead_id, created_at) FROM STDIN",
                )
                .await?;
            copy.send(links.as_bytes()).await?;
            copy.finish().await?;
            sqlx::raw_sql("COMMIT").execute(&mut conn).await?;
        }
        Ok::<_, sqlx::Error>(TOTAL as f64 / started.elapsed().as_secs_f64())
    };
    copied
        .await
        .inspect_err(|error| eprintln!("COPY anchor failed: {error}"))
        .ok()
}

/// The same leads as a CSV file (the header row recognised: `email`, `first_name`,
/// `company_name`, `company_domain`, and `job_title` as `title`).
pub fn csv_file() -> String {
    let mut csv = String::from("email,first_name,company_name,company_domain,job_title\n");
    for n in 0..TOTAL {
        let values = lead(n);
        let v = &values["values"];
        let field = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        csv.push_str(&format!(
            "{},{},{},{},{}\n",
            field("email"),
            field("first_name"),
            field("company_name"),
            field("company_domain"),
            field("job_title")
        ));
    }
    csv
}

/// Polls the job until it completed.
async fn until_completed(server: &Server, key: &str, job: &str) {
    loop {
        let status = server
            .get(key, &format!("/leads/get-status?job_id={job}"))
            .await
            .json();
        if status["status"] == "completed" {
            return;
        }
        assert_ne!(status["status"], "failed", "{status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The file in one `POST /leads/import-csv`, until its job completed; returns (leads per
/// second, the server's peak MiB).
pub async fn through_import_csv(db: &TestDb) -> (f64, f64) {
    let account = bootstrap(db, &["--workspace-name", "CSV"]);
    let server = Server::serve(db, &["--rate-limit-per-minute", "1000000"]);
    let key = account.api_key.clone();
    let (campaign, _) = create_campaign(&server, &key, account.workspace_id, "CSV").await;
    let file = csv_file();
    let started = Instant::now();
    let reply: Value = server
        .client
        .post(server.url(&format!(
            "/leads/import-csv?workspace_id={}&campaign_id={campaign}",
            account.workspace_id
        )))
        .bearer_auth(&key)
        .header("content-type", "text/csv")
        .body(file)
        .send()
        .await
        .expect("import-csv")
        .json()
        .await
        .expect("job id");
    let job = reply["job_id"].as_str().expect("job_id").to_owned();
    let accepted = started.elapsed();
    until_completed(&server, &key, &job).await;
    let elapsed = started.elapsed();
    println!(
        "    import-csv: file accepted in {:.2} s; its job completed after {:.2} s",
        accepted.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    (
        TOTAL as f64 / elapsed.as_secs_f64(),
        memory_mib(server.pid(), "VmHWM:"),
    )
}

/// The file through `lps import` (batches of 1,000 to `/leads/import-to-workspace`, into the
/// campaign), until its jobs completed; returns (leads per second, the server's peak MiB, the
/// command's peak MiB as last seen).
pub async fn through_lps_import(db: &TestDb) -> (f64, f64, f64) {
    let account = bootstrap(db, &["--workspace-name", "CLI"]);
    let server = Server::serve(db, &["--rate-limit-per-minute", "1000000"]);
    let key = account.api_key.clone();
    let (campaign, _) = create_campaign(&server, &key, account.workspace_id, "CLI").await;
    let dir = tempfile::tempdir().expect("directory");
    let path = dir.path().join("leads.csv");
    std::fs::write(&path, csv_file()).expect("file");
    let started = Instant::now();
    let mut child = std::process::Command::new(crate::common::BIN)
        .args([
            "import",
            path.to_str().expect("path"),
            "--url",
            &server.url_of("/"),
            "--key",
            &key,
            "--workspace",
            &account.workspace_id.to_string(),
            "--campaign",
            &campaign.to_string(),
            "--json",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("lps import");
    let mut client_peak = 0.0f64;
    loop {
        client_peak = client_peak.max(memory_mib(child.id(), "VmHWM:"));
        if let Some(status) = child.try_wait().expect("lps import") {
            assert!(status.success(), "lps import failed");
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    assert_eq!(
        lead_total(&server, &key, account.workspace_id).await,
        TOTAL as i64
    );
    (
        TOTAL as f64 / elapsed.as_secs_f64(),
        memory_mib(server.pid(), "VmHWM:"),
        client_peak,
    )
}

/// A signed-in person's cookies, kept by hand (the benchmark's client keeps none).
struct Cookies(Vec<(String, String)>);

impl Cookies {
    fn keep(&mut self, response: &reqwest::Response) {
        for value in response.headers().get_all("set-cookie") {
            let Some((pair, _)) = value.to_str().unwrap_or_default().split_once(';') else {
                continue;
            };
            if let Some((name, value)) = pair.split_once('=') {
                self.0.retain(|(k, _)| k != name);
                self.0.push((name.to_owned(), value.to_owned()));
            }
        }
    }

    fn header(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// A form's fields, URL-encoded.
fn form_body(fields: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
}

/// A hidden field's value on a page.
fn hidden(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page.find(&marker).expect("the field") + marker.len();
    page[start..start + page[start..].find('"').expect("its end")].to_owned()
}

/// The file uploaded in the dashboard (signed in, multipart, the recognised mapping accepted
/// at the mapping step), until its job completed; returns (leads per second, the server's
/// peak MiB).
pub async fn through_the_app(db: &TestDb) -> (f64, f64) {
    const PASSWORD: &str = "bench password 1";
    let account = bootstrap(
        db,
        &[
            "--workspace-name",
            "App",
            "--user-email",
            "app@example.com",
            "--user-password",
            PASSWORD,
        ],
    );
    let server = Server::serve(db, &["--rate-limit-per-minute", "1000000"]);
    let key = account.api_key.clone();
    let (campaign, _) = create_campaign(&server, &key, account.workspace_id, "App").await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let mut cookies = Cookies(Vec::new());
    let login = client
        .get(server.url_of("/dashboard/login"))
        .send()
        .await
        .expect("login page");
    cookies.keep(&login);
    let csrf = hidden(&login.text().await.expect("page"), "csrf_token");
    let signed_in = client
        .post(server.url_of("/dashboard/login"))
        .header("cookie", cookies.header())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&[
            ("csrf_token", csrf.as_str()),
            ("email", "app@example.com"),
            ("password", PASSWORD),
            ("next", "/dashboard"),
        ]))
        .send()
        .await
        .expect("login");
    cookies.keep(&signed_in);
    let page = |path: String| {
        let request = client
            .get(server.url_of(&path))
            .header("cookie", cookies.header());
        async move {
            request
                .send()
                .await
                .expect(&path)
                .text()
                .await
                .expect("page")
        }
    };
    let form = page("/dashboard/leads/import".to_owned()).await;
    let csrf = hidden(&form, "csrf_token");
    let boundary = "lpsBenchBoundary";
    let mut body = Vec::new();
    for (name, value) in [
        ("csrf_token", csrf.clone()),
        ("workspace_id", account.workspace_id.to_string()),
        ("campaign_id", campaign.to_string()),
    ] {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"leads.csv\"\r\nContent-Type: text/csv\r\n\r\n")
            .as_bytes(),
    );
    body.extend_from_slice(csv_file().as_bytes());
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());

    let started = Instant::now();
    let uploaded = client
        .post(server.url_of("/dashboard/leads/import"))
        .header("cookie", cookies.header())
        .header("origin", server.url_of("").trim_end_matches('/'))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .expect("upload");
    let mapping_step = uploaded
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .filter(|l| l.starts_with("/dashboard/leads/import/"))
        .unwrap_or_else(|| panic!("no mapping step: {}", uploaded.status()))
        .to_owned();
    let job = mapping_step.rsplit('/').next().expect("job id").to_owned();
    let staged = started.elapsed();
    // The recognised mapping, accepted as it is.
    let _ = page(mapping_step.clone()).await;
    let start = client
        .post(server.url_of(&mapping_step))
        .header("cookie", cookies.header())
        .header("origin", server.url_of("").trim_end_matches('/'))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&[
            ("csrf_token", csrf.as_str()),
            ("action", "start"),
        ]))
        .send()
        .await
        .expect("start");
    assert_eq!(start.status(), 303, "start");
    until_completed(&server, &key, &job).await;
    let elapsed = started.elapsed();
    println!(
        "    the app: file staged in {:.2} s; its job completed after {:.2} s",
        staged.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    assert_eq!(
        lead_total(&server, &key, account.workspace_id).await,
        TOTAL as i64
    );
    (
        TOTAL as f64 / elapsed.as_secs_f64(),
        memory_mib(server.pid(), "VmHWM:"),
    )
}

/// Imports leads into `campaign` on `server` through the API, as [`through_the_api`] sends
/// them (requests of 1,000, 4 in flight), new leads each request, until `stop` is set; returns
/// how many leads were accepted. For measuring visitors while an import runs.
pub async fn import_until(
    server: &Server,
    key: &str,
    campaign: i64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = std::sync::Arc::new(AtomicUsize::new(0));
    let url = server.url("/leads/upsert-leads");
    let senders: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let (next, stop, url, key, client) = (
                next.clone(),
                stop.clone(),
                url.clone(),
                key.to_owned(),
                server.client.clone(),
            );
            tokio::spawn(async move {
                let mut accepted = 0;
                while !stop.load(Ordering::Relaxed) {
                    let r = next.fetch_add(1, Ordering::Relaxed);
                    // Far from the leads of the other benchmarks' imports: new leads each time.
                    let first = 10_000_000 + r * PER_REQUEST;
                    let leads: Vec<Value> = (first..first + PER_REQUEST).map(lead).collect();
                    let body = json!({"campaign_id": campaign, "leads": leads}).to_string();
                    let reply = post_leads(&client, &url, &key, body).await;
                    if reply.status().is_success() {
                        accepted += PER_REQUEST;
                    }
                }
                accepted
            })
        })
        .collect();
    let mut accepted = 0;
    for sender in senders {
        accepted += sender.await.unwrap();
    }
    accepted
}
