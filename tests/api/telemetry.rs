//! OpenTelemetry traces: with `--otlp-endpoint`, a REST call is one trace, continuing the
//! caller's W3C `traceparent`, with the edge's request, core's call and the SQL statements as
//! spans under it, exported to a collector (a fake one here, on loopback, decoding what the
//! official OTLP exporter sends with the official protobuf types); log lines carry the trace
//! id; a callback carries `traceparent` to its receiver.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

/// A process killed when the test ends, failed or not.
struct KilledOnDrop(std::process::Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A span as the collector received it.
#[derive(Debug, Clone)]
struct Received {
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    attributes: Vec<(String, String)>,
}

/// A fake OTLP/HTTP collector on loopback: every span of every export, in order.
async fn collector() -> (String, Arc<Mutex<Vec<Received>>>) {
    let spans: Arc<Mutex<Vec<Received>>> = Arc::default();
    let kept = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                let export = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                let mut kept = kept.lock().unwrap();
                for resource in export.resource_spans {
                    for scope in resource.scope_spans {
                        for span in scope.spans {
                            kept.push(Received {
                                name: span.name,
                                trace_id: hex::encode(span.trace_id),
                                span_id: hex::encode(span.span_id),
                                parent_span_id: hex::encode(span.parent_span_id),
                                attributes: span
                                    .attributes
                                    .into_iter()
                                    .map(|kv| (kv.key, format!("{:?}", kv.value)))
                                    .collect(),
                            });
                        }
                    }
                }
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (address, spans)
}

#[tokio::test]
async fn a_rest_call_is_one_trace_across_edge_core_and_sql_continuing_the_callers() {
    let (endpoint, spans) = collector().await;
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("lps.log");
    let mut child = Command::new(BIN)
        .args(["serve", "--database-url", &db.url, "--http", "127.0.0.1:0"])
        .args(["--grpc", "127.0.0.1:0", "--log-format", "json"])
        .args(["--otlp-endpoint", &endpoint, "--otlp-protocol", "http"])
        .env("LPS_LOG", "info")
        // Export every 100 ms rather than every 5 s.
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut child = KilledOnDrop(child);
    let http = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("HTTP listening on ").map(str::to_owned))
        .unwrap();

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let secret_word = "zyxwvutsrq";
    let response = reqwest::Client::new()
        .get(format!(
            "{http}{BASE}/leads/search?workspace_id={}&search={secret_word}",
            account.workspace_id
        ))
        .bearer_auth(&account.api_key)
        .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    // Wait for the edge's span (the last of the trace to end) to be exported.
    let started = Instant::now();
    let trace = loop {
        let trace: Vec<Received> = spans
            .lock()
            .unwrap()
            .iter()
            .filter(|span| span.trace_id == trace_id)
            .cloned()
            .collect();
        if trace.iter().any(|span| span.parent_span_id == caller_span) {
            break trace;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "only {trace:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let edge = trace
        .iter()
        .find(|span| span.parent_span_id == caller_span)
        .unwrap();
    assert_eq!(edge.name, "GET /api/external/v1/leads/search", "{trace:#?}");
    let core = trace
        .iter()
        .find(|span| span.name == "/lps.v1.LeadsService/SearchLeads")
        .unwrap_or_else(|| panic!("no core span in {trace:#?}"));
    // Core's call is under the edge's request (directly or through the edge's own spans).
    let mut ancestor = core.parent_span_id.clone();
    let mut hops = 0;
    while ancestor != edge.span_id {
        ancestor = trace
            .iter()
            .find(|span| span.span_id == ancestor)
            .unwrap_or_else(|| panic!("core's call is not under the edge's: {trace:#?}"))
            .parent_span_id
            .clone();
        hops += 1;
        assert!(hops < 10);
    }
    let statements: Vec<&Received> = trace
        .iter()
        .filter(|span| span.name.starts_with("SELECT "))
        .collect();
    assert!(
        statements.iter().any(|span| span.name == "SELECT leads"),
        "{trace:#?}"
    );
    for statement in &statements {
        assert!(
            statement
                .attributes
                .iter()
                .any(|(key, _)| key == "db.query.text"),
            "{statement:?}"
        );
    }
    let everything = format!("{trace:?}");
    assert!(
        !everything.contains(secret_word),
        "a value in a span: {everything}"
    );
    assert!(!everything.contains(&account.api_key), "the key in a span");

    // The request's log line carries the trace id.
    let _ = child.0.kill();
    let _ = child.0.wait();
    let log = std::fs::read_to_string(&log_path).unwrap();
    let line = log
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|line| line["fields"]["route"] == "/api/external/v1/leads/search")
        .unwrap_or_else(|| panic!("no request line in {log}"));
    assert_eq!(line["span"]["trace_id"], trace_id, "{line}");
}

#[tokio::test]
async fn without_an_endpoint_nothing_is_traced_or_propagated() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = crate::callbacks::receive(listener, 0);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network"]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Quiet").await;
    upsert(
        &server,
        key,
        serde_json::json!({"campaign_id": campaign, "callback_url": url, "leads": leads("q", 1)}),
    )
    .await;
    let log = crate::callbacks::wait_for_deliveries(&received, 1).await;
    assert!(log[0].0.get("traceparent").is_none(), "{:?}", log[0].0);
}

