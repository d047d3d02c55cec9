//! `GET /hello-world`, `GET /hello-world-user`, `GET /automation/test`, and the 401s of part 5.

use std::time::Duration;

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn hello_world_answers_a_message_to_a_valid_key() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let reply = server
        .get(&account.api_key, "/hello-world")
        .await
        .expect(200);
    assert_eq!(reply.json(), json!({"message": "Hello World"}));
    assert_eq!(reply.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn hello_world_user_names_the_owner_and_the_bound_workspace() {
    let db = TestDb::new();
    let account = bootstrap(
        &db,
        &[
            "--user-name",
            "Ada Lovelace",
            "--user-email",
            "ada@example.com",
        ],
    );
    let server = Server::serve(&db, &[]);
    let body = server
        .get(&account.api_key, "/hello-world-user")
        .await
        .expect(200)
        .json();
    assert!(body["message"].is_string());
    assert_eq!(
        body["user"],
        json!({"id": account.user_id, "name": "Ada Lovelace", "email": "ada@example.com"})
    );
    assert_eq!(body["workspace_id"], json!(account.workspace_id));
    assert_eq!(body.as_object().unwrap().len(), 3);
}

#[tokio::test]
async fn hello_world_user_shows_null_workspace_for_a_legacy_key() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let legacy = legacy_key(&db, account.account_id);
    let server = Server::serve(&db, &[]);
    let body = server
        .get(&legacy, "/hello-world-user")
        .await
        .expect(200)
        .json();
    assert_eq!(body["workspace_id"], serde_json::Value::Null);
    assert_eq!(body["user"]["id"], json!(account.user_id));
}

#[tokio::test]
async fn automation_test_returns_message_and_user() {
    let db = TestDb::new();
    let account = bootstrap(
        &db,
        &["--user-name", "Grace", "--user-email", "g@example.com"],
    );
    let server = Server::serve(&db, &[]);
    let body = server
        .get(&account.api_key, "/automation/test")
        .await
        .expect(200)
        .json();
    assert!(body["message"].is_string());
    assert_eq!(
        body["user"],
        json!({"id": account.user_id, "name": "Grace", "email": "g@example.com"})
    );
    assert_eq!(body.as_object().unwrap().len(), 2);
}

#[tokio::test]
async fn missing_key_is_unauthenticated() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    for path in ["/hello-world", "/hello-world-user", "/workspaces/get-list"] {
        let reply = server
            .send(server.client.get(server.url(path)))
            .await
            .expect(401);
        assert_eq!(reply.json(), json!({"message": "Unauthenticated."}));
    }
}

#[tokio::test]
async fn malformed_authorization_headers_are_unauthenticated() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let unknown = format!("{}x", account.api_key);
    for header in [
        account.api_key.clone(),              // no scheme
        format!("Basic {}", account.api_key), // wrong scheme
        "Bearer not-a-key".to_owned(),        // wrong prefix
        "Bearer ".to_owned(),                 // empty
        format!("Bearer {unknown}"),          // well-formed, unknown
    ] {
        let request = server
            .client
            .get(server.url("/hello-world"))
            .header("authorization", header.as_str());
        let reply = server.send(request).await.expect(401);
        assert_eq!(reply.json()["message"], "Unauthenticated.", "{header}");
    }
}

#[tokio::test]
async fn a_deleted_key_is_refused_on_the_very_next_request() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let tokens = server
        .get(
            &account.api_key,
            &format!("/get-api-tokens?workspace_id={}", account.workspace_id),
        )
        .await
        .expect(200)
        .json();
    let id = tokens["tokens"][0]["id"].as_str().unwrap().to_owned();
    server
        .delete(
            &account.api_key,
            &format!("/delete-api-token?token_id={id}"),
        )
        .await
        .expect(200);
    let reply = server
        .get(&account.api_key, "/hello-world")
        .await
        .expect(401);
    assert_eq!(reply.json()["message"], "Unauthenticated.");
}

#[tokio::test]
async fn a_key_deleted_through_one_process_is_refused_by_another() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (other_workspace, other_key) = add_workspace(&db, account.account_id, "Other");
    let first = Server::serve(&db, &["--job-workers", "0"]);
    let second = Server::serve(&db, &["--job-workers", "0"]);
    // The second process has the key in memory.
    second.get(&other_key, "/hello-world").await.expect(200);
    let tokens = first
        .get(
            &other_key,
            &format!("/get-api-tokens?workspace_id={other_workspace}"),
        )
        .await
        .expect(200)
        .json();
    let id = tokens["tokens"][0]["id"].as_str().unwrap().to_owned();
    // A key may revoke itself.
    first
        .delete(&other_key, &format!("/delete-api-token?token_id={id}"))
        .await
        .expect(200);
    first.get(&other_key, "/hello-world").await.expect(401);
    // PostgreSQL tells the other process at once (NOTIFY); on SQLite it finds out within a
    // second (its memory of a key lasts one).
    let patience = if db.is_postgres() {
        Duration::from_millis(500)
    } else {
        Duration::from_millis(1_500)
    };
    let started = std::time::Instant::now();
    loop {
        let status = second.get(&other_key, "/hello-world").await.status;
        if status == 401 {
            break;
        }
        assert!(
            started.elapsed() < patience,
            "still accepted after {patience:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The account's own key was not affected.
    second
        .get(&account.api_key, "/hello-world")
        .await
        .expect(200);
}
