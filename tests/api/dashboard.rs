//! The dashboard's people pages, used as a person's browser would: the leads list (search,
//! filters, pages), one lead, and post/redirect/get after actions.

use serde_json::json;

use crate::common::{
    DESKTOP_BROWSER, create_campaign, live_campaign, send_person_beacon, upsert, wait_for_job,
};
use crate::engagement::{live_form_page, submit};
use crate::oauth::{Browser, PASSWORD, hidden, setup};

/// The address of the list's next page, as the page links it.
pub(crate) fn next_page(page: &str) -> String {
    let end = page.find("\" rel=\"next\"").expect("a next page");
    let start = page[..end].rfind("href=\"").unwrap() + "href=\"".len();
    unescape(&page[start..end])
}

/// An attribute's text as the browser reads it.
pub(crate) fn unescape(text: &str) -> String {
    text.replace("&#x2f;", "/")
        .replace("&#x3d;", "=")
        .replace("&amp;", "&")
}

#[tokio::test]
async fn leads_are_listed_searched_paged_and_each_opens() {
    let s = setup().await;
    let key = &s.account.api_key;
    let ws = s.account.workspace_id;
    let (campaign, _) = create_campaign(&s.server, key, ws, "Spring").await;
    let mut leads: Vec<_> = (0..30)
        .map(|n| {
            json!({"values": {"email": format!("p{n}@example.com"),
                              "first_name": format!("Person{n:02}"),
                              "company_name": "Acme"}})
        })
        .collect();
    leads.push(json!({"values": {"email": "formula@example.com",
                                 "first_name": "=HYPERLINK(\"http://evil.example\")"}}));
    leads.push(json!({"values": {"email": "x@example.com",
                                 "first_name": "<script>alert(1)</script>",
                                 "company_name": "Evil & Co", "favourite_colour": "green"}}));
    let job = upsert(
        &s.server,
        key,
        json!({"campaign_id": campaign, "leads": leads}),
    )
    .await;
    wait_for_job(&s.server, key, &job).await;

    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (status, _, first) = browser.get("/dashboard/leads").await;
    assert_eq!(status, 200, "{first}");
    assert!(first.contains("32 leads"), "{first}");
    // A link per lead (the page's other link under the path is the CSV import's).
    let lead_links = |page: &str| {
        page.matches("href=\"/dashboard/leads/").count()
            - page.matches("href=\"/dashboard/leads/import").count()
    };
    assert_eq!(lead_links(&first), 25);
    // What a lead typed is text, never markup.
    assert!(!first.contains("<script>alert(1)"), "{first}");
    assert!(first.contains("&lt;script&gt;"), "{first}");
    // The next page by its cursor; from there, back to the first.
    let (_, _, second) = browser.get(&next_page(&first)).await;
    assert_eq!(lead_links(&second), 7);
    assert!(!second.contains("rel=\"next\"") && second.contains(">First page</a>"));

    // Search by name, and by a company with a character HTML escapes.
    let (_, _, found) = browser
        .get(&format!("/dashboard/leads?workspace_id={ws}&q=person07"))
        .await;
    assert!(
        found.contains("1 lead") && found.contains("Person07"),
        "{found}"
    );
    let (_, _, evil) = browser
        .get(&format!("/dashboard/leads?workspace_id={ws}&q=evil+%26"))
        .await;
    assert!(evil.contains("1 lead"), "{evil}");
    // Nobody has engaged yet.
    let (_, _, engaged) = browser
        .get(&format!(
            "/dashboard/leads?workspace_id={ws}&campaign_id={campaign}&engagement=page_viewed"
        ))
        .await;
    assert!(
        engaged.contains("0 leads") && engaged.contains("No lead matches"),
        "{engaged}"
    );

    // One lead: its values, its page, what it did.
    let marker = "href=\"/dashboard/leads/";
    let at = evil.find(marker).unwrap() + marker.len();
    let lead_id: String = evil[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let (status, _, lead) = browser.get(&format!("/dashboard/leads/{lead_id}")).await;
    assert_eq!(status, 200, "{lead}");
    assert!(
        lead.contains("favourite_colour") && lead.contains("green"),
        "{lead}"
    );
    assert!(lead.contains("Evil &amp; Co"), "{lead}");
    assert!(lead.contains("&#x2f;p&#x2f;spring&#x2f;"), "{lead}");
    assert!(lead.contains("Not viewed yet."), "{lead}");
    assert!(lead.contains("<h2>Their pages</h2>"), "{lead}");

    // Another account's lead, or no lead at all: not found, the same way.
    for path in ["/dashboard/leads/999999", "/dashboard/leads/abc"] {
        let (status, _, page) = browser.get(path).await;
        assert_eq!(status, 404, "{path}: {page}");
    }
    // The CSV of the filtered set: every row, not only the page, and formulas made text.
    let (status, _, csv) = browser
        .get(&format!("/dashboard/leads.csv?workspace_id={ws}"))
        .await;
    assert_eq!(status, 200);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 33, "a header and 32 leads: {csv}");
    assert!(lines[0].starts_with("lead_id,email,first_name,"), "{csv}");
    assert!(lines[0].ends_with(",created_at,favourite_colour"), "{csv}");
    let (_, _, one) = browser
        .get(&format!("/dashboard/leads.csv?workspace_id={ws}&q=formula"))
        .await;
    assert!(one.contains("\"'=HYPERLINK("), "{one}");
    assert_eq!(one.lines().count(), 2, "{one}");
    // Signed out: to the login page.
    let mut stranger = Browser::new(&s.server);
    let (status, location, _) = stranger.get("/dashboard/leads").await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some("/dashboard/login"))
    );
}

