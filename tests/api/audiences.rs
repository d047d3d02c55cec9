//! The seven `/audiences/...` paths, with audience 0, the Default Audience.

use crate::common::*;
use serde_json::{Value, json};

/// A workspace with a campaign and `n` stored leads; returns (campaign, lead ids).
async fn with_leads(server: &Server, account: &Account, n: usize) -> (i64, Vec<i64>) {
    let (campaign, _) =
        create_campaign(server, &account.api_key, account.workspace_id, "Base").await;
    let job = upsert(
        server,
        &account.api_key,
        json!({"campaign_id": campaign, "leads": leads("a", n)}),
    )
    .await;
    wait_for_job(server, &account.api_key, &job).await;
    let ids = server
        .get(&account.api_key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lead_id"].as_i64().unwrap())
        .collect();
    (campaign, ids)
}

#[tokio::test]
async fn the_default_audience_comes_first_with_its_live_count() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (_, ids) = with_leads(&server, &account, 3).await;
    let created = server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "VIP",
            "description": "Top accounts", "color": "#1A2B3C", "lead_ids": [ids[0]]}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        created,
        json!({"audience_id": created["audience_id"], "name": "VIP", "description": "Top accounts", "lead_count": 1})
    );
    let listed = server
        .get(key, &format!("/audiences/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2);
    let default = &listed[0];
    assert_eq!(default["id"], 0);
    assert_eq!(default["name"], "Default Audience");
    assert_eq!(default["lead_count"], 2);
    assert_eq!(default["project_id"], ws);
    let vip = &listed[1];
    for field in [
        "id",
        "name",
        "description",
        "color",
        "lead_count",
        "project_id",
        "created_at",
        "updated_at",
    ] {
        assert!(vip.get(field).is_some(), "{field} in {vip}");
    }
    assert_eq!(vip.as_object().unwrap().len(), 8);
    assert_eq!(vip["color"], "#1a2b3c");
    assert_eq!(vip["lead_count"], 1);
    assert!(is_iso8601_micros(&vip["created_at"]) && is_iso8601_micros(&vip["updated_at"]));
}

#[tokio::test]
async fn a_colour_that_is_not_hex_is_a_422() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    for color in ["red", "#12345", "#xyzxyz"] {
        let body = server
            .post(
                &account.api_key,
                "/audiences/create",
                json!({"workspace_id": account.workspace_id, "name": "A", "color": color}),
            )
            .await
            .expect(422)
            .json();
        assert!(body["errors"]["color"].is_array(), "{color}");
    }
    let body = server
        .post(
            &account.api_key,
            "/audiences/create",
            json!({"workspace_id": account.workspace_id}),
        )
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["name"].is_array());
}

