//! Callbacks: once a lead's page exists, a signed `POST` to the request's `callback_url`,
//! retried with backoff and kept across restarts. The receivers run on loopback.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// What a receiver was sent: headers and body of each request, and whether it accepted it.
pub(crate) type Received = Arc<Mutex<Vec<(HeaderMap, String, bool)>>>;

/// A receiver on `listener` that refuses its first `failures` requests with 500.
pub(crate) fn receive(listener: tokio::net::TcpListener, failures: usize) -> Received {
    let received: Received = Arc::default();
    let log = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let log = log.clone();
            async move {
                let mut log = log.lock().unwrap();
                let accept = log.len() >= failures;
                log.push((headers, body, accept));
                if accept {
                    StatusCode::NO_CONTENT
                } else {
                    StatusCode::INTERNAL_SERVER_ERROR
                }
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    received
}

pub(crate) async fn wait_for_deliveries(
    received: &Received,
    accepted: usize,
) -> Vec<(HeaderMap, String, bool)> {
    let started = Instant::now();
    loop {
        let log = received.lock().unwrap().clone();
        if log.iter().filter(|(_, _, ok)| *ok).count() >= accepted {
            return log;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "only {log:?}");
        drop(log);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) fn secret(db: &TestDb, workspace_id: i64) -> String {
    lps_json(&[
        "admin",
        "workspace",
        "callback-secret",
        "--database-url",
        &db.url,
        "--workspace",
        &workspace_id.to_string(),
    ])["callback_secret"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Verifies the signature the way a receiver would.
fn verify(secret: &str, headers: &HeaderMap, body: &str) {
    let timestamp = headers["x-lps-timestamp"].to_str().unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{timestamp}.{body}").as_bytes());
    let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(headers["x-lps-signature"].to_str().unwrap(), expected);
}

#[tokio::test]
async fn a_signed_callback_is_retried_after_the_receiver_fails() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 1);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network"]);
    let key = &account.api_key;
    let (campaign, slug) = create_campaign(&server, key, account.workspace_id, "Hooked").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "callback_url": url, "leads": [
        {"values": {"email": "ada@example.com", "first_name": "Ada", "company_name": "Acme"}}]}),
    )
    .await;
    let log = wait_for_deliveries(&received, 1).await;
    assert_eq!(log.len(), 2, "one failure, then the retry");
    let (failed_headers, failed_body, _) = &log[0];
    let (headers, body, _) = &log[1];
    assert_eq!(failed_body, body, "the retry sends the same payload");
    assert_eq!(failed_headers["x-lps-delivery"], headers["x-lps-delivery"]);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["x-lps-event"], "lead.page_generated");
    verify(&secret(&db, account.workspace_id), headers, body);
    let payload: Value = serde_json::from_str(body).unwrap();
    let lead = &server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json()[0];
    assert_eq!(
        payload,
        json!({
            "event": "lead.page_generated",
            "job_id": job,
            "lead_id": lead["lead_id"],
            "campaign_id": campaign,
            "service_page_url": lead["service_page_url"],
            "name": "Ada",
            "email": "ada@example.com",
            "company_name": "Acme",
        })
    );
    assert!(
        payload["service_page_url"]
            .as_str()
            .unwrap()
            .contains(&format!("/p/{slug}/"))
    );
}

#[tokio::test]
async fn a_pending_callback_survives_a_restart() {
    // A port with nobody listening yet.
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/hook");
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let key = &account.api_key;
    let mut server = Server::serve(&db, &["--allow-private-network"]);
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Later").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "callback_url": url,
        "leads": leads("later", 3)}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    server.kill();

    let received = receive(
        tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap(),
        0,
    );
    let _server = Server::serve(&db, &["--allow-private-network"]);
    let log = wait_for_deliveries(&received, 3).await;
    let secret = secret(&db, account.workspace_id);
    let mut leads: Vec<i64> = log
        .iter()
        .map(|(headers, body, _)| {
            verify(&secret, headers, body);
            serde_json::from_str::<Value>(body).unwrap()["lead_id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    leads.sort_unstable();
    leads.dedup();
    assert_eq!(leads.len(), 3, "each lead's callback once");
}

#[tokio::test]
async fn callbacks_to_private_addresses_are_refused_by_default() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 0);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Private").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "callback_url": url,
        "leads": leads("private", 1)}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    // IPv6 forms that carry a loopback address, and a name that resolves to one.
    let port = url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/hook")
        .to_owned();
    for host in [
        "[::127.0.0.1]",
        "[64:ff9b::7f00:1]",
        "[::ffff:127.0.0.1]",
        "[2002:7f00:1::]",
        "localhost",
    ] {
        let job = upsert(
            &server,
            key,
            json!({"campaign_id": campaign, "callback_url": format!("http://{host}:{port}/hook"),
            "leads": leads(host.trim_matches(['[', ']']).replace(':', "x").as_str(), 1)}),
        )
        .await;
        wait_for_job(&server, key, &job).await;
    }
    // The first attempt happens at once and is final: refused, never retried.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(received.lock().unwrap().is_empty());
    let store = lps::admin::Db::connect(&db.url).await.unwrap();
    let outcomes: Vec<(String, i64, Option<String>)> =
        sqlx::query_as("SELECT status, attempts, last_error FROM callbacks")
            .fetch_all(store.pool())
            .await
            .unwrap();
    assert_eq!(outcomes.len(), 6);
    for (status, attempts, error) in outcomes {
        assert_eq!((status.as_str(), attempts), ("failed", 1), "{error:?}");
        assert!(error.unwrap_or_default().contains("refused"));
    }
}