#[tokio::test]
async fn a_leads_page_shows_its_timeline_with_every_answer() {
    let s = setup().await;
    let key = &s.account.api_key;
    let ws = s.account.workspace_id;
    let (_, page) = live_form_page(&s.server, key, ws, "Demo").await;
    submit(
        &s.server,
        &page,
        &[
            ("form_id", "demo"),
            ("email", "ada@example.com"),
            ("preferred_time", "<b>Friday</b> 10:00"),
        ],
    )
    .await
    .expect(200);
    let lead = s
        .server
        .get(key, &format!("/leads/search?workspace_id={ws}"))
        .await
        .expect(200)
        .json()["leads"][0]["lead_id"]
        .as_i64()
        .unwrap();
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (status, _, html) = browser.get(&format!("/dashboard/leads/{lead}")).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Submitted the form demo"), "{html}");
    assert!(html.contains("<dt>preferred_time</dt>"), "{html}");
    assert!(
        html.contains("&lt;b&gt;Friday&lt;&#x2f;b&gt; 10:00"),
        "{html}"
    );
    assert!(html.contains("Submitted 1 form."), "{html}");
    // The campaign's tile charts its views per day, in words too.
    let (_, _, home) = browser.get("/dashboard").await;
    assert!(home.contains("<svg role=\"img\""), "{home}");
    assert!(home.contains("0 views in the last 30 days"), "{home}");
    // Its days are the browser's (the cookie the script keeps): Kiritimati (UTC+14) and
    // Pago Pago (UTC-11) are always on different dates; a name nobody knows is UTC.
    for zone in [
        "Pacific/Kiritimati",
        "Pacific/Pago_Pago",
        "Nowhere/Atlantis",
    ] {
        browser.set_cookie("lps_tz", zone);
        let (_, _, home) = browser.get("/dashboard").await;
        let known = jiff::tz::TimeZone::get(zone).unwrap_or(jiff::tz::TimeZone::UTC);
        let today = jiff::Timestamp::now().to_zoned(known).date();
        let last = home.rfind("<title>").map(|at| &home[at + 7..at + 17]);
        assert_eq!(last, Some(today.to_string().as_str()), "{zone}: {home}");
    }
}

