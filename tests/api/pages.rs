//! Designs, templates and visitors' pages: the lifecycle table of part 3 row by row, template
//! list and apply, publishing, and what a visitor sees.

use crate::common::*;
use serde_json::{Value, json};

struct Setup {
    server: Server,
    key: String,
    ws: i64,
    campaign: i64,
}

async fn setup(db: &TestDb) -> Setup {
    let account = bootstrap(db, &[]);
    let server = Server::serve(db, &[]);
    let (campaign, _) =
        create_campaign(&server, &account.api_key, account.workspace_id, "Spring").await;
    Setup {
        server,
        key: account.api_key,
        ws: account.workspace_id,
        campaign,
    }
}

impl Setup {
    async fn design(&self) -> Value {
        self.server
            .get(
                &self.key,
                &format!(
                    "/pages/design?workspace_id={}&campaign_id={}",
                    self.ws, self.campaign
                ),
            )
            .await
            .expect(200)
            .json()
    }

    async fn post(&self, path: &str, extra: Value) -> crate::common::Reply {
        let mut body = json!({"workspace_id": self.ws, "campaign_id": self.campaign});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        self.server.post(&self.key, path, body).await
    }

    async fn premade(&self, name: &str) -> i64 {
        let listed = self
            .server
            .get(
                &self.key,
                &format!("/templates/get-list?workspace_id={}", self.ws),
            )
            .await
            .expect(200)
            .json();
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["template_id"]
            .as_i64()
            .unwrap()
    }

    /// A lead with a page in the campaign; returns its page address.
    async fn lead(&self, values: Value) -> String {
        let job = upsert(
            &self.server,
            &self.key,
            json!({"campaign_id": self.campaign, "leads": [{"values": values}]}),
        )
        .await;
        wait_for_job(&self.server, &self.key, &job).await;
        self.server
            .get(&self.key, &format!("/leads/get-leads?job_id={job}"))
            .await
            .expect(200)
            .json()[0]["service_page_url"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn visit(&self, url: &str) -> crate::common::Reply {
        self.server.send(self.server.client.get(url)).await
    }
}

#[tokio::test]
async fn a_new_campaign_has_the_documented_no_design_body() {
    let db = TestDb::new();
    let s = setup(&db).await;
    let design = s.design().await;
    let mut keys: Vec<&str> = design
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "campaign_id",
            "css",
            "has_design",
            "html",
            "is_live",
            "note"
        ]
    );
    assert_eq!(design["campaign_id"], s.campaign);
    assert_eq!(
        (design["has_design"].as_bool(), design["is_live"].as_bool()),
        (Some(false), Some(false))
    );
    assert_eq!(
        (design["html"].clone(), design["css"].clone()),
        (Value::Null, Value::Null)
    );
    assert!(design["note"].is_string());
}