#[tokio::test]
async fn a_receiver_that_never_answers_does_not_delay_another_workspaces_callback() {
    // Workspace B's receiver accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!(
        "http://localhost:{}/hook",
        silent.local_addr().unwrap().port()
    );
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 0);

    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (workspace_b, key_b) = add_workspace(&db, account.account_id, "Slow receivers");
    let server = Server::serve(&db, &["--allow-private-network"]);
    let (campaign_b, _) = create_campaign(&server, &key_b, workspace_b, "B").await;
    let job_b = upsert(
        &server,
        &key_b,
        json!({"campaign_id": campaign_b, "callback_url": silent_url,
               "leads": leads("b", 1_000)}),
    )
    .await;
    wait_for_job(&server, &key_b, &job_b).await;

    let key_a = &account.api_key;
    let (campaign_a, _) = create_campaign(&server, key_a, account.workspace_id, "A").await;
    let started = Instant::now();
    upsert(
        &server,
        key_a,
        json!({"campaign_id": campaign_a, "callback_url": url, "leads": leads("a", 1)}),
    )
    .await;
    wait_for_deliveries(&received, 1).await;
    let waited = started.elapsed();
    println!("workspace A's callback arrived after {waited:?} beside a silent receiver");
    assert!(
        waited < Duration::from_secs(8),
        "workspace A's callback took {waited:?}"
    );
}

#[tokio::test]
async fn a_form_submitted_on_a_leads_page_is_announced_to_its_callback_address() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 0);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network"]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, _) = create_campaign(&server, key, ws, "Hot leads").await;
    publish_premade(&server, key, ws, campaign, "Demo Invitation").await;
    upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "callback_url": url,
               "leads": [{"values": {"email": "ada@example.com", "first_name": "Ada"}}]}),
    )
    .await;
    let log = wait_for_deliveries(&received, 1).await;
    let generated: Value = serde_json::from_str(&log[0].1).unwrap();
    let page = generated["service_page_url"].as_str().unwrap().to_owned();

    let form = server
        .client
        .post(&page)
        .header("user-agent", DESKTOP_BROWSER)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("form_id=demo&email=visitor%40example.com&when=Next+week");
    server.send(form).await.expect(200);
    let log = wait_for_deliveries(&received, 2).await;
    let (headers, body, _) = &log[1];
    assert_eq!(headers["x-lps-event"], "lead.form_submitted");
    verify(&secret(&db, ws), headers, body);
    let event: Value = serde_json::from_str(body).unwrap();
    assert_eq!(event["event"], "lead.form_submitted");
    assert_eq!(event["lead_id"], generated["lead_id"]);
    assert_eq!(event["campaign_id"], campaign);
    assert_eq!(event["form_id"], "demo");
    assert_eq!(event["email"], "visitor@example.com");
    assert_eq!(event["fields"]["when"], "Next week");
    assert_eq!(event["page_url"], page.as_str());
}

