//! `GET /campaigns/get-list`, `POST /campaigns/create`, `GET /brandings/get-list`.

use crate::common::*;
use serde_json::json;

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
    assert_eq!(listed[0].as_object().unwrap().len(), 3);
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
        json!({"branding_id": dark, "name": "Dark", "is_default": true})
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
