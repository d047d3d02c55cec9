//! `GET /account/credits`.

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn credits_show_plan_pool_workspace_use_and_renewal() {
    let db = TestDb::new();
    let account = bootstrap(&db, &["--plan", "scale_yearly", "--credits", "750"]);
    let server = Server::serve(&db, &[]);
    let path = format!("/account/credits?workspace_id={}", account.workspace_id);
    let body = server.get(&account.api_key, &path).await.expect(200).json();
    assert_eq!(body["plan"], "scale_yearly");
    assert_eq!(body["remaining"], 750);
    assert_eq!(body["workspace_used"], 0);
    assert_eq!(body["workspace_limit"], serde_json::Value::Null);
    let renews_at = body["renews_at"].as_str().unwrap();
    let renews = chrono::NaiveDateTime::parse_from_str(renews_at, "%Y-%m-%d %H:%M:%S")
        .unwrap_or_else(|_| panic!("renews_at {renews_at:?} is not YYYY-MM-DD HH:MM:SS"));
    assert!(renews > chrono::Utc::now().naive_utc());
    assert_eq!(body.as_object().unwrap().len(), 5);
}

#[tokio::test]
async fn a_workspace_cap_and_a_plan_change_show_in_credits() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let workspace = account.workspace_id.to_string();
    lps(&[
        "admin",
        "workspace",
        "set-limit",
        "--database-url",
        &db.url,
        "--workspace",
        &workspace,
        "--limit",
        "300",
    ]);
    lps(&[
        "admin",
        "account",
        "set-plan",
        "--database-url",
        &db.url,
        "--account",
        &account.account_id.to_string(),
        "--plan",
        "ultimate",
        "--credits",
        "42",
    ]);
    let path = format!("/account/credits?workspace_id={workspace}");
    let body = server.get(&account.api_key, &path).await.expect(200).json();
    assert_eq!(body["workspace_limit"], 300);
    assert_eq!(body["plan"], "ultimate");
    assert_eq!(body["remaining"], 42);
    lps(&[
        "admin",
        "workspace",
        "set-limit",
        "--database-url",
        &db.url,
        "--workspace",
        &workspace,
        "--limit",
        "none",
    ]);
    let body = server.get(&account.api_key, &path).await.expect(200).json();
    assert_eq!(body["workspace_limit"], serde_json::Value::Null);
}

#[tokio::test]
async fn credits_need_a_reachable_integer_workspace_id() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let body = server
        .get(&account.api_key, "/account/credits")
        .await
        .expect(422)
        .json();
    assert_eq!(
        body["errors"]["workspace_id"],
        json!(["The workspace id field is required."])
    );
    let body = server
        .get(&account.api_key, "/account/credits?workspace_id=one")
        .await
        .expect(422)
        .json();
    assert_eq!(
        body["errors"]["workspace_id"],
        json!(["The workspace id field must be an integer."])
    );
    let path = format!("/account/credits?workspace_id={}", stranger.workspace_id);
    server.get(&account.api_key, &path).await.expect(403);
}
