//! Two workspaces, two keys: every id of the other workspace is "not found" (or, for a
//! workspace id, forbidden), never data.

use crate::common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn every_foreign_id_is_not_found_never_data() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (other_ws, other_key) = add_workspace(&db, account.account_id, "Other");
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;

    // The other workspace's campaign, lead, audience and job.
    let (campaign, _) = create_campaign(&server, &other_key, other_ws, "Theirs").await;
    let job = upsert(
        &server,
        &other_key,
        json!({"campaign_id": campaign,
        "leads": [{"values": {"email": "secret@example.com", "first_name": "Secret"}}]}),
    )
    .await;
    wait_for_job(&server, &other_key, &job).await;
    let lead = server
        .get(&other_key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json()[0]["lead_id"]
        .clone();
    let audience = server
        .post(
            &other_key,
            "/audiences/create",
            json!({"workspace_id": other_ws, "name": "Theirs", "lead_ids": [lead]}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .clone();

    // Reads by id.
    let reply = server
        .get(key, &format!("/leads/get?lead_id={lead}"))
        .await
        .expect(404);
    assert_eq!(reply.json(), json!({"message": "Lead not found"}));
    let reply = server
        .get(key, &format!("/leads/get-status?job_id={job}"))
        .await
        .expect(404);
    assert_eq!(reply.json(), json!({"status": "not_found"}));
    let reply = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(404);
    assert_eq!(reply.json(), json!({"status": "NOT_FOUND"}));

    // Writes naming their campaign or audience.
    let reply = server
        .post(
            key,
            "/leads/upsert-leads",
            json!({"campaign_id": campaign, "leads": leads("x", 1)}),
        )
        .await
        .expect(404);
    assert_eq!(reply.json()["message"], "Campaign not found");
    let (mine, _) = create_campaign(&server, key, ws, "Mine").await;
    let reply = server
        .post(
            key,
            "/leads/upsert-leads",
            json!({"campaign_id": mine, "audience_id": audience, "leads": leads("x", 1)}),
        )
        .await
        .expect(404);
    assert_eq!(reply.json()["message"], "Audience not found");
    let body = server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "Mine", "lead_ids": [lead]}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(body["lead_count"], 0, "a foreign lead is skipped");

    // Updating their lead by id from my campaign fails the row, and their lead is unchanged.
    let job = upsert(&server, key, json!({"campaign_id": mine, "leads": [{"values": {"lead_id": lead, "first_name": "Hijacked"}}]})).await;
    let status = wait_for_job(&server, key, &job).await;
    assert_eq!(status["errors"][0]["message"], "Lead not found");
    let theirs = server
        .get(&other_key, &format!("/leads/get?lead_id={lead}"))
        .await
        .expect(200)
        .json();
    assert_eq!(theirs["name"], "Secret");

    // The same email in my workspace is a different lead.
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": mine, "leads": [{"values": {"email": "secret@example.com"}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let my_lead = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json()[0]["lead_id"]
        .clone();
    assert_ne!(my_lead, lead);

    // Lists name only my workspace's things; theirs is forbidden by workspace id.
    let search: Value = server
        .get(
            key,
            &format!("/leads/search?workspace_id={ws}&search=secret"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(search["total"], 1);
    assert_eq!(search["leads"][0]["lead_id"], my_lead);
    for path in [
        "/leads/search",
        "/audiences/get-list",
        "/campaigns/get-list",
    ] {
        server
            .get(key, &format!("{path}?workspace_id={other_ws}"))
            .await
            .expect(403);
    }
}
