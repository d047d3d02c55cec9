//! The dashboard's leads as people work with them: the list's columns (score, last activity,
//! campaigns, page link), sorts, filters and cursor pages; acting on the selected leads or
//! all that match (add to an audience, download, erase once confirmed); and adding one lead
//! with its page link shown at once.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::*;
use crate::dashboard::unescape;
use crate::oauth::{Browser, PASSWORD, hidden, setup, setup_with};

/// Every hidden field of a page's forms, in order.
fn hidden_fields(page: &str) -> Vec<(String, String)> {
    let marker = "<input type=\"hidden\" name=\"";
    page.match_indices(marker)
        .map(|(at, _)| {
            let rest = &page[at + marker.len()..];
            let name_end = rest.find('"').unwrap();
            let value_start = rest.find("value=\"").unwrap() + "value=\"".len();
            let value_end = rest[value_start..].find('"').unwrap() + value_start;
            (
                unescape(&rest[..name_end]),
                unescape(&rest[value_start..value_end]),
            )
        })
        .collect()
}

/// The lead ids of the list's rows, in order.
fn listed_ids(page: &str) -> Vec<i64> {
    page.match_indices("name=\"lead_")
        .map(|(at, _)| {
            page[at + "name=\"lead_".len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap()
        })
        .collect()
}

/// Waits until `/leads/get` says the lead was active.
async fn active(server: &Server, key: &str, lead: i64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while server
        .get(key, &format!("/leads/get?lead_id={lead}"))
        .await
        .json()["last_activity_at"]
        .is_null()
    {
        assert!(Instant::now() < deadline, "the view was never counted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_leads_list_shows_score_activity_campaigns_and_page_and_sorts_and_filters_them() {
    let s = setup_with(&["--hot-score", "1"]).await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let (_, pages) = live_campaign_with(
        &s.server,
        key,
        ws,
        "Spring",
        "Demo Invitation",
        vec![
            json!({"values": {"email": "ada@example.com", "first_name": "Ada"}}),
            json!({"values": {"email": "bob@example.com", "first_name": "Bob"}}),
        ],
    )
    .await;
    let ((ada, _), (bob, bob_page)) = (pages[0].clone(), pages[1].clone());
    live_campaign_with(
        &s.server,
        key,
        ws,
        "Autumn",
        "Demo Invitation",
        vec![json!({"values": {"email": "ada@example.com"}})],
    )
    .await;
    // Bob views his page: active, and hot.
    send_person_beacon(
        &s.server,
        &bob_page,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        "v",
    )
    .await
    .expect(204);
    active(&s.server, key, bob).await;

    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (status, _, list) = browser.get("/dashboard/leads").await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(listed_ids(&list), [bob, ada], "newest first");
    for column in ["Score", "Last active", "Campaigns", "Page"] {
        assert!(
            list.contains(&format!("<th scope=\"col\">{column}</th>")),
            "{list}"
        );
    }
    assert!(
        list.contains("<td>Spring, Autumn</td>"),
        "Ada's campaigns: {list}"
    );
    assert!(
        list.contains("<td>Never</td>"),
        "Ada was never active: {list}"
    );
    let escaped_page = bob_page.replace('/', "&#x2f;");
    assert!(list.contains(&format!("href=\"{escaped_page}\"")), "{list}");

    let list_of = |query: &str| format!("/dashboard/leads?workspace_id={ws}&{query}");
    let (_, _, by_activity) = browser.get(&list_of("sort=last_activity")).await;
    assert_eq!(listed_ids(&by_activity), [bob, ada]);
    let (_, _, by_score) = browser.get(&list_of("sort=score")).await;
    assert_eq!(listed_ids(&by_score)[0], bob);
    let (_, _, hot) = browser.get(&list_of("hot=1")).await;
    assert_eq!(listed_ids(&hot), [bob], "{hot}");
    assert!(hot.contains("1 lead"), "{hot}");
    let (_, _, in_range) = browser
        .get(&list_of("active_from=2000-01-01&active_until=2999-12-31"))
        .await;
    assert_eq!(listed_ids(&in_range), [bob]);
    let (_, _, before) = browser.get(&list_of("active_until=2000-01-01")).await;
    assert!(before.contains("No lead matches."), "{before}");
    // What the form cannot send is ignored, a cursor of another order gives the first page.
    let (status, _, odd) = browser
        .get(&list_of(
            "active_from=yesterday&sort=loudest&after=nonsense",
        ))
        .await;
    assert_eq!((status, listed_ids(&odd)), (200, vec![bob, ada]));
}

#[tokio::test]
async fn bulk_actions_add_to_an_audience_download_and_erase_only_once_confirmed() {
    let s = setup().await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let (campaign, _) = create_campaign(&s.server, key, ws, "Bulk").await;
    let job = upsert(
        &s.server,
        key,
        json!({"campaign_id": campaign, "leads": leads("bulk-", 30)}),
    )
    .await;
    wait_for_job(&s.server, key, &job).await;
    let audience = s
        .server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "Prospects"}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .as_i64()
        .unwrap();
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, list) = browser.get("/dashboard/leads").await;
    let csrf = hidden(&list, "csrf_token");
    let ids = listed_ids(&list);
    assert_eq!(ids.len(), 25);
    let (a, b) = (format!("lead_{}", ids[0]), format!("lead_{}", ids[1]));
    let ws_text = ws.to_string();
    let audience_text = audience.to_string();

    // Two selected leads into an audience.
    let (status, location, _) = browser
        .post(
            "/dashboard/leads/bulk",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws_text),
                (a.as_str(), "1"),
                (b.as_str(), "1"),
                ("scope", "selected"),
                ("to_audience", &audience_text),
                ("action", "audience"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, after) = browser.get(&location.unwrap()).await;
    assert!(
        after.contains("Added 2 leads to the audience \u{201c}Prospects\u{201d}."),
        "{after}"
    );
    let audiences = s
        .server
        .get(key, &format!("/audiences/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    let count_of = |audiences: &Value, name: &str| {
        audiences
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .map(|a| a["lead_count"].as_i64().unwrap())
    };
    assert_eq!(count_of(&audiences, "Prospects"), Some(2));
    // Every lead that matches (all 30, beyond the page) into a new audience.
    browser
        .post(
            "/dashboard/leads/bulk",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws_text),
                ("scope", "all"),
                ("to_audience", "new"),
                ("new_audience", "Everyone"),
                ("action", "audience"),
            ],
        )
        .await;
    let audiences = s
        .server
        .get(key, &format!("/audiences/get-list?workspace_id={ws}"))
        .await
        .json();
    assert_eq!(count_of(&audiences, "Everyone"), Some(30));

    // The selected leads as CSV.
    let (status, _, csv) = browser
        .post(
            "/dashboard/leads/bulk",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws_text),
                (a.as_str(), "1"),
                (b.as_str(), "1"),
                ("action", "export"),
            ],
        )
        .await;
    assert_eq!(status, 200);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let exported: Vec<String> = reader.records().map(|r| r.unwrap()[0].to_owned()).collect();
    assert_eq!(exported, [ids[0].to_string(), ids[1].to_string()]);

    // Nothing selected: said, nothing done.
    let (_, location, _) = browser
        .post(
            "/dashboard/leads/bulk",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws_text),
                ("action", "erase"),
            ],
        )
        .await;
    let (_, _, said) = browser.get(&location.unwrap()).await;
    assert!(said.contains("Select at least one lead"), "{said}");
    // Erasing asks first, and nothing goes until the answer.
    let (status, _, asked) = browser
        .post(
            "/dashboard/leads/bulk",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws_text),
                (a.as_str(), "1"),
                (b.as_str(), "1"),
                ("action", "erase"),
            ],
        )
        .await;
    assert_eq!(status, 200);
    assert!(
        asked.contains("Erase 2 leads and every trace of them?"),
        "{asked}"
    );
    assert_eq!(lead_total(&s.server, key, ws).await, 30);
    let fields = hidden_fields(&asked);
    let form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (status, location, _) = browser.post("/dashboard/leads/bulk", &form).await;
    assert_eq!(status, 303);
    let (_, _, done) = browser.get(&location.unwrap()).await;
    assert!(
        done.contains("Erased 2 leads and every trace of them."),
        "{done}"
    );
    assert_eq!(lead_total(&s.server, key, ws).await, 28);
    s.server
        .get(key, &format!("/leads/get?lead_id={}", ids[0]))
        .await
        .expect(404);

    // All that match: asked with their number; if more match by the answer, asked again.
    let all = [
        ("csrf_token", csrf.as_str()),
        ("workspace_id", ws_text.as_str()),
        ("q", "bulk-1"),
        ("scope", "all"),
        ("action", "erase"),
    ];
    let (_, _, asked) = browser.post("/dashboard/leads/bulk", &all).await;
    assert!(
        asked.contains("Erase 11 leads"),
        "bulk-1 and bulk-10..19: {asked}"
    );
    let fields = hidden_fields(&asked);
    let job = upsert(
        &s.server,
        key,
        json!({"campaign_id": campaign,
               "leads": [{"values": {"email": "bulk-100@example.com"}}]}),
    )
    .await;
    wait_for_job(&s.server, key, &job).await;
    let form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (status, _, again) = browser.post("/dashboard/leads/bulk", &form).await;
    assert_eq!(status, 200);
    assert!(again.contains("Erase 12 leads"), "{again}");
    let fields = hidden_fields(&again);
    let form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (status, _, _) = browser.post("/dashboard/leads/bulk", &form).await;
    assert_eq!(status, 303);
    assert_eq!(lead_total(&s.server, key, ws).await, 17);

    // A form without the session's token is refused.
    let (status, _, _) = browser
        .post(
            "/dashboard/leads/bulk",
            &[
                ("workspace_id", &ws_text),
                ("scope", "all"),
                ("action", "erase"),
            ],
        )
        .await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn a_lead_added_from_a_campaign_or_the_leads_page_shows_its_page_link_at_once() {
    let s = setup().await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let (campaign, _) =
        live_campaign_with(&s.server, key, ws, "Spring", "Demo Invitation", Vec::new()).await;
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, page) = browser
        .get(&format!("/dashboard/campaigns/{campaign}"))
        .await;
    assert!(page.contains("Add a lead"), "{page}");
    let csrf = hidden(&page, "csrf_token");
    let (ws_text, campaign_text) = (ws.to_string(), campaign.to_string());
    let (status, location, _) = browser
        .post(
            "/dashboard/leads/add",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws_text),
                ("campaign_id", &campaign_text),
                ("from", "campaign"),
                ("email", "ada@example.com"),
                ("first_name", "Ada"),
                ("company_name", "Engines"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let location = location.unwrap();
    assert!(location.starts_with("/dashboard/leads/"), "{location}");
    let (_, _, lead) = browser.get(&location).await;
    assert!(lead.contains("Lead added. Their page: http"), "{lead}");
    let search = s
        .server
        .get(key, &format!("/leads/search?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    let url = search["leads"][0]["service_page_url"].as_str().unwrap();
    assert!(lead.contains(&url.replace('/', "&#x2f;")), "{lead}");
    let visited = s.server.send(s.server.client.get(url)).await.expect(200);
    assert!(visited.text.contains("Ada"), "the page is there at once");

    // From the Leads page, without a campaign: stored, no page yet.
    let (status, location, _) = browser
        .post(
            "/dashboard/leads/add",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws_text),
                ("email", "bob@example.com"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, bob) = browser.get(&location.unwrap()).await;
    assert!(bob.contains("Add them to a campaign"), "{bob}");
    assert!(bob.contains("No page yet"), "{bob}");
    // A value that breaks a rule: back where the form was, saying why.
    let (_, location, _) = browser
        .post(
            "/dashboard/leads/add",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws_text),
                ("campaign_id", &campaign_text),
                ("from", "campaign"),
                ("email", "not an email"),
            ],
        )
        .await;
    let location = location.unwrap();
    assert_eq!(location, format!("/dashboard/campaigns/{campaign}"));
    let (_, _, back) = browser.get(&location).await;
    assert!(
        back.contains("role=\"alert\"") && back.contains("email"),
        "{back}"
    );
    assert_eq!(lead_total(&s.server, key, ws).await, 2);
}