#[tokio::test]
async fn the_design_lifecycle_row_by_row() {
    let db = TestDb::new();
    let s = setup(&db).await;
    let spotlight = s.premade("Personal Spotlight").await;
    let note = s.premade("Personal Note").await;

    // Publish without a design: a message saying to apply a template or generate one first.
    let reply = s.post("/pages/publish", json!({})).await.expect(409);
    let message = reply.json()["message"].as_str().unwrap().to_lowercase();
    assert!(
        message.contains("template") && message.contains("generate"),
        "{message}"
    );

    // Apply on no design: the draft is the template; not live.
    let applied = s
        .post("/templates/apply", json!({"template_id": spotlight}))
        .await
        .expect(200)
        .json();
    assert_eq!(applied["campaign_id"], s.campaign);
    assert_eq!(applied["template_id"], spotlight);
    assert_eq!(applied["is_live"], false);
    assert!(applied["message"].as_str().unwrap().contains("ublish"));
    let design = s.design().await;
    assert_eq!(design["has_design"], true);
    assert_eq!(design["is_live"], false);
    assert_eq!(design["has_unpublished_changes"], true);
    assert!(design["html"].as_str().unwrap().contains("first_name"));
    assert!(design["css"].is_string());
    assert!(is_iso8601_micros(&design["updated_at"]));

    // Publish: live, nothing unpublished.
    let published = s.post("/pages/publish", json!({})).await.expect(200).json();
    assert_eq!(published["campaign_id"], s.campaign);
    assert_eq!(published["is_live"], true);
    assert!(is_iso8601_micros(&published["published_at"]));
    assert!(published["message"].is_string());
    let design = s.design().await;
    assert_eq!(
        (
            design["is_live"].as_bool(),
            design["has_unpublished_changes"].as_bool()
        ),
        (Some(true), Some(false))
    );
    let url = s
        .lead(json!({"email": "ada@example.com", "first_name": "Ada"}))
        .await;
    assert!(
        s.visit(&url)
            .await
            .expect(200)
            .text
            .contains("Hi Ada, this page is yours.")
    );

    // Apply on a live campaign: the draft changes, the live snapshot does not.
    let applied = s
        .post("/templates/apply", json!({"template_id": note}))
        .await
        .expect(200)
        .json();
    assert_eq!(applied["is_live"], true);
    assert!(
        applied["message"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("publish")
    );
    let design = s.design().await;
    assert_eq!(
        (
            design["is_live"].as_bool(),
            design["has_unpublished_changes"].as_bool()
        ),
        (Some(true), Some(true))
    );
    assert!(design["html"].as_str().unwrap().contains("class=\"note\""));
    assert!(
        s.visit(&url).await.text.contains("hero-card"),
        "still the old design"
    );

    // Publish again: takes effect at once for earlier pages too.
    s.post("/pages/publish", json!({})).await.expect(200);
    assert!(s.visit(&url).await.text.contains("<article class=\"note\""));
    assert_eq!(s.design().await["has_unpublished_changes"], false);

    // Unpublish: draft kept, pages show 'not live yet'.
    let body = s
        .post("/pages/unpublish", json!({}))
        .await
        .expect(200)
        .json();
    assert_eq!(
        body,
        json!({"campaign_id": s.campaign, "is_live": false, "message": body["message"]})
    );
    let design = s.design().await;
    assert_eq!(
        (design["is_live"].as_bool(), design["has_design"].as_bool()),
        (Some(false), Some(true))
    );
    let page = s.visit(&url).await;
    assert!(page.text.to_lowercase().contains("not live yet"));
    assert!(!page.text.contains("Ada"));
}

#[tokio::test]
async fn templates_list_both_sources_and_search_by_name() {
    let db = TestDb::new();
    let s = setup(&db).await;
    let listed = s
        .server
        .get(
            &s.key,
            &format!("/templates/get-list?workspace_id={}", s.ws),
        )
        .await
        .expect(200)
        .json();
    let listed = listed.as_array().unwrap();
    assert!(listed.len() >= 6);
    for template in listed {
        let mut keys: Vec<&str> = template
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["description", "name", "source", "template_id"]);
        assert_eq!(template["source"], "premade");
    }
    // Save the campaign's design as a workspace template.
    let spotlight = s.premade("Personal Spotlight").await;
    s.post("/templates/apply", json!({"template_id": spotlight}))
        .await
        .expect(200);
    let created = s
        .post(
            "/templates/create",
            json!({"name": "Our Spring Look", "description": "House style"}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(created["source"], "workspace");
    assert_eq!(created["name"], "Our Spring Look");
    let found = s
        .server
        .get(
            &s.key,
            &format!(
                "/templates/get-list?workspace_id={}&search=spring%20LOOK",
                s.ws
            ),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(found, json!([created]));
    let found = s
        .server
        .get(
            &s.key,
            &format!(
                "/templates/get-list?workspace_id={}&search=invitation",
                s.ws
            ),
        )
        .await
        .expect(200)
        .json();
    let names: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Demo Invitation", "Event Invitation"]);
}

#[tokio::test]
async fn unknown_and_foreign_templates_are_not_found() {
    let db = TestDb::new();
    let s = setup(&db).await;
    let stranger = bootstrap(&db, &[]);
    let (theirs, _) = create_campaign(
        &s.server,
        &stranger.api_key,
        stranger.workspace_id,
        "Theirs",
    )
    .await;
    let premade = s.premade("Case Study").await;
    s.server.post(&stranger.api_key, "/templates/apply",
        json!({"workspace_id": stranger.workspace_id, "campaign_id": theirs, "template_id": premade})).await.expect(200);
    let foreign = s.server.post(&stranger.api_key, "/templates/create",
        json!({"workspace_id": stranger.workspace_id, "campaign_id": theirs, "name": "Private"})).await.expect(200).json()["template_id"].clone();
    for template in [json!(999_999), foreign] {
        let reply = s
            .post("/templates/apply", json!({"template_id": template}))
            .await
            .expect(404);
        assert_eq!(reply.json(), json!({"message": "Template not found"}));
    }
    let body = s
        .post("/templates/apply", json!({}))
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["template_id"].is_array());
}

#[tokio::test]
async fn a_page_shows_the_lead_values_escaped_and_follows_updates() {
    let db = TestDb::new();
    let s = setup(&db).await;
    let spotlight = s.premade("Personal Spotlight").await;
    s.post("/templates/apply", json!({"template_id": spotlight}))
        .await
        .expect(200);
    s.post("/pages/publish", json!({})).await.expect(200);
    let url = s.lead(json!({"email": "eve@example.com", "first_name": "<script>alert(1)</script>", "company_name": "Acme & Co"})).await;
    let page = s.visit(&url).await.expect(200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(!page.text.contains("<script>alert(1)</script>"));
    assert!(page.text.contains("&lt;script&gt;alert(1)"));
    assert!(page.text.contains("Acme &amp; Co"));
    assert!(page.text.contains("<style>"), "CSS inlined in the head");
    assert!(
        page.header("x-ratelimit-limit").is_none(),
        "no API rate-limit headers"
    );
    let etag = page.header("etag").unwrap().to_owned();

    // Conditional requests and HEAD.
    let cached = s
        .server
        .send(s.server.client.get(&url).header("if-none-match", &etag))
        .await;
    assert_eq!(cached.status, 304);
    let head = s.server.send(s.server.client.head(&url)).await.expect(200);
    assert!(head.text.is_empty());
    assert_eq!(head.header("etag"), Some(etag.as_str()));

    // The lead changes: the page and its ETag follow.
    let job = upsert(&s.server, &s.key, json!({"campaign_id": s.campaign, "leads": [{"values": {"email": "eve@example.com", "first_name": "Eve"}}]})).await;
    wait_for_job(&s.server, &s.key, &job).await;
    let page = s.visit(&url).await.expect(200);
    assert!(page.text.contains("Hi Eve, this page is yours."));
    assert_ne!(page.header("etag"), Some(etag.as_str()));
}

#[tokio::test]
async fn a_design_that_does_not_compile_is_refused_with_its_line() {
    let db = TestDb::new();
    let s = setup(&db).await;
    let spotlight = s.premade("Personal Spotlight").await;
    s.post("/templates/apply", json!({"template_id": spotlight}))
        .await
        .expect(200);
    // Save it as a workspace template, then break that template's design directly in storage:
    // templates with syntax errors can only come from outside the API.
    let created = s
        .post("/templates/create", json!({"name": "Broken"}))
        .await
        .expect(200)
        .json();
    let id = created["template_id"].as_i64().unwrap();
    let store = lps::admin::Db::connect(&db.url).await.unwrap();
    sqlx::query("UPDATE templates SET html = $1 WHERE id = $2")
        .bind("<p>ok</p>\n<p>{{ first_name </p>")
        .bind(id)
        .execute(store.pool())
        .await
        .unwrap();
    let body = s
        .post("/templates/apply", json!({"template_id": id}))
        .await
        .expect(422)
        .json();
    let message = body["errors"]["html"][0].as_str().unwrap();
    assert!(message.contains("line 2"), "{message}");
    // The draft was not replaced.
    assert!(
        s.design().await["html"]
            .as_str()
            .unwrap()
            .contains("hero-card")
    );
}

#[tokio::test]
async fn not_live_and_unknown_addresses_show_their_pages() {
    let db = TestDb::new();
    let s = setup(&db).await;
    let url = s.lead(json!({"email": "x@example.com"})).await;
    let page = s.visit(&url).await.expect(200);
    assert!(page.text.to_lowercase().contains("not live yet"));
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    for bad in [
        format!("{url}x"),
        format!(
            "{}/p/nope/{}",
            s.server.http,
            url.rsplit('/').next().unwrap()
        ),
    ] {
        let page = s.visit(&bad).await.expect(404);
        assert!(page.text.to_lowercase().contains("not found"));
        assert!(
            page.header("content-type")
                .unwrap()
                .starts_with("text/html")
        );
    }
}

#[tokio::test]
async fn every_premade_template_renders_for_a_full_lead_and_an_email_only_lead() {
    let db = TestDb::new();
    let s = setup(&db).await;
    let full = s.lead(json!({"email": "ada@example.com", "first_name": "Ada", "company_name": "Analytical Engines", "company_domain": "engines.example"})).await;
    let bare = s.lead(json!({"email": "someone@example.com"})).await;
    let listed = s
        .server
        .get(
            &s.key,
            &format!("/templates/get-list?workspace_id={}", s.ws),
        )
        .await
        .expect(200)
        .json();
    for template in listed.as_array().unwrap() {
        s.post(
            "/templates/apply",
            json!({"template_id": template["template_id"]}),
        )
        .await
        .expect(200);
        s.post("/pages/publish", json!({})).await.expect(200);
        let page = s.visit(&full).await.expect(200);
        assert!(
            page.text.contains("Ada") && page.text.contains("Analytical Engines"),
            "{}",
            template["name"]
        );
        let page = s.visit(&bare).await.expect(200);
        assert!(
            !page.text.contains("{{") && !page.text.contains("None"),
            "{}",
            template["name"]
        );
        assert!(page.text.contains("data-lps-cta"), "{}", template["name"]);
    }
}

#[tokio::test]
async fn design_paths_check_workspace_and_campaign() {
    let db = TestDb::new();
    let s = setup(&db).await;
    let stranger = bootstrap(&db, &[]);
    let (theirs, _) =
        create_campaign(&s.server, &stranger.api_key, stranger.workspace_id, "T").await;
    let reply = s
        .server
        .get(
            &s.key,
            &format!("/pages/design?workspace_id={}&campaign_id={theirs}", s.ws),
        )
        .await
        .expect(404);
    assert_eq!(reply.json()["message"], "Campaign not found");
    s.server
        .post(
            &s.key,
            "/pages/publish",
            json!({"workspace_id": stranger.workspace_id, "campaign_id": theirs}),
        )
        .await
        .expect(403);
    let body = s
        .server
        .get(&s.key, "/pages/design")
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["workspace_id"].is_array() && body["errors"]["campaign_id"].is_array());
}

#[tokio::test]
async fn a_publish_switches_pages_served_by_another_process_on_postgres() {
    let db = TestDb::new();
    if !db.is_postgres() {
        eprintln!("skipped: needs LPS_TEST_DATABASE_URL (PostgreSQL)");
        return;
    }
    let s = setup(&db).await;
    let other = Server::serve(&db, &["--job-workers", "0"]);
    let url = s
        .lead(json!({"email": "ada@example.com", "first_name": "Ada"}))
        .await;
    let path = url.split_once("/p/").unwrap().1.to_owned();
    let via_other = format!("{}/p/{path}", other.http);
    for (template, expected) in [
        ("Personal Spotlight", "Hi Ada, this page is yours."),
        ("Personal Note", "<article class=\"note\""),
    ] {
        let id = s.premade(template).await;
        s.post("/templates/apply", json!({"template_id": id}))
            .await
            .expect(200);
        s.post("/pages/publish", json!({})).await.expect(200);
        // The other process compiled the previous version; it serves the new one as soon as
        // PostgreSQL's notification reaches it (the publishing process waits only for its own).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let page = loop {
            let page = other.send(other.client.get(&via_other)).await.expect(200);
            if page.text.contains(expected) || std::time::Instant::now() > deadline {
                break page;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        };
        assert!(page.text.contains(expected), "{template}");
    }
}

#[tokio::test]
async fn your_own_design_is_cleaned_compiled_and_served_once_published() {
    let db = TestDb::new();
    let s = setup(&db).await;
    let html = "<main>\n\t<h1 onclick=\"steal()\">Hello {{ first_name | default(\"there\") }}</h1>\n\
                <script>alert(1)</script><iframe src=\"https://x.example\"></iframe>\n\
                {% if company_name %}<p>For {{ company_name }}</p>{% endif %}\n\
                <a href=\"javascript:alert(1)\">bad</a> <a href=\"{{ cta_url }}\" data-lps-cta=\"go\">Go</a>\n\
                </main>";
    let css = "@import url(https://evil.example/x.css);\nh1 { color: #0f766e; }";
    let design = s
        .post("/pages/update-design", json!({"html": html, "css": css}))
        .await
        .expect(200)
        .json();
    assert_eq!(design["has_design"], true);
    assert_eq!(design["is_live"], false);
    assert_eq!(design["has_unpublished_changes"], true);
    let kept = design["html"].as_str().unwrap();
    for gone in [
        "onclick",
        "steal",
        "<script",
        "alert",
        "iframe",
        "javascript",
    ] {
        assert!(!kept.contains(gone), "{gone} in {kept}");
    }
    assert!(
        kept.contains("Hello {{ first_name | default(\"there\") }}"),
        "{kept}"
    );
    assert!(kept.contains("{% if company_name %}<p>For {{ company_name }}</p>{% endif %}"));
    assert_eq!(design["css"], "\nh1 { color: #0f766e; }");
    assert_eq!(s.design().await["html"], design["html"]);

    s.post("/pages/publish", json!({})).await.expect(200);
    let url = s
        .lead(json!({"email": "ada@example.com", "first_name": "Ada", "company_name": "Engines"}))
        .await;
    let page = s.visit(&url).await.expect(200);
    assert!(page.text.contains("<h1>Hello Ada</h1>"), "{}", page.text);
    assert!(page.text.contains("<p>For Engines</p>"));
    assert!(!page.text.contains("alert("));

    // A design that does not compile names its line; a missing one is required; another
    // workspace's campaign is not found.
    let refused = s
        .post(
            "/pages/update-design",
            json!({"html": "<p>ok</p>\n<p>{{ first_name </p>"}),
        )
        .await
        .expect(422)
        .json();
    assert!(
        refused["errors"]["html"][0]
            .as_str()
            .unwrap()
            .contains("line 2"),
        "{refused}"
    );
    let missing = s
        .post("/pages/update-design", json!({"html": "  "}))
        .await
        .expect(422)
        .json();
    assert!(missing["errors"]["html"].is_array(), "{missing}");
    let other = s
        .server
        .post(
            &s.key,
            "/pages/update-design",
            json!({"workspace_id": s.ws, "campaign_id": 999_999, "html": "<p>x</p>"}),
        )
        .await
        .expect(404)
        .json();
    assert_eq!(other["message"], "Campaign not found");
    // The published page did not change: the draft did.
    assert!(s.visit(&url).await.text.contains("<h1>Hello Ada</h1>"));
}

#[tokio::test]
async fn a_campaigns_words_are_a_draft_change_published_like_the_design_and_name_the_page() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, _) = create_campaign(&server, key, ws, "Internal Q3 Push").await;
    publish_premade(&server, key, ws, campaign, "Personal Spotlight").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": [{"values": {"email": "ada@example.com",
               "first_name": "Ada", "company_name": "Engines & Co"}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let page = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .json()[0]["service_page_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let visit = || async { server.send(server.client.get(&page)).await.expect(200).text };
    // Neutral defaults; the tab and link previews never show the campaign's internal name.
    let before = visit().await;
    assert!(
        before.contains("<title>Hi Ada, this page is yours.</title>"),
        "{before}"
    );
    assert!(!before.contains("Internal Q3 Push"), "{before}");
    assert!(before.contains("<meta property=\"og:title\""), "{before}");
    assert!(before.contains("Engines &amp; Co"), "{before}");

    let updated = server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "copy": {
                "headline": "{{ first_name }}, three ideas for {{ company_name | default(\"you\") }}",
                "points": ["Faster <b>invoices</b>", "Fewer audits"],
                "cta_label": "Book 20 minutes"}}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(updated["campaign_id"], campaign);
    assert_eq!(updated["copy"]["cta_label"], "Book 20 minutes");
    assert_eq!(
        updated["copy"].get("intro"),
        None,
        "only what was written: {updated}"
    );
    // A draft change: visitors see the published words until it is published.
    assert!(visit().await.contains("Hi Ada, this page is yours."));
    let design = server
        .get(
            key,
            &format!("/pages/design?workspace_id={ws}&campaign_id={campaign}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(design["has_unpublished_changes"], true, "{design}");
    let preview = server
        .get(
            key,
            &format!("/pages/preview?workspace_id={ws}&campaign_id={campaign}"),
        )
        .await
        .expect(200)
        .text;
    assert!(preview.contains("Book 20 minutes"), "{preview}");
    server
        .post(
            key,
            "/pages/publish",
            json!({"workspace_id": ws, "campaign_id": campaign}),
        )
        .await
        .expect(200);
    let after = visit().await;
    assert!(
        after.contains("<title>Ada, three ideas for Engines &amp; Co</title>"),
        "{after}"
    );
    assert!(
        after.contains("Faster &lt;b&gt;invoices&lt;&#x2f;b&gt;")
            || after.contains("Faster &lt;b&gt;invoices&lt;/b&gt;"),
        "words are text: {after}"
    );
    assert!(after.contains("Book 20 minutes"), "{after}");

    // Each rule broken is named; nothing changes.
    let refused = server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "copy": {
                "headline": "x".repeat(201), "points": vec!["p"; 7]}}),
        )
        .await
        .expect(422)
        .json();
    assert!(refused["errors"]["copy.headline"].is_array(), "{refused}");
    assert!(refused["errors"]["copy.points"].is_array(), "{refused}");
    server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "copy": "words"}),
        )
        .await
        .expect(422);
    server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": 999999, "copy": {}}),
        )
        .await
        .expect(404);
    // An empty text goes back to the default.
    let reset = server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "copy": {"headline": ""}}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(reset["copy"].get("headline"), None, "{reset}");
}

