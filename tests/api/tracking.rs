//! Tracking without a browser: the script in live pages only, what never counts (plain fetches,
//! unfurlers, scanners, automation), the beacon route, `GET /campaigns/analytics` math, the
//! `engagement` search filter and `/leads/get` engagement. Real-browser tests: `browser.rs`.

use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};

const SCRIPT_TAG: &str = r#"<script src="/p/track.js" defer></script>"#;

#[tokio::test]
async fn live_pages_carry_the_first_party_script_and_nothing_else_does() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Scripted", 1).await;
    let page = &pages[0].1;
    let html = server.send(server.client.get(page)).await.expect(200);
    assert!(html.text.contains(SCRIPT_TAG), "{}", html.text);
    let policy = html.header("content-security-policy").unwrap();
    assert!(policy.contains("script-src 'self'"), "{policy}");

    let script = server
        .send(server.client.get(format!("{}/p/track.js", server.http)))
        .await
        .expect(200);
    assert!(
        script
            .header("content-type")
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(script.text.len() <= 4096, "{} bytes", script.text.len());
    assert!(script.text.contains("sendBeacon"));
    let etag = script.header("etag").unwrap().to_owned();
    server
        .send(
            server
                .client
                .get(format!("{}/p/track.js", server.http))
                .header("if-none-match", etag),
        )
        .await
        .expect(304);

    // The preview, an unknown page and a page not live yet carry no script.
    let slug = page.rsplit('/').nth(1).unwrap();
    let preview = server
        .send(
            server
                .client
                .get(format!("{}/p/{slug}/preview-{campaign}", server.http)),
        )
        .await
        .expect(200);
    assert!(!preview.text.contains("track.js"), "{}", preview.text);
    let missing = server
        .send(
            server
                .client
                .get(format!("{}/p/{slug}/nosuchlead", server.http)),
        )
        .await
        .expect(404);
    assert!(!missing.text.contains("track.js"));
    let ids = json!({"workspace_id": ws, "campaign_id": campaign});
    server.post(key, "/pages/unpublish", ids).await.expect(200);
    let not_live = server.send(server.client.get(page)).await.expect(200);
    assert!(!not_live.text.contains("track.js"), "{}", not_live.text);
}

#[tokio::test]
async fn plain_fetches_unfurlers_scanners_and_automation_never_count() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Guarded", 1).await;
    let (lead, page) = &pages[0];
    for agent in [
        "curl/8.5.0",
        "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
        "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
        "Twitterbot/1.0",
        "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
        // Email security scanners fetch links with ordinary browser user agents.
        DESKTOP_BROWSER,
    ] {
        let request = server.client.get(page).header("user-agent", agent);
        server.send(request).await.expect(200);
    }
    // Automation that runs the script is recorded as bot traffic, never counted.
    let headless = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                    HeadlessChrome/126.0.0.0 Safari/537.36";
    send_person_beacon(&server, page, json!({"type": "view"}), headless, "")
        .await
        .expect(204);
    send_person_beacon(
        &server,
        page,
        json!({"type": "view", "webdriver": true}),
        DESKTOP_BROWSER,
        "",
    )
    .await
    .expect(204);
    send_person_beacon(
        &server,
        page,
        json!({"type": "click", "target": "#x"}),
        "Googlebot/2.1",
        "",
    )
    .await
    .expect(204);
    // A person's view afterwards proves the batches above were written (in order) by then.
    send_person_beacon(
        &server,
        page,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        &visitor(1),
    )
    .await
    .expect(204);
    let entry = analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 1).await;
    assert_eq!(entry["pages_visited"], 1, "{entry}");
    assert_eq!(entry["unique_visitors"], 1, "{entry}");
    assert_eq!(entry["total_button_clicks"], 0, "{entry}");
    let lead = server
        .get(key, &format!("/leads/get?lead_id={lead}"))
        .await
        .expect(200)
        .json();
    assert_eq!(lead["engagement"]["views"], 1, "{lead}");
    assert_eq!(lead["engagement"]["clicks"], 0, "{lead}");
}

