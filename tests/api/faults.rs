//! Faults lps recovers from by itself (issue 45): a full disk, an interrupted erasure, Redis
//! gone or silent, a paused core, a database out of reach, strangers' large or slow bodies,
//! too many connections, and edge-to-core calls without Nagle's delay. Each failed before its
//! fix.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

/// `lps core` and `lps edge` apart, sharing `secret`.
fn core_and_edge(db: &TestDb, secret: &str) -> (Server, Server) {
    core_and_edge_with(db, secret, &[])
}

/// [`core_and_edge`], the edge given `edge_extra` too.
fn core_and_edge_with(db: &TestDb, secret: &str, edge_extra: &[&str]) -> (Server, Server) {
    let core = Server::spawn(
        &[
            "core",
            "--database-url",
            &db.url,
            "--grpc",
            "127.0.0.1:0",
            "--edge-secret",
            secret,
        ],
        false,
        true,
    );
    let core_url = core.grpc.clone().unwrap();
    let mut args = vec![
        "edge",
        "--core-url",
        &core_url,
        "--http",
        "127.0.0.1:0",
        "--edge-secret",
        secret,
    ];
    args.extend_from_slice(edge_extra);
    let edge = Server::spawn(&args, true, false);
    (core, edge)
}

/// Sends `name` (`-STOP`, `-CONT`) to process `pid`.
fn signal(pid: u32, name: &str) {
    let sent = std::process::Command::new("kill")
        .args([name, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {name} {pid}");
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::test]
async fn an_edge_to_core_call_through_the_network_takes_no_nagle_delay() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (_core, edge) = core_and_edge(&db, "nagle");
    let mut times = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        edge.get(&account.api_key, "/hello-world-user")
            .await
            .expect(200);
        times.push(started.elapsed());
    }
    let p50 = median(times);
    println!("GET /hello-world-user through lps edge and lps core: p50 {p50:?}");
    // Nagle's algorithm against delayed ACKs costs ~40 ms a call.
    assert!(p50 < Duration::from_millis(20), "p50 {p50:?}");
}

#[tokio::test]
async fn a_paused_core_costs_the_edge_a_deadline_not_a_hang() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (core, edge) = core_and_edge(&db, "paused");
    edge.get(&account.api_key, "/hello-world-user")
        .await
        .expect(200);
    let (_, pages) = live_campaign(&edge, &account.api_key, account.workspace_id, "Card", 1).await;
    // The page's path, asked of this edge (core names pages under its own public address).
    let page = edge.url_of(&format!("/p/{}", pages[0].1.split("/p/").nth(1).unwrap()));
    let signal = |name: &str| signal(core.pid(), name);
    signal("-STOP");
    let started = Instant::now();
    let ready = edge.send(edge.client.get(edge.url_of("/readyz"))).await;
    let readyz_took = started.elapsed();
    assert_eq!(ready.status, 503, "{}", ready.text);
    assert!(
        readyz_took < Duration::from_secs(2),
        "/readyz took {readyz_took:?}"
    );
    let started = Instant::now();
    let call = edge.get(&account.api_key, "/hello-world-user").await;
    let call_took = started.elapsed();
    // A link preview asked of the edge meanwhile: a stand-in card, never a 503.
    let started = Instant::now();
    let card = edge.send(edge.client.get(format!("{page}/og.png"))).await;
    let card_took = started.elapsed();
    signal("-CONT");
    assert_eq!(card.status, 200, "{}", card.text);
    assert_eq!(card.header("content-type"), Some("image/png"));
    assert!(
        card_took < Duration::from_secs(3),
        "the card took {card_took:?}"
    );
    println!("paused core: /readyz in {readyz_took:?}, an API call in {call_took:?}");
    assert_eq!(call.status, 503, "{}", call.text);
    assert!(call.header("retry-after").is_some(), "{:?}", call.headers);
    assert!(
        call_took < Duration::from_secs(8),
        "the call took {call_took:?}"
    );
    // Awake again: served as before.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let reply = edge.get(&account.api_key, "/hello-world-user").await;
        if reply.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "no recovery: {}", reply.status);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A TCP listener that accepts and then says nothing (a Redis that hangs).