#[tokio::test]
async fn the_first_counted_view_of_a_leads_page_is_announced_once() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 0);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network"]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, _) = create_campaign(&server, key, ws, "Viewed").await;
    publish_premade(&server, key, ws, campaign, "Demo Invitation").await;
    upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "callback_url": url,
               "leads": [{"values": {"email": "ada@example.com", "first_name": "Ada"}}]}),
    )
    .await;
    let log = wait_for_deliveries(&received, 1).await;
    let generated: Value = serde_json::from_str(&log[0].1).unwrap();
    let page = generated["service_page_url"].as_str().unwrap().to_owned();

    // A link unfurler and a bot's beacon announce nothing; the person's first view does, and
    // their second view does not again.
    server
        .send(
            server
                .client
                .get(&page)
                .header("user-agent", "Slackbot 1.0"),
        )
        .await
        .expect(200);
    send_person_beacon(
        &server,
        &page,
        json!({"type": "view"}),
        "Twitterbot/1.0",
        "",
    )
    .await
    .expect(204);
    let visitor = "0123456789abcdef0123456789abcdef";
    for _ in 0..2 {
        send_person_beacon(
            &server,
            &page,
            json!({"type": "view"}),
            DESKTOP_BROWSER,
            visitor,
        )
        .await
        .expect(204);
    }
    analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 1).await;
    let log = wait_for_deliveries(&received, 2).await;
    let (headers, body, _) = &log[1];
    assert_eq!(headers["x-lps-event"], "lead.page_viewed");
    verify(&secret(&db, ws), headers, body);
    let event: Value = serde_json::from_str(body).unwrap();
    assert_eq!(event["event"], "lead.page_viewed");
    assert_eq!(event["lead_id"], generated["lead_id"]);
    assert_eq!(event["campaign_id"], campaign);
    assert_eq!(event["page_url"], page.as_str());
    assert!(is_iso8601_micros(&event["viewed_at"]), "{event}");
    // Nothing more arrives: one announcement per page.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(received.lock().unwrap().len(), 2);
}

/// Verifies a callback with the official Standard Webhooks library (Python's
/// `standardwebhooks`, installed by `.ci/run`): `Ok` or the library's complaint. Skipped (with
/// a notice: `None`) where the library is missing, unless `LPS_REQUIRE_WEBHOOK_VERIFIER` is
/// set, as CI sets it.
pub(crate) fn verify_standard(
    secret: &str,
    headers: &HeaderMap,
    body: &str,
) -> Option<Result<(), String>> {
    let header = |name: &str| headers[name].to_str().unwrap().to_owned();
    let input = json!({
        "secret": secret,
        "body": body,
        "headers": {
            "webhook-id": header("webhook-id"),
            "webhook-timestamp": header("webhook-timestamp"),
            "webhook-signature": header("webhook-signature"),
        },
    });
    let script = r#"
import json, sys
try:
    from standardwebhooks.webhooks import Webhook
except ImportError:
    print("missing"); sys.exit(3)
given = json.load(sys.stdin)
try:
    Webhook(given["secret"]).verify(given["body"], given["headers"])
    print("verified")
except Exception as error:
    print(f"refused: {error!r}"); sys.exit(1)
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    match output.status.code() {
        Some(0) => Some(Ok(())),
        Some(3) if std::env::var_os("LPS_REQUIRE_WEBHOOK_VERIFIER").is_none() => {
            eprintln!("skipped: pip install standardwebhooks to verify with the official library");
            None
        }
        _ => Some(Err(said)),
    }
}

/// A campaign whose upserted leads' callbacks go to `url`; each call upserts one more lead.
async fn upsert_one(server: &Server, key: &str, campaign: i64, url: &str, name: &str) {
    upsert(
        server,
        key,
        json!({"campaign_id": campaign, "callback_url": url, "leads": leads(name, 1)}),
    )
    .await;
}

