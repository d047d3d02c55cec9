//! The MCP face at `/mcp`, driven by a real MCP client (the `rmcp` crate's Streamable HTTP
//! client): the credential challenge, the resource metadata, one tool per REST operation,
//! results and errors identical to the REST bodies, the workspace binding of the key.

use crate::common::*;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientServiceExt, ServiceExt};
use serde_json::{Map, Value, json};

async fn connect(server: &Server, key: &str) -> RunningService<rmcp::RoleClient, ClientConfig> {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.http))
        .auth_header(key);
    ClientConfig::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the MCP client connects")
}

async fn call(
    client: &RunningService<rmcp::RoleClient, ClientConfig>,
    tool: &str,
    arguments: Value,
) -> (bool, Value) {
    let arguments: Map<String, Value> = serde_json::from_value(arguments).unwrap();
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .expect("the call is answered");
    (
        result.is_error == Some(true),
        result.structured_content.expect("structured content"),
    )
}

#[tokio::test]
async fn without_a_credential_mcp_answers_401_pointing_at_the_resource_metadata() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let refused = server
        .client
        .post(format!("{}/mcp", server.http))
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", server.http);
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    let metadata: Value = server
        .client
        .get(&metadata_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], format!("{}/mcp", server.http));
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
}

#[tokio::test]
async fn a_browser_origin_not_on_the_allow_list_is_refused() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--mcp-allowed-origins", "https://app.example"]);
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let attempt = |origin: &'static str| {
        server
            .client
            .post(format!("{}/mcp", server.http))
            .bearer_auth(&account.api_key)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("origin", origin)
            .body(initialize)
            .send()
    };
    assert_eq!(attempt("https://evil.example").await.unwrap().status(), 403);
    assert_eq!(attempt("https://app.example").await.unwrap().status(), 200);
}

