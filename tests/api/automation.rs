//! The workflow-automation group: upsert-lead(-basic), get-leads polling, get-leads-from-job.

use crate::common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn a_test_upsert_imports_nothing_and_shows_a_sample_address() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, slug) = create_campaign(&server, key, ws, "Zap").await;
    let body = server
        .post(
            key,
            "/automation/upsert-lead",
            json!({"workspace_id": ws, "campaign_id": campaign,
            "is_test": true, "email": "test@example.com"}),
        )
        .await
        .expect(200)
        .json();
    assert!(body["message"].is_string());
    assert!(
        body["service_page_url"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/p/{slug}/", server.http))
    );
    assert_eq!(body.as_object().unwrap().len(), 2);
    assert_eq!(lead_total(&server, key, ws).await, 0);
}

#[tokio::test]
async fn upsert_lead_needs_a_callback_and_basic_does_not() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, _) = create_campaign(&server, key, ws, "Zap").await;
    let lead = json!({"workspace_id": ws, "campaign_id": campaign, "email": "ada@example.com",
        "social_profile_url": "https://social.example/in/ada", "company_domain": "example.com",
        "custom_data": {"first_name": "Ada", "plan": "gold", "seats": 12}});
    let body = server
        .post(key, "/automation/upsert-lead", lead.clone())
        .await
        .expect(422)
        .json();
    assert_eq!(
        body["errors"]["callback_url"],
        json!(["The callback url field is required."])
    );
    let body = server
        .post(key, "/automation/upsert-lead-basic", lead)
        .await
        .expect(200)
        .json();
    assert!(body["message"].is_string());
    let job = body["job_id"].as_str().unwrap();
    assert_eq!(body.as_object().unwrap().len(), 2);
    wait_for_job(&server, key, job).await;
    let leads = server
        .get(key, &format!("/automation/get-leads-from-job?job_id={job}"))
        .await
        .expect(200)
        .json();
    let id = leads[0]["lead_id"].as_i64().unwrap();
    let read = server
        .get(key, &format!("/leads/get?lead_id={id}"))
        .await
        .expect(200)
        .json();
    assert_eq!(read["variables"]["plan"], "gold");
    assert_eq!(read["variables"]["seats"], "12");
    assert_eq!(read["variables"]["company_domain"], "example.com");
    assert_eq!(read["name"], "Ada");
}

#[tokio::test]
async fn automation_upserts_check_workspace_and_campaign() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (second, _) = add_workspace(&db, account.account_id, "Second");
    let legacy = legacy_key(&db, account.account_id);
    let server = Server::serve(&db, &[]);
    let (campaign, _) =
        create_campaign(&server, &account.api_key, account.workspace_id, "Zap").await;
    let body = json!({"workspace_id": second, "campaign_id": campaign, "email": "a@b.co", "callback_url": "https://h.example/cb"});
    let reply = server
        .post(&legacy, "/automation/upsert-lead", body)
        .await
        .expect(404);
    assert_eq!(reply.json()["message"], "Campaign not found");
    let body = json!({"workspace_id": account.workspace_id, "campaign_id": 999_999, "email": "a@b.co", "is_test": true});
    server
        .post(&account.api_key, "/automation/upsert-lead", body)
        .await
        .expect(404);
    let body = json!({"workspace_id": second, "campaign_id": campaign, "is_test": true});
    server
        .post(&account.api_key, "/automation/upsert-lead", body)
        .await
        .expect(403);
}

#[tokio::test]
async fn polling_lists_newest_first_with_inclusive_and_exclusive_filters() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, slug) = create_campaign(&server, key, ws, "Poll").await;
    let job = upsert(&server, key, json!({"campaign_id": campaign, "leads": [
        {"values": {"email": "one@example.com", "first_name": "One", "company_name": "Big Co. Ltd", "company_domain": "big.example"}}]}))
    .await;
    wait_for_job(&server, key, &job).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": leads("more", 3)}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let base = format!("/automation/get-leads?workspace_id={ws}&campaign_id={campaign}");
    let all = server.get(key, &base).await.expect(200).json();
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 4);
    let ids: Vec<i64> = all.iter().map(|l| l["id"].as_i64().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(ids, sorted, "newest first");
    let first = &all[3];
    let mut fields: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "company_name",
            "company_name_slug",
            "created_at",
            "domain",
            "email",
            "id",
            "name",
            "service_page_url"
        ]
    );
    assert_eq!(first["company_name_slug"], "big-co-ltd");
    assert_eq!(first["domain"], "big.example");
    assert!(
        first["service_page_url"]
            .as_str()
            .unwrap()
            .contains(&format!("/p/{slug}/"))
    );
    assert!(is_iso8601_micros(&first["created_at"]));

    // last_lead_id is exclusive.
    let after = server
        .get(key, &format!("{base}&last_lead_id={}", ids[3]))
        .await
        .expect(200)
        .json();
    assert_eq!(after.as_array().unwrap().len(), 3);
    // created_after is inclusive.
    let at = all[1]["created_at"].as_str().unwrap();
    let since = server
        .get(key, &format!("{base}&created_after={at}"))
        .await
        .expect(200)
        .json();
    assert!(
        since
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["id"] == all[1]["id"])
    );
    assert!(
        !since
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["id"] == all[3]["id"])
    );
    // limit.
    let limited = server
        .get(key, &format!("{base}&limit=2"))
        .await
        .expect(200)
        .json();
    assert_eq!(limited.as_array().unwrap().len(), 2);
    for bad in ["0", "101"] {
        server
            .get(key, &format!("{base}&limit={bad}"))
            .await
            .expect(422);
    }
    let body = server
        .get(key, &format!("{base}&created_after=someday"))
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["created_after"].is_array());
    // is_test falls back to the most recent lead when nothing matches.
    let newest = ids[0];
    let none = server
        .get(key, &format!("{base}&last_lead_id={newest}"))
        .await
        .expect(200)
        .json();
    assert_eq!(none, json!([]));
    let test = server
        .get(key, &format!("{base}&last_lead_id={newest}&is_test=true"))
        .await
        .expect(200)
        .json();
    assert_eq!(test.as_array().unwrap().len(), 1);
    assert_eq!(test[0]["id"], newest);
}

#[tokio::test]
async fn polling_needs_workspace_and_campaign() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let body: Value = server
        .get(&account.api_key, "/automation/get-leads")
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["workspace_id"].is_array());
    assert!(body["errors"]["campaign_id"].is_array());
    let (theirs, _) = create_campaign(&server, &stranger.api_key, stranger.workspace_id, "T").await;
    let path = format!(
        "/automation/get-leads?workspace_id={}&campaign_id={theirs}",
        account.workspace_id
    );
    let reply = server.get(&account.api_key, &path).await.expect(404);
    assert_eq!(reply.json()["message"], "Campaign not found");
}
