//! `GET /workspaces/get-list`, `GET /workspaces/get-variable-list`, workspace binding, and a
//! workspace's own settings (`/workspaces/get-settings`, `/workspaces/update-settings`).

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

/// A workspace's own settings (extension): its hot threshold replaces the server's for its
/// leads (`lead.hot`, the app's badge, `hot_only`), and its time zone is its channels' default.
#[tokio::test]
async fn a_workspace_sets_when_its_leads_are_hot_and_its_time_zone() {
    let s = crate::oauth::setup_with(&["--hot-score", "50"]).await;
    let (server, key, ws) = (&s.server, &s.account.api_key, s.account.workspace_id);
    let settings = server
        .get(key, &format!("/workspaces/get-settings?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(
        settings,
        json!({"workspace_id": ws, "hot_score": 50.0, "hot_score_is_default": true,
               "time_zone": "UTC"})
    );
    for (body, field) in [
        (json!({"workspace_id": ws, "hot_score": -1}), "hot_score"),
        (json!({"workspace_id": ws, "hot_score": 1001}), "hot_score"),
        (
            json!({"workspace_id": ws, "hot_score": "warm"}),
            "hot_score",
        ),
        (
            json!({"workspace_id": ws, "time_zone": "Mars/Olympus_Mons"}),
            "time_zone",
        ),
    ] {
        let refused = server
            .post(key, "/workspaces/update-settings", body.clone())
            .await
            .expect(422)
            .json();
        assert!(refused["errors"][field].is_array(), "{body}: {refused}");
    }
    server
        .post(
            key,
            "/workspaces/update-settings",
            json!({"workspace_id": s.second_workspace + 1000, "hot_score": 2}),
        )
        .await
        .expect(403);
    let changed = server
        .post(
            key,
            "/workspaces/update-settings",
            json!({"workspace_id": ws, "hot_score": 4, "time_zone": "Europe/Berlin"}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        changed,
        json!({"workspace_id": ws, "hot_score": 4.0, "hot_score_is_default": false,
               "time_zone": "Europe/Berlin"})
    );
    // Left out: unchanged.
    let kept = server
        .post(
            key,
            "/workspaces/update-settings",
            json!({"workspace_id": ws}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(kept, changed);

    // A view (1) and a form (5) cross the workspace's 4, far below the server's 50.
    let (_, pages) = live_campaign(server, key, ws, "Warm", 1).await;
    let (lead, page) = &pages[0];
    send_person_beacon(
        server,
        page,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        &format!("{:032x}", 3),
    )
    .await
    .expect(204);
    crate::engagement::submit(server, page, &[("email", "warm-0@example.com")])
        .await
        .expect(200);
    let started = std::time::Instant::now();
    loop {
        let got = server
            .get(key, &format!("/leads/get?lead_id={lead}"))
            .await
            .expect(200)
            .json();
        if got["engagement"]["hot_at"].is_string() {
            break;
        }
        assert!(started.elapsed().as_secs() < 20, "{got}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let hot = server
        .get(
            key,
            &format!("/leads/search?workspace_id={ws}&hot_only=true"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(hot["total"], 1, "{hot}");
    let mut owner = crate::oauth::Browser::new(server);
    owner
        .log_in("owner@example.com", crate::oauth::PASSWORD, "/dashboard")
        .await;
    let (_, _, list) = owner
        .get(&format!("/dashboard/leads?workspace_id={ws}"))
        .await;
    assert!(list.contains("a score of 4.0 or more"), "{list}");
    assert!(
        list.contains("<strong class=\"hot\">Hot</strong>"),
        "{list}"
    );

    // An owner changes them in Settings too.
    let (_, _, page) = owner
        .get(&format!("/dashboard/settings?workspace_id={ws}"))
        .await;
    assert!(page.contains("value=\"Europe&#x2f;Berlin\""), "{page}");
    assert!(
        page.contains("<option value=\"Pacific&#x2f;Kiritimati\">"),
        "{page}"
    );
    let csrf = crate::oauth::hidden(&page, "csrf_token");
    let (status, _, _) = owner
        .post(
            "/dashboard/workspace/settings",
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", &ws.to_string()),
                ("hot_score", "0"),
                ("time_zone", "Pacific/Kiritimati"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let now = server
        .get(key, &format!("/workspaces/get-settings?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(now["hot_score"], 0.0);
    assert_eq!(now["time_zone"], "Pacific/Kiritimati");
    // No lead is hot at 0; a new channel's days are the workspace's.
    let hot = server
        .get(
            key,
            &format!("/leads/search?workspace_id={ws}&hot_only=true"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(hot["total"], 0, "{hot}");
    let channel = server
        .post(
            key,
            "/notifications/channels/create",
            json!({"workspace_id": ws, "kind": "slack",
                   "url": "https://hooks.slack.com/services/T0/B0/X"}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(channel["time_zone"], "Pacific/Kiritimati");
}