#[tokio::test]
async fn every_rest_operation_is_a_tool_and_calls_answer_as_rest_does() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);
    let client = connect(&server, &account.api_key).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    let document: Value = server
        .get(&account.api_key, "/openapi.json")
        .await
        .expect(200)
        .json();
    let operations = document["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        // Event streams are watched, not called: their polling operation is the tool; a
        // streamed file is downloaded (its rows are the search tool's) or uploaded (a tool's
        // arguments are JSON: its leads go through the upsert tools).
        .filter(|operation| {
            let answers = &operation["responses"]["200"]["content"];
            let takes = &operation["requestBody"]["content"];
            answers["text/event-stream"].is_null()
                && answers["text/csv"].is_null()
                && takes["text/csv"].is_null()
        })
        .count();
    assert_eq!(tools.len(), operations, "one tool per operation: {names:?}");
    assert!(!names.contains(&"leads_get_status_stream"), "{names:?}");
    assert!(!names.contains(&"leads_export_csv"), "{names:?}");
    assert!(!names.contains(&"leads_import_csv"), "{names:?}");
    for expected in [
        "workspaces_get_list",
        "leads_upsert_leads",
        "pages_generate_status",
        "automation_get_form_submissions",
        "leads_enrich",
        "pages_update_design",
        "pages_preview",
        "leads_activity",
        "campaigns_analytics_daily",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    // Every input schema is a JSON schema of an object, every property a schema.
    for tool in &tools {
        let schema = Value::Object((*tool.input_schema).clone());
        assert_eq!(schema["type"], "object", "{}: {schema}", tool.name);
        for (field, property) in schema["properties"].as_object().unwrap() {
            assert!(
                property.is_object() && property.get("$ref").is_none(),
                "{}.{field}: {property}",
                tool.name
            );
        }
        for required in schema["required"].as_array().into_iter().flatten() {
            assert!(
                schema["properties"]
                    .get(required.as_str().unwrap())
                    .is_some(),
                "{}: {required} is required but not described",
                tool.name
            );
        }
        assert!(
            tool.description
                .as_deref()
                .is_some_and(|d| d.contains("REST: "))
        );
    }
    let upsert = tools
        .iter()
        .find(|t| t.name == "leads_upsert_leads")
        .unwrap();
    let description = upsert.description.as_deref().unwrap();
    assert!(description.contains("leads_get_status"), "{description}");
    let schema = Value::Object((*upsert.input_schema).clone());
    assert_eq!(schema["properties"]["leads"]["type"], "array", "{schema}");
    assert!(
        schema["properties"]["leads"]["items"]["properties"]["values"].is_object(),
        "references resolved: {schema}"
    );

    // Results: the REST body as structured content.
    let (failed, workspaces) = call(&client, "workspaces_get_list", json!({})).await;
    assert!(!failed);
    let rest = server
        .get(&account.api_key, "/workspaces/get-list")
        .await
        .expect(200)
        .json();
    assert_eq!(workspaces, json!({ "result": rest }));

    let (failed, created) = call(
        &client,
        "campaigns_create",
        json!({"workspace_id": account.workspace_id, "name": "From an assistant"}),
    )
    .await;
    assert!(!failed, "{created}");
    let campaign = created["campaign_id"].as_i64().expect("campaign_id");
    let (failed, job) = call(
        &client,
        "leads_upsert_leads",
        json!({"campaign_id": campaign,
               "leads": [{"values": {"email": "ada@example.com", "first_name": "Ada"}}]}),
    )
    .await;
    assert!(!failed, "{job}");
    let job_id = job["job_id"].as_str().unwrap().to_owned();
    wait_for_job(&server, &account.api_key, &job_id).await;
    let (failed, status) = call(&client, "leads_get_status", json!({"job_id": job_id})).await;
    assert!(!failed);
    assert_eq!(status["status"], "completed");
    let (failed, design) = call(
        &client,
        "pages_design",
        json!({"workspace_id": account.workspace_id, "campaign_id": campaign}),
    )
    .await;
    assert!(!failed, "{design}");
    assert_eq!(design["has_design"], false);
    // Query arrays travel as REST's `key[]` form.
    let (failed, analytics) = call(
        &client,
        "campaigns_analytics",
        json!({"workspace_id": account.workspace_id, "campaign_ids": [campaign]}),
    )
    .await;
    assert!(!failed, "{analytics}");
    assert_eq!(analytics["campaigns"][0]["campaign_id"], campaign);

    // Errors: the REST error body and its status, as a tool error.
    let (failed, invalid) = call(&client, "leads_search", json!({"workspace_id": "x"})).await;
    assert!(failed);
    assert_eq!(
        invalid,
        json!({"status": 422, "message": "The workspace id field must be an integer.",
               "errors": {"workspace_id": ["The workspace id field must be an integer."]}})
    );
    let (failed, missing) = call(&client, "leads_get", json!({"lead_id": 999_999})).await;
    assert!(failed);
    assert_eq!(missing, json!({"status": 404, "message": "Lead not found"}));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_workspace_bound_key_reaches_only_its_workspace_through_mcp() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (other_workspace, other_key) = add_workspace(&db, account.account_id, "Other");
    let server = Server::serve(&db, &[]);
    let client = connect(&server, &other_key).await;
    let (failed, refused) = call(
        &client,
        "campaigns_get_list",
        json!({"workspace_id": account.workspace_id}),
    )
    .await;
    assert!(failed);
    assert_eq!(refused["status"], 403);
    let (failed, own) = call(
        &client,
        "campaigns_get_list",
        json!({"workspace_id": other_workspace}),
    )
    .await;
    assert!(!failed, "{own}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_protocol_revisions_lps_speaks_are_negotiated_as_asked() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    for revision in ["2025-06-18", "2025-11-25"] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": revision, "capabilities": {},
                                     "clientInfo": {"name": "probe", "version": "1"}}});
        let answer: Value = server
            .client
            .post(format!("{}/mcp", server.http))
            .bearer_auth(&account.api_key)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", revision)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(answer["result"]["protocolVersion"], revision, "{answer}");
        assert_eq!(answer["result"]["serverInfo"]["name"], "lps");
    }
    // 2026-07-28 has no initialize: the client discovers the server and calls statelessly.
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.http))
        .auth_header(account.api_key.clone());
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            rmcp::ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discovers lps on 2026-07-28");
    let listed = client
        .call_tool(CallToolRequestParams::new("workspaces_get_list"))
        .await
        .unwrap();
    assert_eq!(listed.is_error, Some(false));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn browser_clients_on_an_allowed_origin_pass_the_cors_preflight() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--mcp-allowed-origins", "https://app.example"]);
    for path in ["/mcp", "/oauth/token"] {
        let preflight = server
            .client
            .request(reqwest::Method::OPTIONS, format!("{}{path}", server.http))
            .header("origin", "https://app.example")
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type",
            )
            .send()
            .await
            .unwrap();
        assert!(
            preflight.status().is_success(),
            "{path}: {}",
            preflight.status()
        );
        assert_eq!(
            preflight.headers()["access-control-allow-origin"],
            "https://app.example"
        );
        let other = server
            .client
            .request(reqwest::Method::OPTIONS, format!("{}{path}", server.http))
            .header("origin", "https://evil.example")
            .header("access-control-request-method", "POST")
            .send()
            .await
            .unwrap();
        assert!(other.headers().get("access-control-allow-origin").is_none());
    }
}