#[tokio::test]
async fn brandings_images_are_served_from_lps_own_origin_fitted_and_a_missing_one_falls_back() {
    use axum::response::IntoResponse;
    // A site on loopback with a large logo; the sender's photo is missing.
    let logo = {
        let image = image::RgbaImage::from_pixel(2_000, 1_000, image::Rgba([15, 118, 110, 255]));
        let mut bytes = Vec::new();
        image::DynamicImage::ImageRgba8(image)
            .write_to(
                &mut std::io::Cursor::new(&mut bytes),
                image::ImageFormat::Png,
            )
            .unwrap();
        bytes
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site = format!("http://{}", listener.local_addr().unwrap());
    // `/later.png` is missing until `ready`.
    let ready = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let site_ready = ready.clone();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let logo = logo.clone();
        let ready = site_ready.load(std::sync::atomic::Ordering::SeqCst);
        async move {
            if uri.path() == "/logo.png" || (ready && uri.path() == "/later.png") {
                ([(http::header::CONTENT_TYPE, "image/png")], logo).into_response()
            } else {
                http::StatusCode::NOT_FOUND.into_response()
            }
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (_, pages) = live_campaign(&server, key, ws, "Logos", 1).await;
    let page = &pages[0].1;
    let branding = server
        .get(key, &format!("/brandings/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json()[0]["branding_id"]
        .as_i64()
        .unwrap();
    let saved = server
        .post(
            key,
            "/brandings/update",
            json!({"workspace_id": ws, "branding_id": branding, "company_name": "Northwind",
                   "logo_url": format!("{site}/logo.png"),
                   "sender_name": "Ada", "sender_photo_url": format!("{site}/missing.png")}),
        )
        .await
        .expect(200)
        .json();
    // Fetched before the answer, which says why one could not be.
    assert_eq!(saved["logo_error"], Value::Null, "{saved}");
    assert_eq!(saved["sender_photo_error"], "answered 404", "{saved}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let shown = loop {
        let shown = server
            .send(server.client.get(page))
            .await
            .expect(200)
            .text
            .replace("&#x2f;", "/");
        if shown.contains(&server.url_of("/assets/")) || std::time::Instant::now() > deadline {
            break shown;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    // Nothing on the page points at the third party; the missing photo is left out.
    assert!(!shown.contains(&site), "{shown}");
    assert!(shown.contains("Northwind"), "{shown}");
    let start = shown
        .find(&server.url_of("/assets/"))
        .unwrap_or_else(|| panic!("the logo, served by lps: {shown}"));
    let address: String = shown[start..].chars().take_while(|c| *c != '"').collect();
    assert_eq!(shown.matches("/assets/").count(), 1, "no photo: {shown}");
    let served = server.client.get(&address).send().await.unwrap();
    assert_eq!(served.status(), 200);
    let header = |name: &str| served.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(header("content-type"), "image/png");
    assert_eq!(
        header("cache-control"),
        "public, max-age=31536000, immutable"
    );
    let etag = header("etag");
    let fitted = image::load_from_memory(&served.bytes().await.unwrap()).unwrap();
    assert_eq!((fitted.width(), fitted.height()), (512, 256));
    server
        .send(server.client.get(&address).header("if-none-match", etag))
        .await
        .expect(304);
    for missing in ["/assets/nope", &format!("/assets/{}", "0".repeat(64))] {
        server
            .send(server.client.get(server.url_of(missing)))
            .await
            .expect(404);
    }

    // Saving again tries again at once (not an hour later).
    let photo = json!({"workspace_id": ws, "branding_id": branding,
                       "sender_photo_url": format!("{site}/later.png")});
    let saved = server
        .post(key, "/brandings/update", photo.clone())
        .await
        .expect(200)
        .json();
    assert_eq!(saved["sender_photo_error"], "answered 404", "{saved}");
    ready.store(true, std::sync::atomic::Ordering::SeqCst);
    let saved = server
        .post(key, "/brandings/update", photo)
        .await
        .expect(200)
        .json();
    assert_eq!(saved["sender_photo_error"], Value::Null, "{saved}");
}

#[tokio::test]
async fn a_campaigns_pages_move_to_their_page_slug_and_old_links_redirect() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Exec Note", 1).await;
    let (lead, old) = &pages[0];
    assert!(old.contains("/p/exec-note/"), "{old}");
    server.send(server.client.get(old)).await.expect(200);
    let (other, _) = create_campaign(&server, key, ws, "Other").await;
    let moved = server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "page_slug": "for-you"}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(moved["page_slug"], "for-you");
    assert_eq!(moved["slug"], "exec-note", "the documented slug stays");
    let new = old.replace("/p/exec-note/", "/p/for-you/");
    let page = server.send(server.client.get(&new)).await.expect(200);
    assert!(!page.text.contains("Exec Note"), "{}", page.text);
    // The old link redirects; the lead's address is the new one everywhere.
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let redirect = browser.get(old).send().await.unwrap();
    assert_eq!(redirect.status(), 301);
    let location = redirect.headers()["location"].to_str().unwrap();
    assert_eq!(location, new.trim_start_matches(&server.http));
    let found = server
        .get(key, &format!("/leads/get?lead_id={lead}"))
        .await
        .expect(200)
        .json();
    assert!(found.to_string().contains("/p/for-you/"), "{found}");
    // Another campaign cannot take it; a malformed segment is refused.
    server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": other, "page_slug": "for-you"}),
        )
        .await
        .expect(409);
    server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": other, "page_slug": "Not a slug"}),
        )
        .await
        .expect(422);
    // Moving again: both earlier addresses lead to the newest.
    server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "page_slug": "hello"}),
        )
        .await
        .expect(200);
    for earlier in [old.as_str(), new.as_str()] {
        let redirect = browser.get(earlier).send().await.unwrap();
        assert_eq!(redirect.status(), 301, "{earlier}");
        assert!(
            redirect.headers()["location"]
                .to_str()
                .unwrap()
                .starts_with("/p/hello/")
        );
    }
}

