//! The API behind the people's app (extensions): brandings created and changed, leads engaged
//! recently, a template previewed on a campaign, form submissions a page at a time; and the dashboard pages built on them, used as a person's
//! browser would: a campaign's page, its gallery, its editor and runs, its submissions as
//! CSV, brandings, and teammates with the member role.

use serde_json::{Value, json};

use crate::common::{
    DESKTOP_BROWSER, Server, TestDb, bootstrap, create_campaign, send_person_beacon,
};
use crate::engagement::{live_form_page, submit};
use crate::oauth::{Browser, PASSWORD, hidden, setup};

#[tokio::test]
async fn brandings_are_created_and_changed_with_the_admin_commands_rules() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let created = server
        .post(
            key,
            "/brandings/create",
            json!({"workspace_id": ws, "name": "Northwind", "company_name": "Northwind Ltd",
                   "primary_color": "#ffd400", "website": "https://northwind.example"}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(created["name"], "Northwind");
    assert_eq!(created["is_default"], false);
    assert_eq!(created["primary_color"], "#ffd400");
    assert_eq!(created["logo_url"], Value::Null);
    let id = created["branding_id"].as_i64().unwrap();

    // Each field given replaces the value; an empty one removes it; the rest stay.
    let updated = server
        .post(
            key,
            "/brandings/update",
            json!({"workspace_id": ws, "branding_id": id, "website": "",
                   "sender_name": "Ada Lovelace", "is_default": true}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(updated["website"], Value::Null);
    assert_eq!(updated["sender_name"], "Ada Lovelace");
    assert_eq!(updated["company_name"], "Northwind Ltd");
    assert_eq!(updated["is_default"], true);
    let listed = server
        .get(key, &format!("/brandings/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(listed[0]["branding_id"], id, "the default first: {listed}");

    // Every broken rule is listed; nothing is stored.
    let refused = server
        .post(
            key,
            "/brandings/update",
            json!({"workspace_id": ws, "branding_id": id, "primary_color": "teal",
                   "logo_url": "javascript:alert(1)"}),
        )
        .await
        .expect(422)
        .json();
    assert!(refused["errors"]["primary_color"].is_array(), "{refused}");
    assert!(refused["errors"]["logo_url"].is_array(), "{refused}");
    server
        .post(
            key,
            "/brandings/create",
            json!({"workspace_id": ws, "name": " "}),
        )
        .await
        .expect(422);
    server
        .post(
            key,
            "/brandings/update",
            json!({"workspace_id": ws, "branding_id": 999999, "name": "x"}),
        )
        .await
        .expect(404);
    server
        .post(
            key,
            "/brandings/create",
            json!({"workspace_id": 999999, "name": "x"}),
        )
        .await
        .expect(403);
    let after = server
        .get(key, &format!("/brandings/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(after[0]["primary_color"], "#ffd400", "{after}");
}

#[tokio::test]
async fn leads_engaged_recently_are_listed_with_what_they_did_never_bots() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let path = format!("/leads/engaged?workspace_id={ws}");
    assert_eq!(server.get(key, &path).await.expect(200).json(), json!([]));
    let (campaign, page) = live_form_page(&server, key, ws, "Hot").await;
    // A bot's view is never engagement.
    send_person_beacon(
        &server,
        &page,
        json!({"type": "view"}),
        "Twitterbot/1.0",
        "",
    )
    .await
    .expect(204);
    let visitor = format!("{:032x}", 7);
    for body in [
        json!({"type": "view"}),
        json!({"type": "scroll"}),
        json!({"type": "click", "target": "Book"}),
    ] {
        send_person_beacon(&server, &page, body, DESKTOP_BROWSER, &visitor)
            .await
            .expect(204);
    }
    submit(
        &server,
        &page,
        &[("email", "ada@hot.example"), ("note", "hi")],
    )
    .await
    .expect(200);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let listed = loop {
        let listed = server.get(key, &path).await.expect(200).json();
        if listed[0]["clicks"] == 1 || std::time::Instant::now() > deadline {
            break listed;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let lead = &listed[0];
    assert_eq!(lead["name"], "Ada");
    assert_eq!(lead["campaign_id"], campaign);
    assert_eq!(lead["campaign_name"], "Hot");
    assert_eq!(lead["views"], 1);
    assert_eq!(lead["scrolled_to_end"], true);
    assert_eq!(lead["form_submissions"], 1);
    assert!(
        crate::common::is_iso8601_micros(&lead["last_activity_at"]),
        "{lead}"
    );
    // Documented bounds.
    server
        .get(key, &format!("{path}&days=91"))
        .await
        .expect(422);
    server
        .get(key, &format!("{path}&limit=0"))
        .await
        .expect(422);
    server.get(key, "/leads/engaged").await.expect(422);
    server
        .get(key, "/leads/engaged?workspace_id=999999")
        .await
        .expect(403);
}

#[tokio::test]
async fn a_template_is_previewed_on_a_campaign_and_submissions_come_a_page_at_a_time() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, _) = create_campaign(&server, key, ws, "Gallery").await;
    let templates = server
        .get(key, &format!("/templates/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    let template = templates[0]["template_id"].as_i64().unwrap();
    let preview = server
        .get(
            key,
            &format!(
                "/pages/preview?workspace_id={ws}&campaign_id={campaign}&template_id={template}"
            ),
        )
        .await
        .expect(200);
    assert!(preview.text.contains("<html"), "{}", preview.text);
    // The draft is untouched: still no design.
    server
        .get(
            key,
            &format!("/pages/preview?workspace_id={ws}&campaign_id={campaign}"),
        )
        .await
        .expect(409);
    server
        .get(
            key,
            &format!("/pages/preview?workspace_id={ws}&campaign_id={campaign}&template_id=999999"),
        )
        .await
        .expect(404);

    let (forms, page) = live_form_page(&server, key, ws, "Forms").await;
    for n in 0..3 {
        submit(&server, &page, &[("email", &format!("f{n}@x.example"))])
            .await
            .expect(200);
    }
    let first = server
        .get(
            key,
            &format!("/automation/get-form-submissions?campaign_id={forms}&limit=2"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(first.as_array().unwrap().len(), 2);
    let last = first[1]["id"].as_i64().unwrap();
    let rest = server
        .get(
            key,
            &format!(
                "/automation/get-form-submissions?campaign_id={forms}&limit=2&before_id={last}"
            ),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(rest.as_array().unwrap().len(), 1, "{rest}");
    assert_eq!(rest[0]["email"], "f0@x.example");

    // The ledger is the dashboard's: the documented credits body keeps its five fields.
    let credits = server
        .get(key, &format!("/account/credits?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(credits.as_object().unwrap().len(), 5, "{credits}");
}

/// The link an invitation shows once, from the settings page after the redirect.
pub(crate) fn setup_link(page: &str) -> String {
    let page = page.replace("&#x2f;", "/");
    let start = page
        .find("/dashboard/setup?token=")
        .expect("the link, shown once");
    page[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || "/?=-_".contains(*c))
        .collect()
}

#[tokio::test]
async fn an_owner_invites_a_member_who_works_with_campaigns_but_never_keys_or_teammates() {
    let s = setup().await;
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, settings) = owner.get("/dashboard/settings").await;
    assert!(settings.contains("Teammates") && settings.contains("API keys"));
    let csrf = hidden(&settings, "csrf_token");
    let (status, location, _) = owner
        .post(
            "/dashboard/teammates/invite",
            &[
                ("csrf_token", csrf.as_str()),
                ("email", "grace@example.com"),
                ("name", "Grace"),
                ("role", "member"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, invited) = owner.get(location.as_deref().unwrap()).await;
    let link = setup_link(&invited);
    assert!(
        invited.contains("grace@example.com was invited"),
        "{invited}"
    );
    let (_, _, again) = owner.get("/dashboard/settings").await;
    assert!(!again.contains(&link), "the link is shown once");
    assert!(again.contains("(invited)"), "{again}");
    // The same email twice: refused, said.
    owner
        .post(
            "/dashboard/teammates/invite",
            &[
                ("csrf_token", csrf.as_str()),
                ("email", "GRACE@example.com"),
            ],
        )
        .await;
    let (_, _, twice) = owner.get("/dashboard/settings").await;
    assert!(twice.contains("already a teammate"), "{twice}");

    // The member chooses a password through the link and signs in.
    let mut member = Browser::new(&s.server);
    let (status, _, form) = member.get(&link).await;
    assert_eq!(status, 200, "{form}");
    let token = hidden(&form, "token");
    let setup_csrf = hidden(&form, "csrf_token");
    let (status, _, _) = member
        .post(
            "/dashboard/setup",
            &[
                ("token", token.as_str()),
                ("csrf_token", setup_csrf.as_str()),
                ("password", "member password 1"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (status, _, home) = member.get("/dashboard").await;
    assert_eq!(status, 200);
    assert!(home.contains("Grace"), "{home}");
    // Campaigns and leads, yes; keys, apps, credits and teammates, no.
    let (_, _, mine) = member.get("/dashboard/settings").await;
    assert!(
        !mine.contains("<h2>API keys</h2>") && !mine.contains("Invite"),
        "{mine}"
    );
    assert!(mine.contains("managed by an owner"), "{mine}");
    let member_csrf = hidden(&mine, "csrf_token");
    let ws = s.account.workspace_id.to_string();
    member
        .post(
            "/dashboard/keys/create",
            &[
                ("csrf_token", member_csrf.as_str()),
                ("workspace_id", ws.as_str()),
                ("name", "Sneaky"),
            ],
        )
        .await;
    let (_, _, refused) = member
        .get(&format!("/dashboard/settings?workspace_id={ws}"))
        .await;
    assert!(refused.contains("Only an owner"), "{refused}");
    let keys = s
        .server
        .get(
            &s.account.api_key,
            &format!("/api-tokens/get-api-tokens?workspace_id={ws}"),
        )
        .await;
    assert!(!keys.text.contains("Sneaky"), "{}", keys.text);
    // Not even a key's confirmation page, nor the list through the API with the session.
    let (status, _, _) = member
        .get(&format!(
            "/dashboard/keys/delete?token_id={}",
            "00000000-0000-0000-0000-000000000000"
        ))
        .await;
    assert_eq!(status, 404);
    let (status, _, leads) = member.get("/dashboard/leads").await;
    assert_eq!(status, 200, "{leads}");
    member
        .post(
            "/dashboard/campaigns/create",
            &[
                ("csrf_token", member_csrf.as_str()),
                ("workspace_id", ws.as_str()),
                ("name", "By a member"),
            ],
        )
        .await;
    let (_, _, home) = member.get("/dashboard").await;
    assert!(home.contains("By a member"), "{home}");
    // Leads too: one added, downloaded, and erased once confirmed.
    let (status, location, _) = member
        .post(
            "/dashboard/leads/add",
            &[
                ("csrf_token", member_csrf.as_str()),
                ("workspace_id", ws.as_str()),
                ("email", "lead-of-grace@example.com"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let lead_id = location.unwrap().rsplit('/').next().unwrap().to_owned();
    let (status, _, csv) = member.get("/dashboard/leads.csv").await;
    assert_eq!(status, 200);
    assert!(csv.contains("lead-of-grace@example.com"), "{csv}");
    let selected = format!("lead_{lead_id}");
    let (status, _, asked) = member
        .post(
            "/dashboard/leads/bulk",
            &[
                ("csrf_token", member_csrf.as_str()),
                ("workspace_id", ws.as_str()),
                (selected.as_str(), "1"),
                ("action", "erase"),
            ],
        )
        .await;
    assert_eq!(status, 200);
    assert!(asked.contains("Erase 1 lead"), "{asked}");
    let (status, _, _) = member
        .post(
            "/dashboard/leads/bulk",
            &[
                ("csrf_token", member_csrf.as_str()),
                ("workspace_id", ws.as_str()),
                ("lead_ids", lead_id.as_str()),
                ("action", "erase"),
                ("confirmed", "yes"),
                ("count", "1"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    s.server
        .get(&s.account.api_key, &format!("/leads/get?lead_id={lead_id}"))
        .await
        .expect(404);

    // Removed: their session ends at once.
    let (_, _, settings) = owner.get("/dashboard/settings").await;
    let marker = "teammates/remove?user_id=";
    let start = settings.find(marker).unwrap() + marker.len();
    let user_id: String = settings[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let (status, _, confirm) = owner
        .get(&format!("/dashboard/teammates/remove?user_id={user_id}"))
        .await;
    assert_eq!(status, 200);
    assert!(confirm.contains("grace@example.com"), "{confirm}");
    let (status, _, _) = owner
        .post(
            "/dashboard/teammates/remove",
            &[("csrf_token", csrf.as_str()), ("user_id", user_id.as_str())],
        )
        .await;
    assert_eq!(status, 303);
    let (status, location, _) = member.get("/dashboard").await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some("/dashboard/login"))
    );
}

#[tokio::test]
async fn a_campaign_is_shaped_from_its_page_gallery_editor_and_runs_and_its_answers_exported() {
    let model = crate::common::loopback_model().await;
    let s = crate::oauth::setup_with(&["--llm-base-url", &model]).await;
    let key = &s.account.api_key;
    let ws = s.account.workspace_id;
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (campaign, _) = create_campaign(&s.server, key, ws, "Shaped").await;
    let page_path = format!("/dashboard/campaigns/{campaign}");
    let (status, _, page) = browser.get(&page_path).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("No design yet"), "{page}");
    let csrf = hidden(&page, "csrf_token");
    let ws_text = ws.to_string();

    // The gallery shows every template rendered on this campaign, in frames of its own.
    let (status, _, gallery) = browser
        .get(&format!("{page_path}/templates?workspace_id={ws}"))
        .await;
    assert_eq!(status, 200, "{gallery}");
    let frames = gallery.matches("<iframe").count();
    assert!(frames >= 6, "{gallery}");
    let template = hidden(&gallery, "template_id");
    let marker = "template_id=";
    let framed = &gallery[gallery.find("<iframe").unwrap()..];
    let src_start = framed.find("src=\"").unwrap() + 5;
    let src = framed[src_start..src_start + framed[src_start..].find('"').unwrap()]
        .replace("&amp;", "&")
        .replace("&#x2f;", "/");
    assert!(src.contains(marker), "{src}");
    let (status, _, rendered) = browser.get(&src).await;
    assert_eq!(status, 200, "{rendered}");
    assert!(rendered.contains("<html"), "{rendered}");
    let (status, _, _) = browser
        .post(
            &format!("{page_path}/templates"),
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws_text.as_str()),
                ("template_id", template.as_str()),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, page) = browser.get(&page_path).await;
    assert!(page.contains("Draft, not live"), "{page}");
    assert!(page.contains("preview it, then publish"), "{page}");

    // The editor: a design that does not compile is shown again with its line named.
    let (status, _, editor) = browser
        .get(&format!("{page_path}/design?workspace_id={ws}"))
        .await;
    assert_eq!(status, 200);
    assert!(editor.contains("<textarea"), "{editor}");
    let broken = "<h1>Hi</h1>\n<p>{% if first_name %}</p>";
    let (status, _, refused) = browser
        .post(
            &format!("{page_path}/design"),
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws_text.as_str()),
                ("html", broken),
                ("css", ""),
            ],
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert!(refused.contains("line"), "{refused}");
    assert!(
        refused.contains("{% if first_name %}"),
        "nothing typed is lost: {refused}"
    );
    let (status, location, _) = browser
        .post(
            &format!("{page_path}/design"),
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws_text.as_str()),
                ("html", "<h1>Hello {{ first_name }}</h1><form id=\"meeting\"><input name=\"email\"><input name=\"preferred_time\"><button>Send</button></form>"),
                ("css", "h1{color:#0f766e}"),
            ],
        )
        .await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some(page_path.as_str()))
    );
    let (_, _, preview) = browser.get(&format!("{page_path}/preview")).await;
    assert!(preview.contains("Hello"), "{preview}");

    // An AI design run, watched until it ends.
    let (status, location, _) = browser
        .post(
            &format!("{page_path}/generate"),
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws_text.as_str()),
                ("prompt", "A short note inviting them to a demo"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let run = location.unwrap();
    assert!(run.contains("/runs/"), "{run}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, _, shown) = browser.get(&run).await;
        assert_eq!(status, 200, "{shown}");
        if !shown.contains("data-refresh-seconds") {
            assert!(
                shown.contains("Done") || shown.contains("Failed"),
                "{shown}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{shown}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // Answers with a field of their own, on the page and in the CSV.
    let (forms, live) = live_form_page(&s.server, key, ws, "Answers").await;
    submit(
        &s.server,
        &live,
        &[
            ("email", "ada@answers.example"),
            ("preferred_time", "=Tuesday 10am"),
        ],
    )
    .await
    .expect(200);
    let (_, _, page) = browser.get(&format!("/dashboard/campaigns/{forms}")).await;
    assert!(page.contains("preferred_time"), "{page}");
    assert!(page.contains("=Tuesday 10am"), "{page}");
    let (status, _, csv) = browser
        .get(&format!("/dashboard/campaigns/{forms}/submissions.csv"))
        .await;
    assert_eq!(status, 200);
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().ends_with(",preferred_time"), "{csv}");
    assert!(lines.next().unwrap().ends_with(",'=Tuesday 10am"), "{csv}");
    // Someone else's campaign or none: not found.
    let (status, _, _) = browser.get("/dashboard/campaigns/999999").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_branding_is_created_and_edited_in_the_settings_and_a_bad_value_is_explained() {
    let s = setup().await;
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, settings) = browser.get("/dashboard/settings").await;
    let csrf = hidden(&settings, "csrf_token");
    let ws = s.account.workspace_id.to_string();
    let (status, location, _) = browser
        .post(
            "/dashboard/brandings/create",
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws.as_str()),
                ("name", "Contoso"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let form_path = location.unwrap();
    let (status, _, form) = browser.get(&form_path).await;
    assert_eq!(status, 200, "{form}");
    assert!(form.contains("was created"), "{form}");
    let branding = form_path
        .trim_start_matches("/dashboard/brandings/")
        .split('?')
        .next()
        .unwrap()
        .to_owned();
    let action = format!("/dashboard/brandings/{branding}");
    let (status, _, refused) = browser
        .post(
            &action,
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws.as_str()),
                ("name", "Contoso"),
                ("company_name", "Contoso <Ltd>"),
                ("primary_color", "teal"),
            ],
        )
        .await;
    assert_eq!(status, 422);
    assert!(refused.contains("hex colour"), "{refused}");
    assert!(
        refused.contains("Contoso &lt;Ltd&gt;"),
        "kept, as text: {refused}"
    );
    let (status, location, _) = browser
        .post(
            &action,
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws.as_str()),
                ("name", "Contoso"),
                ("company_name", "Contoso Ltd"),
                ("primary_color", "#14213d"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, saved) = browser.get(location.as_deref().unwrap()).await;
    assert!(
        saved.contains("Contoso Ltd") && saved.contains("#14213d"),
        "{saved}"
    );
    let listed = s
        .server
        .get(
            &s.account.api_key,
            &format!("/brandings/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    assert!(listed.to_string().contains("Contoso Ltd"), "{listed}");
    // The owner sees the credits and their ledger.
    assert!(
        saved.contains("Credits") && saved.contains("left in the account"),
        "{saved}"
    );
}

/// Saving a branding whose logo cannot be fetched says so, and why, on the page (not only in
/// the log), beside the logo's field; the settings' success is not claimed.
#[tokio::test]
async fn a_branding_whose_logo_cannot_be_fetched_says_why_when_saved() {
    let s = setup().await;
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, settings) = browser.get("/dashboard/settings").await;
    let csrf = hidden(&settings, "csrf_token");
    let ws = s.account.workspace_id.to_string();
    let branding = s
        .server
        .get(
            &s.account.api_key,
            &format!("/brandings/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json()[0]["branding_id"]
        .as_i64()
        .unwrap();
    // A private address: lps never asks it without --allow-private-network.
    let (status, location, _) = browser
        .post(
            &format!("/dashboard/brandings/{branding}"),
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws.as_str()),
                ("name", "Default"),
                ("logo_url", "http://127.0.0.1:9/logo.png"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let location = location.unwrap();
    assert!(
        location.starts_with(&format!("/dashboard/brandings/{branding}")),
        "back to the form: {location}"
    );
    let (_, _, form) = browser.get(&location).await;
    assert!(form.contains("role=\"alert\""), "{form}");
    assert!(
        form.contains("The branding was saved") && form.contains("the logo could not be fetched ("),
        "{form}"
    );
    assert!(form.contains("not a public address"), "the reason: {form}");
    assert!(
        form.contains("This image could not be fetched:"),
        "said beside the field: {form}"
    );
    let listed = s
        .server
        .get(
            &s.account.api_key,
            &format!("/brandings/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    assert!(
        listed[0]["logo_error"]
            .as_str()
            .unwrap()
            .contains("not a public address"),
        "{listed}"
    );
    assert_eq!(listed[0]["sender_photo_error"], serde_json::Value::Null);
}
