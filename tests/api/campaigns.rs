//! `GET /campaigns/get-list`, `POST /campaigns/create`, `GET /brandings/get-list`.

use crate::common::*;
use serde_json::{Value, json};
use std::process::Command;

#[tokio::test]
async fn a_new_campaign_has_no_design_a_note_and_a_unique_slug() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let body = server
        .post(
            key,
            "/campaigns/create",
            json!({"workspace_id": ws, "name": "Spring Launch 2026!", "prompt": "bold"}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(body.as_object().unwrap().len(), 4);
    assert!(body["campaign_id"].as_i64().unwrap() > 0);
    assert_eq!(body["name"], "Spring Launch 2026!");
    assert_eq!(body["slug"], "spring-launch-2026");
    assert!(body["note"].as_str().unwrap().contains("no design"));
    let again = server
        .post(
            key,
            "/campaigns/create",
            json!({"workspace_id": ws, "name": "Spring launch 2026"}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(again["slug"], "spring-launch-2026-2");
    let listed = server
        .get(key, &format!("/campaigns/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(
        listed,
        json!([
            {"id": body["campaign_id"], "name": "Spring Launch 2026!", "slug": "spring-launch-2026"},
            {"id": again["campaign_id"], "name": "Spring launch 2026", "slug": "spring-launch-2026-2"},
        ])
    );
}

#[tokio::test]
async fn slugs_are_unique_per_workspace_only() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (second, second_key) = add_workspace(&db, account.account_id, "Second");
    let server = Server::serve(&db, &[]);
    let (_, a) = create_campaign(&server, &account.api_key, account.workspace_id, "Same").await;
    let (_, b) = create_campaign(&server, &second_key, second, "Same").await;
    assert_eq!((a.as_str(), b.as_str()), ("same", "same"));
}

#[tokio::test]
async fn campaign_creation_validates_and_checks_the_branding() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let body = server
        .post(key, "/campaigns/create", json!({}))
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["workspace_id"].is_array());
    assert!(body["errors"]["name"].is_array());
    let foreign_branding = server
        .get(
            &stranger.api_key,
            &format!("/brandings/get-list?workspace_id={}", stranger.workspace_id),
        )
        .await
        .expect(200)
        .json()[0]["branding_id"]
        .clone();
    for branding in [foreign_branding, json!(999_999)] {
        let body = server
            .post(
                key,
                "/campaigns/create",
                json!({"workspace_id": ws, "name": "X", "branding_id": branding}),
            )
            .await
            .expect(404)
            .json();
        assert_eq!(body["message"], "Branding not found");
    }
    server
        .post(
            key,
            "/campaigns/create",
            json!({"workspace_id": stranger.workspace_id, "name": "X"}),
        )
        .await
        .expect(403);
}

#[tokio::test]
async fn every_workspace_has_a_default_branding_and_admins_add_more() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let path = format!("/brandings/get-list?workspace_id={ws}");
    let listed = server.get(key, &path).await.expect(200).json();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["is_default"], true);
    // The documented three, then the look extensions (unset: null).
    let fields: Vec<&String> = listed[0].as_object().unwrap().keys().collect();
    assert_eq!(
        fields,
        [
            "branding_id",
            "company_name",
            "is_default",
            "logo_error",
            "logo_url",
            "name",
            "primary_color",
            "sender_name",
            "sender_photo_error",
            "sender_photo_url",
            "sender_title",
            "website"
        ]
    );
    let made = lps_json(&[
        "admin",
        "branding",
        "create",
        "--database-url",
        &db.url,
        "--workspace",
        &ws.to_string(),
        "--name",
        "Dark",
        "--default",
    ]);
    let dark = made["branding_id"].as_i64().unwrap();
    let listed = server.get(key, &path).await.expect(200).json();
    assert_eq!(
        listed[0],
        json!({"branding_id": dark, "name": "Dark", "is_default": true, "company_name": null,
               "logo_url": null, "primary_color": null, "website": null, "sender_name": null,
               "sender_title": null, "sender_photo_url": null, "logo_error": null,
               "sender_photo_error": null})
    );
    assert_eq!(listed[1]["is_default"], false);
    let created = server
        .post(
            key,
            "/campaigns/create",
            json!({"workspace_id": ws, "name": "Branded", "branding_id": dark}),
        )
        .await;
    created.expect(200);
}

#[tokio::test]
async fn campaign_lists_need_a_reachable_workspace() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    create_campaign(&server, &stranger.api_key, stranger.workspace_id, "Theirs").await;
    for path in ["/campaigns/get-list", "/brandings/get-list"] {
        server
            .get(
                &account.api_key,
                &format!("{path}?workspace_id={}", stranger.workspace_id),
            )
            .await
            .expect(403);
        let body = server.get(&account.api_key, path).await.expect(422).json();
        assert!(body["errors"]["workspace_id"].is_array());
    }
}

