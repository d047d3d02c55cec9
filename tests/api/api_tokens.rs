//! `POST /generate-api-token`, `GET /get-api-tokens`, `DELETE /delete-api-token`.

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn a_generated_key_is_shown_once_and_bound_to_its_workspace() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let body = server
        .post(
            &account.api_key,
            "/generate-api-token",
            json!({"name": "CRM sync", "workspace_id": account.workspace_id}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(body.as_object().unwrap().len(), 1);
    let token = body["token"].as_str().unwrap();
    assert!(token.starts_with("sk-proj-") && token.len() > 40);
    let me = server
        .get(token, "/hello-world-user")
        .await
        .expect(200)
        .json();
    assert_eq!(me["workspace_id"], json!(account.workspace_id));
    // The list never shows the key itself again.
    let listed = server
        .get(
            token,
            &format!("/get-api-tokens?workspace_id={}", account.workspace_id),
        )
        .await
        .expect(200);
    assert!(!listed.text.contains(token));
}

#[tokio::test]
async fn key_generation_is_refused_on_a_free_plan_with_an_upgrade_message() {
    let db = TestDb::new();
    let account = bootstrap(&db, &["--plan", "free"]);
    let server = Server::serve(&db, &[]);
    let reply = server
        .post(
            &account.api_key,
            "/generate-api-token",
            json!({"name": "x", "workspace_id": account.workspace_id}),
        )
        .await
        .expect(403);
    let message = reply.json()["message"].as_str().unwrap().to_lowercase();
    assert!(message.contains("upgrade"), "{message}");
}

#[tokio::test]
async fn key_generation_follows_the_plan_tiers() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let account_id = account.account_id.to_string();
    for (plan, allowed) in [
        ("pro_monthly", true),
        ("scale_2_yearly", true),
        ("scale", true),
        ("ultimate", true),
        ("trial", false),
        ("free", false),
        ("starter_monthly", false),
    ] {
        lps(&[
            "admin",
            "account",
            "set-plan",
            "--database-url",
            &db.url,
            "--account",
            &account_id,
            "--plan",
            plan,
        ]);
        let reply = server
            .post(
                &account.api_key,
                "/generate-api-token",
                json!({"name": plan, "workspace_id": account.workspace_id}),
            )
            .await;
        assert_eq!(
            reply.status,
            if allowed { 200 } else { 403 },
            "{plan}: {}",
            reply.text
        );
    }
}

#[tokio::test]
async fn key_generation_validates_its_body() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let body = server
        .post(&account.api_key, "/generate-api-token", json!({}))
        .await
        .expect(422)
        .json();
    assert_eq!(
        body["errors"]["name"],
        json!(["The name field is required."])
    );
    assert_eq!(
        body["errors"]["workspace_id"],
        json!(["The workspace id field is required."])
    );
    let body = server
        .post(
            &account.api_key,
            "/generate-api-token",
            json!({"name": 5, "workspace_id": "x"}),
        )
        .await
        .expect(422)
        .json();
    assert_eq!(
        body["errors"]["name"],
        json!(["The name field must be a string."])
    );
    assert_eq!(
        body["errors"]["workspace_id"],
        json!(["The workspace id field must be an integer."])
    );
}

#[tokio::test]
async fn key_generation_for_a_foreign_workspace_is_forbidden() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let reply = server
        .post(
            &account.api_key,
            "/generate-api-token",
            json!({"name": "x", "workspace_id": stranger.workspace_id}),
        )
        .await
        .expect(403);
    assert_eq!(
        reply.json()["message"],
        "Workspace not found or access not permitted."
    );
}

