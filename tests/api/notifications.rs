//! Notification channels (issue 48): Slack, Microsoft Teams and workspace webhooks hear about
//! a workspace's leads as people engage, bounded per lead and channel; owners manage them over
//! REST. The receivers run on loopback.

use std::time::Duration;

use serde_json::{Value, json};

use crate::callbacks::{Received, receive, wait_for_deliveries};
use crate::common::*;
use crate::engagement::submit;

/// A receiver on loopback: its address and what it gets.
async fn receiver() -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    (url, receive(listener, 0))
}

fn bodies(received: &Received) -> Vec<Value> {
    let log = received.lock().unwrap().clone();
    log.iter()
        .map(|(_, body, _)| serde_json::from_str(body).unwrap())
        .collect()
}

async fn create(server: &Server, key: &str, body: Value) -> Value {
    server
        .post(key, "/notifications/channels/create", body)
        .await
        .expect(200)
        .json()
}

#[tokio::test]
async fn a_hot_lead_and_a_form_reach_slack_teams_and_a_workspace_webhook_once_an_hour() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network", "--hot-score", "4"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (slack_url, slack) = receiver().await;
    let (teams_url, teams) = receiver().await;
    let (hook_url, hook) = receiver().await;

    let made = create(
        &server,
        key,
        json!({"workspace_id": ws, "kind": "slack", "url": slack_url}),
    )
    .await;
    assert_eq!(made["kind"], "slack");
    assert_eq!(made["events"], json!(["lead.hot", "lead.form_submitted"]));
    assert_eq!(made["time_zone"], "UTC");
    assert_eq!(made["state"], "healthy");
    let teams_channel = create(
        &server,
        key,
        json!({"workspace_id": ws, "kind": "teams", "url": teams_url,
               "events": ["lead.form_submitted"], "time_zone": "Europe/Berlin"}),
    )
    .await;
    assert_eq!(teams_channel["time_zone"], "Europe/Berlin");
    let webhook = create(
        &server,
        key,
        json!({"workspace_id": ws, "kind": "webhook", "url": hook_url}),
    )
    .await;
    assert_eq!(webhook["events"].as_array().unwrap().len(), 4, "{webhook}");

    // A lead imported without any callback_url: the workspace still hears about it.
    let (_, pages) = live_campaign_with(
        &server,
        key,
        ws,
        "Autumn",
        "Demo Invitation",
        vec![json!({"values": {"email": "ada@example.com",
            "first_name": "<https://evil.example|Ada>", "company_name": "Engines & Co"}})],
    )
    .await;
    let (lead, page) = &pages[0];
    send_person_beacon(
        &server,
        page,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        &format!("{:032x}", 1),
    )
    .await
    .expect(204);
    // A submission (5) on top of the view (1) crosses the threshold (4).
    submit(&server, page, &[("email", "ada@example.com")])
        .await
        .expect(200);

    // The webhook hears every event: the page, its first view, the form and the hot lead.
    let log = wait_for_deliveries(&hook, 4).await;
    let mut events: Vec<String> = bodies(&hook)
        .iter()
        .map(|b| b["event"].as_str().unwrap().to_owned())
        .collect();
    events.sort();
    assert_eq!(
        events,
        [
            "lead.form_submitted",
            "lead.hot",
            "lead.page_generated",
            "lead.page_viewed"
        ],
    );
    // Signed as callbacks are: the official Standard Webhooks library accepts every one.
    let secret = crate::callbacks::secret(&db, ws);
    for (headers, body, _) in &log {
        if let Some(verified) = crate::callbacks::verify_standard(&secret, headers, body) {
            verified.unwrap_or_else(|why| panic!("{why}: {body}"));
        }
    }

    // Slack: Block Kit, the lead's texts escaped, a button to the lead in the app.
    wait_for_deliveries(&slack, 2).await;
    let messages = bodies(&slack);
    assert_eq!(messages.len(), 2, "{messages:?}");
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert!(texts.iter().any(|t| t.contains("is hot")), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.contains("submitted the form")),
        "{texts:?}"
    );
    for message in &messages {
        let section = message["blocks"][0]["text"]["text"].as_str().unwrap();
        assert!(
            section.contains("&lt;https://evil.example|Ada&gt;"),
            "{section}"
        );
        let fields = message["blocks"][1]["fields"].to_string();
        assert!(fields.contains("Engines &amp; Co"), "{fields}");
        assert!(fields.contains("Autumn"), "{fields}");
        let button = message["blocks"][2]["elements"][0]["url"].as_str().unwrap();
        assert!(
            button.ends_with(&format!("/dashboard/leads/{lead}")),
            "{button}"
        );
    }
    // Teams: an Adaptive Card for the form only (its one event).
    wait_for_deliveries(&teams, 1).await;
    let cards = bodies(&teams);
    assert_eq!(cards.len(), 1, "{cards:?}");
    let card = &cards[0]["attachments"][0];
    assert_eq!(
        card["contentType"],
        "application/vnd.microsoft.card.adaptive"
    );
    assert_eq!(card["content"]["type"], "AdaptiveCard");
    assert!(
        card["content"]["body"][0]["text"]
            .as_str()
            .unwrap()
            .contains("submitted the form")
    );

    // A second submission within the hour: the webhook hears it, people are not told twice.
    submit(&server, page, &[("email", "ada@example.com")])
        .await
        .expect(200);
    wait_for_deliveries(&hook, 5).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(bodies(&slack).len(), 2);
    assert_eq!(bodies(&teams).len(), 1);

    // Every message is in the delivery log, by its channel's address.
    let log = server
        .get(
            key,
            &format!("/callbacks/deliveries?workspace_id={ws}&limit=100"),
        )
        .await
        .expect(200)
        .json();
    let to_slack = log["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["url"] == slack_url.as_str())
        .count();
    assert_eq!(to_slack, 2, "{log}");

    // A test message, now, outside the bounds.
    let channel = made["channel_id"].as_i64().unwrap();
    let tested = server
        .post(
            key,
            "/notifications/channels/test",
            json!({"workspace_id": ws, "channel_id": channel}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(tested["channel_id"], channel);
    assert!(tested["delivery_id"].as_i64().unwrap() > 0);
    wait_for_deliveries(&slack, 3).await;
    assert!(
        bodies(&slack)[2]["text"]
            .as_str()
            .unwrap()
            .contains("will post here")
    );

    // Listed, changed, deleted.
    let listed = server
        .get(
            key,
            &format!("/notifications/channels/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    let channels = listed["channels"].as_array().unwrap();
    assert_eq!(channels.len(), 3, "{listed}");
    assert_eq!(channels[0]["channel_id"], channel);
    assert!(channels.iter().all(|c| c["state"] == "healthy"), "{listed}");
    let teams_id = teams_channel["channel_id"].as_i64().unwrap();
    let changed = server
        .post(
            key,
            "/notifications/channels/update",
            json!({"workspace_id": ws, "channel_id": teams_id, "events": ["lead.hot"]}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(changed["events"], json!(["lead.hot"]));
    assert_eq!(changed["url"], teams_url.as_str());
    assert_eq!(changed["time_zone"], "Europe/Berlin");
    let webhook_id = webhook["channel_id"].as_i64().unwrap();
    server
        .post(
            key,
            "/notifications/channels/delete",
            json!({"workspace_id": ws, "channel_id": webhook_id}),
        )
        .await
        .expect(200);
    let listed = server
        .get(
            key,
            &format!("/notifications/channels/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(listed["channels"].as_array().unwrap().len(), 2, "{listed}");
    for path in [
        "/notifications/channels/delete",
        "/notifications/channels/test",
        "/notifications/channels/update",
    ] {
        server
            .post(
                key,
                path,
                json!({"workspace_id": ws, "channel_id": webhook_id}),
            )
            .await
            .expect(404);
    }
}

#[tokio::test]
async fn a_bad_channel_is_refused_field_by_field_and_nothing_is_kept() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    // No --allow-private-network: the outbound guard as in production.
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let path = "/notifications/channels/create";
    let missing = server.post(key, path, json!({})).await.expect(422).json();
    for field in ["workspace_id", "kind"] {
        assert!(missing["errors"][field].is_array(), "{missing}");
    }
    for (body, field) in [
        // A url is required once the kind says it is not an email channel.
        (json!({"kind": "slack"}), "url"),
        (
            json!({"kind": "pigeon", "url": "https://hooks.example.com/x"}),
            "kind",
        ),
        (
            json!({"kind": "slack", "url": "http://169.254.169.254/latest"}),
            "url",
        ),
        (
            json!({"kind": "slack", "url": "http://127.0.0.1:9/hook"}),
            "url",
        ),
        (
            json!({"kind": "slack", "url": "ftp://hooks.example.com/x"}),
            "url",
        ),
        (
            json!({"kind": "slack", "url": "https://hooks.example.com/x",
                "events": ["lead.page_generated"]}),
            "events",
        ),
        (
            json!({"kind": "webhook", "url": "https://hooks.example.com/x",
                "events": ["lead.sneezed"]}),
            "events",
        ),
        (
            json!({"kind": "teams", "url": "https://hooks.example.com/x",
                "time_zone": "Mars/Olympus_Mons"}),
            "time_zone",
        ),
    ] {
        let mut body = body;
        body["workspace_id"] = json!(ws);
        let refused = server
            .post(key, path, body.clone())
            .await
            .expect(422)
            .json();
        assert!(refused["errors"][field].is_array(), "{body}: {refused}");
        assert_eq!(
            refused["errors"].as_object().unwrap().len(),
            1,
            "{body}: {refused}"
        );
    }
    // Another workspace's (or none): 403.
    server
        .post(
            key,
            path,
            json!({"workspace_id": 999_999, "kind": "slack",
                                "url": "https://hooks.example.com/x"}),
        )
        .await
        .expect(403);
    let listed = server
        .get(
            key,
            &format!("/notifications/channels/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(listed["channels"], json!([]));
    server
        .get(key, "/notifications/channels/get-list")
        .await
        .expect(422);

    // At most 20 a workspace.
    for n in 0..20 {
        create(
            &server,
            key,
            json!({"workspace_id": ws, "kind": "webhook",
                                    "url": format!("https://hooks{n}.example.com/x")}),
        )
        .await;
    }
    let full = server
        .post(
            key,
            path,
            json!({"workspace_id": ws, "kind": "slack",
                                "url": "https://hooks.example.com/x"}),
        )
        .await
        .expect(409)
        .json();
    assert!(
        full["message"].as_str().unwrap().contains("at most 20"),
        "{full}"
    );
    // An update is checked as a creation is, and changes nothing when refused.
    let first = server
        .get(
            key,
            &format!("/notifications/channels/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json()["channels"][0]
        .clone();
    let refused = server
        .post(
            key,
            "/notifications/channels/update",
            json!({"workspace_id": ws,
            "channel_id": first["channel_id"], "url": "http://10.0.0.1/x"}),
        )
        .await
        .expect(422)
        .json();
    assert!(refused["errors"]["url"].is_array(), "{refused}");
    let again = server
        .get(
            key,
            &format!("/notifications/channels/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json()["channels"][0]
        .clone();
    assert_eq!(again, first);
}

#[tokio::test]
async fn an_owner_adds_tests_and_deletes_a_channel_in_settings() {
    let s = crate::oauth::setup_with(&["--allow-private-network"]).await;
    let (slack_url, slack) = receiver().await;
    let ws = s.account.workspace_id.to_string();
    let mut browser = crate::oauth::Browser::new(&s.server);
    browser
        .log_in("owner@example.com", crate::oauth::PASSWORD, "/dashboard")
        .await;
    let (_, _, page) = browser
        .get(&format!("/dashboard/settings?workspace_id={ws}"))
        .await;
    assert!(page.contains("No channel yet"), "{page}");
    let csrf = crate::oauth::hidden(&page, "csrf_token");

    // A bad address is explained and nothing is added.
    let (status, location, _) = browser
        .post(
            "/dashboard/notifications/create",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws),
                ("kind", "slack"),
                ("url", "ftp://hooks.example.com/x"),
                ("event_hot", "1"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, page) = browser.get(&location.unwrap()).await;
    assert!(page.contains("public http(s) address"), "{page}");
    assert!(page.contains("No channel yet"), "{page}");

    let (_, location, _) = browser
        .post(
            "/dashboard/notifications/create",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws),
                ("kind", "slack"),
                ("url", &slack_url),
                ("event_hot", "1"),
                ("event_viewed", "1"),
            ],
        )
        .await;
    let (_, _, page) = browser.get(&location.unwrap()).await;
    assert!(page.contains("The channel was added"), "{page}");
    assert!(
        page.contains("A lead becomes hot; A page is first viewed"),
        "{page}"
    );
    assert!(page.contains("127.0.0.1"), "{page}");
    assert!(
        !page.contains(&slack_url),
        "the whole address is the chat's secret: {page}"
    );
    let listed = s
        .server
        .get(
            &s.account.api_key,
            &format!("/notifications/channels/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    let channel = listed["channels"][0]["channel_id"]
        .as_i64()
        .unwrap()
        .to_string();
    assert_eq!(
        listed["channels"][0]["events"],
        json!(["lead.hot", "lead.page_viewed"])
    );

    // A test message reaches the chat.
    let (_, location, _) = browser
        .post(
            "/dashboard/notifications/test",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws),
                ("channel_id", &channel),
            ],
        )
        .await;
    let (_, _, page) = browser.get(&location.unwrap()).await;
    assert!(page.contains("A test message is on its way"), "{page}");
    wait_for_deliveries(&slack, 1).await;
    assert!(
        bodies(&slack)[0]["text"]
            .as_str()
            .unwrap()
            .contains("will post here")
    );

    // Deleting asks first.
    let (status, _, confirm) = browser
        .get(&format!(
            "/dashboard/notifications/delete?workspace_id={ws}&channel_id={channel}"
        ))
        .await;
    assert_eq!(status, 200, "{confirm}");
    assert!(
        confirm.contains("Delete the Slack channel to 127.0.0.1?"),
        "{confirm}"
    );
    let (_, location, _) = browser
        .post(
            "/dashboard/notifications/delete",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws),
                ("channel_id", &channel),
            ],
        )
        .await;
    let (_, _, page) = browser.get(&location.unwrap()).await;
    assert!(page.contains("The channel was deleted."), "{page}");
    assert!(page.contains("No channel yet"), "{page}");
    let (status, _, _) = browser
        .get(&format!(
            "/dashboard/notifications/delete?workspace_id={ws}&channel_id={channel}"
        ))
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_chat_hears_at_most_100_messages_an_hour_then_one_saying_the_rest_are_in_the_app() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (slack_url, slack) = receiver().await;
    create(
        &server,
        key,
        json!({"workspace_id": ws, "kind": "slack", "url": slack_url,
               "events": ["lead.page_viewed"]}),
    )
    .await;
    let (_, pages) = live_campaign(&server, key, ws, "Busy", 103).await;
    // 40 people (one address admits 50), each opening a few of the pages.
    for (n, (_, page)) in pages.iter().enumerate() {
        let visitor = format!("{:032x}", n % 40 + 1);
        send_person_beacon(
            &server,
            page,
            json!({"type": "view"}),
            DESKTOP_BROWSER,
            &visitor,
        )
        .await
        .expect(204);
    }
    // 100 first views, then one summary; the 103rd view is not sent.
    wait_for_deliveries(&slack, 101).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let messages = bodies(&slack);
    assert_eq!(messages.len(), 101, "{:?}", messages.last());
    let summaries = messages
        .iter()
        .filter(|m| m["text"].as_str().unwrap().contains("the rest are in lps"))
        .count();
    assert_eq!(summaries, 1);
    let views = messages
        .iter()
        .filter(|m| m["text"].as_str().unwrap().contains("viewed their page"))
        .count();
    assert_eq!(views, 100);
}

/// A chat answering 500 is retried with backoff and shown failing in the channel list, while
/// another channel on the same host hears at once and stays healthy; the failing one gets its
/// message, once, when it recovers.
#[tokio::test]
async fn a_failing_channel_is_retried_and_shown_failing_and_holds_up_no_other() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(
        &db,
        &[
            "--allow-private-network",
            "--callback-unhealthy-after",
            "2",
            "--callback-pause-seconds",
            "1",
        ],
    );
    let (key, ws) = (&account.api_key, account.workspace_id);
    // One host, as every Slack webhook is `hooks.slack.com`: one chat refuses its first three
    // requests, the other is fine. Health is kept per channel, so only the first is held.
    let broken_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let broken_url = format!(
        "http://127.0.0.1:{}/hook",
        broken_listener.local_addr().unwrap().port()
    );
    let broken = receive(broken_listener, 3);
    let (fine_url, fine) = receiver().await;
    let broken_channel = create(
        &server,
        key,
        json!({"workspace_id": ws, "kind": "slack", "url": broken_url,
               "events": ["lead.form_submitted"]}),
    )
    .await;
    create(
        &server,
        key,
        json!({"workspace_id": ws, "kind": "teams", "url": fine_url,
               "events": ["lead.form_submitted"]}),
    )
    .await;
    let (_, pages) = live_campaign_with(
        &server,
        key,
        ws,
        "Autumn",
        "Demo Invitation",
        vec![json!({"values": {"email": "ada@example.com", "first_name": "Ada"}})],
    )
    .await;
    submit(&server, &pages[0].1, &[("email", "ada@example.com")])
        .await
        .expect(200);

    // The healthy chat hears at once, whatever the other one does.
    wait_for_deliveries(&fine, 1).await;
    // The broken one is shown failing, with why.
    let started = std::time::Instant::now();
    loop {
        let listed = server
            .get(
                key,
                &format!("/notifications/channels/get-list?workspace_id={ws}"),
            )
            .await
            .expect(200)
            .json();
        let channel = listed["channels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["channel_id"] == broken_channel["channel_id"])
            .unwrap()
            .clone();
        if channel["state"] != "healthy" {
            assert!(
                channel["last_error"].as_str().unwrap().contains("500"),
                "{channel}"
            );
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{listed}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The other channel on that host is healthy, and hears the next form at once.
    let listed = server
        .get(
            key,
            &format!("/notifications/channels/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    let others: Vec<&Value> = listed["channels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["channel_id"] != broken_channel["channel_id"])
        .collect();
    assert_eq!(others[0]["state"], "healthy", "{listed}");
    // Retried until it answers: the message arrives, once.
    let log = wait_for_deliveries(&broken, 1).await;
    assert_eq!(log.len(), 4, "three refusals, then delivered");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(broken.lock().unwrap().len(), 4);
    assert_eq!(fine.lock().unwrap().len(), 1);
}

/// Twenty-five creates at once: exactly twenty channels, the rest refused with 409; none is
/// lost to a race between counting and adding.
#[tokio::test]
async fn creates_at_once_never_make_more_than_twenty_channels() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let creates = (0..25).map(|i| {
        server.post(
            key,
            "/notifications/channels/create",
            json!({"workspace_id": ws, "kind": "webhook",
                   "url": format!("https://hooks.example.com/{i}")}),
        )
    });
    let statuses: Vec<u16> = futures_util::future::join_all(creates)
        .await
        .into_iter()
        .map(|reply| reply.status)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        20,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        5,
        "{statuses:?}"
    );
    let listed = server
        .get(
            key,
            &format!("/notifications/channels/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(listed["channels"].as_array().unwrap().len(), 20);
}
