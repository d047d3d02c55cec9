//! The command line contract: `lps serve`'s first start, `lps admin ...`, and core and edge
//! run as two processes.

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn first_serve_on_an_empty_database_prints_a_working_key_and_curl_line() {
    let db = TestDb::new();
    let server = Server::serve(&db, &[]);
    let printed = server.stdout.join("\n");
    let key = printed
        .split_whitespace()
        .find(|word| word.starts_with("sk-proj-"))
        .unwrap_or_else(|| panic!("no key printed: {printed}"));
    assert!(printed.contains("curl "), "{printed}");
    assert!(
        printed.contains(&server.url("/hello-world-user")),
        "{printed}"
    );
    let me = server
        .get(key, "/hello-world-user")
        .await
        .expect(200)
        .json();
    let workspace = me["workspace_id"].as_i64().unwrap();
    // The account is on a plan that may generate keys, and has starter credits.
    let credits = server
        .get(key, &format!("/account/credits?workspace_id={workspace}"))
        .await
        .expect(200)
        .json();
    assert!(credits["remaining"].as_i64().unwrap() > 0);
    server
        .post(
            key,
            "/generate-api-token",
            json!({"name": "n", "workspace_id": workspace}),
        )
        .await
        .expect(200);
}

#[tokio::test]
async fn a_first_start_on_a_busy_port_creates_nothing_so_the_next_start_prints_the_key() {
    let db = TestDb::new();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap().to_string();
    let output = std::process::Command::new(BIN)
        .args(["serve", "--database-url", &db.url, "--http", &busy_addr])
        .args(["--grpc", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(!String::from_utf8_lossy(&output.stdout).contains("sk-proj-"));
    let server = Server::serve(&db, &[]);
    let printed = server.stdout.join("\n");
    assert!(printed.contains("sk-proj-"), "{printed}");
    // The banner's command names the running binary and works as printed.
    let command = printed
        .lines()
        .map(str::trim)
        .find(|line| line.contains(" admin key create "))
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(command.starts_with(BIN), "{command}");
    let made = std::process::Command::new("sh")
        .args(["-c", command])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    assert!(String::from_utf8_lossy(&made.stdout).contains("sk-proj-"));
}

#[test]
fn admin_commands_refuse_a_database_file_that_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("typo.db").display());
    let output = std::process::Command::new(BIN)
        .args(["admin", "workspace", "create", "--database-url", &url])
        .args(["--account", "1", "--name", "x"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(!dir.path().join("typo.db").exists());
}

#[tokio::test]
async fn a_second_start_creates_nothing_and_prints_no_key() {
    let db = TestDb::new();
    drop(Server::serve(&db, &[]));
    let again = Server::serve(&db, &[]);
    assert!(!again.stdout.join("\n").contains("sk-proj-"));
}

#[test]
fn bootstrap_prints_the_four_ids_as_json() {
    let db = TestDb::new();
    let made = lps_json(&[
        "admin",
        "bootstrap",
        "--database-url",
        &db.url,
        "--account-name",
        "Acme",
        "--workspace-name",
        "Sales",
        "--user-name",
        "Ada",
        "--user-email",
        "ada@acme.test",
        "--plan",
        "scale_monthly",
        "--credits",
        "10",
    ]);
    let object = made.as_object().unwrap();
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["account_id", "api_key", "user_id", "workspace_id"]);
    assert!(made["api_key"].as_str().unwrap().starts_with("sk-proj-"));
    for id in ["account_id", "user_id", "workspace_id"] {
        assert!(made[id].as_i64().unwrap() > 0);
    }
}

#[test]
fn workspace_and_key_creation_print_their_json() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let made = lps_json(&[
        "admin",
        "workspace",
        "create",
        "--database-url",
        &db.url,
        "--account",
        &account.account_id.to_string(),
        "--name",
        "Second",
    ]);
    assert_eq!(made.as_object().unwrap().len(), 1);
    let workspace = made["workspace_id"].as_i64().unwrap();
    assert_ne!(workspace, account.workspace_id);
    for args in [
        vec![
            "--workspace".to_owned(),
            workspace.to_string(),
            "--name".into(),
            "K".into(),
        ],
        vec![
            "--account".to_owned(),
            account.account_id.to_string(),
            "--legacy".into(),
        ],
    ] {
        let mut full = vec!["admin", "key", "create", "--database-url", db.url.as_str()];
        full.extend(args.iter().map(String::as_str));
        let key = lps_json(&full);
        assert_eq!(key.as_object().unwrap().len(), 2);
        assert!(key["id"].is_string());
        assert!(key["api_key"].as_str().unwrap().starts_with("sk-proj-"));
    }
}

