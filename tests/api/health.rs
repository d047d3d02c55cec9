//! Health over HTTP: `/healthz` (the process is up) and `/readyz` (core, its database and its
//! migrations), with no credential.

use crate::common::*;

async fn get(server: &Server, path: &str) -> Reply {
    server.send(server.client.get(server.url_of(path))).await
}

#[tokio::test]
async fn a_running_server_is_healthy_and_ready_without_a_credential() {
    let db = TestDb::new();
    let server = Server::serve(&db, &[]);
    let health = get(&server, "/healthz").await.expect(200);
    assert_eq!(health.json(), serde_json::json!({"status": "ok"}));
    let ready = get(&server, "/readyz").await.expect(200);
    assert!(
        ready
            .header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let body = ready.json();
    assert_eq!(body["status"], "ready", "{body}");
    assert_eq!(body["database"], "ok");
    let known = body["migrations"]["known"].as_u64().unwrap();
    assert!(known > 0);
    assert_eq!(body["migrations"]["applied"].as_u64(), Some(known));
    assert_eq!(body["problems"], serde_json::json!([]));
}

#[tokio::test]
async fn readiness_fails_when_the_database_is_gone_and_health_does_not() {
    let db = TestDb::new();
    let server = Server::serve(&db, &[]);
    get(&server, "/readyz").await.expect(200);
    if db.is_postgres() {
        db.drop_database();
    } else {
        // A SQLite file cannot vanish under an open connection; its migrations can.
        let store = lps::admin::Db::connect(&db.url).await.unwrap();
        sqlx::query("DELETE FROM _sqlx_migrations")
            .execute(store.pool())
            .await
            .unwrap();
    }
    let refused = get(&server, "/readyz").await.expect(503);
    let body = refused.json();
    assert_eq!(body["status"], "not_ready", "{body}");
    assert!(!body["problems"].as_array().unwrap().is_empty(), "{body}");
    if db.is_postgres() {
        assert_eq!(body["database"], "failing", "{body}");
    } else {
        // The database answers; what stands in the way is its migrations.
        assert_eq!(body["database"], "ok", "{body}");
        assert_eq!(body["migrations"]["applied"], 0, "{body}");
        let problem = body["problems"][0].as_str().unwrap();
        assert!(problem.contains("migrations are not applied"), "{body}");
    }
    get(&server, "/healthz").await.expect(200);
}
