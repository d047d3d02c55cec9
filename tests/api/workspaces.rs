//! `GET /workspaces/get-list`, `GET /workspaces/get-variable-list`, and workspace binding.

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn a_bound_key_lists_exactly_its_one_workspace() {
    let db = TestDb::new();
    let account = bootstrap(&db, &["--workspace-name", "Sales EU"]);
    add_workspace(&db, account.account_id, "Sales US");
    let server = Server::serve(&db, &[]);
    let reply = server
        .get(&account.api_key, "/workspaces/get-list")
        .await
        .expect(200);
    assert_eq!(
        reply.json(),
        json!([{"id": account.workspace_id, "name": "Sales EU", "slug": "sales-eu"}])
    );
}

#[tokio::test]
async fn a_legacy_key_lists_every_workspace_of_its_account_only() {
    let db = TestDb::new();
    let account = bootstrap(&db, &["--workspace-name", "Alpha"]);
    let (second, _) = add_workspace(&db, account.account_id, "Beta");
    let other = bootstrap(&db, &["--workspace-name", "Foreign"]);
    let legacy = legacy_key(&db, account.account_id);
    let server = Server::serve(&db, &[]);
    let listed = server
        .get(&legacy, "/workspaces/get-list")
        .await
        .expect(200)
        .json();
    let ids: Vec<i64> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![account.workspace_id, second]);
    assert!(!ids.contains(&other.workspace_id));
}

#[tokio::test]
async fn slugs_stay_unique_when_names_repeat() {
    let db = TestDb::new();
    let account = bootstrap(&db, &["--workspace-name", "Team"]);
    let (_, key) = add_workspace(&db, account.account_id, "Team");
    let server = Server::serve(&db, &[]);
    let listed = server
        .get(&key, "/workspaces/get-list")
        .await
        .expect(200)
        .json();
    assert_eq!(listed[0]["slug"], "team-2");
}

#[tokio::test]
async fn variable_list_has_the_five_defaults_with_help_text() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let path = format!(
        "/workspaces/get-variable-list?workspace_id={}",
        account.workspace_id
    );
    let listed = server.get(&account.api_key, &path).await.expect(200).json();
    let keys: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "first_name",
            "email",
            "company_name",
            "company_domain",
            "social_profile_url"
        ]
    );
    for variable in listed.as_array().unwrap() {
        assert!(variable["helpText"].as_str().is_some_and(|t| !t.is_empty()));
        assert_eq!(variable.as_object().unwrap().len(), 2);
    }
}

#[tokio::test]
async fn variable_list_without_workspace_id_is_a_validation_error() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let reply = server
        .get(&account.api_key, "/workspaces/get-variable-list")
        .await
        .expect(422);
    assert_eq!(
        reply.json(),
        json!({
            "message": "The workspace id field is required.",
            "errors": {"workspace_id": ["The workspace id field is required."]}
        })
    );
}

#[tokio::test]
async fn variable_list_with_non_integer_workspace_id_is_a_validation_error() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    for bad in ["abc", "1.5", "1e3"] {
        let path = format!("/workspaces/get-variable-list?workspace_id={bad}");
        let body = server.get(&account.api_key, &path).await.expect(422).json();
        assert_eq!(
            body["errors"]["workspace_id"],
            json!(["The workspace id field must be an integer."]),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_workspace_of_another_key_is_forbidden() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (second, second_key) = add_workspace(&db, account.account_id, "Second");
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    for (key, workspace) in [
        (&account.api_key, second),
        (&second_key, account.workspace_id),
        (&account.api_key, stranger.workspace_id),
        (&account.api_key, 999_999),
    ] {
        let path = format!("/workspaces/get-variable-list?workspace_id={workspace}");
        let reply = server.get(key, &path).await.expect(403);
        assert_eq!(
            reply.json(),
            json!({"message": "Workspace not found or access not permitted."})
        );
    }
}

#[tokio::test]
async fn a_legacy_key_reaches_every_workspace_of_its_account() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (second, _) = add_workspace(&db, account.account_id, "Second");
    let stranger = bootstrap(&db, &[]);
    let legacy = legacy_key(&db, account.account_id);
    let server = Server::serve(&db, &[]);
    for workspace in [account.workspace_id, second] {
        let path = format!("/workspaces/get-variable-list?workspace_id={workspace}");
        server.get(&legacy, &path).await.expect(200);
    }
    let path = format!(
        "/workspaces/get-variable-list?workspace_id={}",
        stranger.workspace_id
    );
    server.get(&legacy, &path).await.expect(403);
}