#[test]
fn admin_commands_name_what_is_missing() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let output = std::process::Command::new(BIN)
        .args([
            "admin",
            "workspace",
            "create",
            "--database-url",
            &db.url,
            "--account",
            "4242",
            "--name",
            "X",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no account 4242"));
}

#[tokio::test]
async fn admin_commands_work_beside_a_running_server() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    server
        .get(&account.api_key, "/hello-world")
        .await
        .expect(200);
    let (workspace, key) = add_workspace(&db, account.account_id, "Live");
    let me = server
        .get(&key, "/hello-world-user")
        .await
        .expect(200)
        .json();
    assert_eq!(me["workspace_id"], json!(workspace));
}

#[tokio::test]
async fn core_and_edge_run_as_two_processes() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let core = Server::spawn(
        &["core", "--database-url", &db.url, "--grpc", "127.0.0.1:0"],
        false,
        true,
    );
    let core_url = core.grpc.clone().unwrap();
    let edge = Server::spawn(
        &["edge", "--core-url", &core_url, "--http", "127.0.0.1:0"],
        true,
        false,
    );
    let me = edge
        .get(&account.api_key, "/hello-world-user")
        .await
        .expect(200);
    assert_eq!(me.json()["workspace_id"], json!(account.workspace_id));
    assert_eq!(me.header("x-ratelimit-limit"), Some("120"));
    let path = "/workspaces/get-variable-list";
    let invalid = edge.get(&account.api_key, path).await.expect(422);
    assert!(invalid.json()["errors"]["workspace_id"].is_array());
    edge.get("sk-proj-nope", "/hello-world").await.expect(401);
    drop(core);
    // With core gone the edge still answers JSON, whatever state its connection was in.
    for _ in 0..3 {
        let down = edge.get(&account.api_key, "/hello-world").await.expect(503);
        assert!(down.json()["message"].is_string());
    }
}

#[test]
fn every_flag_reads_from_its_environment_variable() {
    let help = lps(&["serve", "--help"]);
    for var in [
        "LPS_DATABASE_URL",
        "LPS_HTTP_ADDR",
        "LPS_GRPC_ADDR",
        "LPS_PUBLIC_URL",
        "LPS_REDIS_URL",
        "LPS_RATE_LIMIT_PER_MINUTE",
    ] {
        assert!(help.contains(var), "{var} missing from serve --help");
    }
    assert!(lps(&["edge", "--help"]).contains("LPS_CORE_URL"));
}

#[tokio::test]
async fn environment_variables_configure_serve() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let mut child = std::process::Command::new(BIN)
        .arg("serve")
        .env("LPS_DATABASE_URL", &db.url)
        .env("LPS_HTTP_ADDR", "127.0.0.1:0")
        .env("LPS_GRPC_ADDR", "127.0.0.1:0")
        .env("LPS_RATE_LIMIT_PER_MINUTE", "7")
        .env_remove("LPS_REDIS_URL")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = std::io::BufRead::lines(std::io::BufReader::new(stdout))
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("HTTP listening on ").map(str::to_owned))
        .unwrap();
    let reply = reqwest::Client::new()
        .get(format!("{line}{BASE}/hello-world"))
        .bearer_auth(&account.api_key)
        .send()
        .await
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(reply.headers()["x-ratelimit-limit"], "7");
}