/// A cookie visitor id as the script makes it.
fn visitor(n: u32) -> String {
    format!("{n:032x}")
}

#[tokio::test]
async fn analytics_add_up_over_several_campaigns() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (empty, _) = live_campaign(&server, key, ws, "No pages", 0).await;
    let (quiet, _) = live_campaign(&server, key, ws, "No visitors", 2).await;
    let (busy, pages) = live_campaign(&server, key, ws, "Visited", 3).await;
    let (first, second) = (&pages[0].1, &pages[1].1);

    // Visitor 1 opens the first page twice, clicks twice, reads to the bottom, 40 s in all.
    // Visitor 2 opens the second page once, no click, 20 s. Visitor 3 has no cookie.
    let beacons = [
        (first, json!({"type": "view"}), visitor(1)),
        (
            first,
            json!({"type": "click", "target": "https://cal.example/ada"}),
            visitor(1),
        ),
        (first, json!({"type": "scroll"}), visitor(1)),
        (first, json!({"type": "time", "seconds": 25}), visitor(1)),
        (first, json!({"type": "view"}), visitor(1)),
        (
            first,
            json!({"type": "click", "target": "Book a call"}),
            visitor(1),
        ),
        (first, json!({"type": "time", "seconds": 15}), visitor(1)),
        (second, json!({"type": "view"}), visitor(2)),
        (second, json!({"type": "time", "seconds": 20}), visitor(2)),
        (second, json!({"type": "view"}), String::new()),
        // A time beacon over the cap counts as the cap (30 minutes), so not this one's 10^9.
    ];
    for (page, body, who) in &beacons {
        send_person_beacon(&server, page, body.clone(), DESKTOP_BROWSER, who)
            .await
            .expect(204);
    }
    let entry = analytics_until(&server, key, ws, busy, |e| {
        e["unique_visitors"] == 3 && e["average_time_on_page_seconds"] == 15
    })
    .await;
    assert_eq!(
        entry,
        json!({
            "campaign_id": busy,
            "name": "Visited",
            "visit_percentage": 66.67,
            "click_percentage": 33.33,
            "average_time_on_page_seconds": 15,
            "pages_visited": 2,
            "unique_visitors": 3,
            "total_button_clicks": 2,
            "filtered_visits": {"unconfirmed": 0, "automated": 0, "scanner_network": 0},
        })
    );

    let all = server
        .get(key, &format!("/campaigns/analytics?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    let zero = |id: i64, name: &str| {
        json!({"campaign_id": id, "name": name, "visit_percentage": 0.0,
               "click_percentage": 0.0, "average_time_on_page_seconds": 0,
               "pages_visited": 0, "unique_visitors": 0, "total_button_clicks": 0,
               "filtered_visits": {"unconfirmed": 0, "automated": 0, "scanner_network": 0}})
    };
    assert_eq!(
        all["campaigns"],
        json!([zero(empty, "No pages"), zero(quiet, "No visitors"), entry]),
        "{all}"
    );

    // The filter, in each array form, and its errors.
    for query in [
        format!("campaign_ids[]={quiet}&campaign_ids[]={busy}"),
        format!("campaign_ids={quiet}&campaign_ids={busy}"),
        format!("campaign_ids={quiet},{busy}"),
    ] {
        let some = server
            .get(
                key,
                &format!("/campaigns/analytics?workspace_id={ws}&{query}"),
            )
            .await
            .expect(200)
            .json();
        let ids: Vec<i64> = some["campaigns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["campaign_id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, vec![quiet, busy], "{query}");
    }
    let missing = server
        .get(
            key,
            &format!("/campaigns/analytics?workspace_id={ws}&campaign_ids={busy},999999"),
        )
        .await
        .expect(404)
        .json();
    assert_eq!(missing["message"], "Campaign not found");
    let invalid = server
        .get(key, "/campaigns/analytics")
        .await
        .expect(422)
        .json();
    assert!(invalid["errors"]["workspace_id"].is_array(), "{invalid}");
    let invalid = server
        .get(
            key,
            &format!("/campaigns/analytics?workspace_id={ws}&campaign_ids=x"),
        )
        .await
        .expect(422)
        .json();
    assert!(invalid["errors"]["campaign_ids"].is_array(), "{invalid}");

    // Another workspace's campaign is not found; another workspace is forbidden.
    let (other_ws, _) = add_workspace(&db, account.account_id, "Other");
    let (foreign, _) = create_campaign(
        &server,
        &legacy_key(&db, account.account_id),
        other_ws,
        "Theirs",
    )
    .await;
    server
        .get(
            key,
            &format!("/campaigns/analytics?workspace_id={ws}&campaign_ids={foreign}"),
        )
        .await
        .expect(404);
    server
        .get(
            key,
            &format!("/campaigns/analytics?workspace_id={other_ws}"),
        )
        .await
        .expect(403);
}

