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

/// Posts a form the way a browser without JavaScript does.
async fn submit(server: &Server, page: &str, fields: &[(&str, &str)]) -> Reply {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    let request = server
        .client
        .post(page)
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
    // Newest first, exactly the documented fields.
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
            "created_at",
            "email",
            "form_id",
            "id",
            "ip_address",
            "page_url"
        ]
    );
    assert_eq!(newest["email"], "second@example.com");
    assert_eq!(newest["form_id"], "form-1");
    let first = &listed[1];
    assert_eq!(first["form_id"], "demo");
    assert_eq!(first["email"], "visitor@example.com");
    assert_eq!(first["page_url"], page.as_str());
    assert_eq!(first["ip_address"], "127.0.0.1");
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
