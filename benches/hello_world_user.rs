//! Load benchmark: authenticated `GET /hello-world-user` through the REST edge versus the same
//! operation (`IdentityService.WhoAmI`) called directly over gRPC, against a running `lps serve`
//! (release build) on SQLite, beside the server's router-only floor (an unknown path, answered
//! 404 JSON by the router alone). Prints requests per second, p50 and p99 latency, and the
//! ratios.
//!
//! `cargo bench --bench hello_world_user` (env: `BENCH_SECONDS`, default 10 per transport;
//! `BENCH_CONCURRENCY`, default 32). The load generator shares the machine with the server.

#[path = "../tests/api/common.rs"]
#[allow(dead_code)] // a benchmark uses part of the test harness
mod common;
#[path = "support/load.rs"]
mod load;

use std::time::Duration;

use common::{Server, TestDb, bootstrap, grpc_request};
use load::{drive, env_or, print};
use lps::proto::WhoAmIRequest;
use lps::proto::identity_service_client::IdentityServiceClient;

#[tokio::main]
async fn main() {
    let seconds = Duration::from_secs(env_or("BENCH_SECONDS", 10));
    let concurrency = env_or("BENCH_CONCURRENCY", 32) as usize;
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000000"]);
    let key = account.api_key.clone();

    let client = reqwest::Client::new();
    let floor_call = {
        let (client, url) = (client.clone(), server.url("/no-such-route"));
        move || {
            let request = client.get(&url).send();
            async move {
                let response = request.await.expect("floor request");
                assert_eq!(response.status(), 404);
                response.bytes().await.expect("body");
            }
        }
    };
    drive(concurrency, Duration::from_secs(1), floor_call.clone()).await;
    let floor = drive(concurrency, seconds, floor_call).await;

    let url = server.url("/hello-world-user");
    let rest_call = {
        let key = key.clone();
        move || {
            let request = client.get(&url).bearer_auth(&key).send();
            async move {
                let response = request.await.expect("REST request");
                assert!(response.status().is_success());
                response.bytes().await.expect("body");
            }
        }
    };
    // Warm both paths (connections, SQLite page cache) before measuring.
    drive(concurrency, Duration::from_secs(1), rest_call.clone()).await;
    let rest = drive(concurrency, seconds, rest_call).await;

    let channel = server.grpc_channel().await;
    let grpc_call = move || {
        let mut client = IdentityServiceClient::new(channel.clone());
        let request = grpc_request(&key, WhoAmIRequest {});
        async move {
            client.who_am_i(request).await.expect("gRPC request");
        }
    };
    drive(concurrency, Duration::from_secs(1), grpc_call.clone()).await;
    let grpc = drive(concurrency, seconds, grpc_call).await;

    println!(
        "\nGET /hello-world-user, {concurrency} concurrent clients, {}s each, SQLite, 2 cores shared \
         with the load generator",
        seconds.as_secs()
    );
    print("router-only floor (404 JSON)", &floor);
    print("REST edge (HTTP/1.1 JSON)", &rest);
    print("gRPC direct (WhoAmI)", &grpc);
    println!(
        "REST / router floor throughput ratio: {:.2}",
        rest.per_second / floor.per_second
    );
    println!(
        "REST / gRPC throughput ratio: {:.2}   p50 latency ratio: {:.2}",
        rest.per_second / grpc.per_second,
        rest.p50.as_secs_f64() / grpc.p50.as_secs_f64()
    );
}