#[tokio::test]
async fn search_finds_leads_by_what_they_did_and_get_shows_it() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Signals", 4).await;
    let [viewer, clicker, reader, idle] = [0, 1, 2, 3].map(|i| pages[i].clone());
    let who = visitor(7);
    for (page, body) in [
        (&viewer.1, json!({"type": "view"})),
        (&clicker.1, json!({"type": "view"})),
        (&clicker.1, json!({"type": "click", "target": "#cta"})),
        (&reader.1, json!({"type": "view"})),
        (&reader.1, json!({"type": "scroll"})),
        (&reader.1, json!({"type": "time", "seconds": 4000})),
    ] {
        send_person_beacon(&server, page, body, DESKTOP_BROWSER, &who)
            .await
            .expect(204);
    }
    analytics_until(&server, key, ws, campaign, |e| {
        e["pages_visited"] == 3 && e["average_time_on_page_seconds"] == 600
    })
    .await;
    let search = |engagement: &'static str| {
        let server = &server;
        async move {
            let body = server
                .get(
                    key,
                    &format!("/leads/search?workspace_id={ws}&{engagement}"),
                )
                .await
                .expect(200)
                .json();
            let mut ids: Vec<i64> = body["leads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["lead_id"].as_i64().unwrap())
                .collect();
            ids.sort();
            ids
        }
    };
    assert_eq!(
        search("engagement=page_viewed").await,
        vec![viewer.0, clicker.0, reader.0]
    );
    assert_eq!(search("engagement=button_clicked").await, vec![clicker.0]);
    assert_eq!(
        search("engagement=scroll_100_percent").await,
        vec![reader.0]
    );
    assert_eq!(
        search("engagement[]=button_clicked&engagement[]=scroll_100_percent").await,
        vec![clicker.0, reader.0]
    );
    assert_eq!(search("engagement=all").await.len(), 4);
    assert_eq!(search("engagement=form_submitted").await, Vec::<i64>::new());

    let got = server
        .get(key, &format!("/leads/get?lead_id={}", reader.0))
        .await
        .expect(200)
        .json();
    let engagement = &got["engagement"];
    assert_eq!(engagement["views"], 1, "{got}");
    assert_eq!(engagement["scrolled_to_bottom"], true);
    // One time beacon adds at most 30 minutes.
    assert_eq!(engagement["engaged_seconds"], 1800);
    assert_eq!(engagement["form_submissions"], 0);
    assert!(is_iso8601_micros(&engagement["first_viewed_at"]), "{got}");
    assert_eq!(engagement["first_viewed_at"], engagement["last_viewed_at"]);
    let untouched = server
        .get(key, &format!("/leads/get?lead_id={}", idle.0))
        .await
        .expect(200)
        .json();
    assert_eq!(
        untouched["engagement"],
        json!({"views": 0, "first_viewed_at": null, "last_viewed_at": null, "clicks": 0,
               "scrolled_to_bottom": false, "engaged_seconds": 0, "form_submissions": 0,
               "score": 0.0, "hot_at": null})
    );
}