#[tokio::test]
async fn a_callback_carries_its_delivery_spans_traceparent() {
    let (endpoint, spans) = collector().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = crate::callbacks::receive(listener, 0);
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(
        &db,
        &[
            "--allow-private-network",
            "--otlp-endpoint",
            &endpoint,
            "--otlp-protocol",
            "http",
        ],
    );
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Traced").await;
    upsert(
        &server,
        key,
        serde_json::json!({"campaign_id": campaign, "callback_url": url, "leads": leads("t", 1)}),
    )
    .await;
    let log = crate::callbacks::wait_for_deliveries(&received, 1).await;
    let traceparent = log[0].0["traceparent"].to_str().unwrap().to_owned();
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    // The delivery's span reaches the collector (exported within the default 5 s).
    let started = Instant::now();
    loop {
        let found = spans
            .lock()
            .unwrap()
            .iter()
            .any(|span| span.trace_id == parts[1] && span.name == "callback delivery");
        if found {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no delivery span"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn core_and_edge_apart_continue_one_trace_through_grpc_metadata() {
    let (endpoint, spans) = collector().await;
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let traced = [
        "--otlp-endpoint",
        endpoint.as_str(),
        "--otlp-protocol",
        "http",
    ];
    let mut core_args = vec!["core", "--database-url", &db.url, "--grpc", "127.0.0.1:0"];
    core_args.extend(traced);
    let core = Server::spawn(&core_args, false, true);
    let core_url = core.grpc.clone().unwrap();
    let mut edge_args = vec!["edge", "--core-url", &core_url, "--http", "127.0.0.1:0"];
    edge_args.extend(traced);
    let edge = Server::spawn(&edge_args, true, false);

    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let caller_span = "b7ad6b7169203331";
    let response = edge
        .client
        .get(edge.url("/hello-world-user"))
        .bearer_auth(&account.api_key)
        .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // Both processes export their halves (each within the default 5 s).
    let started = Instant::now();
    loop {
        let trace: Vec<Received> = spans
            .lock()
            .unwrap()
            .iter()
            .filter(|span| span.trace_id == trace_id)
            .cloned()
            .collect();
        let edge_span = trace.iter().find(|span| span.parent_span_id == caller_span);
        let core_span = trace
            .iter()
            .find(|span| span.name == "/lps.v1.IdentityService/WhoAmI");
        if let (Some(edge_span), Some(core_span)) = (edge_span, core_span) {
            assert_eq!(edge_span.name, "GET /api/external/v1/hello-world-user");
            // Over the network, core's call continues the edge's span from the metadata.
            assert!(
                trace
                    .iter()
                    .any(|span| span.span_id == core_span.parent_span_id),
                "core's parent is a span of the edge: {trace:#?}"
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "only {trace:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn requests_are_sampled_at_the_edge_and_a_callers_sampled_flag_decides_for_its_own() {
    let (endpoint, spans) = collector().await;
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(
        &db,
        &[
            "--otlp-endpoint",
            &endpoint,
            "--otlp-protocol",
            "http",
            "--otlp-sample-ratio",
            "0",
        ],
    );
    let key = &account.api_key;
    let hello = |traceparent: Option<&'static str>| {
        let mut request = server
            .client
            .get(server.url("/hello-world-user"))
            .bearer_auth(key);
        if let Some(traceparent) = traceparent {
            request = request.header("traceparent", traceparent);
        }
        request.send()
    };
    // Not sampled: no traceparent at ratio 0, and a caller's unsampled one.
    assert_eq!(hello(None).await.unwrap().status(), 200);
    let unsampled = "00-11111111111111111111111111111111-2222222222222222-00";
    assert_eq!(hello(Some(unsampled)).await.unwrap().status(), 200);
    // Sampled by its caller: recorded whatever the ratio.
    let sampled = "00-33333333333333333333333333333333-4444444444444444-01";
    assert_eq!(hello(Some(sampled)).await.unwrap().status(), 200);
    let started = Instant::now();
    while !spans
        .lock()
        .unwrap()
        .iter()
        .any(|span| span.parent_span_id == "4444444444444444")
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the sampled trace is missing"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Everything exported so far (what is exported together ends together) is of that trace.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let traces: std::collections::BTreeSet<String> = spans
        .lock()
        .unwrap()
        .iter()
        .map(|span| span.trace_id.clone())
        .collect();
    assert_eq!(
        traces.into_iter().collect::<Vec<_>>(),
        ["33333333333333333333333333333333"]
    );
}
