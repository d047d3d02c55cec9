//! What visitors do on lead pages, read back: forms submitted without JavaScript and
//! `GET /automation/get-form-submissions`.

use crate::common::*;
use serde_json::{Value, json};

/// A live campaign on the premade form design with one lead; returns (campaign, page address).
pub(crate) async fn live_form_page(
    server: &Server,
    key: &str,
    workspace: i64,
    name: &str,
) -> (i64, String) {
    let (campaign, _) = create_campaign(server, key, workspace, name).await;
    publish_premade(server, key, workspace, campaign, "Demo Invitation").await;
    let job = upsert(
        server,
        key,
        json!({"campaign_id": campaign, "leads": [{"values": {
            "email": format!("lead@{}.example", name.to_lowercase()), "first_name": "Ada"}}]}),
    )
    .await;
    wait_for_job(server, key, &job).await;
    let leads = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json();
    (
        campaign,
        leads[0]["service_page_url"].as_str().unwrap().to_owned(),
    )
}

/// Posts a form the way a person's browser without JavaScript does.
pub(crate) async fn submit(server: &Server, page: &str, fields: &[(&str, &str)]) -> Reply {
    submit_from(server, page, fields, DESKTOP_BROWSER).await
}

/// Posts a form from a browser that says it is `user_agent`.
pub(crate) async fn submit_from(
    server: &Server,
    page: &str,
    fields: &[(&str, &str)],
    user_agent: &str,
) -> Reply {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    let request = server
        .client
        .post(page)
        .header("user-agent", user_agent)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    server.send(request).await
}