#[tokio::test]
async fn the_beacon_route_refuses_what_is_not_a_beacon_with_json() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (_, pages) = live_campaign(&server, key, ws, "Strict", 1).await;
    let page = &pages[0].1;
    let post = |body: String| server.client.post(format!("{page}/beacon")).body(body);
    let unreadable = server
        .send(post("not json".into()))
        .await
        .expect(400)
        .json();
    assert!(unreadable["message"].is_string());
    let unknown = server
        .send(post(json!({"type": "purchase"}).to_string()))
        .await
        .expect(422)
        .json();
    assert!(unknown["errors"]["type"].is_array(), "{unknown}");
    let huge = server
        .send(post(format!(
            "{{\"type\":\"view\",\"target\":\"{}\"}}",
            "x".repeat(10_000)
        )))
        .await
        .expect(413)
        .json();
    assert!(huge["message"].is_string());
    server
        .send(server.client.get(format!("{page}/beacon")))
        .await
        .expect(405);
    // Beacons need no key and leave no API rate-limit trace.
    let ok = send_person_beacon(&server, page, json!({"type": "view"}), DESKTOP_BROWSER, "")
        .await
        .expect(204);
    assert!(ok.header("x-ratelimit-limit").is_none());
    // A beacon whose slugs are written with escapes goes through the router (the fast path
    // takes plain slugs only): answered the same, with the same headers.
    let last = page.chars().last().unwrap();
    let escaped = format!("{}%{:02X}", &page[..page.len() - 1], last as u32);
    let routed = send_beacon(
        &server,
        &escaped,
        json!({"type": "scroll"}),
        DESKTOP_BROWSER,
        "",
    )
    .await
    .expect(204);
    let names = |reply: &Reply| {
        let mut names: Vec<String> = reply.headers.keys().map(|n| n.to_string()).collect();
        names.sort();
        names
    };
    assert_eq!(names(&ok), names(&routed));
    for reply in [&ok, &routed] {
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
        assert!(reply.header("content-security-policy").is_some());
        assert!(reply.header("x-request-id").is_some());
    }
}