fn silent_listener() -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", listener.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for stream in listener.incoming().take(64).flatten() {
            kept.push(stream);
        }
    });
    (url, held)
}

#[tokio::test]
async fn redis_gone_or_silent_never_slows_the_api_and_a_core_starts_without_it() {
    // Nothing listens on this port: the core starts anyway.
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("redis://{}", listener.local_addr().unwrap())
    };
    let (silent, _held) = silent_listener();
    for redis in [closed, silent] {
        let db = TestDb::new();
        let account = bootstrap(&db, &[]);
        let server = Server::serve(&db, &["--redis-url", &redis]);
        let mut times = Vec::new();
        for _ in 0..10 {
            let started = Instant::now();
            let reply = server.get(&account.api_key, "/hello-world-user").await;
            times.push(started.elapsed());
            assert_eq!(reply.status, 200, "{}", reply.text);
            // Limited in this process meanwhile: the headers still say so.
            assert!(reply.header("x-ratelimit-remaining").is_some());
        }
        let slowest = times.iter().max().copied().unwrap();
        println!("Redis at {redis} out: slowest call {slowest:?}");
        assert!(slowest < Duration::from_millis(100), "{times:?}");
    }
}

#[tokio::test]
async fn an_erasure_erased_before_or_interrupted_is_finished_and_answered_200() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let mut server = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, _) = create_campaign(&server, key, ws, "Erasing").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": leads("erase-", 600)}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let mut ids: Vec<i64> = Vec::new();
    while ids.len() < 600 {
        let found = server
            .get(
                key,
                &format!(
                    "/leads/search?workspace_id={ws}&limit=100&offset={}",
                    ids.len()
                ),
            )
            .await
            .expect(200)
            .json();
        let leads = found["leads"].as_array().unwrap().clone();
        assert!(!leads.is_empty());
        ids.extend(leads.iter().map(|lead| lead["lead_id"].as_i64().unwrap()));
    }
    ids.sort_unstable();
    // Half erased first; then all of them: the first half counts as erased, not "not found".
    let delete = |ids: &[i64]| json!({"workspace_id": ws, "lead_ids": ids});
    server
        .post(key, "/leads/delete", delete(&ids[..300]))
        .await
        .expect(200);
    let all = server
        .post(key, "/leads/delete", delete(&ids[..400]))
        .await
        .expect(200)
        .json();
    assert_eq!(all["deleted"], 400, "{all}");
    // An id that never was a lead of the workspace: 404, nothing erased.
    server
        .post(
            key,
            "/leads/delete",
            json!({"workspace_id": ws, "lead_ids": [ids[599], 999_999_999]}),
        )
        .await
        .expect(404);
    assert_eq!(lead_total(&server, key, ws).await, 200);
    // A request a killed process left unfinished (as it stands in the database when the kill
    // came between two batches) is finished by core when it starts again.
    server.kill();
    let mut store = db.connect().await;
    sqlx::query(
        "INSERT INTO erasure_requests (workspace_id, lead_ids, erased_by, requested_at)
         VALUES ($1, $2, 'user 1 (API key)', 0)",
    )
    .bind(ws)
    .bind(serde_json::to_string(&ids[400..]).unwrap())
    .execute(&mut store)
    .await
    .unwrap();
    let server = Server::serve(&db, &[]);
    let deadline = Instant::now() + Duration::from_secs(15);
    while lead_total(&server, key, ws).await > 0 {
        assert!(
            Instant::now() < deadline,
            "the interrupted erasure was not finished"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let left: i64 = sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM erasure_requests")
        .fetch_one(&mut store)
        .await
        .unwrap();
    assert_eq!(left, 0);
    // Its retry: every id erased, answered 200.
    let again = server
        .post(key, "/leads/delete", delete(&ids))
        .await
        .expect(200)
        .json();
    assert_eq!(again["deleted"], 600, "{again}");
}

/// Mounts a tmpfs of `mib` MiB at a new directory, if this machine lets the test (root).
fn small_filesystem(mib: u32) -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().ok()?;
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
        .arg(dir.path())
        .status()
        .ok()?
        .success();
    mounted.then_some(dir)
}

