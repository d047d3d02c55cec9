//! `/leads/...`: upserts, imports, job status and results, search, single reads.

use crate::common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn the_typical_flow_from_variables_to_page_addresses() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    // (4) variables, mapping onto their keys; an unknown key creates a variable.
    let path = format!("/workspaces/get-variable-list?workspace_id={ws}");
    let before = server.get(key, &path).await.expect(200).json();
    assert_eq!(before.as_array().unwrap().len(), 5);
    let (campaign, slug) = create_campaign(&server, key, ws, "Spring Launch").await;
    // (5) upsert.
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "from": "crm", "leads": [
            {"values": {"email": "ada@example.com", "first_name": "Ada", "company_name": "Acme", "job_title": "CTO"}},
            {"values": {"social_profile_url": "https://social.example/in/grace", "first_name": "Grace"}},
        ]}),
    )
    .await;
    // (6) poll.
    let status = wait_for_job(&server, key, &job).await;
    assert_eq!(status["status"], "completed");
    assert_eq!(status["processed_rows"], 2);
    assert_eq!(status["total_rows"], 2);
    // (7) read the leads and their pages.
    let leads = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json();
    let leads = leads.as_array().unwrap();
    assert_eq!(leads.len(), 2);
    let prefix = format!("{}/p/{slug}/", server.http);
    for lead in leads {
        let fields: Vec<&str> = lead
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(fields.len(), 5, "{lead}");
        assert!(lead["lead_id"].as_i64().unwrap() > 0);
        let url = lead["service_page_url"].as_str().unwrap();
        let lead_slug = url.strip_prefix(&prefix).unwrap_or_else(|| panic!("{url}"));
        assert!(lead_slug.len() >= 16, "unguessable: {lead_slug}");
    }
    assert_eq!(leads[0]["name"], "Ada");
    assert_eq!(leads[0]["email"], "ada@example.com");
    assert_eq!(leads[0]["company_name"], "Acme");
    assert_eq!(leads[1]["email"], Value::Null);
    let after = server.get(key, &path).await.expect(200).json();
    let custom = &after.as_array().unwrap()[5];
    assert_eq!(custom, &json!({"key": "job_title"}));
}

#[tokio::test]
async fn a_thousand_leads_with_a_few_bad_rows_store_the_rest() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Bulk").await;
    let mut rows = leads("bulk", 1000);
    rows[10] = json!({"values": {"first_name": "No contact"}});
    rows[500] = json!({"values": {"email": "not-an-email"}});
    rows[999] = json!("not an object");
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": rows}),
    )
    .await;
    let status = wait_for_job(&server, key, &job).await;
    assert_eq!(status["status"], "completed");
    assert_eq!(status["processed_rows"], 1000);
    assert_eq!(status["failed_rows"], 3);
    let failed: Vec<i64> = status["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["index"].as_i64().unwrap())
        .collect();
    assert_eq!(failed, [10, 500, 999]);
    let stored = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json();
    assert_eq!(stored.as_array().unwrap().len(), 997);
    assert_eq!(lead_total(&server, key, account.workspace_id).await, 997);
    // The finished job keeps each row's outcome (above) and none of the values it was sent.
    let (chunks, holding_values) = finished_chunks(&db).await;
    assert!(chunks >= 1, "the job's chunks are done");
    assert_eq!(holding_values, 0, "finished chunks keep no input");
}

/// Finished staged chunks in the database, and how many still hold any input value.
async fn finished_chunks(db: &TestDb) -> (i64, i64) {
    use sqlx::Connection;
    let mut conn = db.connect().await;
    let counts = sqlx::query_as(
        "SELECT CAST(COUNT(*) AS BIGINT),
                CAST(COALESCE(SUM(CASE WHEN payload <> '[]' THEN 1 ELSE 0 END), 0) AS BIGINT)
         FROM job_chunks WHERE status = 'done'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    conn.close().await.ok();
    counts
}

#[tokio::test]
async fn the_same_email_in_any_case_or_profile_url_is_the_same_lead() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Dedupe").await;
    let first = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": [
            {"values": {"email": "Ada@Example.com", "first_name": "Ada"}},
            {"values": {"social_profile_url": "https://social.example/in/grace"}},
        ]}),
    )
    .await;
    wait_for_job(&server, key, &first).await;
    let second = upsert(&server, key, json!({"campaign_id": campaign, "leads": [
        {"values": {"email": "ada@example.COM", "company_name": "Acme"}},
        {"values": {"social_profile_url": "https://social.example/in/grace", "first_name": "Grace"}},
        {"values": {"email": "ADA@example.com", "job_title": "CTO"}},
    ]}))
    .await;
    wait_for_job(&server, key, &second).await;
    assert_eq!(lead_total(&server, key, account.workspace_id).await, 2);
    let first_ids: Vec<Value> = job_lead_ids(&server, key, &first).await;
    let second_ids: Vec<Value> = job_lead_ids(&server, key, &second).await;
    assert_eq!(first_ids, second_ids);
    let ada = server
        .get(key, &format!("/leads/get?lead_id={}", first_ids[0]))
        .await
        .expect(200)
        .json();
    assert_eq!(ada["variables"]["first_name"], "Ada");
    assert_eq!(ada["variables"]["company_name"], "Acme");
    assert_eq!(ada["variables"]["job_title"], "CTO");
}

