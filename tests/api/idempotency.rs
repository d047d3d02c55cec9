//! `Idempotency-Key` on the API's POSTs: a retry replays the first answer (one effect), the same
//! key with a different request is a 422, racing requests with one key make one effect, and
//! keys belong to one credential.

use crate::common::*;
use serde_json::{Value, json};

async fn post_with_key(
    server: &Server,
    api_key: &str,
    path: &str,
    key: &str,
    body: &Value,
) -> Reply {
    server
        .send(
            server
                .client
                .post(server.url(path))
                .bearer_auth(api_key)
                .header("Idempotency-Key", key)
                .json(body),
        )
        .await
}

async fn campaign_count(server: &Server, key: &str, ws: i64) -> usize {
    server
        .get(key, &format!("/campaigns/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json()
        .as_array()
        .unwrap()
        .len()
}

#[tokio::test]
async fn a_retry_with_the_same_key_replays_the_first_answer_and_does_nothing_again() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let server = Server::serve(&db, &[]);
    let (campaign, _) = create_campaign(&server, key, ws, "Retried").await;

    // The network failed after the job was accepted: the retry gets the same job, not another.
    let body = json!({"campaign_id": campaign, "leads": leads("retry", 50)});
    let first = post_with_key(&server, key, "/leads/upsert-leads", "upsert-1", &body)
        .await
        .expect(200);
    assert!(first.header("idempotent-replayed").is_none());
    let again = post_with_key(&server, key, "/leads/upsert-leads", "upsert-1", &body)
        .await
        .expect(200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.text, first.text);
    assert!(
        again
            .header("content-type")
            .unwrap()
            .starts_with("application/json")
    );

    // An effect anyone can count: a campaign made once, whatever the retries.
    let made = json!({"workspace_id": ws, "name": "Once"});
    let before = campaign_count(&server, key, ws).await;
    let answers: Vec<Value> = {
        let mut answers = Vec::new();
        for _ in 0..3 {
            answers.push(
                post_with_key(&server, key, "/campaigns/create", "create-once", &made)
                    .await
                    .expect(200)
                    .json(),
            );
        }
        answers
    };
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
    assert_eq!(campaign_count(&server, key, ws).await, before + 1);

    // Refusals are answers too: replayed as they were.
    let invalid = json!({"workspace_id": ws});
    let refused = post_with_key(&server, key, "/campaigns/create", "bad-1", &invalid)
        .await
        .expect(422);
    let replayed = post_with_key(&server, key, "/campaigns/create", "bad-1", &invalid)
        .await
        .expect(422);
    assert_eq!(replayed.text, refused.text);
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));

    // Without the header, nothing changes.
    create_campaign(&server, key, ws, "Plain").await;
    create_campaign(&server, key, ws, "Plain").await;
    assert_eq!(campaign_count(&server, key, ws).await, before + 3);
}

#[tokio::test]
async fn the_same_key_with_a_different_request_is_a_422() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let server = Server::serve(&db, &[]);
    let path = "/campaigns/create";
    post_with_key(
        &server,
        key,
        path,
        "k-1",
        &json!({"workspace_id": ws, "name": "A"}),
    )
    .await
    .expect(200);
    let before = campaign_count(&server, key, ws).await;
    let mismatch = post_with_key(
        &server,
        key,
        path,
        "k-1",
        &json!({"workspace_id": ws, "name": "B"}),
    )
    .await
    .expect(422)
    .json();
    assert!(
        mismatch["message"]
            .as_str()
            .unwrap()
            .contains("Idempotency-Key"),
        "{mismatch}"
    );
    assert!(
        mismatch["errors"]["Idempotency-Key"].is_array(),
        "{mismatch}"
    );
    assert_eq!(campaign_count(&server, key, ws).await, before);

    // Another path with the key is another request too.
    post_with_key(
        &server,
        key,
        "/audiences/create",
        "k-1",
        &json!({"workspace_id": ws, "name": "A"}),
    )
    .await
    .expect(422);

    // A key that is not 1-255 visible characters.
    let bad = post_with_key(
        &server,
        key,
        path,
        "has space",
        &json!({"workspace_id": ws, "name": "C"}),
    )
    .await
    .expect(422)
    .json();
    assert!(bad["errors"]["Idempotency-Key"].is_array(), "{bad}");
    // No credential: the request's own 401, nothing kept.
    post_with_key(
        &server,
        "wrong",
        path,
        "k-2",
        &json!({"workspace_id": ws, "name": "C"}),
    )
    .await
    .expect(401);
}

#[tokio::test]
async fn keys_belong_to_one_credential() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let server = Server::serve(&db, &[]);
    let other = server
        .post(
            key,
            "/generate-api-token",
            json!({"name": "second", "workspace_id": ws}),
        )
        .await
        .expect(200)
        .json();
    let other_key = other["token"]
        .as_str()
        .or(other["api_key"].as_str())
        .expect("a key")
        .to_owned();
    let body = json!({"workspace_id": ws, "name": "Shared key"});
    let first = post_with_key(&server, key, "/campaigns/create", "same", &body)
        .await
        .expect(200);
    let second = post_with_key(&server, &other_key, "/campaigns/create", "same", &body)
        .await
        .expect(200);
    assert!(second.header("idempotent-replayed").is_none());
    assert_ne!(first.json()["campaign_id"], second.json()["campaign_id"]);
}

#[tokio::test]
async fn requests_racing_with_one_key_make_one_effect() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (key, ws) = (account.api_key.clone(), account.workspace_id);
    let server = std::sync::Arc::new(Server::serve(&db, &["--rate-limit-per-minute", "100000"]));
    let before = campaign_count(&server, &key, ws).await;
    let body = json!({"workspace_id": ws, "name": "Raced"});
    let racers: Vec<_> = (0..12)
        .map(|_| {
            let (server, key, body) = (server.clone(), key.clone(), body.clone());
            tokio::spawn(async move {
                post_with_key(&server, &key, "/campaigns/create", "race-1", &body).await
            })
        })
        .collect();
    let mut created = Vec::new();
    for racer in racers {
        let reply = racer.await.unwrap();
        match reply.status {
            200 => created.push(reply.json()["campaign_id"].clone()),
            409 => assert_eq!(reply.header("retry-after"), Some("1")),
            other => panic!("unexpected {other}: {}", reply.text),
        }
    }
    assert!(!created.is_empty());
    assert!(created.iter().all(|id| *id == created[0]), "{created:?}");
    assert_eq!(campaign_count(&server, &key, ws).await, before + 1);
}