/// Fills the filesystem of `dir` (a file of zeros until it is full).
fn fill(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let block = vec![0u8; 64 * 1024];
    while file.write_all(&block).is_ok() {}
    let _ = file.sync_all();
    path
}

#[tokio::test]
async fn a_full_disk_answers_507_and_writes_resume_when_space_returns() {
    if TestDb::new().is_postgres() {
        return; // PostgreSQL's storage is its own server's.
    }
    let Some(dir) = small_filesystem(48) else {
        eprintln!("SKIPPED full disk: no tmpfs can be mounted here (run as root)");
        return;
    };
    let url = format!("sqlite://{}", dir.path().join("lps.db").display());
    let made = lps_json(&["admin", "bootstrap", "--database-url", &url]);
    let key = made["api_key"].as_str().unwrap().to_owned();
    let ws = made["workspace_id"].as_i64().unwrap();
    let server = Server::spawn(
        &[
            "serve",
            "--database-url",
            &url,
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
        ],
        true,
        true,
    );
    let (campaign, _) = create_campaign(&server, &key, ws, "Full").await;
    let filler = fill(dir.path());
    let body = json!({"campaign_id": campaign, "leads": leads("full-", 3_000)});
    let refused = server.post(&key, "/leads/upsert-leads", body.clone()).await;
    assert_eq!(refused.status, 507, "{}", refused.text);
    assert!(
        refused.json()["message"]
            .as_str()
            .unwrap()
            .contains("Storage is full"),
        "{}",
        refused.text
    );
    assert!(refused.header("retry-after").is_some());
    let ready = server
        .send(server.client.get(server.url_of("/readyz")))
        .await;
    assert_eq!(ready.status, 503, "{}", ready.text);
    // Space back: writes resume within seconds, without a restart.
    std::fs::remove_file(&filler).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ready = server
            .send(server.client.get(server.url_of("/readyz")))
            .await;
        if ready.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "still not ready: {}", ready.text);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let job = server
        .post(&key, "/leads/upsert-leads", body)
        .await
        .expect(200)
        .json()["job_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = wait_for_job(&server, &key, &job).await;
    assert_eq!(done["status"], "completed", "{done}");
    drop(server);
    let _ = std::process::Command::new("umount")
        .arg(dir.path())
        .status();
}

#[tokio::test]
async fn strangers_large_bodies_are_refused_before_they_are_read() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);
    let before = rss_kib(server.pid());
    let address = server.http.trim_start_matches("http://").to_owned();
    // 40 connections, each announcing 16 MiB, sending the head and a first megabyte: to the
    // API (without a valid key) and to the forms anyone may post (sign-in, setup, OAuth).
    let paths = [
        "/api/external/v1/leads/upsert-leads",
        "/api/external/v1/leads/upsert-leads",
        "/dashboard/login",
        "/dashboard/setup",
        "/oauth/token",
        "/oauth/revoke",
        "/oauth/authorize",
        "/mcp",
    ];
    let started = Instant::now();
    let uploads: Vec<_> = (0..40)
        .map(|n| {
            let address = address.clone();
            let path = paths[n % paths.len()];
            std::thread::spawn(move || {
                let mut stream = std::net::TcpStream::connect(&address).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                let head = format!(
                    "POST {path} HTTP/1.1\r\nhost: {address}\r\n\
                     authorization: Bearer {}\r\ncontent-type: {}\r\n\
                     content-length: {}\r\n\r\n",
                    if n % 2 == 0 { "sk-proj-made-up" } else { "" },
                    if path.starts_with("/api") || path == "/mcp" {
                        "application/json"
                    } else {
                        "application/x-www-form-urlencoded"
                    },
                    16 * 1024 * 1024 - 1
                );
                stream.write_all(head.as_bytes()).unwrap();
                let _ = stream.write_all(&vec![b' '; 1024 * 1024]);
                let mut answer = vec![0u8; 512];
                let read = stream.read(&mut answer).unwrap_or(0);
                String::from_utf8_lossy(&answer[..read]).into_owned()
            })
        })
        .collect();
    for upload in uploads {
        let answer = upload.join().unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 401") || answer.starts_with("HTTP/1.1 413"),
            "{answer}"
        );
    }
    let took = started.elapsed();
    let grew = rss_kib(server.pid()).saturating_sub(before);
    println!("40 unauthenticated 16 MiB uploads: answered in {took:?}, RSS grew {grew} KiB");
    assert!(grew < 64 * 1024, "RSS grew {grew} KiB");
}