#[tokio::test]
async fn callbacks_verify_with_the_standard_webhooks_library_before_during_and_after_a_rotation() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 0);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network"]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Signed").await;
    let old = secret(&db, account.workspace_id);
    assert!(old.starts_with("whsec_"), "{old}");

    upsert_one(&server, key, campaign, &url, "before").await;
    let log = wait_for_deliveries(&received, 1).await;
    let (headers, body, _) = &log[0];
    let delivery = headers["x-lps-delivery"].to_str().unwrap();
    assert_eq!(headers["webhook-id"], format!("msg_{delivery}").as_str());
    let signature = headers["webhook-signature"].to_str().unwrap();
    assert!(
        signature.starts_with("v1,") && !signature.contains(' '),
        "one signature: {signature}"
    );
    if let Some(outcome) = verify_standard(&old, headers, body) {
        outcome.unwrap();
        assert!(
            verify_standard("whsec_dGhlIHdyb25nIHNlY3JldA==", headers, body)
                .unwrap()
                .is_err()
        );
    }
    verify(&old, headers, body);

    // Rotated with the default overlap: both secrets verify, the deprecated header the new.
    let rotated = server
        .post(
            key,
            "/callbacks/rotate-secret",
            json!({"workspace_id": account.workspace_id}),
        )
        .await
        .expect(200)
        .json();
    let new = rotated["secret"].as_str().unwrap().to_owned();
    assert!(new.starts_with("whsec_") && new != old, "{rotated}");
    assert!(
        rotated["previous_valid_until"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert_eq!(secret(&db, account.workspace_id), new);
    upsert_one(&server, key, campaign, &url, "during").await;
    let log = wait_for_deliveries(&received, 2).await;
    let (headers, body, _) = &log[1];
    let signatures = headers["webhook-signature"].to_str().unwrap();
    assert_eq!(signatures.split(' ').count(), 2, "{signatures}");
    if let Some(outcome) = verify_standard(&new, headers, body) {
        outcome.unwrap();
        verify_standard(&old, headers, body).unwrap().unwrap();
    }
    verify(&new, headers, body);

    // Rotated with no overlap: only the newest secret signs.
    let newest = server
        .post(
            key,
            "/callbacks/rotate-secret",
            json!({"workspace_id": account.workspace_id, "overlap_seconds": 0}),
        )
        .await
        .expect(200)
        .json()["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    upsert_one(&server, key, campaign, &url, "after").await;
    let log = wait_for_deliveries(&received, 3).await;
    let (headers, body, _) = &log[2];
    assert!(!headers["webhook-signature"].to_str().unwrap().contains(' '));
    if let Some(outcome) = verify_standard(&newest, headers, body) {
        outcome.unwrap();
        assert!(verify_standard(&new, headers, body).unwrap().is_err());
    }

    // Bad input, and a workspace the key does not reach.
    let invalid = server
        .post(
            key,
            "/callbacks/rotate-secret",
            json!({"workspace_id": account.workspace_id, "overlap_seconds": 999_999_999}),
        )
        .await
        .expect(422)
        .json();
    assert!(invalid["errors"]["overlap_seconds"].is_array(), "{invalid}");
    server
        .post(
            key,
            "/callbacks/rotate-secret",
            json!({"workspace_id": 999_999}),
        )
        .await
        .expect(403);
    assert_eq!(secret(&db, account.workspace_id), newest, "nothing changed");
}

/// The delivery log's entries, as listed by `GET /callbacks/deliveries`.
async fn deliveries(server: &Server, key: &str, query: &str) -> Vec<Value> {
    server
        .get(key, &format!("/callbacks/deliveries?{query}"))
        .await
        .expect(200)
        .json()["deliveries"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn the_delivery_log_shows_each_attempt_and_a_redelivery_sends_the_same_webhook_id() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 2);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (other_workspace, other_key) = add_workspace(&db, account.account_id, "Other");
    let server = Server::serve(&db, &["--allow-private-network"]);
    let key = &account.api_key;
    let workspace = account.workspace_id;
    let (campaign, _) = create_campaign(&server, key, workspace, "Logged").await;
    upsert_one(&server, key, campaign, &url, "logged").await;
    let log = wait_for_deliveries(&received, 1).await;
    assert_eq!(log.len(), 3, "two refusals, then delivered");

    // The log says so (the outcome is recorded just after the receiver answers).
    let entry = loop {
        let listed = deliveries(&server, key, &format!("workspace_id={workspace}")).await;
        assert_eq!(listed.len(), 1, "{listed:?}");
        if listed[0]["status"] == "delivered" {
            break listed[0].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let id = entry["id"].as_i64().unwrap();
    assert_eq!(entry["webhook_id"], format!("msg_{id}"));
    assert_eq!(log[2].0["webhook-id"], format!("msg_{id}").as_str());
    assert_eq!(entry["event"], "lead.page_generated");
    assert_eq!(entry["url"], url);
    assert_eq!(entry["attempts"], 3);
    assert_eq!(entry["last_status_code"], 204);
    assert_eq!(entry["last_error"], Value::Null);
    assert!(entry["last_latency_ms"].as_i64().unwrap() >= 0);
    assert!(entry["delivered_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(entry["next_attempt_at"], Value::Null);
    assert!(
        entry["job_id"].is_string() && entry["lead_id"].is_i64(),
        "{entry}"
    );
    // Filters.
    let lead = entry["lead_id"].as_i64().unwrap();
    for (query, count) in [
        ("status=delivered", 1),
        ("status=failed", 0),
        ("event=lead.page_generated", 1),
        ("event=lead.hot", 0),
        (&format!("lead_id={lead}") as &str, 1),
        (&format!("before_id={id}"), 0),
    ] {
        let listed = deliveries(&server, key, &format!("workspace_id={workspace}&{query}")).await;
        assert_eq!(listed.len(), count, "{query}: {listed:?}");
    }
    // Another workspace sees none of it and cannot redeliver it.
    assert!(
        deliveries(
            &server,
            &other_key,
            &format!("workspace_id={other_workspace}")
        )
        .await
        .is_empty()
    );
    server
        .get(
            &other_key,
            &format!("/callbacks/deliveries?workspace_id={workspace}"),
        )
        .await
        .expect(403);
    server
        .post(
            &other_key,
            "/callbacks/redeliver",
            json!({"workspace_id": other_workspace, "delivery_id": id}),
        )
        .await
        .expect(404);

    // Sent again: the same webhook-id and body, a fresh round of attempts.
    let again = server
        .post(
            key,
            "/callbacks/redeliver",
            json!({"workspace_id": workspace, "delivery_id": id}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(again["id"], id);
    assert_eq!(again["redeliveries"], 1);
    let log = wait_for_deliveries(&received, 2).await;
    let (headers, body, _) = log.last().unwrap();
    assert_eq!(headers["webhook-id"], format!("msg_{id}").as_str());
    assert_eq!(body, &log[2].1);
    verify(&secret(&db, workspace), headers, body);

    // Errors: unknown delivery, bad filters, a missing id.
    let missing = server
        .post(
            key,
            "/callbacks/redeliver",
            json!({"workspace_id": workspace, "delivery_id": 999_999}),
        )
        .await
        .expect(404)
        .json();
    assert_eq!(missing["message"], "Delivery not found");
    let invalid = server
        .get(
            key,
            &format!("/callbacks/deliveries?workspace_id={workspace}&status=lost&limit=0"),
        )
        .await
        .expect(422)
        .json();
    assert!(
        invalid["errors"]["status"].is_array() && invalid["errors"]["limit"].is_array(),
        "{invalid}"
    );
    let invalid = server
        .post(
            key,
            "/callbacks/redeliver",
            json!({"workspace_id": workspace}),
        )
        .await
        .expect(422)
        .json();
    assert!(invalid["errors"]["delivery_id"].is_array(), "{invalid}");
}

#[tokio::test]
async fn an_unhealthy_receiver_is_paused_with_its_callbacks_kept_then_resumed() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 2);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(
        &db,
        &[
            "--allow-private-network",
            "--callback-unhealthy-after",
            "2",
            "--callback-pause-seconds",
            "4",
        ],
    );
    let key = &account.api_key;
    let workspace = account.workspace_id;
    let endpoints = || async {
        server
            .get(
                key,
                &format!("/callbacks/endpoints?workspace_id={workspace}"),
            )
            .await
            .expect(200)
            .json()["endpoints"]
            .clone()
    };
    assert_eq!(endpoints().await, json!([]));
    let (campaign, _) = create_campaign(&server, key, workspace, "Flaky").await;
    upsert_one(&server, key, campaign, &url, "flaky").await;

    // Two failures in a row: paused, the callback waiting.
    let paused = loop {
        let listed = endpoints().await;
        if listed[0]["state"] == "paused" {
            break listed[0].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let paused_at = Instant::now();
    assert_eq!(paused["destination"], "127.0.0.1");
    assert_eq!(paused["consecutive_failures"], 2);
    assert_eq!(paused["pending"], 1);
    assert!(paused["paused_until"].is_string() && paused["unhealthy_since"].is_string());
    assert!(
        paused["last_error"].as_str().unwrap().contains("500"),
        "{paused}"
    );
    let waiting = deliveries(
        &server,
        key,
        &format!("workspace_id={workspace}&status=pending"),
    )
    .await;
    assert_eq!(waiting.len(), 1, "kept, not dropped");
    // Nothing is sent while paused (the callback's own backoff alone would retry after 2 s).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        received.lock().unwrap().len(),
        2,
        "no attempt during the pause"
    );

    // The pause ends: the next attempt probes it, succeeds, and the receiver is resumed.
    wait_for_deliveries(&received, 1).await;
    assert!(paused_at.elapsed() >= Duration::from_secs(3));
    let resumed = loop {
        let listed = endpoints().await;
        if listed[0]["state"] == "healthy" {
            break listed[0].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(resumed["consecutive_failures"], 0);
    assert!(resumed["resumed_at"].is_string(), "{resumed}");
    assert_eq!(resumed["pending"], 0);
}