async fn job_lead_ids(server: &Server, key: &str, job: &str) -> Vec<Value> {
    server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lead_id"].clone())
        .collect()
}

#[tokio::test]
async fn an_existing_lead_is_updated_by_lead_id_or_by_page_address() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Updates").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": [
        {"values": {"email": "ada@example.com", "first_name": "Ada"}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let lead = &server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json()[0];
    let id = lead["lead_id"].as_i64().unwrap();
    let url = lead["service_page_url"].as_str().unwrap().to_owned();

    let by_id = server
        .post(
            key,
            "/leads/upsert-lead",
            json!({"campaign_id": campaign, "lead_id": id,
            "values": {"first_name": "Augusta", "email": "augusta@example.com"}}),
        )
        .await
        .expect(200)
        .json();
    wait_for_job(&server, key, by_id["job_id"].as_str().unwrap()).await;
    let by_url = server
        .post(
            key,
            "/leads/upsert-lead",
            json!({"campaign_id": campaign, "service_page_url": url,
            "values": {"company_name": "Analytical Engines"}}),
        )
        .await
        .expect(200)
        .json();
    wait_for_job(&server, key, by_url["job_id"].as_str().unwrap()).await;

    let read = server
        .get(key, &format!("/leads/get?lead_id={id}"))
        .await
        .expect(200)
        .json();
    assert_eq!(read["name"], "Augusta");
    assert_eq!(read["email"], "augusta@example.com");
    assert_eq!(read["company_name"], "Analytical Engines");
    assert_eq!(
        read["service_page_url"],
        url.as_str(),
        "the page address is stable"
    );
    assert_eq!(lead_total(&server, key, account.workspace_id).await, 1);
}

#[tokio::test]
async fn an_unknown_lead_id_fails_its_row_only() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "C").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": [
        {"values": {"lead_id": 987654, "first_name": "Ghost"}},
        {"values": {"email": "real@example.com"}}]}),
    )
    .await;
    let status = wait_for_job(&server, key, &job).await;
    assert_eq!(
        status["errors"],
        json!([{"index": 0, "message": "Lead not found"}])
    );
    assert_eq!(lead_total(&server, key, account.workspace_id).await, 1);
}

#[tokio::test]
async fn upsert_lead_without_any_named_field_lists_them() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "C").await;
    let body = server
        .post(
            key,
            "/leads/upsert-lead",
            json!({"campaign_id": campaign, "values": {"favourite": "x"}}),
        )
        .await
        .expect(422)
        .json();
    let message = body["errors"]["values"][0].as_str().unwrap();
    for field in [
        "first_name",
        "email",
        "company_name",
        "company_domain",
        "social_profile_url",
    ] {
        assert!(message.contains(field), "{message}");
    }
    assert!(body["message"].as_str().unwrap().contains("first_name"));
}

#[tokio::test]
async fn an_unknown_or_foreign_campaign_is_not_found() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (foreign, _) =
        create_campaign(&server, &stranger.api_key, stranger.workspace_id, "Theirs").await;
    for campaign in [999_999, foreign] {
        for (path, body) in [
            (
                "/leads/upsert-leads",
                json!({"campaign_id": campaign, "leads": leads("x", 1)}),
            ),
            (
                "/leads/upsert-lead",
                json!({"campaign_id": campaign, "values": {"email": "a@b.co"}}),
            ),
        ] {
            let reply = server.post(&account.api_key, path, body).await.expect(404);
            assert_eq!(reply.json(), json!({"message": "Campaign not found"}));
        }
    }
}

#[tokio::test]
async fn upserts_validate_their_bodies() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let body = server
        .post(key, "/leads/upsert-leads", json!({}))
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["campaign_id"].is_array());
    assert!(body["errors"]["leads"].is_array());
    let body = server
        .post(
            key,
            "/leads/upsert-leads",
            json!({"campaign_id": 1, "leads": "nope",
            "callback_url": "not a url", "send_email": "maybe"}),
        )
        .await
        .expect(422)
        .json();
    assert_eq!(
        body["errors"]["leads"],
        json!(["The leads field must be an array."])
    );
    assert_eq!(
        body["errors"]["send_email"],
        json!(["The send email field must be true or false."])
    );
    let body = server
        .post(
            key,
            "/leads/upsert-leads",
            json!({"campaign_id": 1, "leads": [], "callback_url": "ftp://x"}),
        )
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["callback_url"].is_array());
    assert!(body["errors"]["leads"].is_array());
}