#[tokio::test]
async fn adding_unknown_or_foreign_leads_counts_them_as_skipped() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (_, ids) = with_leads(&server, &account, 2).await;
    let (_, foreign) = with_leads(&server, &stranger, 1).await;
    let key = &account.api_key;
    let ws = account.workspace_id;
    let audience = server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "A"}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .as_i64()
        .unwrap();
    let body = server
        .post(
            key,
            "/audiences/add-leads",
            json!({"workspace_id": ws, "audience_id": audience,
            "lead_ids": [ids[0], ids[1], foreign[0], 999_999]}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        body,
        json!({"audience_id": audience, "added": 2, "skipped": 2, "lead_count": 2})
    );
    let body = server
        .post(
            key,
            "/audiences/remove-leads",
            json!({"workspace_id": ws, "audience_id": audience,
            "lead_ids": [ids[0], foreign[0]]}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        body,
        json!({"audience_id": audience, "removed": 1, "lead_count": 1})
    );
    // Removing does not delete the lead.
    server
        .get(key, &format!("/leads/get?lead_id={}", ids[0]))
        .await
        .expect(200);
    // The stranger's lead is untouched and still not in any audience.
    let theirs = server
        .get(
            &stranger.api_key,
            &format!("/leads/get?lead_id={}", foreign[0]),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(theirs["audiences"], json!([]));
}

#[tokio::test]
async fn deleting_an_audience_keeps_its_leads() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (_, ids) = with_leads(&server, &account, 3).await;
    let key = &account.api_key;
    let ws = account.workspace_id;
    let audience = server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "Gone", "lead_ids": ids}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .as_i64()
        .unwrap();
    let body = server
        .post(
            key,
            "/audiences/delete",
            json!({"workspace_id": ws, "audience_id": audience}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(body["audience_id"], audience);
    assert_eq!(body["leads_kept"], 3);
    assert!(body["message"].is_string());
    assert_eq!(lead_total(&server, key, ws).await, 3);
    let listed = server
        .get(key, &format!("/audiences/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["lead_count"], 3, "back in the Default Audience");
    let reply = server
        .post(
            key,
            "/audiences/delete",
            json!({"workspace_id": ws, "audience_id": audience}),
        )
        .await
        .expect(404);
    assert_eq!(reply.json()["message"], "Audience not found");
}

/// Ids of the leads with a page in the campaign.
async fn pages_in(server: &Server, key: &str, ws: i64, campaign: i64) -> Vec<i64> {
    let path = format!("/automation/get-leads?workspace_id={ws}&campaign_id={campaign}");
    server
        .get(key, &path)
        .await
        .expect(200)
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn linking_gives_present_and_future_members_pages_and_unlinking_keeps_them() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (_, ids) = with_leads(&server, &account, 2).await;
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (target, target_slug) = create_campaign(&server, key, ws, "Target").await;
    let audience = server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "Seg", "lead_ids": [ids[0]]}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .as_i64()
        .unwrap();
    assert!(pages_in(&server, key, ws, target).await.is_empty());
    let body = server
        .post(
            key,
            "/audiences/link-to-campaign",
            json!({"workspace_id": ws, "audience_id": audience, "campaign_id": target}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(body["audience_id"], audience);
    assert_eq!(body["campaign_id"], target);
    assert!(body["message"].is_string());
    assert_eq!(pages_in(&server, key, ws, target).await, vec![ids[0]]);
    // A member added later gets a page too.
    server
        .post(
            key,
            "/audiences/add-leads",
            json!({"workspace_id": ws, "audience_id": audience, "lead_ids": [ids[1]]}),
        )
        .await
        .expect(200);
    let mut pages = pages_in(&server, key, ws, target).await;
    pages.sort_unstable();
    assert_eq!(pages, ids);
    // So does a lead upserted into the audience through another campaign.
    let (other, _) = create_campaign(&server, key, ws, "Other").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": other, "audience_id": audience,
        "leads": [{"values": {"email": "later@example.com"}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    assert_eq!(pages_in(&server, key, ws, target).await.len(), 3);
    let lead = &server
        .get(
            key,
            &format!("/automation/get-leads?workspace_id={ws}&campaign_id={target}&limit=1"),
        )
        .await
        .expect(200)
        .json()[0];
    assert!(
        lead["service_page_url"]
            .as_str()
            .unwrap()
            .contains(&format!("/p/{target_slug}/"))
    );

    let body = server
        .post(
            key,
            "/audiences/unlink-from-campaign",
            json!({"workspace_id": ws, "audience_id": audience, "campaign_id": target}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(body.as_object().unwrap().len(), 3);
    assert_eq!(
        pages_in(&server, key, ws, target).await.len(),
        3,
        "existing pages stay"
    );
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": other, "audience_id": audience,
        "leads": [{"values": {"email": "after-unlink@example.com"}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    assert_eq!(
        pages_in(&server, key, ws, target).await.len(),
        3,
        "no new pages after unlinking"
    );
}

#[tokio::test]
async fn audience_zero_cannot_be_changed_and_foreign_ids_are_not_found() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, _) = create_campaign(&server, key, ws, "C").await;
    let theirs = server
        .post(
            &stranger.api_key,
            "/audiences/create",
            json!({"workspace_id": stranger.workspace_id, "name": "Theirs"}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .clone();
    let (their_campaign, _) =
        create_campaign(&server, &stranger.api_key, stranger.workspace_id, "TC").await;
    let mine = server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "Mine"}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .clone();
    for (path, body) in [
        (
            "/audiences/add-leads",
            json!({"workspace_id": ws, "audience_id": 0, "lead_ids": [1]}),
        ),
        (
            "/audiences/delete",
            json!({"workspace_id": ws, "audience_id": 0}),
        ),
        (
            "/audiences/link-to-campaign",
            json!({"workspace_id": ws, "audience_id": 0, "campaign_id": campaign}),
        ),
    ] {
        let body = server.post(key, path, body).await.expect(422).json();
        assert!(body["errors"]["audience_id"].is_array(), "{path}");
    }
    let reply = server
        .post(
            key,
            "/audiences/add-leads",
            json!({"workspace_id": ws, "audience_id": theirs, "lead_ids": [1]}),
        )
        .await
        .expect(404);
    assert_eq!(reply.json()["message"], "Audience not found");
    let reply = server
        .post(
            key,
            "/audiences/link-to-campaign",
            json!({"workspace_id": ws, "audience_id": mine, "campaign_id": their_campaign}),
        )
        .await
        .expect(404);
    assert_eq!(reply.json()["message"], "Campaign not found");
    server
        .post(
            key,
            "/audiences/delete",
            json!({"workspace_id": stranger.workspace_id, "audience_id": theirs}),
        )
        .await
        .expect(403);
    let body: Value = server
        .post(key, "/audiences/add-leads", json!({"workspace_id": ws}))
        .await
        .expect(422)
        .json();
    for field in ["audience_id", "lead_ids"] {
        assert!(body["errors"][field].is_array(), "{field}");
    }
}

#[tokio::test]
async fn any_number_of_lead_ids_can_be_added_and_removed() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (_, ids) = with_leads(&server, &account, 3).await;
    let key = &account.api_key;
    let ws = account.workspace_id;
    let audience = server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "Many"}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .clone();
    // More ids than SQLite takes parameters in one statement (32,766).
    let mut many: Vec<i64> = (1_000_000..1_040_000).collect();
    many.extend(&ids);
    let body = server
        .post(
            key,
            "/audiences/add-leads",
            json!({"workspace_id": ws, "audience_id": audience, "lead_ids": many}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        (body["added"].as_i64(), body["skipped"].as_i64()),
        (Some(3), Some(40_000))
    );
    let body = server
        .post(
            key,
            "/audiences/remove-leads",
            json!({"workspace_id": ws, "audience_id": audience, "lead_ids": many}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        (body["removed"].as_i64(), body["lead_count"].as_i64()),
        (Some(3), Some(0))
    );
}