#[tokio::test]
async fn a_body_trickled_in_is_cut_off_at_its_deadline() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--http-body-deadline", "2"]);
    let address = server.http.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let head = format!(
        "POST /api/external/v1/leads/upsert-leads HTTP/1.1\r\nhost: {address}\r\n\
         authorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n",
        account.api_key
    );
    stream.write_all(head.as_bytes()).unwrap();
    let started = Instant::now();
    // A byte every 200 ms: well within the body timeout, never within the deadline.
    let writer = {
        let mut stream = stream.try_clone().unwrap();
        std::thread::spawn(move || {
            for _ in 0..60 {
                if stream.write_all(b" ").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let mut answer = vec![0u8; 512];
    let read = stream.read(&mut answer).unwrap_or(0);
    let took = started.elapsed();
    let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
    println!("a trickled body: answered after {took:?}");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    drop(stream);
    let _ = writer.join();
    // Every route that reads a body answers the same, whatever it makes of a body error.
    for (path, kind) in [
        ("/mcp", "application/json"),
        ("/dashboard/login", "application/x-www-form-urlencoded"),
        ("/oauth/token", "application/x-www-form-urlencoded"),
    ] {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {}\r\n\
             accept: application/json, text/event-stream\r\n\
             content-type: {kind}\r\ncontent-length: 1000\r\n\r\n",
            account.api_key
        );
        stream.write_all(head.as_bytes()).unwrap();
        let mut trickle = stream.try_clone().unwrap();
        let writer = std::thread::spawn(move || {
            for _ in 0..60 {
                if trickle.write_all(b"a").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        let mut answer = vec![0u8; 512];
        let read = stream.read(&mut answer).unwrap_or(0);
        let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
        assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
        drop(stream);
        let _ = writer.join();
    }
}

#[tokio::test]
async fn a_connection_over_the_limit_is_answered_503_at_once() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--http-max-connections", "4"]);
    let address = server.http.trim_start_matches("http://").to_owned();
    // Four idle connections take every slot.
    let idle: Vec<_> = (0..4)
        .map(|_| std::net::TcpStream::connect(&address).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let mut extra = std::net::TcpStream::connect(&address).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _ = extra.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
    let mut answer = String::new();
    let _ = extra.read_to_string(&mut answer);
    let took = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1"), "{answer}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    drop(idle);
    // Slots free again: served.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server
        .send(server.client.get(server.url_of("/healthz")))
        .await
        .expect(200);
}

/// A TCP proxy to `target` on a free port, cut (every connection closed, none accepted) when
/// the returned switch is set.
fn cuttable_proxy(target: String) -> (String, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let cut = std::sync::Arc::new(AtomicBool::new(false));
    let switch = cut.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            if cut.load(Ordering::SeqCst) {
                continue;
            }
            let Ok(server) = std::net::TcpStream::connect(&target) else {
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                let cut = cut.clone();
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 16 * 1024];
                    loop {
                        from.set_read_timeout(Some(Duration::from_millis(100))).ok();
                        if cut.load(Ordering::SeqCst) {
                            let _ = from.shutdown(std::net::Shutdown::Both);
                            let _ = to.shutdown(std::net::Shutdown::Both);
                            return;
                        }
                        match from.read(&mut buffer) {
                            Ok(0) => return,
                            Ok(n) => {
                                if to.write_all(&buffer[..n]).is_err() {
                                    return;
                                }
                            }
                            Err(err)
                                if matches!(
                                    err.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => return,
                        }
                    }
                });
            }
        }
    });
    (address, switch)
}

