//! Part 7: every response is JSON, errors included, whatever the client gets wrong.

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn an_unknown_path_is_a_json_404() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    for path in ["/no-such-thing", "/../etc", "/hello-world/extra"] {
        let reply = server.get(&account.api_key, path).await.expect(404);
        assert!(reply.json()["message"].is_string());
    }
    let reply = server
        .send(server.client.get(format!("{}/favicon.ico", server.http)))
        .await
        .expect(404);
    assert!(reply.json()["message"].is_string());
}

#[tokio::test]
async fn a_wrong_method_is_a_json_405() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let reply = server
        .post(&account.api_key, "/hello-world", json!({}))
        .await
        .expect(405);
    assert!(reply.json()["message"].as_str().unwrap().contains("POST"));
    let reply = server
        .get(&account.api_key, "/generate-api-token")
        .await
        .expect(405);
    assert!(reply.json()["message"].is_string());
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_422() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    for body in ["{not json", "<html></html>", "[1, 2]", "\"text\"", "42"] {
        let request = server
            .client
            .post(server.url("/generate-api-token"))
            .bearer_auth(&account.api_key)
            .header("content-type", "application/json")
            .body(body);
        let reply = server.send(request).await.expect(422);
        let parsed = reply.json();
        assert!(parsed["message"].is_string(), "{body}");
        assert!(parsed["errors"]["body"].is_array(), "{body}");
    }
}

#[tokio::test]
async fn a_bad_body_with_a_bad_key_is_still_a_401() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let request = server
        .client
        .post(server.url("/generate-api-token"))
        .bearer_auth("sk-proj-unknown")
        .body("{not json");
    server.send(request).await.expect(401);
}

#[tokio::test]
async fn a_validation_error_lists_every_bad_field() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let body = server
        .post(&account.api_key, "/generate-api-token", json!({"name": ""}))
        .await
        .expect(422)
        .json();
    assert_eq!(
        body["message"],
        "The name field is required. (and 1 more error)"
    );
    let errors = body["errors"].as_object().unwrap();
    assert_eq!(errors.len(), 2);
}

#[tokio::test]
async fn error_bodies_never_leak_internals() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let path = format!("/workspaces/get-variable-list?workspace_id={}", i64::MAX);
    let reply = server.get(&account.api_key, &path).await.expect(403);
    let text = reply.text.to_lowercase();
    for word in ["select", "sqlx", "panic", "stack"] {
        assert!(!text.contains(word), "{text}");
    }
}

#[tokio::test]
async fn post_fields_may_come_in_the_query_string_or_a_form() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let ws = account.workspace_id;
    // The query string names the workspace, the JSON body the rest.
    let request = server
        .client
        .post(server.url(&format!("/campaigns/create?workspace_id={ws}")))
        .bearer_auth(&account.api_key)
        .json(&json!({"name": "From the query"}));
    let created = server.send(request).await.expect(200).json();
    assert_eq!(created["slug"], "from-the-query");
    // The body wins where both name a field.
    let request = server
        .client
        .post(server.url("/campaigns/create?workspace_id=999999"))
        .bearer_auth(&account.api_key)
        .json(&json!({"workspace_id": ws, "name": "Body wins"}));
    server.send(request).await.expect(200);
    // A form body.
    let request = server
        .client
        .post(server.url("/campaigns/create"))
        .bearer_auth(&account.api_key)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("workspace_id={ws}&name=Form+Campaign"));
    let created = server.send(request).await.expect(200).json();
    assert_eq!(created["name"], "Form Campaign");
}