#[tokio::test]
async fn sigterm_under_beacon_load_keeps_every_acknowledged_beacon() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    // Each beacon from an address and visitor of its own (behind a trusted proxy), so no
    // address's budget drops one: every acknowledged beacon is stored.
    let mut server = Server::serve(&db, &["--trusted-proxies", "127.0.0.1/32"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Shutdown", 20).await;
    let acknowledged = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    let mut senders = Vec::new();
    for worker in 0..8 {
        let pages = pages.clone();
        let client = server.client.clone();
        let acknowledged = acknowledged.clone();
        senders.push(tokio::spawn(async move {
            for n in 0.. {
                let page = &pages[(worker * 7 + n) % pages.len()].1;
                let sent = client
                    .post(format!("{page}/beacon"))
                    .header("user-agent", DESKTOP_BROWSER)
                    .header(
                        "x-forwarded-for",
                        format!("10.{worker}.{}.{}", n / 256 % 256, n % 256),
                    )
                    .header("cookie", format!("lps_vid={worker:08x}{n:024x}"))
                    .body(
                        json!({"type": "view", "view_id": format!("{worker:08x}{n:024x}"),
                               "interaction": "pointer"})
                        .to_string(),
                    )
                    .send()
                    .await;
                match sent {
                    Ok(reply) if reply.status() == 204 => {
                        acknowledged.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    _ => break,
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let sent_before_stop = acknowledged.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        sent_before_stop > 50,
        "only {sent_before_stop} beacons under load"
    );
    server.terminate();
    for sender in senders {
        let _ = sender.await;
    }
    let exit = server.wait_for_exit(Duration::from_secs(40));
    assert!(exit.success(), "{exit:?}");
    let acknowledged = acknowledged.load(std::sync::atomic::Ordering::SeqCst);

    // Every view is stored, whatever its class (made up without a page load, these are kept as
    // automated).
    let mut store = db.connect().await;
    let views: i64 = sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM page_events WHERE kind = 'view' AND campaign_id = $1",
    )
    .bind(campaign)
    .fetch_one(&mut store)
    .await
    .unwrap();
    assert_eq!(
        views, acknowledged,
        "every acknowledged view is stored, no more"
    );
}

#[tokio::test]
async fn watch_engagement_streams_counted_events_as_they_are_recorded() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Watched", 1).await;
    let (lead, page) = &pages[0];
    let mut client = lps::proto::engagement_service_client::EngagementServiceClient::new(
        server.grpc_channel().await,
    );
    let mut stream = client
        .watch_engagement(grpc_request(
            key,
            lps::proto::WatchEngagementRequest {
                workspace_id: Some(ws),
                campaign_id: Some(campaign),
            },
        ))
        .await
        .unwrap()
        .into_inner();
    // Bots are not told; the person's view and click are.
    send_person_beacon(&server, page, json!({"type": "view"}), "curl/8.5.0", "")
        .await
        .expect(204);
    send_person_beacon(
        &server,
        page,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        &visitor(3),
    )
    .await
    .expect(204);
    send_person_beacon(
        &server,
        page,
        json!({"type": "click", "target": "#cta"}),
        DESKTOP_BROWSER,
        &visitor(3),
    )
    .await
    .expect(204);
    let mut seen: Vec<Value> = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.message())
            .await
            .expect("an event within 10 s")
            .unwrap()
            .expect("the stream stays open");
        assert_eq!(event.lead_id, *lead);
        assert_eq!(event.campaign_id, campaign);
        seen.push(json!({"event": event.event, "target": event.target}));
    }
    assert_eq!(
        seen,
        vec![
            json!({"event": "page_viewed", "target": null}),
            json!({"event": "button_clicked", "target": "#cta"}),
        ]
    );
    // Another workspace cannot watch this one.
    let (other_ws, _) = add_workspace(&db, account.account_id, "Elsewhere");
    let refused = client
        .watch_engagement(grpc_request(
            key,
            lps::proto::WatchEngagementRequest {
                workspace_id: Some(other_ws),
                campaign_id: None,
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
}

#[tokio::test]
async fn watch_engagement_sees_what_another_process_records_on_postgres() {
    let db = TestDb::new();
    if !db.is_postgres() {
        eprintln!("skipped: needs LPS_TEST_DATABASE_URL (PostgreSQL)");
        return;
    }
    let account = bootstrap(&db, &[]);
    let watched = Server::serve(&db, &[]);
    let other = Server::serve(&db, &["--job-workers", "0"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&watched, key, ws, "Elsewhere", 1).await;
    let (lead, page) = &pages[0];
    let mut client = lps::proto::engagement_service_client::EngagementServiceClient::new(
        watched.grpc_channel().await,
    );
    let mut stream = client
        .watch_engagement(grpc_request(
            key,
            lps::proto::WatchEngagementRequest {
                workspace_id: Some(ws),
                campaign_id: None,
            },
        ))
        .await
        .unwrap()
        .into_inner();
    // The view reaches the other process; the watcher hears of it through PostgreSQL.
    let path = page.split_once("/p/").unwrap().1;
    let via_other = format!("{}/p/{path}", other.http);
    send_person_beacon(
        &other,
        &via_other,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        &visitor(9),
    )
    .await
    .expect(204);
    let event = tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .expect("an event within 10 s")
        .unwrap()
        .expect("the stream stays open");
    assert_eq!(event.event, "page_viewed");
    assert_eq!((event.lead_id, event.campaign_id), (*lead, campaign));
    // A form submitted on the other process is heard too.
    let form = other
        .client
        .post(&via_other)
        .header("user-agent", DESKTOP_BROWSER)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("form_id=demo&email=v%40example.com");
    other.send(form).await.expect(200);
    let event = tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .expect("an event within 10 s")
        .unwrap()
        .unwrap();
    assert_eq!(event.event, "form_submitted");
    assert_eq!(event.target.as_deref(), Some("demo"));
}
