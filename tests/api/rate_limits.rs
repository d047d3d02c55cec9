//! Part 8: 120 requests per minute per key, headers on every authenticated response.

use crate::common::*;
use lps::proto::HelloWorldRequest;
use lps::proto::identity_service_client::IdentityServiceClient;

#[tokio::test]
async fn the_121st_request_in_a_minute_is_refused_with_retry_after() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    for n in 1..=120u32 {
        let reply = server
            .get(&account.api_key, "/hello-world")
            .await
            .expect(200);
        assert_eq!(reply.header("x-ratelimit-limit"), Some("120"));
        assert_eq!(
            reply.header("x-ratelimit-remaining"),
            Some((120 - n).to_string().as_str()),
            "request {n}"
        );
    }
    let refused = server
        .get(&account.api_key, "/hello-world")
        .await
        .expect(429);
    assert_eq!(refused.header("x-ratelimit-limit"), Some("120"));
    assert_eq!(refused.header("x-ratelimit-remaining"), Some("0"));
    let retry_after: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after));
    assert!(refused.json()["message"].is_string());
}

#[tokio::test]
async fn limits_are_per_key() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let legacy = legacy_key(&db, account.account_id);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "3"]);
    for _ in 0..3 {
        server
            .get(&account.api_key, "/hello-world")
            .await
            .expect(200);
    }
    server
        .get(&account.api_key, "/hello-world")
        .await
        .expect(429);
    server.get(&legacy, "/hello-world").await.expect(200);
}

#[tokio::test]
async fn rate_headers_come_on_errors_too() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let stranger = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let forbidden = format!("/account/credits?workspace_id={}", stranger.workspace_id);
    for (path, status) in [
        ("/account/credits", 422),
        ("/account/credits?workspace_id=x", 422),
        (forbidden.as_str(), 403),
        ("/delete-api-token?token_id=nope", 404),
    ] {
        let reply = if path.starts_with("/delete") {
            server.delete(&account.api_key, path).await
        } else {
            server.get(&account.api_key, path).await
        };
        let reply = reply.expect(status);
        assert_eq!(reply.header("x-ratelimit-limit"), Some("120"), "{path}");
        assert!(reply.header("x-ratelimit-remaining").is_some(), "{path}");
    }
}

#[tokio::test]
async fn the_flag_changes_the_limit() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "5"]);
    let reply = server
        .get(&account.api_key, "/hello-world")
        .await
        .expect(200);
    assert_eq!(reply.header("x-ratelimit-limit"), Some("5"));
    assert_eq!(reply.header("x-ratelimit-remaining"), Some("4"));
}

#[tokio::test]
async fn grpc_callers_get_the_same_limit_as_metadata() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "2"]);
    let mut client = IdentityServiceClient::new(server.grpc_channel().await);
    let ok = client
        .hello_world(grpc_request(&account.api_key, HelloWorldRequest {}))
        .await
        .unwrap();
    assert_eq!(ok.metadata().get("x-ratelimit-limit").unwrap(), "2");
    assert_eq!(ok.metadata().get("x-ratelimit-remaining").unwrap(), "1");
    // REST and gRPC share the key's allowance.
    server
        .get(&account.api_key, "/hello-world")
        .await
        .expect(200);
    let refused = client
        .hello_world(grpc_request(&account.api_key, HelloWorldRequest {}))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
    assert!(refused.metadata().get("retry-after").is_some());
    assert_eq!(
        refused.metadata().get("x-ratelimit-remaining").unwrap(),
        "0"
    );
}

/// Two servers on one database and one Redis share each key's allowance. Runs only when
/// `LPS_TEST_REDIS_URL` is set (CI sets it).
#[tokio::test]
async fn instances_sharing_redis_share_the_limit() {
    let Ok(redis) = std::env::var("LPS_TEST_REDIS_URL") else {
        return;
    };
    if redis.is_empty() {
        return;
    }
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let flags = [
        "--rate-limit-per-minute",
        "4",
        "--redis-url",
        redis.as_str(),
    ];
    let first = Server::serve(&db, &flags);
    let second = Server::serve(&db, &flags);
    for server in [&first, &second, &first, &second] {
        server
            .get(&account.api_key, "/hello-world")
            .await
            .expect(200);
    }
    second
        .get(&account.api_key, "/hello-world")
        .await
        .expect(429);
    first
        .get(&account.api_key, "/hello-world")
        .await
        .expect(429);
}