#[tokio::test]
async fn postgresql_out_of_reach_is_503_within_the_wait_and_readyz_says_so() {
    let db = TestDb::new();
    if !db.is_postgres() {
        return; // SQLite is a file of this process.
    }
    let account = bootstrap(&db, &[]);
    let url = reqwest::Url::parse(&db.url).unwrap();
    let target = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
    let (proxy, cut) = cuttable_proxy(target.clone());
    let through = db.url.replacen(&target, &proxy, 1);
    let server = Server::spawn(
        &[
            "serve",
            "--database-url",
            &through,
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
            "--database-wait",
            "2",
        ],
        true,
        true,
    );
    server
        .get(&account.api_key, "/workspaces/get-list")
        .await
        .expect(200);
    cut.store(true, std::sync::atomic::Ordering::SeqCst);
    let started = Instant::now();
    let reply = server
        .get(
            &account.api_key,
            &format!("/leads/search?workspace_id={}", account.workspace_id),
        )
        .await;
    let took = started.elapsed();
    println!("PostgreSQL cut: answered {} after {took:?}", reply.status);
    assert_eq!(reply.status, 503, "{}", reply.text);
    assert!(reply.header("retry-after").is_some());
    assert!(took < Duration::from_secs(6), "{took:?}");
    let ready = server
        .send(server.client.get(server.url_of("/readyz")))
        .await;
    assert_eq!(ready.status, 503);
    assert_eq!(
        ready.json()["migrations"]["applied"],
        serde_json::Value::Null
    );
}

#[tokio::test]
async fn on_postgresql_a_paused_cores_import_is_finished_by_another_core() {
    let db = TestDb::new();
    if !db.is_postgres() {
        return; // One SQLite file, one process.
    }
    let account = bootstrap(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let first = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);
    let (campaign, _) = create_campaign(&first, key, ws, "Paused").await;
    let mut jobs = Vec::new();
    for round in 0..2 {
        let rows = leads(&format!("paused{round}-"), 10_000);
        jobs.push(upsert(&first, key, json!({"campaign_id": campaign, "leads": rows})).await);
    }
    // Pause the first core while it stores them (most likely inside a batch's transaction).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = first
            .poll(key, &format!("/leads/get-status?job_id={}", jobs[0]))
            .await
            .expect(200)
            .json();
        if status["processed_rows"].as_i64().unwrap_or(0) > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "nothing stored: {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal(first.pid(), "-STOP");
    let second = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);
    let started = Instant::now();
    for job in &jobs {
        let done = wait_for_job(&second, key, job).await;
        assert_eq!(done["status"], "completed", "{done}");
    }
    println!(
        "a paused core's import finished by another in {:?}",
        started.elapsed()
    );
    signal(first.pid(), "-CONT");
    // The paused core, awake, wrote nothing twice.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(lead_total(&second, key, ws).await, 20_000);
}