#[tokio::test]
async fn job_reads_of_unknown_jobs_answer_the_prescribed_bodies() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let reply = server
        .get(key, "/leads/get-status?job_id=nope")
        .await
        .expect(404);
    assert_eq!(reply.json(), json!({"status": "not_found"}));
    for path in [
        "/leads/get-leads?job_id=nope",
        "/automation/get-leads-from-job?job_id=nope",
    ] {
        let reply = server.get(key, path).await.expect(404);
        assert_eq!(reply.json(), json!({"status": "NOT_FOUND"}));
        assert!(reply.header("x-ratelimit-limit").is_some());
    }
    let body = server
        .get(key, "/leads/get-status")
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["job_id"].is_array());
}

#[tokio::test]
async fn a_job_without_leads_yet_answers_503_no_leads() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    // A core that serves the API but processes no jobs: the job stays pending.
    let server = Server::serve(&db, &["--job-workers", "0"]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Slow").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": leads("w", 3)}),
    )
    .await;
    let status = server
        .get(key, &format!("/leads/get-status?job_id={job}"))
        .await
        .expect(200)
        .json();
    assert_eq!(status["status"], "pending");
    assert_eq!(status["processed_rows"], 0);
    assert_eq!(status["total_rows"], 3);
    for path in ["/leads/get-leads", "/automation/get-leads-from-job"] {
        let reply = server
            .get(key, &format!("{path}?job_id={job}"))
            .await
            .expect(503);
        let body = reply.json();
        assert_eq!(body["status"], "NO_LEADS");
        assert!(body["message"].is_string());
        assert_eq!(body.as_object().unwrap().len(), 2);
    }
    // A process with workers picks the job up.
    drop(server);
    let server = Server::serve(&db, &[]);
    assert_eq!(
        wait_for_job(&server, key, &job).await["status"],
        "completed"
    );
    server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200);
}

#[tokio::test]
async fn a_sync_import_answers_counts_at_once() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    server
        .post(
            key,
            "/leads/import-to-workspace",
            json!({"workspace_id": ws, "sync": true,
            "leads": [{"values": {"email": "old@example.com"}}]}),
        )
        .await
        .expect(200);
    let body = server
        .post(
            key,
            "/leads/import-to-workspace",
            json!({"workspace_id": ws, "sync": true, "leads": [
                {"values": {"email": "new@example.com"}},
                {"values": {"email": "OLD@example.com", "first_name": "Old"}},
                {"values": {"email": "new@example.com"}},
                {"values": {"first_name": "nobody"}},
            ]}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(body["job_id"], Value::Null);
    assert_eq!(body["imported_count"], 1);
    assert_eq!(body["duplicate_count"], 2);
    assert_eq!(body["lead_ids"].as_array().unwrap().len(), 2);
    assert_eq!(body["errors"][0]["index"], 3);
    assert!(body["success"].is_boolean());
    let fields: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(fields.len(), 6);
    assert_eq!(lead_total(&server, key, ws).await, 2);
}

#[tokio::test]
async fn imports_queue_by_default_and_with_campaigns_or_enrichment() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, _) = create_campaign(&server, key, ws, "Imported").await;
    for extra in [
        json!({}),
        json!({"sync": true, "campaign_ids": [campaign]}),
        json!({"sync": true, "enrich_data": true}),
    ] {
        let mut body = json!({"workspace_id": ws, "leads": leads("q", 2)});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let reply = server
            .post(key, "/leads/import-to-workspace", body)
            .await
            .expect(200)
            .json();
        assert_eq!(reply.as_object().unwrap().len(), 1, "{reply}");
        let job = reply["job_id"].as_str().unwrap();
        assert_eq!(wait_for_job(&server, key, job).await["status"], "completed");
    }
    let reply = server
        .post(
            key,
            "/leads/import-to-workspace",
            json!({"workspace_id": ws, "campaign_ids": [999999], "leads": leads("z", 1)}),
        )
        .await
        .expect(404);
    assert_eq!(reply.json()["message"], "Campaign not found");
}