#[tokio::test]
async fn each_lead_page_has_its_own_link_preview_card_never_counted_as_a_visit() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Cards", 2).await;
    let (first, second) = (&pages[0].1, &pages[1].1);
    let html = server.send(server.client.get(first)).await.expect(200).text;
    let tag = |name: &str| {
        let marker = format!("property=\"{name}\" content=\"");
        let start = html
            .find(&marker)
            .unwrap_or_else(|| panic!("{name} in {html}"))
            + marker.len();
        html[start..start + html[start..].find('"').unwrap()].replace("&#x2f;", "/")
    };
    assert_eq!(tag("og:url"), *first);
    let card_url = tag("og:image");
    assert_eq!(card_url, format!("{first}/og.png"));
    assert_eq!(tag("og:image:width"), "1200");
    assert!(html.contains("name=\"twitter:card\" content=\"summary_large_image\""));

    let client = &server.client;
    let fetch = |url: String| async move {
        let response = client
            .get(&url)
            .header("user-agent", "Slackbot-LinkExpanding 1.0")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{url}");
        assert_eq!(response.headers()["content-type"], "image/png");
        let etag = response.headers()["etag"].to_str().unwrap().to_owned();
        (etag, response.bytes().await.unwrap())
    };
    let (etag, one) = fetch(card_url.clone()).await;
    let (_, other) = fetch(format!("{second}/og.png")).await;
    let decoded = image::load_from_memory(&one).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (1200, 630));
    assert_ne!(one, other, "personalised per lead");
    let again = server
        .client
        .get(&card_url)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    server
        .send(server.client.get(format!("{first}x/og.png")))
        .await
        .expect(404);
    // Fetching cards is not visiting.
    let analytics = server
        .get(
            key,
            &format!("/campaigns/analytics?workspace_id={ws}&campaign_ids={campaign}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(analytics["campaigns"][0]["pages_visited"], 0, "{analytics}");
}

/// A sign-off that already names the sender is not followed by the design's own signature
/// naming them again: on every premade design with a signature, the sender's name shows as
/// often with such a sign-off as with the default one.
#[tokio::test]
async fn a_sign_off_naming_the_sender_is_not_repeated_by_the_designs_signature() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let branding = server
        .get(key, &format!("/brandings/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json()[0]["branding_id"]
        .as_i64()
        .unwrap();
    server
        .post(
            key,
            "/brandings/update",
            json!({"workspace_id": ws, "branding_id": branding,
                   "sender_name": "Ada Lovelace", "sender_title": "Founder"}),
        )
        .await
        .expect(200);
    for template in [
        "Personal Note",
        "Case Study",
        "Tailored Proposal",
        "Event Invitation",
        "Personal Spotlight",
    ] {
        let prefix = template.to_lowercase().replace(' ', "-");
        let (campaign, pages) =
            live_campaign_with(&server, key, ws, template, template, leads(&prefix, 1)).await;
        let mut shown = Vec::new();
        for signoff in ["", "Best,\nAda Lovelace"] {
            server
                .post(
                    key,
                    "/campaigns/update",
                    json!({"workspace_id": ws, "campaign_id": campaign,
                           "copy": {"signoff": signoff}}),
                )
                .await
                .expect(200);
            server
                .post(
                    key,
                    "/pages/publish",
                    json!({"workspace_id": ws, "campaign_id": campaign}),
                )
                .await
                .expect(200);
            let page = server
                .send(server.client.get(&pages[0].1))
                .await
                .expect(200)
                .text;
            shown.push(page.matches("Ada Lovelace").count());
        }
        assert!(shown[0] >= 1, "{template}: the design signs: {shown:?}");
        assert_eq!(shown[0], shown[1], "{template}: named once more: {shown:?}");
    }
}