#[tokio::test]
async fn the_list_holds_the_workspace_keys_and_the_legacy_keys_with_their_fields() {
    let db = TestDb::new();
    let account = bootstrap(&db, &["--user-name", "Ada Lovelace"]);
    let (_, other_workspace_key) = add_workspace(&db, account.account_id, "Other");
    let legacy = legacy_key(&db, account.account_id);
    let server = Server::serve(&db, &[]);
    server.get(&legacy, "/hello-world").await.expect(200);
    let before = chrono::Utc::now();
    let path = format!("/get-api-tokens?workspace_id={}", account.workspace_id);
    let body = server.get(&account.api_key, &path).await.expect(200).json();
    assert_eq!(body.as_object().unwrap().len(), 1);
    let tokens = body["tokens"].as_array().unwrap();
    assert_eq!(
        tokens.len(),
        2,
        "own key and legacy key, not the other workspace's"
    );
    for token in tokens {
        let fields: Vec<&str> = token
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(fields.len(), 5, "{token}");
        assert!(token["id"].is_string());
        assert!(token["name"].is_string());
        assert!(is_iso8601_micros(&token["created_at"]), "{token}");
        assert!(is_iso8601_micros(&token["last_used_at"]), "{token}");
        assert_eq!(token["created_by"], "Ada Lovelace");
    }
    // The key used for this very request is marked as used just now.
    let own = &tokens[0];
    let used: chrono::DateTime<chrono::Utc> =
        own["last_used_at"].as_str().unwrap().parse().unwrap();
    assert!(
        (before - used).num_seconds().abs() <= 2,
        "{used} vs {before}"
    );
    drop(other_workspace_key);
}

#[tokio::test]
async fn a_key_never_used_lists_null_last_used_at() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    legacy_key(&db, account.account_id);
    let server = Server::serve(&db, &[]);
    let path = format!("/get-api-tokens?workspace_id={}", account.workspace_id);
    let body = server.get(&account.api_key, &path).await.expect(200).json();
    let unused = &body["tokens"][1];
    assert_eq!(unused["last_used_at"], serde_json::Value::Null);
}

#[tokio::test]
async fn listing_keys_needs_a_reachable_workspace_id() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let body = server
        .get(&account.api_key, "/get-api-tokens")
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["workspace_id"].is_array());
    let path = format!("/get-api-tokens?workspace_id={}", stranger.workspace_id);
    server.get(&account.api_key, &path).await.expect(403);
}

#[tokio::test]
async fn deleting_a_key_revokes_it_and_answers_a_message() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let token = server
        .post(
            &account.api_key,
            "/generate-api-token",
            json!({"name": "temp", "workspace_id": account.workspace_id}),
        )
        .await
        .expect(200)
        .json()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    server.get(&token, "/hello-world").await.expect(200);
    let path = format!("/get-api-tokens?workspace_id={}", account.workspace_id);
    let listed = server.get(&account.api_key, &path).await.expect(200).json();
    let id = listed["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "temp")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = server
        .delete(
            &account.api_key,
            &format!("/delete-api-token?token_id={id}"),
        )
        .await
        .expect(200)
        .json();
    assert!(body["message"].is_string());
    assert_eq!(body.as_object().unwrap().len(), 1);
    server.get(&token, "/hello-world").await.expect(401);
    server
        .get(&account.api_key, "/hello-world")
        .await
        .expect(200);
}

#[tokio::test]
async fn deleting_an_unknown_or_foreign_key_is_not_found() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (_, other_key) = add_workspace(&db, account.account_id, "Other");
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let foreign_ids = [
        (&other_key, account.account_id),
        (&stranger.api_key, stranger.account_id),
    ];
    let mut ids = vec!["no-such-token".to_owned()];
    for (key, _) in foreign_ids {
        let me = server
            .get(key, "/hello-world-user")
            .await
            .expect(200)
            .json();
        let path = format!("/get-api-tokens?workspace_id={}", me["workspace_id"]);
        let listed = server.get(key, &path).await.expect(200).json();
        ids.push(listed["tokens"][0]["id"].as_str().unwrap().to_owned());
    }
    for id in ids {
        let reply = server
            .delete(
                &account.api_key,
                &format!("/delete-api-token?token_id={id}"),
            )
            .await
            .expect(404);
        assert_eq!(reply.json(), json!({"message": "API token not found"}));
    }
    // Nothing was revoked.
    server.get(&other_key, "/hello-world").await.expect(200);
    server
        .get(&stranger.api_key, "/hello-world")
        .await
        .expect(200);
}

#[tokio::test]
async fn deleting_without_token_id_is_a_validation_error() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let body = server
        .delete(&account.api_key, "/delete-api-token")
        .await
        .expect(422)
        .json();
    assert_eq!(
        body["errors"]["token_id"],
        json!(["The token id field is required."])
    );
}