#[tokio::test]
async fn search_matches_name_email_company_and_filters() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (first, _) = create_campaign(&server, key, ws, "First").await;
    let (second, _) = create_campaign(&server, key, ws, "Second").await;
    let job = upsert(&server, key, json!({"campaign_id": first, "leads": [
        {"values": {"email": "ada@lovelace.example", "first_name": "Ada", "company_name": "Engines Ltd", "company_domain": "engines.example"}},
        {"values": {"email": "grace@navy.example", "first_name": "Grace", "company_name": "Navy"}}]}))
    .await;
    wait_for_job(&server, key, &job).await;
    let job = upsert(&server, key, json!({"campaign_id": second, "leads": [
        {"values": {"email": "linus@kernel.example", "first_name": "Linus", "company_name": "Kernel 100%_Co"}}]}))
    .await;
    wait_for_job(&server, key, &job).await;

    let search = |query: String| {
        let server = &server;
        async move {
            server
                .get(key, &format!("/leads/search?workspace_id={ws}&{query}"))
                .await
                .expect(200)
                .json()
        }
    };
    let body = search("search=ENGINES".into()).await;
    assert_eq!(
        (body["total"].as_i64(), body["returned"].as_i64()),
        (Some(1), Some(1))
    );
    let entry = &body["leads"][0];
    let fields: Vec<&str> = entry
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(fields.len(), 7, "{entry}");
    assert_eq!(entry["company_domain"], "engines.example");
    assert!(is_iso8601_micros(&entry["created_at"]));
    assert_eq!(search("search=navy.example".into()).await["total"], 1);
    assert_eq!(search("search=grace".into()).await["total"], 1);
    assert_eq!(
        search("search=100%25_".into()).await["total"],
        1,
        "wildcards are literal"
    );
    assert_eq!(search("search=%25".into()).await["total"], 1);
    for form in [
        format!("campaign_ids[]={first}"),
        format!("campaign_ids={first}"),
        format!("campaign_ids={first},{}", 999_999),
    ] {
        assert_eq!(search(form.clone()).await["total"], 2, "{form}");
    }
    for form in [
        format!("campaign_ids[]={first}&campaign_ids[]={second}"),
        format!("campaign_ids={first}&campaign_ids={second}"),
        format!("campaign_ids={first},{second}"),
    ] {
        assert_eq!(search(form.clone()).await["total"], 3, "{form}");
    }
    let limited = search("limit=2".into()).await;
    assert_eq!(
        (limited["total"].as_i64(), limited["returned"].as_i64()),
        (Some(3), Some(2))
    );
    assert_eq!(limited["leads"][0]["name"], "Linus", "newest first");
    assert_eq!(search("audience_ids=0".into()).await["total"], 3);
    assert_eq!(search("engagement[]=all".into()).await["total"], 3);
}

#[tokio::test]
async fn search_validates_limit_and_engagement() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    for limit in ["0", "101", "-1"] {
        let body = server
            .get(
                key,
                &format!("/leads/search?workspace_id={ws}&limit={limit}"),
            )
            .await
            .expect(422)
            .json();
        assert_eq!(
            body["errors"]["limit"],
            json!(["The limit field must be between 1 and 100."])
        );
    }
    let body = server
        .get(
            key,
            &format!("/leads/search?workspace_id={ws}&engagement=clicked_twice"),
        )
        .await
        .expect(422)
        .json();
    assert!(body["errors"]["engagement"].is_array());
    for valid in [
        "page_viewed",
        "button_clicked",
        "scroll_100_percent",
        "form_submitted",
    ] {
        server
            .get(
                key,
                &format!("/leads/search?workspace_id={ws}&engagement[]={valid}"),
            )
            .await
            .expect(200);
    }
    server.get(key, "/leads/search").await.expect(422);
}

#[tokio::test]
async fn a_single_lead_reads_with_variables_audiences_and_enrichments() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, _) = create_campaign(&server, key, ws, "Read").await;
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": [{"values": {
        "email": "ada@example.com", "social_profile_url": "https://social.example/in/ada",
        "first_name": "Ada", "favourite_number": 42}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let id = job_lead_ids(&server, key, &job).await[0].as_i64().unwrap();
    let audience = server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "Pioneers", "lead_ids": [id]}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .clone();
    let lead = server
        .get(key, &format!("/leads/get?lead_id={id}"))
        .await
        .expect(200)
        .json();
    assert_eq!(lead["lead_id"], id);
    assert_eq!(
        lead["variables"]["social_profile_url"],
        "https://social.example/in/ada"
    );
    assert_eq!(lead["variables"]["favourite_number"], "42");
    assert_eq!(
        lead["audiences"],
        json!([{"id": audience, "name": "Pioneers"}])
    );
    assert_eq!(lead["pending_enrichments"], json!([]));
    assert!(is_iso8601_micros(&lead["created_at"]));
    assert!(
        lead["service_page_url"]
            .as_str()
            .unwrap()
            .contains("/p/read/")
    );
    let reply = server
        .get(key, "/leads/get?lead_id=999999")
        .await
        .expect(404);
    assert_eq!(reply.json(), json!({"message": "Lead not found"}));
    server.get(key, "/leads/get?lead_id=abc").await.expect(422);
}
