//! Part 8: 120 requests per minute per key, headers on every authenticated response.

use crate::common::*;
use lps::proto::HelloWorldRequest;
use lps::proto::identity_service_client::IdentityServiceClient;
use serde_json::json;

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

/// The answers the edge gives by itself (an unknown route, a wrong method) count as requests,
/// against the key when there is a usable one, else the client's address, with the headers
/// saying so: in one process, where core counts them directly, and with core apart, where a
/// `HelloWorld` call counts them.
#[tokio::test]
async fn the_edges_own_refusals_count_like_any_request() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let limit = ["--rate-limit-per-minute", "3"];
    // Limits in this process's memory (not a Redis shared with other tests).
    let mut serve = vec!["serve", "--database-url", &db.url];
    serve.extend(["--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"]);
    serve.extend(limit);
    let one_process = Server::spawn(&serve, true, true);
    let mut core = vec!["core", "--database-url", &db.url, "--grpc", "127.0.0.1:0"];
    core.extend(limit);
    let core = Server::spawn(&core, false, true);
    let core_url = core.grpc.clone().unwrap();
    let edge = Server::spawn(
        &["edge", "--core-url", &core_url, "--http", "127.0.0.1:0"],
        true,
        false,
    );
    for server in [&one_process, &edge] {
        // The fourth is over the limit: still a 404, saying when to come back.
        for (remaining, refused) in [("2", false), ("1", false), ("0", false), ("0", true)] {
            let request = server.client.get(server.url_of("/no-such-path"));
            let reply = server.send(request).await.expect(404);
            assert_eq!(reply.header("x-ratelimit-limit"), Some("3"));
            assert_eq!(reply.header("x-ratelimit-remaining"), Some(remaining));
            assert_eq!(reply.header("retry-after").is_some(), refused);
        }
        // The key's own allowance, untouched by the address's: a 404 and a 405 take two of
        // its three.
        let reply = server.get(&account.api_key, "/no-such-path").await;
        assert_eq!(reply.expect(404).header("x-ratelimit-remaining"), Some("2"));
        let reply = server
            .post(&account.api_key, "/hello-world", json!({}))
            .await;
        assert_eq!(reply.expect(405).header("x-ratelimit-remaining"), Some("1"));
        let reply = server.get(&account.api_key, "/hello-world").await;
        assert_eq!(reply.expect(200).header("x-ratelimit-remaining"), Some("0"));
        server
            .get(&account.api_key, "/hello-world")
            .await
            .expect(429);
    }
}
