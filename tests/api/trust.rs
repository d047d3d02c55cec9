//! Engagement a sales team can trust (without a browser; the browser's side is in
//! `browser.rs`): views classed person / unconfirmed / automated / scanner_network with a
//! reason, budgets, the engagement score and `lead.hot`, export and erasure, retention.

use std::time::Duration;

use serde_json::{Value, json};

use crate::callbacks::{Received, receive, wait_for_deliveries};
use crate::common::*;
use crate::engagement::submit;

/// A random id (for names of files of a test's own).
fn random_name() -> String {
    (0..32)
        .map(|_| char::from_digit(rand::random_range(0..16u32), 16).unwrap())
        .collect()
}

/// A live campaign whose leads (one per email) are upserted with the callback address `url`;
/// once `received` has their `lead.page_generated` callbacks, each lead's (id, page address),
/// in the order of `emails`.
async fn leads_with_callback(
    server: &Server,
    key: &str,
    ws: i64,
    name: &str,
    (url, received): (&str, &Received),
    emails: &[&str],
) -> (i64, Vec<(i64, String)>) {
    let (campaign, _) = create_campaign(server, key, ws, name).await;
    publish_premade(server, key, ws, campaign, "Demo Invitation").await;
    let rows: Vec<Value> = emails
        .iter()
        .map(|email| json!({"values": {"email": email}}))
        .collect();
    let job = upsert(
        server,
        key,
        json!({"campaign_id": campaign, "callback_url": url, "leads": rows}),
    )
    .await;
    wait_for_job(server, key, &job).await;
    wait_for_deliveries(received, emails.len()).await;
    let listed = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json();
    let pages = emails
        .iter()
        .map(|email| {
            let lead = listed
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["email"] == *email)
                .unwrap();
            (
                lead["lead_id"].as_i64().unwrap(),
                lead["service_page_url"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (campaign, pages)
}

async fn lead_of(server: &Server, key: &str, lead: i64) -> Value {
    server
        .get(key, &format!("/leads/get?lead_id={lead}"))
        .await
        .expect(200)
        .json()
}

async fn activity(server: &Server, key: &str, lead: i64) -> Vec<Value> {
    server
        .get(key, &format!("/leads/activity?lead_id={lead}"))
        .await
        .expect(200)
        .json()["entries"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_view_counts_only_once_a_person_is_seen_and_then_everything_its_load_sent() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Trust", 2).await;
    let visitor = format!("{:032x}", 7);
    let (lead, page) = &pages[0];

    // Shown, the bottom reached (the page fits), no interaction, "visible 5 s" claimed at
    // once: the server's clock says otherwise. Nothing counts.
    let load = load_page(&server, page, DESKTOP_BROWSER).await.unwrap();
    for body in [
        json!({"type": "view", "view_id": load}),
        json!({"type": "scroll", "view_id": load}),
        json!({"type": "confirm", "view_id": load, "visible_seconds": 5}),
    ] {
        send_beacon(&server, page, body, DESKTOP_BROWSER, &visitor)
            .await
            .expect(204);
    }
    let entry = analytics_until(&server, key, ws, campaign, |e| {
        e["filtered_visits"]["unconfirmed"] == 1
    })
    .await;
    assert_eq!(entry["pages_visited"], 0, "{entry}");
    assert_eq!(entry["filtered_visits"]["unconfirmed"], 1, "{entry}");
    let seen = lead_of(&server, key, *lead).await;
    assert_eq!(seen["engagement"]["views"], 0, "{seen}");
    assert_eq!(seen["engagement"]["scrolled_to_bottom"], false, "{seen}");
    let listed = activity(&server, key, *lead).await;
    assert_eq!(listed.len(), 1, "only the view is listed: {listed:?}");
    assert_eq!(listed[0]["class"], "unconfirmed");
    assert_eq!(
        listed[0]["reason"],
        "shown; no interaction or 3 s visible yet"
    );

    // Three seconds later the page is still visible: the view and its bottom count, once.
    tokio::time::sleep(Duration::from_millis(3100)).await;
    send_beacon(
        &server,
        page,
        json!({"type": "confirm", "view_id": load, "visible_seconds": 3}),
        DESKTOP_BROWSER,
        &visitor,
    )
    .await
    .expect(204);
    let entry = analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 1).await;
    assert_eq!(entry["pages_visited"], 1, "{entry}");
    assert_eq!(entry["unique_visitors"], 1, "{entry}");
    assert_eq!(entry["filtered_visits"]["unconfirmed"], 0, "{entry}");
    let seen = lead_of(&server, key, *lead).await;
    assert_eq!(seen["engagement"]["views"], 1, "{seen}");
    assert_eq!(seen["engagement"]["scrolled_to_bottom"], true, "{seen}");
    let listed = activity(&server, key, *lead).await;
    let view = listed.iter().find(|e| e["event"] == "page_viewed").unwrap();
    assert_eq!(view["class"], "person");
    assert_eq!(view["reason"], "confirmed by visible for 3 s");

    // A click confirms at once, in the same batch as its view; a second view in one page load
    // is not a second view.
    let (other_lead, other_page) = &pages[1];
    let load = load_page(&server, other_page, DESKTOP_BROWSER)
        .await
        .unwrap();
    for body in [
        json!({"type": "view", "view_id": load}),
        json!({"type": "click", "view_id": load, "target": "#cta"}),
        json!({"type": "view", "view_id": load}),
    ] {
        send_beacon(&server, other_page, body, DESKTOP_BROWSER, &visitor)
            .await
            .expect(204);
    }
    let entry = analytics_until(&server, key, ws, campaign, |e| {
        e["pages_visited"] == 2 && e["filtered_visits"]["automated"] == 1
    })
    .await;
    assert_eq!(entry["total_button_clicks"], 1, "{entry}");
    assert_eq!(entry["filtered_visits"]["automated"], 1, "{entry}");
    let listed = activity(&server, key, *other_lead).await;
    assert!(
        listed
            .iter()
            .any(|e| e["reason"] == "a second view in one page load"),
        "{listed:?}"
    );
    // Later, the load stands for its first view (a person's), not for the second: a click in
    // another batch counts.
    send_beacon(
        &server,
        other_page,
        json!({"type": "click", "view_id": load, "target": "#cta"}),
        DESKTOP_BROWSER,
        &visitor,
    )
    .await
    .expect(204);
    let entry = analytics_until(&server, key, ws, campaign, |e| {
        e["total_button_clicks"] == 2
    })
    .await;
    assert_eq!(entry["total_button_clicks"], 2, "{entry}");
    // Beacons without a page load lps served (an old or foreign script, or none) never count.
    send_beacon(
        &server,
        page,
        json!({"type": "view", "interaction": "pointer"}),
        DESKTOP_BROWSER,
        "",
    )
    .await
    .expect(204);
    let entry = analytics_until(&server, key, ws, campaign, |e| {
        e["filtered_visits"]["automated"] == 2
    })
    .await;
    assert_eq!(entry["filtered_visits"]["automated"], 2, "{entry}");
    assert_eq!(entry["pages_visited"], 2, "{entry}");
}

#[tokio::test]
async fn views_from_a_configured_scanner_network_are_kept_apart_and_the_list_is_read_again() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let dir = std::env::temp_dir().join(format!("lps-scanners-{}", random_name()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("networks.txt");
    std::fs::write(&file, "# a provider's ranges\n192.0.2.0/24\n").unwrap();
    let server = Server::serve(&db, &["--scanner-networks", file.to_str().unwrap()]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Scanned", 2).await;

    // Not listed yet: the loopback person counts.
    send_person_beacon(
        &server,
        &pages[0].1,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        "",
    )
    .await
    .expect(204);
    analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 1).await;
    // Listed (the file is read again when it changes): the same browser is a scanner now.
    std::fs::write(
        &file,
        "192.0.2.0/24\n127.0.0.0/8 # loopback, for the test\n",
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    send_person_beacon(
        &server,
        &pages[1].1,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        "",
    )
    .await
    .expect(204);
    let entry = analytics_until(&server, key, ws, campaign, |e| {
        e["filtered_visits"]["scanner_network"] == 1
    })
    .await;
    assert_eq!(entry["filtered_visits"]["scanner_network"], 1, "{entry}");
    assert_eq!(entry["pages_visited"], 1, "{entry}");
    let listed = activity(&server, key, pages[1].0).await;
    assert_eq!(listed[0]["class"], "scanner_network", "{listed:?}");
    assert_eq!(listed[0]["reason"], "from a scanner network (127.0.0.0/8)");
    let metrics = server
        .send(server.client.get(server.url_of("/metrics")))
        .await
        .text;
    assert!(
        metrics.contains(r#"class="scanner_network",outcome="recorded""#)
            || metrics.contains(r#"outcome="recorded",class="scanner_network""#),
        "{metrics}"
    );
    std::fs::remove_dir_all(&dir).unwrap();

    // A file that is not a list of ranges stops the start, naming the line.
    let bad = std::env::temp_dir().join(format!("lps-bad-{}.txt", random_name()));
    std::fs::write(&bad, "10.0.0.0/8\nnot a range\n").unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_lps"))
        .args(["serve", "--database-url", &db.url, "--scanner-networks"])
        .arg(&bad)
        .args(["--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("line 2"), "{said}");
    std::fs::remove_file(&bad).unwrap();
}

#[tokio::test]
async fn the_score_orders_leads_by_evidence_and_recency_and_a_hot_lead_is_announced_once() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 0);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network", "--hot-score", "8"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, leads) = leads_with_callback(
        &server,
        key,
        ws,
        "Scored",
        (&url, &received),
        &[
            "viewer@example.com",
            "clicker@example.com",
            "former@example.com",
        ],
    )
    .await;
    let [
        (viewer, viewer_page),
        (clicker, clicker_page),
        (former, former_page),
    ] = <[_; 3]>::try_from(leads).unwrap();
    let visitor = |n: u32| format!("{n:032x}");
    send_person_beacon(
        &server,
        &viewer_page,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        &visitor(1),
    )
    .await
    .expect(204);
    for body in [
        json!({"type": "view"}),
        json!({"type": "click", "target": "#cta"}),
    ] {
        send_person_beacon(&server, &clicker_page, body, DESKTOP_BROWSER, &visitor(2))
            .await
            .expect(204);
    }
    send_person_beacon(
        &server,
        &former_page,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        &visitor(3),
    )
    .await
    .expect(204);
    submit(&server, &former_page, &[("email", "former@example.com")])
        .await
        .expect(200);
    analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 3).await;

    let score = |lead: Value| lead["engagement"]["score"].as_f64().unwrap();
    assert_eq!(score(lead_of(&server, key, viewer).await), 1.0);
    assert_eq!(score(lead_of(&server, key, clicker).await), 4.0);
    assert_eq!(score(lead_of(&server, key, former).await), 6.0);
    let order = |body: Value| -> Vec<i64> {
        body["leads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["lead_id"].as_i64().unwrap())
            .collect()
    };
    let by_score = server
        .get(key, &format!("/leads/search?workspace_id={ws}&sort=score"))
        .await
        .expect(200)
        .json();
    assert_eq!(order(by_score), [former, clicker, viewer]);
    let bad = server
        .get(
            key,
            &format!("/leads/search?workspace_id={ws}&sort=loudest"),
        )
        .await
        .expect(422)
        .json();
    assert!(bad["errors"]["sort"].is_array(), "{bad}");

    // Crossing the threshold (8): a return visit (1 + 2) and a click (3) on top of 6.
    for body in [
        json!({"type": "view"}),
        json!({"type": "click", "target": "Book"}),
    ] {
        send_person_beacon(&server, &former_page, body, DESKTOP_BROWSER, &visitor(3))
            .await
            .expect(204);
    }
    let started = std::time::Instant::now();
    let hot: Vec<Value> = loop {
        let log = received.lock().unwrap().clone();
        let hot: Vec<Value> = log
            .iter()
            .map(|(_, body, _)| serde_json::from_str::<Value>(body).unwrap())
            .filter(|event| event["event"] == "lead.hot")
            .collect();
        if !hot.is_empty() || started.elapsed() > Duration::from_secs(20) {
            break hot;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let log = received.lock().unwrap().clone();
    assert_eq!(hot.len(), 1, "{log:?}");
    assert_eq!(hot[0]["lead_id"], former);
    assert_eq!(hot[0]["campaign_id"], campaign);
    assert!(hot[0]["score"].as_f64().unwrap() >= 8.0, "{}", hot[0]);
    assert_eq!(hot[0]["page_url"], former_page.as_str());
    let former_now = lead_of(&server, key, former).await;
    assert!(
        is_iso8601_micros(&former_now["engagement"]["hot_at"]),
        "{former_now}"
    );
    // More evidence later sends nothing again.
    send_person_beacon(
        &server,
        &former_page,
        json!({"type": "click", "target": "Again"}),
        DESKTOP_BROWSER,
        &visitor(3),
    )
    .await
    .expect(204);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let again = received
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, body, _)| body.contains("\"lead.hot\""))
        .count();
    assert_eq!(again, 1);
}

#[tokio::test]
async fn an_export_holds_everything_of_a_lead_and_nothing_of_another() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Exported", 2).await;
    let ((lead, page), (_, other_page)) = (&pages[0], &pages[1]);
    for body in [
        json!({"type": "view"}),
        json!({"type": "click", "target": "#book"}),
    ] {
        send_person_beacon(&server, page, body, DESKTOP_BROWSER, "")
            .await
            .expect(204);
    }
    send_person_beacon(
        &server,
        other_page,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        "",
    )
    .await
    .expect(204);
    submit(
        &server,
        page,
        &[("email", "mine@example.com"), ("when", "Tuesday")],
    )
    .await
    .expect(200);
    submit(&server, other_page, &[("email", "theirs@example.com")])
        .await
        .expect(200);
    analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 2).await;

    let export = server
        .get(key, &format!("/leads/export?lead_id={lead}"))
        .await
        .expect(200)
        .json();
    assert_eq!(export["lead"]["lead_id"], *lead, "{export}");
    assert!(export["lead"]["variables"]["email"].is_string(), "{export}");
    assert_eq!(export["pages"][0]["url"], page.as_str());
    assert_eq!(export["pages"][0]["campaign_id"], campaign);
    assert_eq!(export["engagement"]["views"], 1);
    assert_eq!(export["engagement"]["clicks"], 1);
    let events: Vec<&str> = export["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["view", "click"], "{export}");
    assert_eq!(export["events"][0]["class"], "person");
    assert_eq!(export["form_submissions"][0]["email"], "mine@example.com");
    assert_eq!(export["form_submissions"][0]["fields"]["when"], "Tuesday");
    assert!(export["callbacks"].is_array() && export["enrichments"].is_array());
    assert!(is_iso8601_micros(&export["exported_at"]), "{export}");
    let text = export.to_string();
    assert!(!text.contains("theirs@example.com"), "{text}");
    assert!(!text.contains(other_page.as_str()), "{text}");

    // The documented errors.
    server
        .get(key, "/leads/export?lead_id=999999")
        .await
        .expect(404);
    let missing = server.get(key, "/leads/export").await.expect(422).json();
    assert!(missing["errors"]["lead_id"].is_array(), "{missing}");
}

#[tokio::test]
async fn erasing_a_lead_removes_every_trace_and_keeps_analytics_consistent() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 0);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, leads) = leads_with_callback(
        &server,
        key,
        ws,
        "Erased",
        (&url, &received),
        &["gone@example.com", "kept@example.com"],
    )
    .await;
    let [(gone, gone_page), (kept, kept_page)] = <[_; 2]>::try_from(leads).unwrap();
    // An audience holds both.
    let audience = server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "Both",
            "lead_ids": [gone, kept]}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .as_i64()
        .unwrap();
    // Each seen by their own visitor, and the gone lead's visitor also on the kept page.
    let (only_gone, both) = (format!("{:032x}", 1), format!("{:032x}", 2));
    for (page, who, body) in [
        (&gone_page, &only_gone, json!({"type": "view"})),
        (
            &gone_page,
            &only_gone,
            json!({"type": "click", "target": "#cta"}),
        ),
        (&gone_page, &both, json!({"type": "view"})),
        (&kept_page, &both, json!({"type": "view"})),
    ] {
        send_person_beacon(&server, page, body, DESKTOP_BROWSER, who)
            .await
            .expect(204);
    }
    send_beacon(&server, &gone_page, json!({"type": "view"}), "curl/8.0", "")
        .await
        .expect(204);
    submit(&server, &gone_page, &[("email", "gone@example.com")])
        .await
        .expect(200);
    analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 2).await;
    // Callbacks of the form and the first views, delivered or queued.
    wait_for_deliveries(&received, 5).await;
    let delivered_before = received.lock().unwrap().len();

    let erased = server
        .post(
            key,
            "/leads/delete",
            json!({"workspace_id": ws, "lead_ids": [gone]}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(erased, json!({"deleted": 1}));

    // Gone everywhere.
    server
        .get(key, &format!("/leads/get?lead_id={gone}"))
        .await
        .expect(404);
    server
        .get(key, &format!("/leads/activity?lead_id={gone}"))
        .await
        .expect(404);
    server
        .get(key, &format!("/leads/export?lead_id={gone}"))
        .await
        .expect(404);
    server.send(server.client.get(&gone_page)).await.expect(404);
    let found = server
        .get(key, &format!("/leads/search?workspace_id={ws}&search=gone"))
        .await
        .expect(200)
        .json();
    assert_eq!(found["total"], 0, "{found}");
    let submissions = server
        .get(
            key,
            &format!("/automation/get-form-submissions?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    assert!(
        !submissions.to_string().contains("gone@example.com"),
        "{submissions}"
    );
    let audiences = server
        .get(key, &format!("/audiences/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    let both_audience = audiences
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == audience)
        .cloned()
        .unwrap();
    assert_eq!(both_audience["lead_count"], 1, "{both_audience}");
    // Analytics lose exactly what the lead brought: its page, views, click and the visitor
    // seen only there; the visitor also seen on the kept page stays.
    let entry = analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 1).await;
    assert_eq!(entry["pages_visited"], 1, "{entry}");
    assert_eq!(entry["unique_visitors"], 1, "{entry}");
    assert_eq!(entry["total_button_clicks"], 0, "{entry}");
    assert_eq!(entry["visit_percentage"], 100.0, "{entry}");
    assert_eq!(entry["filtered_visits"]["automated"], 0, "{entry}");
    // The kept lead is untouched.
    let kept_now = lead_of(&server, key, kept).await;
    assert_eq!(kept_now["engagement"]["views"], 1, "{kept_now}");
    server.send(server.client.get(&kept_page)).await.expect(200);
    // Nothing more is sent about the erased lead.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after: Vec<String> = received.lock().unwrap()[delivered_before..]
        .iter()
        .map(|(_, body, _)| body.clone())
        .collect();
    assert!(
        after
            .iter()
            .all(|b| !b.contains(&format!("\"lead_id\":{gone}"))),
        "{after:?}"
    );

    // The documented errors: all or nothing.
    let unknown = server
        .post(
            key,
            "/leads/delete",
            json!({"workspace_id": ws, "lead_ids": [kept, 999999]}),
        )
        .await
        .expect(404)
        .json();
    assert_eq!(unknown["message"], "Lead not found");
    lead_of(&server, key, kept).await;
    let empty = server
        .post(
            key,
            "/leads/delete",
            json!({"workspace_id": ws, "lead_ids": []}),
        )
        .await
        .expect(422)
        .json();
    assert!(empty["errors"]["lead_ids"].is_array(), "{empty}");
    let too_many: Vec<i64> = (1..=1001).collect();
    let over = server
        .post(
            key,
            "/leads/delete",
            json!({"workspace_id": ws, "lead_ids": too_many}),
        )
        .await
        .expect(422)
        .json();
    assert!(over["errors"]["lead_ids"].is_array(), "{over}");
}

#[tokio::test]
async fn pruning_old_events_keeps_analytics_scores_and_filters_as_they_were() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let mut server = Server::serve(&db, &["--event-retention-days", "30"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Kept", 2).await;
    let (lead, page) = &pages[0];
    for body in [
        json!({"type": "view"}),
        json!({"type": "scroll"}),
        json!({"type": "click", "target": "#cta"}),
        json!({"type": "time", "seconds": 12}),
    ] {
        send_person_beacon(&server, page, body, DESKTOP_BROWSER, "")
            .await
            .expect(204);
    }
    send_beacon(&server, page, json!({"type": "view"}), "curl/8.0", "")
        .await
        .expect(204);
    let before = analytics_until(&server, key, ws, campaign, |e| {
        e["average_time_on_page_seconds"] == 12 && e["filtered_visits"]["automated"] == 1
    })
    .await;
    let lead_before = lead_of(&server, key, *lead).await;
    let clicked = format!("/leads/search?workspace_id={ws}&engagement=button_clicked");
    let found_before = server.get(key, &clicked).await.expect(200).json();
    assert_eq!(found_before["total"], 1, "{found_before}");
    assert_eq!(activity(&server, key, *lead).await.len(), 5);
    server.terminate();
    server.wait_for_exit(Duration::from_secs(30));

    // The events become 31 days old; the next start prunes them.
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&db.url)
        .await
        .unwrap();
    sqlx::query("UPDATE page_events SET created_at = created_at - $1")
        .bind(31 * 86_400_000_000i64)
        .execute(&mut conn)
        .await
        .unwrap();
    drop(conn);
    let server = Server::serve(&db, &["--event-retention-days", "30"]);
    let started = std::time::Instant::now();
    while !activity(&server, key, *lead).await.is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10), "not pruned");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = server
        .get(
            key,
            &format!("/campaigns/analytics?workspace_id={ws}&campaign_ids={campaign}"),
        )
        .await
        .expect(200)
        .json()["campaigns"][0]
        .clone();
    assert_eq!(after, before);
    let mut lead_after = lead_of(&server, key, *lead).await;
    // The score decays with time, never with pruning: compare it at the same instant.
    let scores = (
        lead_before["engagement"]["score"].as_f64().unwrap(),
        lead_after["engagement"]["score"].as_f64().unwrap(),
    );
    assert!((scores.0 - scores.1).abs() < 0.01, "{scores:?}");
    lead_after["engagement"]["score"] = lead_before["engagement"]["score"].clone();
    assert_eq!(lead_after["engagement"], lead_before["engagement"]);
    let found_after = server.get(key, &clicked).await.expect(200).json();
    assert_eq!(found_after["total"], 1, "{found_after}");
    assert_eq!(found_after["leads"][0]["lead_id"], *lead);
}

#[tokio::test]
async fn with_respect_gpc_a_browser_asking_not_to_be_tracked_is_counted_anonymously() {
    for (respect, visitors) in [(false, 1), (true, 2)] {
        let db = TestDb::new();
        let account = bootstrap(&db, &[]);
        let args: &[&str] = if respect { &["--respect-gpc"] } else { &[] };
        let server = Server::serve(&db, args);
        let (key, ws) = (&account.api_key, account.workspace_id);
        let (campaign, pages) = live_campaign(&server, key, ws, "Private", 1).await;
        // Two visits by one browser (one cookie), each a page load of its own.
        for _ in 0..2 {
            let load = load_page(&server, &pages[0].1, DESKTOP_BROWSER).await;
            let body = json!({"type": "view", "view_id": load, "interaction": "key"});
            let request = server
                .client
                .post(format!("{}/beacon", pages[0].1))
                .header("content-type", "text/plain;charset=UTF-8")
                .header("user-agent", DESKTOP_BROWSER)
                .header("cookie", format!("lps_vid={:032x}", 9))
                .header("sec-gpc", "1")
                .body(body.to_string());
            server.send(request).await.expect(204);
        }
        let entry = analytics_until(&server, key, ws, campaign, |e| {
            e["unique_visitors"] == visitors
        })
        .await;
        assert_eq!(
            entry["unique_visitors"], visitors,
            "respect {respect}: {entry}"
        );
        assert_eq!(entry["pages_visited"], 1, "{entry}");
    }
}

#[tokio::test]
async fn erasing_a_lead_while_it_is_imported_again_leaves_it_whole_or_gone() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, _) = create_campaign(&server, key, ws, "Racing").await;
    publish_premade(&server, key, ws, campaign, "Demo Invitation").await;
    let find = format!("/leads/search?workspace_id={ws}&search=racer%40example.com");
    let erased = std::sync::atomic::AtomicUsize::new(0);
    for round in 0..6 {
        let mut rows = leads(&format!("round{round}-"), 200);
        rows.push(json!({"values": {"email": "racer@example.com", "first_name": "Racer"}}));
        let job = upsert(
            &server,
            key,
            json!({"campaign_id": campaign, "leads": rows}),
        )
        .await;
        // Erase the lead as often as it is found while the job runs.
        let eraser = async {
            for _ in 0..20 {
                let found = server.get(key, &find).await.expect(200).json();
                if let Some(id) = found["leads"][0]["lead_id"].as_i64() {
                    let reply = server
                        .post(
                            key,
                            "/leads/delete",
                            json!({"workspace_id": ws, "lead_ids": [id]}),
                        )
                        .await;
                    assert!(
                        reply.status == 200 || reply.status == 404,
                        "{} {}",
                        reply.status,
                        reply.text
                    );
                    if reply.status == 200 {
                        erased.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        let (status, ()) = tokio::join!(wait_for_job(&server, key, &job), eraser);
        assert_eq!(status["status"], "completed", "{status}");
        // The lead is whole (values, a page that answers) or gone, never half.
        let found = server.get(key, &find).await.expect(200).json();
        if let Some(lead) = found["leads"].as_array().unwrap().first() {
            let page = lead["service_page_url"].as_str().expect("a page");
            server.send(server.client.get(page)).await.expect(200);
            lead_of(&server, key, lead["lead_id"].as_i64().unwrap()).await;
        }
    }
    // The race was run: the lead was found and erased while imported, round after round.
    assert!(erased.into_inner() >= 3);
}

#[tokio::test]
async fn a_form_submitted_by_automation_is_kept_and_listed_with_its_reason_but_never_counted() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network", "--hot-score", "8"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = receive(listener, 0);
    let (campaign, leads) = leads_with_callback(
        &server,
        key,
        ws,
        "Robots",
        (&url, &received),
        &["bot@example.com"],
    )
    .await;
    let (lead, page) = &leads[0];
    let headless = DESKTOP_BROWSER.replace("Chrome/", "HeadlessChrome/");
    // Three submissions would make a person's lead hot (5 each, threshold 8).
    for n in 0..3 {
        crate::engagement::submit_from(
            &server,
            page,
            &[
                ("form_id", "demo"),
                ("email", &format!("bot{n}@example.com")),
            ],
            &headless,
        )
        .await
        .expect(200);
    }
    let listed = server
        .get(
            key,
            &format!("/automation/get-form-submissions?workspace_id={ws}&campaign_id={campaign}"),
        )
        .await
        .expect(200)
        .json();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 3, "kept: {listed:?}");
    assert_eq!(listed[0]["class"], "automated", "{listed:?}");
    assert_eq!(listed[0]["reason"], "headless browser (HeadlessChrome)");
    let timeline = activity(&server, key, *lead).await;
    assert_eq!(timeline[0]["event"], "form_submitted", "{timeline:?}");
    assert_eq!(timeline[0]["class"], "automated", "{timeline:?}");

    let now = lead_of(&server, key, *lead).await;
    assert_eq!(now["engagement"]["score"], 0.0, "{now}");
    assert_eq!(now["engagement"]["form_submissions"], 0, "{now}");
    assert!(now["engagement"]["hot_at"].is_null(), "{now}");
    let found = server
        .get(
            key,
            &format!("/leads/search?workspace_id={ws}&engagement=form_submitted"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(found["total"], 0, "not engagement: {found}");

    // A person's submission afterwards is counted and called back, so the quiet above is
    // the class's doing, not a slow outbox.
    crate::engagement::submit(&server, page, &[("email", "person@example.com")])
        .await
        .expect(200);
    let log = wait_for_deliveries(&received, 2).await;
    let events: Vec<String> = log
        .iter()
        .map(|(_, body, _)| serde_json::from_str::<Value>(body).unwrap()["event"].to_string())
        .collect();
    assert_eq!(
        events,
        ["\"lead.page_generated\"", "\"lead.form_submitted\""],
        "no callback for automation, no lead.hot: {log:?}"
    );
    let now = lead_of(&server, key, *lead).await;
    assert_eq!(now["engagement"]["form_submissions"], 1, "{now}");
}