#[tokio::test]
async fn a_campaign_is_created_from_the_dashboard_and_a_bad_one_is_explained() {
    let s = setup().await;
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, home) = browser.get("/dashboard").await;
    let csrf = crate::oauth::hidden(&home, "csrf_token");
    let ws = s.account.workspace_id.to_string();
    let (status, location, _) = browser
        .post(
            "/dashboard/campaigns/create",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws),
                ("name", "Autumn Outreach"),
                ("cta_url", "https://cal.example/ada"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let location = location.unwrap();
    assert!(location.starts_with("/dashboard/campaigns/"), "{location}");
    // The new campaign's page says what happened, once, and what to do next.
    let (_, _, page) = browser.get(&location).await;
    assert!(
        page.contains("<title>Autumn Outreach · lps</title>"),
        "{page}"
    );
    assert!(page.contains("was created"), "{page}");
    assert!(page.contains("Pick a template"), "{page}");
    let (_, _, again) = browser.get(&location).await;
    assert!(!again.contains("was created"), "the notice is shown once");
    let (_, _, home) = browser.get("/dashboard").await;
    assert!(home.contains(">Autumn Outreach</a></h3>"), "{home}");
    let listed = s
        .server
        .get(
            &s.account.api_key,
            &format!("/campaigns/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    assert!(listed.to_string().contains("Autumn Outreach"), "{listed}");

    // No name: nothing created, and the reason said.
    browser
        .post(
            "/dashboard/campaigns/create",
            &[("csrf_token", &csrf), ("workspace_id", &ws), ("name", " ")],
        )
        .await;
    let (_, _, home) = browser.get("/dashboard").await;
    assert!(home.contains("role=\"alert\""), "{home}");
    assert!(home.contains("name field is required"), "{home}");
    // Without the form's token: refused.
    let (status, _, _) = browser
        .post(
            "/dashboard/campaigns/create",
            &[("workspace_id", &ws), ("name", "Forged")],
        )
        .await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn a_draft_is_previewed_as_a_lead_before_it_is_published_and_never_counted() {
    let s = setup().await;
    let key = &s.account.api_key;
    let ws = s.account.workspace_id;
    let (campaign, _) = create_campaign(&s.server, key, ws, "Draft").await;
    let job = upsert(
        &s.server,
        key,
        json!({"campaign_id": campaign, "leads": [{"values": {"email": "grace@example.com",
               "first_name": "Grace"}}]}),
    )
    .await;
    wait_for_job(&s.server, key, &job).await;
    let lead = s
        .server
        .get(key, &format!("/leads/search?workspace_id={ws}"))
        .await
        .expect(200)
        .json()["leads"][0]
        .clone();
    let lead_id = lead["lead_id"].as_i64().unwrap();
    let path =
        |extra: &str| format!("/pages/preview?workspace_id={ws}&campaign_id={campaign}{extra}");
    // No design yet: said so.
    s.server.get(key, &path("")).await.expect(409);
    crate::common::apply_premade(&s.server, key, ws, campaign, "Demo Invitation").await;
    let preview = s
        .server
        .get(key, &path(&format!("&lead_id={lead_id}")))
        .await
        .expect(200);
    assert!(
        preview
            .header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(preview.text.contains("Grace"), "{}", preview.text);
    assert!(!preview.text.contains("track.js"), "never tracked");
    // Sample values without a lead; the public page is still not live.
    let sample = s.server.get(key, &path("")).await.expect(200);
    assert!(!sample.text.contains("Grace"));
    let public = s
        .server
        .send(
            s.server
                .client
                .get(lead["service_page_url"].as_str().unwrap()),
        )
        .await;
    assert!(public.text.contains("not live yet"), "{}", public.text);
    // A lead of another workspace, or none: 404; no campaign id: 422.
    s.server
        .get(key, &path("&lead_id=999999"))
        .await
        .expect(404);
    s.server
        .get(key, &format!("/pages/preview?workspace_id={ws}"))
        .await
        .expect(422);

    // The dashboard shows the same, for the signed-in person.
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (status, _, html) = browser
        .get(&format!(
            "/dashboard/campaigns/{campaign}/preview?lead_id={lead_id}"
        ))
        .await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Grace"), "{html}");
    let (status, _, _) = browser.get("/dashboard/campaigns/999999/preview").await;
    assert_eq!(status, 404);
    let (_, _, page) = browser
        .get(&format!("/dashboard/campaigns/{campaign}"))
        .await;
    assert!(
        page.contains(&format!(
            "/dashboard/campaigns/{campaign}/preview?workspace_id={ws}"
        )),
        "{page}"
    );
    // Nothing was counted.
    let analytics = s
        .server
        .get(key, &format!("/campaigns/analytics?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(analytics["campaigns"][0]["pages_visited"], 0, "{analytics}");
}

#[tokio::test]
async fn signing_in_shows_no_links_a_signed_out_person_cannot_use() {
    let db = crate::common::TestDb::new();
    crate::common::bootstrap(&db, &[]);
    let server = crate::common::Server::serve(&db, &[]);
    let login = server
        .send(server.client.get(server.url_of("/dashboard/login")))
        .await
        .expect(200)
        .text;
    assert!(login.contains("<h1>"), "{login}");
    assert!(!login.contains("<nav"), "{login}");
    assert!(!login.contains("&#x2f;dashboard&#x2f;leads"), "{login}");
}

/// The words editor lists the workspace's variables with the exact text to type, and, without
/// a script, answers the picker with the text for a variable and its fallback: text core then
/// fills in for each lead, the fallback for a lead without the value.
#[tokio::test]
async fn the_words_editor_offers_the_workspaces_variables_with_the_text_to_type() {
    let s = setup().await;
    let key = &s.account.api_key;
    let ws = s.account.workspace_id;
    let leads = vec![
        json!({"values": {"email": "ada@example.com", "first_name": "Ada",
                          "company_name": "Analytical", "industry_name": "Engines",
                          "Job Title": "Countess"}}),
        json!({"values": {"email": "bob@example.com", "first_name": "Bob"}}),
    ];
    let (campaign, pages) =
        crate::common::live_campaign_with(&s.server, key, ws, "Words", "Demo Invitation", leads)
            .await;
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let address = format!("/dashboard/campaigns/{campaign}?workspace_id={ws}");
    let read = |page: String| {
        page.replace("&quot;", "\"")
            .replace("&#x2f;", "/")
            .replace("&#x27;", "'")
    };
    let (_, _, page) = browser.get(&address).await;
    let page = read(page);
    for key in ["first_name", "company_name", "email", "industry_name"] {
        assert!(
            page.contains(&format!("<code>{{{{ {key} }}}}</code>")),
            "{key}: {page}"
        );
    }
    assert!(page.contains("The name of the lead's company."), "{page}");
    assert!(page.contains("The words cannot name Job Title"), "{page}");

    // Without a script, the picker answers with the text to type.
    let (status, _, picked) = browser
        .get(&format!(
            "{address}&variable=company_name&fallback=your+team"
        ))
        .await;
    assert_eq!(status, 200, "{picked}");
    let typed = r#"{{ company_name | default("your team") }}"#;
    let picked = read(picked);
    assert!(
        picked.contains(&format!("Type this: <code>{typed}</code>")),
        "the text to type: {picked}"
    );
    let (_, _, refused) = browser
        .get(&format!(
            "{address}&variable=company_name&fallback=a+%7D%7D"
        ))
        .await;
    assert!(refused.contains("A fallback cannot hold"), "{refused}");

    // Typed into the words, it names each lead's value, or the fallback.
    let (_, _, page) = browser.get(&address).await;
    let csrf = crate::oauth::hidden(&page, "csrf_token");
    let intro = format!("Made for {typed}.");
    let (status, _, _) = browser
        .post(
            &format!("/dashboard/campaigns/{campaign}/copy"),
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &ws.to_string()),
                ("intro", &intro),
            ],
        )
        .await;
    assert_eq!(status, 303);
    for ((lead, _), expected) in pages
        .iter()
        .zip(["Made for Analytical.", "Made for your team."])
    {
        let (_, _, preview) = browser
            .get(&format!(
                "/dashboard/campaigns/{campaign}/preview?workspace_id={ws}&lead_id={lead}"
            ))
            .await;
        assert!(preview.contains(expected), "{expected}: {preview}");
    }
}

/// The dashboard forwards the request's id and the client's address with its calls to core,
/// as the API does: a request whose session core refuses counts against that client's address
/// (core's limit for callers without a usable credential, shared with the API), not against
/// one allowance shared by every dashboard visitor.
#[tokio::test]
async fn a_dashboard_call_counts_against_the_clients_address_as_an_api_call_does() {
    let db = crate::common::TestDb::new();
    crate::common::bootstrap(&db, &[]);
    // Limits in this process's memory (not a Redis shared with other tests).
    let mut serve = vec!["serve", "--database-url", &db.url];
    serve.extend(["--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"]);
    serve.extend([
        "--rate-limit-per-minute",
        "3",
        "--trusted-proxies",
        "127.0.0.1/32",
    ]);
    let server = crate::common::Server::spawn(&serve, true, true);
    let from = |address: &str, path: &str| {
        server
            .client
            .get(server.url_of(path))
            .header("x-forwarded-for", address)
    };
    // Three dashboard requests from one address, each with a session core does not know.
    for _ in 0..3 {
        let request =
            from("203.0.113.7", "/dashboard").header("cookie", "lps_session=lps_sess_gone");
        let reply = server.send(request).await;
        assert_ne!(reply.status, 429);
    }
    // That address has spent its allowance: its next request is over the limit; another
    // address's is not.
    let spent = server
        .send(from("203.0.113.7", "/no-such-path"))
        .await
        .expect(404);
    assert_eq!(spent.header("x-ratelimit-remaining"), Some("0"));
    assert!(spent.header("retry-after").is_some());
    let fresh = server
        .send(from("203.0.113.8", "/no-such-path"))
        .await
        .expect(404);
    assert_eq!(fresh.header("x-ratelimit-remaining"), Some("2"));
}

#[tokio::test]
async fn hot_leads_carry_a_badge_wherever_listed_and_their_page_explains_the_score() {
    let s = crate::oauth::setup_with(&["--hot-score", "4"]).await;
    let (server, key, ws) = (&s.server, &s.account.api_key, s.account.workspace_id);
    let (_, pages) = live_campaign(server, key, ws, "Warm", 2).await;
    let [(hot, hot_page), (cool, cool_page)] = <[_; 2]>::try_from(pages).unwrap();
    for (page, visitor) in [(&hot_page, 1), (&cool_page, 2)] {
        send_person_beacon(
            server,
            page,
            json!({"type": "view"}),
            DESKTOP_BROWSER,
            &format!("{visitor:032x}"),
        )
        .await
        .expect(204);
    }
    // A form (5) on top of a view (1) crosses 4.
    crate::engagement::submit(server, &hot_page, &[("email", "warm-0@example.com")])
        .await
        .expect(200);
    let started = std::time::Instant::now();
    loop {
        let lead = server
            .get(key, &format!("/leads/get?lead_id={hot}"))
            .await
            .expect(200)
            .json();
        let other = server
            .get(key, &format!("/leads/get?lead_id={cool}"))
            .await
            .expect(200)
            .json();
        if lead["engagement"]["hot_at"].is_string() && other["engagement"]["views"] == 1 {
            break;
        }
        assert!(started.elapsed().as_secs() < 20, "{lead} {other}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let badge = "<strong class=\"hot\">Hot</strong>";
    let mut browser = Browser::new(server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    for path in [
        "/dashboard".to_owned(),
        format!("/dashboard/leads?workspace_id={ws}"),
    ] {
        let (status, _, page) = browser.get(&path).await;
        assert_eq!(status, 200, "{page}");
        // One lead's badge, and the legend.
        assert_eq!(page.matches(badge).count(), 2, "{path}: {page}");
        assert!(page.contains("a score of 4.0 or more"), "{path}: {page}");
    }
    let (_, _, page) = browser.get(&format!("/dashboard/leads/{hot}")).await;
    assert!(page.contains(badge), "{page}");
    assert!(page.contains("How the score is counted"), "{page}");
    assert!(page.contains("this one first was on <time"), "{page}");
    let (_, _, page) = browser.get(&format!("/dashboard/leads/{cool}")).await;
    assert!(!page.contains(badge), "{page}");
    assert!(
        page.contains("A lead is hot at a score of 4.0 or more."),
        "{page}"
    );
}

/// The home page follows engagement live: `/dashboard/live` streams a workspace's counted
/// engagement as server-sent events as it is recorded, to its people only.
#[tokio::test]
async fn the_home_page_hears_engagement_as_it_happens() {
    let s = setup().await;
    let key = &s.account.api_key;
    let ws = s.account.workspace_id;
    let (_, pages) = live_campaign(&s.server, key, ws, "Live", 1).await;
    let (lead, page_url) = pages[0].clone();
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, home) = owner.get("/dashboard").await;
    assert!(
        home.contains(&format!("data-live=\"/dashboard/live?workspace_id={ws}\"")),
        "{home}"
    );

    let mut stream = owner
        .open(&format!("/dashboard/live?workspace_id={ws}"))
        .await;
    assert_eq!(stream.status(), 200);
    assert!(
        stream.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    send_person_beacon(
        &s.server,
        &page_url,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        &format!("{:032x}", 7),
    )
    .await
    .expect(204);
    let mut heard = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
    while !heard.contains("event: engagement") {
        let chunk = tokio::time::timeout_at(deadline, stream.chunk())
            .await
            .expect("an event within 15 s")
            .unwrap()
            .expect("the stream stays open");
        heard.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(heard.contains("\"event\":\"page_viewed\""), "{heard}");
    assert!(heard.contains(&format!("\"lead_id\":{lead}")), "{heard}");

    // Signed out, there is nothing to follow: the sign-in page instead.
    let (status, location, _) = Browser::new(&s.server)
        .get(&format!("/dashboard/live?workspace_id={ws}"))
        .await;
    assert_eq!(status, 303);
    assert!(location.unwrap().starts_with("/dashboard/login"));
    // Nor another account's workspace.
    let other = crate::common::bootstrap(&s.db, &[]);
    let (status, _, _) = owner
        .get(&format!(
            "/dashboard/live?workspace_id={}",
            other.workspace_id
        ))
        .await;
    assert_eq!(status, 404);
}

/// Charts show the days a person picks (7, 30 or 90, or two dates), and the home page draws
/// the campaigns' views side by side.
#[tokio::test]
async fn charts_show_the_days_picked_and_campaigns_side_by_side() {
    let s = setup().await;
    let key = &s.account.api_key;
    let ws = s.account.workspace_id;
    let (autumn, autumn_pages) = live_campaign(&s.server, key, ws, "Autumn", 1).await;
    let (_, spring_pages) = live_campaign(&s.server, key, ws, "Spring", 1).await;
    for (i, (_, page)) in autumn_pages.iter().chain(&spring_pages).enumerate() {
        send_person_beacon(
            &s.server,
            page,
            json!({"type": "view"}),
            DESKTOP_BROWSER,
            &format!("{:032x}", 40 + i),
        )
        .await
        .expect(204);
    }
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;

    // Beacons are stored in batches: the home page once both views are counted.
    let mut home = String::new();
    for _ in 0..100 {
        let (status, _, page) = owner.get("/dashboard").await;
        assert_eq!(status, 200);
        home = page;
        if home.contains("Autumn: 1 view") && home.contains("Spring: 1 view") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        home.contains("Views per day, by campaign, in the last 30 days"),
        "{home}"
    );
    assert_eq!(home.matches("<polyline").count(), 2, "{home}");
    assert!(home.contains("Autumn: 1 view"), "{home}");
    assert!(home.contains("Spring: 1 view"), "{home}");
    assert!(
        home.contains("<strong aria-current=\"true\">30 days</strong>"),
        "{home}"
    );

    let (_, _, week) = owner.get("/dashboard?range=7").await;
    assert!(week.contains("1 view in the last 7 days"), "{week}");
    assert!(
        week.contains("<strong aria-current=\"true\">7 days</strong>"),
        "{week}"
    );
    let bars = |page: &str| page.matches("<rect").count();
    // Two tiles of 7 days each.
    assert_eq!(bars(&week), 14, "{week}");

    let campaign = format!("/dashboard/campaigns/{autumn}");
    let (_, _, three) = owner
        .get(&format!("{campaign}?from=2026-01-01&to=2026-01-03"))
        .await;
    assert!(three.contains("from 2026-01-01 to 2026-01-03"), "{three}");
    // Four charts (views, visitors, clicks, forms) of three days each.
    assert_eq!(bars(&three), 12, "{three}");
    let (status, _, odd) = owner
        .get(&format!("{campaign}?from=2026-01-03&to=2026-01-01"))
        .await;
    assert_eq!(status, 200);
    assert!(odd.contains("the last 30 days are shown"), "{odd}");
    assert!(odd.contains("1 view in the last 30 days"), "{odd}");
}

/// A person's own time zone (Settings) is what their days are counted in and their times shown
/// in, whatever their browser says, in every browser they sign in to; empty follows the
/// browser again.
#[tokio::test]
async fn a_persons_own_time_zone_counts_their_days_wherever_they_sign_in() {
    let s = setup().await;
    let key = &s.account.api_key;
    let ws = s.account.workspace_id;
    let (campaign, _) = live_campaign(&s.server, key, ws, "Zones", 1).await;
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    // The browser is in Pago Pago (UTC-11); the person picks Kiritimati (UTC+14).
    owner.set_cookie("lps_tz", "Pacific/Pago_Pago");
    let today_in = |zone: &str| {
        jiff::Timestamp::now()
            .to_zoned(jiff::tz::TimeZone::get(zone).unwrap())
            .date()
            .to_string()
    };
    let last_day = |page: &str| {
        let at = page.rfind("<rect").unwrap();
        let title = &page[at..];
        let start = title.find("<title>").unwrap() + "<title>".len();
        title[start..start + 10].to_owned()
    };
    let campaign_page = format!("/dashboard/campaigns/{campaign}");
    let (_, _, page) = owner.get(&campaign_page).await;
    assert_eq!(last_day(&page), today_in("Pacific/Pago_Pago"));

    let (_, _, settings) = owner.get("/dashboard/settings").await;
    let csrf = hidden(&settings, "csrf_token");
    for (zone, status) in [("Mars/Olympus_Mons", 303), ("Pacific/Kiritimati", 303)] {
        let (answer, _, _) = owner
            .post(
                "/dashboard/me/time-zone",
                &[("csrf_token", csrf.as_str()), ("my_time_zone", zone)],
            )
            .await;
        assert_eq!(answer, status);
    }
    assert_eq!(owner.cookie("lps_tz_own").as_deref(), Some("1"));
    assert_eq!(
        owner.cookie("lps_tz").as_deref(),
        Some("Pacific/Kiritimati")
    );
    // Even with the browser's cookie back to Pago Pago, the days are the person's own.
    owner.set_cookie("lps_tz", "Pacific/Pago_Pago");
    let (_, _, page) = owner.get(&campaign_page).await;
    assert_eq!(last_day(&page), today_in("Pacific/Kiritimati"));
    let (_, _, settings) = owner.get("/dashboard/settings").await;
    assert!(
        settings.contains("value=\"Pacific&#x2f;Kiritimati\""),
        "{settings}"
    );

    // Another browser: signing in tells its script the person's zone.
    let mut elsewhere = Browser::new(&s.server);
    elsewhere
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    assert_eq!(
        elsewhere.cookie("lps_tz").as_deref(),
        Some("Pacific/Kiritimati")
    );
    assert_eq!(elsewhere.cookie("lps_tz_own").as_deref(), Some("1"));

    // Empty: the browser's again.
    let (answer, _, _) = owner
        .post(
            "/dashboard/me/time-zone",
            &[("csrf_token", csrf.as_str()), ("my_time_zone", "")],
        )
        .await;
    assert_eq!(answer, 303);
    assert_eq!(owner.cookie("lps_tz_own"), None);
    owner.set_cookie("lps_tz", "Pacific/Pago_Pago");
    let (_, _, page) = owner.get(&campaign_page).await;
    assert_eq!(last_day(&page), today_in("Pacific/Pago_Pago"));
}