#[tokio::test]
async fn a_form_posted_without_javascript_is_stored_and_listed_as_documented() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (_, page) = live_form_page(&server, key, ws, "Demo").await;
    // The premade form posts to the page itself.
    let html = server.send(server.client.get(&page)).await.expect(200).text;
    assert!(html.contains(r#"name="form_id" value="demo""#), "{html}");

    let reply = submit(
        &server,
        &page,
        &[
            ("form_id", "demo"),
            ("email", "visitor@example.com"),
            ("when", "Next week"),
        ],
    )
    .await
    .expect(200);
    assert!(reply.text.contains("Thank you"));
    assert!(
        reply
            .header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    submit(&server, &page, &[("email", "second@example.com")])
        .await
        .expect(200);

    let listed = server
        .get(
            key,
            &format!("/automation/get-form-submissions?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2);
    // Newest first, the documented fields and two extensions (`fields`, `lead_id`).
    let newest = &listed[0];
    let mut keys: Vec<&str> = newest
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "class",
            "created_at",
            "email",
            "fields",
            "form_id",
            "id",
            "ip_address",
            "lead_id",
            "page_url",
            "reason"
        ]
    );
    assert_eq!(
        (&newest["class"], &newest["reason"]),
        (&json!("person"), &Value::Null),
        "a browser's post is a person's"
    );
    assert_eq!(newest["email"], "second@example.com");
    assert_eq!(newest["form_id"], "form-1");
    let first = &listed[1];
    assert_eq!(first["form_id"], "demo");
    assert_eq!(first["email"], "visitor@example.com");
    assert_eq!(first["page_url"], page.as_str());
    assert_eq!(first["ip_address"], "127.0.0.1");
    // Every field answered, the email aside (it has its own).
    assert_eq!(first["fields"], json!({"when": "Next week"}), "{first}");
    assert!(first["lead_id"].as_i64().unwrap() > 0);
    assert!(first["id"].as_i64().unwrap() < newest["id"].as_i64().unwrap());
    let created_at = first["created_at"].as_str().unwrap();
    assert!(created_at.ends_with("+00:00"), "{created_at}");
    assert!(chrono::DateTime::parse_from_rfc3339(created_at).is_ok());
    // The lead shows up under `form_submitted`, and under `all`; not under kinds not recorded.
    let search =
        |engagement: &str| format!("/leads/search?workspace_id={ws}&engagement[]={engagement}");
    let found = server
        .get(key, &search("form_submitted"))
        .await
        .expect(200)
        .json();
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["leads"][0]["service_page_url"], page.as_str());
    let viewed = server
        .get(key, &search("page_viewed"))
        .await
        .expect(200)
        .json();
    assert_eq!(viewed["total"], 0);
    let either = server
        .get(
            key,
            &format!("{}&engagement[]=form_submitted", search("page_viewed")),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(either["total"], 1);
    // limit.
    let one = server
        .get(
            key,
            &format!("/automation/get-form-submissions?workspace_id={ws}&limit=1"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(one.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn forms_on_pages_that_are_not_live_or_do_not_exist_are_not_stored() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, page) = live_form_page(&server, key, ws, "Gone").await;
    server
        .post(
            key,
            "/pages/unpublish",
            json!({"workspace_id": ws, "campaign_id": campaign}),
        )
        .await
        .expect(200);
    submit(&server, &page, &[("email", "late@example.com")])
        .await
        .expect(404);
    let nowhere = format!("{}/p/no-such-campaign/abcdefabcdefabcd", server.http);
    submit(&server, &nowhere, &[("email", "x@example.com")])
        .await
        .expect(404);
    let listed = server
        .get(key, "/automation/get-form-submissions")
        .await
        .expect(200)
        .json();
    assert_eq!(listed, json!([]));
}

#[tokio::test]
async fn form_submissions_limit_is_validated() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    for limit in ["0", "101", "x"] {
        let body = server
            .get(
                &account.api_key,
                &format!("/automation/get-form-submissions?limit={limit}"),
            )
            .await
            .expect(422)
            .json();
        assert!(body["errors"]["limit"].is_array(), "{limit}: {body}");
    }
}

#[tokio::test]
async fn form_submissions_span_the_reachable_workspaces_and_no_others() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (second, second_key) = add_workspace(&db, account.account_id, "Second");
    let legacy = legacy_key(&db, account.account_id);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (first_campaign, first_page) =
        live_form_page(&server, &account.api_key, account.workspace_id, "First").await;
    let (_, second_page) = live_form_page(&server, &second_key, second, "Other").await;
    submit(&server, &first_page, &[("email", "one@example.com")])
        .await
        .expect(200);
    submit(&server, &second_page, &[("email", "two@example.com")])
        .await
        .expect(200);

    let emails = |listed: Value| -> Vec<String> {
        listed
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["email"].as_str().unwrap().to_owned())
            .collect()
    };
    // A legacy key without workspace_id: every workspace of the account.
    let all = server
        .get(&legacy, "/automation/get-form-submissions")
        .await
        .expect(200)
        .json();
    assert_eq!(emails(all), ["two@example.com", "one@example.com"]);
    // A bound key: its own workspace only.
    let own = server
        .get(&second_key, "/automation/get-form-submissions")
        .await
        .expect(200)
        .json();
    assert_eq!(emails(own), ["two@example.com"]);
    server
        .get(
            &second_key,
            &format!(
                "/automation/get-form-submissions?workspace_id={}",
                account.workspace_id
            ),
        )
        .await
        .expect(403);
    // Another workspace's campaign is not found; a stranger sees nothing.
    server
        .get(
            &second_key,
            &format!("/automation/get-form-submissions?campaign_id={first_campaign}"),
        )
        .await
        .expect(404);
    let filtered = server
        .get(
            &legacy,
            &format!("/automation/get-form-submissions?campaign_id={first_campaign}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(emails(filtered), ["one@example.com"]);
    let none = server
        .get(&stranger.api_key, "/automation/get-form-submissions")
        .await
        .expect(200)
        .json();
    assert_eq!(none, json!([]));
}

#[tokio::test]
async fn form_posts_are_rate_limited_per_visitor_address() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (_, page) = live_form_page(&server, &account.api_key, account.workspace_id, "Busy").await;
    drop(server);
    // Two posts a minute, from a loopback address of this test's own (the limit's bucket is
    // the visitor's address, shared through Redis when configured).
    let server = Server::serve(&db, &["--rate-limit-per-minute", "2"]);
    let page = page.replace(page.split("/p/").next().unwrap(), server.http.as_str());
    let visitor: std::net::IpAddr = format!(
        "127.{}.{}.{}",
        rand::random_range(1..255),
        rand::random_range(0..255),
        rand::random_range(1..255)
    )
    .parse()
    .unwrap();
    let client = reqwest::Client::builder()
        .local_address(visitor)
        .build()
        .unwrap();
    let post = || {
        client
            .post(&page)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("email=v%40example.com")
    };
    for _ in 0..2 {
        server.send(post()).await.expect(200);
    }
    let refused = server.send(post()).await.expect(429);
    assert!(refused.text.contains("Please wait"));
}

#[tokio::test]
async fn the_visitor_address_comes_from_x_forwarded_for_only_behind_trusted_proxies() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let key = &account.api_key;
    let server = Server::serve(&db, &[]);
    let (_, page) = live_form_page(&server, key, account.workspace_id, "Proxied").await;
    let post = |server: &Server, page: &str| {
        server
            .client
            .post(page)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-forwarded-for", "203.0.113.9")
            .body("email=p%40example.com")
    };
    // Not trusted: a client cannot choose its own address.
    server.send(post(&server, &page)).await.expect(200);
    drop(server);
    let server = Server::serve(&db, &["--trusted-proxies", "127.0.0.0/8,::1"]);
    let page = page.replace(page.split("/p/").next().unwrap(), server.http.as_str());
    server.send(post(&server, &page)).await.expect(200);
    let listed = server
        .get(key, "/automation/get-form-submissions")
        .await
        .expect(200)
        .json();
    assert_eq!(listed[0]["ip_address"], "203.0.113.9");
    assert_eq!(listed[1]["ip_address"], "127.0.0.1");
}

#[tokio::test]
async fn a_leads_activity_lists_what_a_person_did_newest_first_and_why_a_bot_was_not_counted() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (_, page) = live_form_page(&server, key, ws, "Timeline").await;
    let lead = server
        .get(key, &format!("/leads/search?workspace_id={ws}"))
        .await
        .expect(200)
        .json()["leads"][0]["lead_id"]
        .as_i64()
        .unwrap();
    let path = |query: &str| format!("/leads/activity?lead_id={lead}{query}");
    let empty = server.get(key, &path("")).await.expect(200).json();
    assert_eq!(empty, json!({"entries": [], "next_before": null}));

    for body in [
        json!({"type": "view"}),
        json!({"type": "scroll"}),
        json!({"type": "click", "target": "https://example.com/book"}),
        json!({"type": "time", "seconds": 42}),
    ] {
        send_person_beacon(&server, &page, body, DESKTOP_BROWSER, "v1")
            .await
            .expect(204);
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // A bot's view is kept, never listed.
    send_person_beacon(&server, &page, json!({"type": "view"}), "curl/8.0", "")
        .await
        .expect(204);
    submit(
        &server,
        &page,
        &[
            ("form_id", "demo"),
            ("email", "ada@example.com"),
            ("when", "Friday 10:00"),
        ],
    )
    .await
    .expect(200);

    // Beacons are written in batches: wait until all five entries are there.
    let started = std::time::Instant::now();
    let activity = loop {
        let activity = server.get(key, &path("")).await.expect(200).json();
        if activity["entries"].as_array().unwrap().len() >= 6 {
            break activity;
        }
        assert!(started.elapsed().as_secs() < 20, "{activity}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let entries = activity["entries"].as_array().unwrap();
    let events: Vec<&str> = entries
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "form_submitted",
            "page_viewed",
            "time_on_page",
            "button_clicked",
            "scroll_100_percent",
            "page_viewed"
        ],
        "{activity}"
    );
    assert_eq!(
        entries[0]["fields"],
        json!({"email": "ada@example.com", "when": "Friday 10:00"})
    );
    assert_eq!(entries[0]["form_id"], "demo");
    // The bot's view is listed, not counted: its class and the reason say why.
    assert_eq!(entries[1]["class"], "automated", "{activity}");
    assert_eq!(entries[1]["reason"], "bot's user agent (isbot list)");
    assert_eq!(entries[2]["seconds"], 42);
    assert_eq!(entries[2]["class"], "person");
    assert_eq!(entries[3]["target"], "https://example.com/book");
    assert_eq!(entries[5]["campaign_name"], "Timeline");
    assert_eq!(entries[5]["class"], "person");
    assert_eq!(entries[5]["reason"], "an interaction (pointer)");
    assert!(activity["next_before"].is_null());

    // A page at a time: two, then the rest from `next_before`.
    let first = server.get(key, &path("&limit=3")).await.expect(200).json();
    assert_eq!(first["entries"].as_array().unwrap().len(), 3);
    let next = first["next_before"].as_str().unwrap();
    let rest = server
        .get(key, &path(&format!("&before={}", urlencode(next))))
        .await
        .expect(200)
        .json();
    let rest: Vec<&str> = rest["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        rest,
        ["button_clicked", "scroll_100_percent", "page_viewed"]
    );

    // The documented errors.
    let missing = server.get(key, "/leads/activity").await.expect(422).json();
    assert!(missing["errors"]["lead_id"].is_array(), "{missing}");
    let bad = server
        .get(key, &path("&before=yesterday&limit=0"))
        .await
        .expect(422)
        .json();
    assert!(
        bad["errors"]["before"].is_array() && bad["errors"]["limit"].is_array(),
        "{bad}"
    );
    server
        .get(key, "/leads/activity?lead_id=999999")
        .await
        .expect(404);
    // A key bound to another workspace does not reach the lead.
    let (_, other_key) = add_workspace(&db, account.account_id, "Other");
    server.get(&other_key, &path("")).await.expect(404);
}

fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn daily_analytics_list_every_day_with_what_people_did() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, page) = live_form_page(&server, key, ws, "Daily").await;
    let path = |query: &str| {
        format!("/campaigns/analytics/daily?workspace_id={ws}&campaign_id={campaign}{query}")
    };
    let quiet = server.get(key, &path("")).await.expect(200).json();
    let days = quiet["days"].as_array().unwrap();
    assert_eq!(days.len(), 30, "the last 30 days by default: {quiet}");
    assert!(
        days.iter()
            .all(|d| d["views"] == 0 && d["form_submissions"] == 0)
    );
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(days[29]["date"], today.as_str());

    let (a, b) = (format!("{:032x}", 1), format!("{:032x}", 2));
    for visitor in [&a, &b] {
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
    send_person_beacon(&server, &page, json!({"type": "view"}), DESKTOP_BROWSER, &a)
        .await
        .expect(204);
    send_person_beacon(
        &server,
        &page,
        json!({"type": "click", "target": "#cta"}),
        DESKTOP_BROWSER,
        &a,
    )
    .await
    .expect(204);
    send_person_beacon(&server, &page, json!({"type": "view"}), "curl/8.0", "")
        .await
        .expect(204);
    submit(&server, &page, &[("email", "x@example.com")])
        .await
        .expect(200);
    let range = format!("&from={today}&to={today}");
    let started = std::time::Instant::now();
    let day = loop {
        let daily = server.get(key, &path(&range)).await.expect(200).json();
        let day = daily["days"][0].clone();
        if day["clicks"] == 1 && day["views"] == 3 {
            break day;
        }
        assert!(started.elapsed().as_secs() < 20, "{daily}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(
        day,
        json!({"date": today, "views": 3, "unique_visitors": 2, "clicks": 1,
               "form_submissions": 1})
    );
    // Days far east of UTC: the same events, counted on the day they fell there.
    let east = server
        .get(key, &path("&utc_offset_minutes=840"))
        .await
        .expect(200)
        .json();
    let total: i64 = east["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["views"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 3, "{east}");
    // Extension: days in an IANA time zone. Pago Pago (UTC-11, no daylight saving time) is
    // still on the day before UTC's until 11:00 UTC: today there is the range's last day, and
    // every event of the day falls on it.
    let zone: jiff::tz::TimeZone = jiff::tz::TimeZone::get("Pacific/Pago_Pago").unwrap();
    let there = jiff::Timestamp::now().to_zoned(zone).date().to_string();
    let pago_pago = server
        .get(key, &path("&time_zone=Pacific/Pago_Pago"))
        .await
        .expect(200)
        .json();
    let days = pago_pago["days"].as_array().unwrap();
    assert_eq!(days.len(), 30, "{pago_pago}");
    assert_eq!(days[29]["date"], there.as_str(), "{pago_pago}");
    let counted: i64 = days.iter().map(|d| d["views"].as_i64().unwrap()).sum();
    assert_eq!(counted, 3, "{pago_pago}");
    assert_eq!(days[29]["form_submissions"], 1, "{pago_pago}");

    // The documented errors.
    for (query, field) in [
        ("&time_zone=Mars/Olympus_Mons", "time_zone"),
        (
            "&time_zone=Europe/Berlin&utc_offset_minutes=60",
            "time_zone",
        ),
    ] {
        let bad = server.get(key, &path(query)).await.expect(422).json();
        assert!(bad["errors"][field].is_array(), "{query}: {bad}");
        assert_eq!(
            bad["errors"].as_object().unwrap().len(),
            1,
            "{query}: {bad}"
        );
    }
    let bad = server
        .get(key, &path("&from=2026-13-01&utc_offset_minutes=900"))
        .await
        .expect(422)
        .json();
    assert!(bad["errors"]["from"].is_array() && bad["errors"]["utc_offset_minutes"].is_array());
    // Past 366 days, the last ones; a range that ends before it starts, none.
    let long = server
        .get(key, &path("&from=2025-01-01&to=2026-11-01"))
        .await
        .expect(200)
        .json();
    assert_eq!(long["days"].as_array().unwrap().len(), 366);
    assert_eq!(long["days"][365]["date"], "2026-11-01");
    let backwards = server
        .get(key, &path("&from=2026-11-02&to=2026-11-01"))
        .await
        .expect(200)
        .json();
    assert_eq!(backwards["days"], json!([]));
    server
        .get(
            key,
            &format!("/campaigns/analytics/daily?workspace_id={ws}&campaign_id=999999"),
        )
        .await
        .expect(404);
    server
        .get(
            key,
            &format!("/campaigns/analytics/daily?workspace_id={ws}"),
        )
        .await
        .expect(422);
}