#[tokio::test]
async fn an_unknown_job_keeps_its_prescribed_body_through_mcp() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let client = connect(&server, &account.api_key).await;
    let unknown = "00000000-0000-4000-8000-000000000000";
    let (failed, leads) = call(&client, "leads_get_leads", json!({"job_id": unknown})).await;
    assert!(failed);
    let rest = server
        .get(
            &account.api_key,
            &format!("/leads/get-leads?job_id={unknown}"),
        )
        .await
        .expect(404)
        .json();
    assert_eq!(rest["status"], "NOT_FOUND", "{rest}");
    assert_eq!(leads, rest, "the REST body, intact");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_draft_preview_through_mcp_is_the_html_rest_serves() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, _) = create_campaign(&server, key, ws, "Preview").await;
    let client = connect(&server, key).await;
    let arguments = json!({"workspace_id": ws, "campaign_id": campaign});
    // No design yet: the REST error, its status beside it.
    let (is_error, refused) = call(&client, "pages_preview", arguments.clone()).await;
    assert!(is_error, "{refused}");
    assert_eq!(refused["status"], 409, "{refused}");
    apply_premade(&server, key, ws, campaign, "Demo Invitation").await;
    let (is_error, answer) = call(&client, "pages_preview", arguments).await;
    assert!(!is_error, "{answer}");
    let rest = server
        .get(
            key,
            &format!("/pages/preview?workspace_id={ws}&campaign_id={campaign}"),
        )
        .await
        .expect(200)
        .text;
    assert_eq!(answer["html"], rest.as_str());
}

#[tokio::test]
async fn tools_carry_annotations_and_output_schemas_that_their_results_satisfy() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);
    let client = connect(&server, &account.api_key).await;
    let tools = client.list_all_tools().await.unwrap();
    let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap().clone();

    // Every tool: a title, and hints consistent with the REST method.
    for tool in &tools {
        let annotations = tool.annotations.as_ref().expect("annotations");
        assert!(annotations.title.is_some(), "{}", tool.name);
        let get = tool.description.as_deref().unwrap().contains("REST: GET ");
        assert_eq!(annotations.read_only_hint, Some(get), "{}", tool.name);
        assert!(annotations.open_world_hint.is_some(), "{}", tool.name);
        if !get {
            assert!(annotations.destructive_hint.is_some(), "{}", tool.name);
            assert!(annotations.idempotent_hint.is_some(), "{}", tool.name);
        }
        let schema = tool.output_schema.as_ref().expect("an output schema");
        assert_eq!(schema["type"], "object", "{}", tool.name);
        assert!(
            !Value::Object((**schema).clone())
                .to_string()
                .contains("$ref"),
            "{}: references resolved",
            tool.name
        );
    }
    for (name, destructive) in [
        ("leads_delete", true),
        ("pages_unpublish", true),
        ("delete_api_token", true),
        ("callbacks_rotate_secret", true),
        ("campaigns_create", false),
        ("audiences_add_leads", false),
    ] {
        let annotations = tool(name).annotations.unwrap();
        assert_eq!(annotations.destructive_hint, Some(destructive), "{name}");
    }
    assert_eq!(
        tool("leads_search").annotations.unwrap().read_only_hint,
        Some(true)
    );
    assert_eq!(
        tool("leads_enrich").annotations.unwrap().open_world_hint,
        Some(true)
    );
    assert_eq!(
        tool("leads_get").annotations.unwrap().open_world_hint,
        Some(false)
    );

    // Results validate against their tool's output schema.
    let workspace = account.workspace_id;
    let (_, created) = call(
        &client,
        "campaigns_create",
        json!({"workspace_id": workspace, "name": "Schemas"}),
    )
    .await;
    let campaign = created["campaign_id"].as_i64().unwrap();
    let (_, job) = call(
        &client,
        "leads_upsert_leads",
        json!({"campaign_id": campaign,
               "leads": [{"values": {"email": "ada@example.com", "first_name": "Ada"}}]}),
    )
    .await;
    let job_id = job["job_id"].as_str().unwrap().to_owned();
    wait_for_job(&server, &account.api_key, &job_id).await;
    let (_, leads) = call(&client, "leads_get_leads", json!({"job_id": job_id})).await;
    let lead = leads["result"][0]["lead_id"].as_i64().unwrap();
    let (_, templates) = call(
        &client,
        "templates_get_list",
        json!({"workspace_id": workspace}),
    )
    .await;
    let template = templates["result"][0]["template_id"].as_i64().unwrap();
    let checked = [
        (
            "pages_preview",
            json!({"workspace_id": workspace, "campaign_id": campaign,
                   "lead_id": lead, "template_id": template}),
        ),
        (
            "campaigns_create",
            json!({"workspace_id": workspace, "name": "More"}),
        ),
        ("workspaces_get_list", json!({})),
        ("leads_get_status", json!({"job_id": job_id})),
        ("leads_get_leads", json!({"job_id": job_id})),
        ("leads_get", json!({"lead_id": lead})),
        ("leads_search", json!({"workspace_id": workspace})),
        ("leads_activity", json!({"lead_id": lead})),
        ("leads_export", json!({"lead_id": lead})),
        ("campaigns_get_list", json!({"workspace_id": workspace})),
        ("campaigns_analytics", json!({"workspace_id": workspace})),
        (
            "pages_design",
            json!({"workspace_id": workspace, "campaign_id": campaign}),
        ),
        ("templates_get_list", json!({"workspace_id": workspace})),
        ("account_credits", json!({"workspace_id": workspace})),
        ("get_api_tokens", json!({"workspace_id": workspace})),
        ("callbacks_deliveries", json!({"workspace_id": workspace})),
        ("callbacks_endpoints", json!({"workspace_id": workspace})),
        ("hello_world_user", json!({})),
    ];
    for (name, arguments) in checked {
        let (failed, result) = call(&client, name, arguments).await;
        assert!(!failed, "{name}: {result}");
        let schema = Value::Object((*tool(name).output_schema.unwrap()).clone());
        let validator = jsonschema::validator_for(&schema).expect("a valid JSON schema");
        let errors: Vec<String> = validator
            .iter_errors(&result)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}\n{result}\n{schema}");
    }
    client.cancel().await.unwrap();
}

