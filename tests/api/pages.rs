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
    assert!(design["html"].as_str().unwrap().contains("Dear"));
    assert!(
        s.visit(&url)
            .await
            .text
            .contains("Hi Ada, this page is yours."),
        "still the old design"
    );

    // Publish again: takes effect at once for earlier pages too.
    s.post("/pages/publish", json!({})).await.expect(200);
    assert!(s.visit(&url).await.text.contains("Dear Ada,"));
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
            .contains("this page is yours")
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
        ("Personal Note", "Dear Ada,"),
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