#[tokio::test]
async fn a_campaigns_call_to_action_and_branding_reach_its_pages() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);

    // The call-to-action address is checked, then used by the premade designs.
    let refused = server
        .post(
            key,
            "/campaigns/create",
            json!({"workspace_id": ws, "name": "Bad", "cta_url": "javascript:alert(1)"}),
        )
        .await
        .expect(422)
        .json();
    assert!(refused["errors"]["cta_url"].is_array(), "{refused}");
    let created = server
        .post(
            key,
            "/campaigns/create",
            json!({"workspace_id": ws, "name": "Calendar", "cta_url": "https://cal.example/sam"}),
        )
        .await
        .expect(200)
        .json();
    let campaign = created["campaign_id"].as_i64().unwrap();
    publish_premade(&server, key, ws, campaign, "Personal Spotlight").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": [{"values": {"email": "ada@example.com", "first_name": "Ada"}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let page = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json()[0]["service_page_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = server.send(server.client.get(&page)).await.expect(200);
    assert!(
        first
            .text
            .contains(r#"href="https://cal.example/sam" data-lps-cta"#),
        "{}",
        first.text
    );

    // The branding, changed by an operator, shows at once (a new entity tag).
    let brandings = server
        .get(key, &format!("/brandings/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    let branding = brandings[0]["branding_id"].as_i64().unwrap().to_string();
    assert_eq!(brandings[0]["logo_url"], Value::Null, "{brandings}");
    let updated = lps_json(&[
        "admin",
        "branding",
        "update",
        "--database-url",
        &db.url,
        "--branding",
        &branding,
        "--company-name",
        "Acme Outreach",
        "--logo-url",
        "https://cdn.example/logo.png",
        "--primary-color",
        "#0f766e",
        "--sender-name",
        "Sam Sender",
        "--sender-title",
        "Account Executive",
    ]);
    assert_eq!(updated["sender_name"], "Sam Sender");
    let bad = Command::new(env!("CARGO_BIN_EXE_lps"))
        .args([
            "admin",
            "branding",
            "update",
            "--database-url",
            &db.url,
            "--branding",
            &branding,
            "--primary-color",
            "red;background:url(x)",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--primary-color"));
    // Another process changed it: on PostgreSQL it says so (NOTIFY); on SQLite the server
    // notices within a second.
    let etag = first.header("etag").unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let second = loop {
        let reply = server
            .send(server.client.get(&page).header("if-none-match", &etag))
            .await;
        if reply.status == 200 || std::time::Instant::now() > deadline {
            break reply.expect(200);
        }
        reply.expect(304);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    for shown in [
        "Sam Sender",
        "Account Executive",
        "Acme Outreach",
        "--brand: #0f766e",
    ] {
        assert!(second.text.contains(shown), "{shown}: {}", second.text);
    }
    // Images come from lps's own origin only (this one cannot be fetched: left out).
    assert!(!second.text.contains("cdn.example"), "{}", second.text);
    let listed = server
        .get(key, &format!("/brandings/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(listed[0]["company_name"], "Acme Outreach", "{listed}");
    assert_eq!(listed[0]["primary_color"], "#0f766e");

    // gRPC changes the call to action; an empty address removes it and the design falls back
    // to a form.
    let mut campaigns = lps::proto::campaigns_service_client::CampaignsServiceClient::new(
        server.grpc_channel().await,
    );
    let settings = campaigns
        .update_campaign(grpc_request(
            key,
            lps::proto::UpdateCampaignRequest {
                workspace_id: Some(ws),
                campaign_id: Some(campaign),
                cta_url: Some(String::new()),
                branding_id: None,
                copy: None,
                page_slug: None,
                name: None,
                domain_id: None,
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(settings.cta_url, None);
    // A change made over gRPC directly (not through this edge) reaches the edge's kept pages
    // through its change stream, a moment later.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let third = loop {
        let visit = server.send(server.client.get(&page)).await.expect(200);
        if !visit.text.contains("cal.example") || std::time::Instant::now() > deadline {
            break visit;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(!third.text.contains("cal.example"), "{}", third.text);
    assert!(
        third
            .text
            .contains(r#"<form class="interest" method="post""#),
        "{}",
        third.text
    );
    let refused = campaigns
        .update_campaign(grpc_request(
            key,
            lps::proto::UpdateCampaignRequest {
                workspace_id: Some(ws),
                campaign_id: Some(campaign),
                cta_url: Some("ftp://files.example".into()),
                branding_id: Some(999_999),
                copy: None,
                page_slug: None,
                name: None,
                domain_id: None,
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
}

#[tokio::test]
async fn a_campaign_is_renamed_and_its_address_and_branding_changed_after_creation() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, slug) = create_campaign(&server, key, ws, "First name").await;
    let changed = server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "name": "  Second name ",
                   "cta_url": "https://example.com/book"}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(changed["name"], "Second name");
    assert_eq!(changed["slug"], slug.as_str(), "the slug stays");
    assert_eq!(changed["cta_url"], "https://example.com/book");
    let listed = server
        .get(key, &format!("/campaigns/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(
        listed[0],
        json!({"id": campaign, "name": "Second name", "slug": slug}),
        "the documented list entry keeps its shape"
    );
    let blank = server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "name": "  "}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(blank["name"], "Second name", "a blank name: unchanged");
    let unchanged = server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "cta_url": ""}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(unchanged["name"], "Second name", "left out: unchanged");
    assert_eq!(unchanged["cta_url"], Value::Null);
}