/// A proxy on `listener` to `upstream` that adds `Authorization: Bearer {key}` to every
/// request without one, and passes everything else (method, path, `Host`, `Origin`, body) as
/// it came: what a client configured with the key does, in front of lps as a reverse proxy
/// at lps's public URL would be.
fn proxy_adding_the_key(listener: tokio::net::TcpListener, upstream: String, key: String) {
    use axum::body::Bytes;
    use axum::extract::Request;
    use axum::response::IntoResponse;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let forward = move |request: Request| {
        let (client, upstream, key) = (client.clone(), upstream.clone(), key.clone());
        async move {
            let (parts, body) = request.into_parts();
            let body: Bytes = axum::body::to_bytes(body, 16 << 20).await.unwrap();
            let target = format!(
                "{upstream}{}",
                parts
                    .uri
                    .path_and_query()
                    .map(|p| p.as_str())
                    .unwrap_or("/")
            );
            let mut headers = parts.headers.clone();
            headers.remove(http::header::CONTENT_LENGTH);
            if !headers.contains_key(http::header::AUTHORIZATION) {
                headers.insert(
                    http::header::AUTHORIZATION,
                    format!("Bearer {key}").parse().unwrap(),
                );
            }
            let answer = client
                .request(parts.method, target)
                .headers(headers)
                .body(body)
                .send()
                .await
                .unwrap();
            let status = answer.status();
            let mut headers = answer.headers().clone();
            headers.remove(http::header::CONTENT_LENGTH);
            headers.remove(http::header::TRANSFER_ENCODING);
            let bytes = answer.bytes().await.unwrap();
            (status, headers, bytes).into_response()
        }
    };
    let app = axum::Router::new().fallback(forward);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
}

/// The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, server mode,
/// on the Node 22 that `npm ci` installs beside it), every active scenario: what does not apply
/// to a server with tools only (resources, prompts, logging, completion, the suite's own test
/// tools, sampling and elicitation) is listed with why in `tests/mcp-conformance-baseline.yml`,
/// and the suite fails on any other failure and on a listed scenario that passes. Skipped (with
/// a notice) where the suite is not installed, unless `LPS_REQUIRE_MCP_CONFORMANCE` is set, as
/// CI sets it.
#[tokio::test]
async fn the_official_mcp_conformance_suite_passes_where_it_applies() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let node = root.join("node_modules/.bin/node");
    let suite = root.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if !node.exists() || !suite.exists() {
        assert!(
            std::env::var_os("LPS_REQUIRE_MCP_CONFORMANCE").is_none(),
            "the MCP conformance suite is not installed: npm ci"
        );
        eprintln!("skipped: npm ci installs the MCP conformance suite");
        return;
    }
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    // The suite's requests come from the proxy's origin, lps's public URL.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = format!("http://{}", listener.local_addr().unwrap());
    let server = Server::serve(
        &db,
        &["--rate-limit-per-minute", "100000", "--public-url", &proxy],
    );
    proxy_adding_the_key(listener, server.http.clone(), account.api_key.clone());
    let baseline = root.join("tests/mcp-conformance-baseline.yml");
    let output_dir = tempfile::tempdir().unwrap();
    let run = tokio::process::Command::new(&node)
        .arg(&suite)
        .args(["server", "--url", &format!("{proxy}/mcp")])
        .arg("--expected-failures")
        .arg(&baseline)
        .arg("--output-dir")
        .arg(output_dir.path())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(300), run)
        .await
        .expect("the suite finishes within 5 minutes")
        .unwrap();
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{said}");
    assert!(output.status.success(), "{said}");
    assert!(said.contains("Baseline check passed"), "{said}");
}