/// The beacons of `lead` in the database, once there are `count` (at most 20 s).
async fn stored_beacons_of(db: &TestDb, lead: i64, count: i64) -> i64 {
    let mut store = db.connect().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let stored: i64 = sqlx::query_scalar(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM page_events WHERE lead_id = $1",
        )
        .bind(lead)
        .fetch_one(&mut store)
        .await
        .unwrap();
        if stored >= count || Instant::now() > deadline {
            return stored;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn beacons_past_memory_wait_on_disk_while_core_is_paused_in_order_and_none_is_lost() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let spill = tempfile::tempdir().unwrap();
    // No memory for beacons at all: every one goes through the file.
    let (core, edge) = core_and_edge_with(
        &db,
        "spill",
        &[
            "--beacon-queue-mb",
            "0",
            "--beacon-spill-dir",
            spill.path().to_str().unwrap(),
        ],
    );
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (_, pages) = live_campaign(&edge, key, ws, "Spill", 1).await;
    let lead = pages[0].0;
    let page = edge.url_of(&format!("/p/{}", pages[0].1.split("/p/").nth(1).unwrap()));
    let load = load_page(&edge, &page, DESKTOP_BROWSER)
        .await
        .expect("a page load");
    signal(core.pid(), "-STOP");
    let visitor = "0123456789abcdef0123456789abcdef";
    let beacon =
        |body: serde_json::Value| send_beacon(&edge, &page, body, DESKTOP_BROWSER, visitor);
    // A view shown without evidence yet, beacons of loads lps never served, then the evidence:
    // counted only if the view is recorded before its confirmation.
    beacon(json!({"type": "view", "view_id": load}))
        .await
        .expect(204);
    for n in 0..50 {
        let reply = beacon(json!({"type": "scroll", "view_id": format!("{n:032x}")})).await;
        reply.expect(204);
    }
    beacon(json!({"type": "confirm", "view_id": load, "interaction": "pointer"}))
        .await
        .expect(204);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    signal(core.pid(), "-CONT");
    assert_eq!(
        stored_beacons_of(&db, lead, 52).await,
        52,
        "every acknowledged beacon"
    );
    one_view_counted(&edge, key, lead).await;
    let port = edge.http.rsplit(':').next().unwrap();
    let file = spill.path().join(format!("lps-beacons-{port}.spill"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while file.exists() {
        assert!(
            Instant::now() < deadline,
            "the emptied file stays: {file:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Without room in memory or on disk, a beacon is refused, never silently dropped.
    let full = Server::serve(&db, &["--beacon-queue-mb", "0", "--beacon-spill-mb", "0"]);
    let page = full.url_of(&format!("/p/{}", pages[0].1.split("/p/").nth(1).unwrap()));
    let reply = send_beacon(
        &full,
        &page,
        json!({"type": "scroll"}),
        DESKTOP_BROWSER,
        visitor,
    )
    .await;
    assert_eq!(reply.status, 503, "{}", reply.text);
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(
        reply.json()["message"],
        "Too busy to record this right now."
    );
}

#[tokio::test]
async fn beacons_a_stopped_edge_left_on_disk_are_sent_when_it_starts_again() {
    use prost::Message;
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (_, pages) = live_campaign(&server, key, ws, "Left", 1).await;
    let (lead, page) = (pages[0].0, pages[0].1.clone());
    let (campaign_slug, lead_slug) = page.split("/p/").nth(1).unwrap().split_once('/').unwrap();
    drop(server);
    // What an edge killed on port PORT left: 20 whole beacons, and the start of one more that
    // the kill cut.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let spill = tempfile::tempdir().unwrap();
    let mut left = Vec::new();
    for n in 0..20 {
        let beacon = lps::proto::Beacon {
            campaign_slug: campaign_slug.to_owned(),
            lead_slug: lead_slug.to_owned(),
            kind: lps::proto::beacon::Kind::Scroll as i32,
            ip_address: "203.0.113.7".into(),
            user_agent: DESKTOP_BROWSER.into(),
            view_id: Some(format!("{n:032x}")),
            occurred_at: Some(prost_types::Timestamp {
                seconds: 1_790_000_000,
                nanos: 0,
            }),
            ..Default::default()
        };
        left.extend_from_slice(&(beacon.encoded_len() as u32).to_le_bytes());
        beacon.encode(&mut left).unwrap();
    }
    left.extend_from_slice(&[90, 0, 0, 0, 8, 1]);
    let file = spill.path().join(format!("lps-beacons-{port}.spill"));
    std::fs::write(&file, &left).unwrap();
    let http = format!("127.0.0.1:{port}");
    let _server = Server::spawn(
        &[
            "serve",
            "--database-url",
            &db.url,
            "--http",
            &http,
            "--grpc",
            "127.0.0.1:0",
            "--beacon-spill-dir",
            spill.path().to_str().unwrap(),
        ],
        true,
        true,
    );
    assert_eq!(stored_beacons_of(&db, lead, 20).await, 20);
    let deadline = Instant::now() + Duration::from_secs(5);
    while file.exists() {
        assert!(Instant::now() < deadline, "the emptied file stays");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
