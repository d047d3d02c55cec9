//! The MCP face at `/mcp` (Streamable HTTP, the `rmcp` crate): one tool per operation of the
//! REST API, named by its operation id (the path with `/` and `-` as `_`, e.g.
//! `leads_upsert_leads`), described and typed from the same OpenAPI document the REST edge
//! serves, so the two never drift. A tool call runs that operation's handler from the table
//! (`operations/`) with the tool's arguments and the caller's credential: the same
//! validation, the same core call (rate limits, workspace binding, credits), the same body;
//! errors come back as tool errors carrying the REST error body, the HTTP status beside it.
//!
//! Credentials: an API key in `Authorization: Bearer`. Without one, 401 with
//! `WWW-Authenticate: Bearer resource_metadata=".../.well-known/oauth-protected-resource/mcp"`
//! (RFC 9728); a browser `Origin` must be on the allow-list (DNS-rebinding protection).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, header};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value, json};

mod annotations;

use crate::core_client::Core;
use crate::operations::caller::Caller;
use crate::operations::error::ApiError;
use crate::operations::{BASE_PATH, BODY_LIMIT_BYTES, Tool as Operation};

/// Where the MCP face is served.
pub const PATH: &str = "/mcp";
/// The protected-resource metadata of `/mcp` (RFC 9728).
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// How the face is set up.
#[derive(Clone, Debug)]
pub struct McpSettings {
    /// Where clients reach lps, e.g. `https://lps.example`; the resource is `{public_url}/mcp`.
    pub public_url: String,
    /// Browser origins allowed to call `/mcp`; the public URL's origin is always allowed.
    pub allowed_origins: Vec<String>,
}

impl McpSettings {
    /// Browser origins allowed: the public URL's own and the configured ones.
    pub fn origins(&self) -> Vec<String> {
        let mut origins = vec![origin_of(&self.public_url)];
        origins.extend(self.allowed_origins.iter().cloned());
        origins
    }
}

/// Every tool, and the operation behind each by name.
struct Catalogue {
    tools: Vec<Tool>,
    operations: HashMap<String, Operation>,
}

/// The MCP router: `/mcp` and its resource metadata. `operations` are the tools from the
/// table, `document` their OpenAPI document.
pub fn router<S>(
    core: Core,
    operations: HashMap<String, Operation>,
    document: &Value,
    settings: McpSettings,
) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    let catalogue = Arc::new(catalogue(document, operations));
    let public = settings.public_url.trim_end_matches('/').to_owned();
    let origins = settings.origins();
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    if let Ok(url) = url::Url::parse(&public)
        && let Some(host) = url.host_str()
    {
        hosts.push(host.to_owned());
        if let Some(port) = url.port() {
            hosts.push(format!("{host}:{port}"));
        }
    }
    let cors = cors(&origins);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(BODY_LIMIT_BYTES);
    let server = McpServer {
        core: core.clone(),
        catalogue: catalogue.clone(),
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let metadata = resource_metadata(&public);
    let challenge = Arc::new(format!(
        "Bearer resource_metadata=\"{public}{RESOURCE_METADATA_PATH}\""
    ));
    Router::new()
        .nest_service(PATH, service)
        .layer(axum::middleware::from_fn(move |request, next| {
            require_credential(core.clone(), challenge.clone(), request, next)
        }))
        .route(
            RESOURCE_METADATA_PATH,
            axum::routing::get({
                let metadata = metadata.clone();
                move || std::future::ready(axum::Json(metadata.clone()))
            }),
        )
        .route(
            "/.well-known/oauth-protected-resource",
            axum::routing::get(move || std::future::ready(axum::Json(metadata.clone()))),
        )
        .layer(cors)
}

/// Browser-based MCP clients on the allowed origins may call `/mcp` and read the metadata.
pub fn cors(origins: &[String]) -> tower_http::cors::CorsLayer {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|origin| HeaderValue::from_str(origin).ok())
        .collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::ACCEPT,
            http::HeaderName::from_static("mcp-protocol-version"),
            http::HeaderName::from_static("mcp-session-id"),
            http::HeaderName::from_static("last-event-id"),
        ])
        .expose_headers([
            header::WWW_AUTHENTICATE,
            http::HeaderName::from_static("mcp-session-id"),
        ])
}

/// RFC 9728 metadata of the `/mcp` resource.
fn resource_metadata(public: &str) -> Value {
    json!({
        "resource": format!("{public}{PATH}"),
        "resource_name": "lps",
        "bearer_methods_supported": ["header"],
        "authorization_servers": [public],
    })
}

fn origin_of(url: &str) -> String {
    url::Url::parse(url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_else(|_| url.to_owned())
}

/// `/mcp` needs `Authorization: Bearer`; without it, 401 pointing at the resource metadata.
/// Every message's credential is checked by core before it is handled (an uncounted check:
/// the operations it calls are counted), so a garbage, expired or revoked token is a 401 the
/// client can act on (refresh, or authorize again) whatever the method, `tools/list`
/// included. What kind of credential it is travels on as a request extension
/// ([`CredentialKind`]).
async fn require_credential(
    core: Core,
    challenge: Arc<String>,
    mut request: Request,
    next: Next,
) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let has_bearer = authorization
        .as_deref()
        .and_then(|v| v.split_once(' '))
        .is_some_and(|(scheme, token)| {
            scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()
        });
    let refuse = |error: Option<&str>| {
        let mut response =
            ApiError::from(tonic::Status::unauthenticated("Unauthenticated.")).into_response();
        let value = match error {
            Some(error) => format!("{challenge}, error=\"{error}\""),
            None => challenge.to_string(),
        };
        if let Ok(value) = HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    };
    if request.method() == Method::OPTIONS {
        return next.run(request).await;
    }
    if !has_bearer {
        return refuse(None);
    }
    let mut check = tonic::Request::new(lps::proto::CheckCredentialRequest {});
    if let Some(value) = authorization.as_deref().and_then(|v| v.parse().ok()) {
        check.metadata_mut().insert("authorization", value);
    }
    match core.identity().check_credential(check).await {
        Ok(answer) => {
            request
                .extensions_mut()
                .insert(CredentialKind::from(answer.into_inner()));
            next.run(request).await
        }
        Err(status) if status.code() == tonic::Code::Unauthenticated => {
            refuse(Some("invalid_token"))
        }
        // Over the rate limit, core unreachable: as the REST API answers them.
        Err(status) => ApiError::from(status).into_response(),
    }
}

/// What kind of credential the message carries: an app's OAuth access token, and whether
/// its person is a member (not an owner) of the workspace.
#[derive(Debug, Clone, Copy)]
struct CredentialKind {
    app: bool,
    member: bool,
}

impl From<lps::proto::CheckCredentialResponse> for CredentialKind {
    fn from(answer: lps::proto::CheckCredentialResponse) -> Self {
        Self {
            app: answer.app,
            member: answer.member,
        }
    }
}

/// Tools that manage credentials: an app connected with OAuth may not use them (a key or a
/// secret it made would outlive its grant), so they are not offered to it.
const CREDENTIAL_TOOLS: [&str; 3] = [
    "generate_api_token",
    "delete_api_token",
    "callbacks_rotate_secret",
];
/// Tools only an owner may use (keys and the signing secret): not offered to members.
const OWNER_TOOLS: [&str; 4] = [
    "generate_api_token",
    "get_api_tokens",
    "delete_api_token",
    "callbacks_rotate_secret",
];

/// Whether the tool is offered to this message's credential: what it may not use is not
/// listed (and not run).
fn offered(tool: &str, parts: Option<&http::request::Parts>) -> bool {
    let Some(kind) = parts.and_then(|parts| parts.extensions.get::<CredentialKind>()) else {
        return true;
    };
    !(kind.app && CREDENTIAL_TOOLS.contains(&tool) || kind.member && OWNER_TOOLS.contains(&tool))
}

#[derive(Clone)]
struct McpServer {
    core: Core,
    catalogue: Arc<Catalogue>,
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("lps", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&[
            ProtocolVersion::V_2026_07_28,
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_03_26,
        ])
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let parts = context.extensions.get::<http::request::Parts>();
        Ok(ListToolsResult::with_all_items(
            self.catalogue
                .tools
                .iter()
                .filter(|tool| offered(&tool.name, parts))
                .cloned()
                .collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.catalogue
            .tools
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<http::request::Parts>();
        let run = self
            .catalogue
            .operations
            .get(request.name.as_ref())
            .filter(|_| offered(&request.name, parts));
        let (Some(run), Some(parts)) = (run, parts) else {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool {}.", request.name),
                None,
            ));
        };
        let caller = Caller::from_parts(self.core.clone(), parts);
        let answer = (run.run)(caller, request.arguments.unwrap_or_default()).await;
        Ok(tool_result(answer).into())
    }
}

const INSTRUCTIONS: &str = "lps personalises one web page per sales lead. Every tool is one \
operation of the lps REST API and acts on one workspace: call `workspaces_get_list` first to \
learn the workspace id. Imports and enrichment are jobs: they return a `job_id` to poll with \
`leads_get_status`; design generation returns a `run_id` to poll with `pages_generate_status`.";

/// An operation's answer as a tool result: the JSON body as structured content (an array or
/// a scalar wrapped as `{"result": ...}`, since structured content is an object) and as text;
/// a failure is a tool error carrying the REST error body, with the HTTP status as `status`
/// where the body has none of its own.
fn tool_result(answer: Result<Value, ApiError>) -> CallToolResult {
    let error = match answer {
        Ok(body @ Value::Object(_)) => return CallToolResult::structured(body),
        Ok(other) => return CallToolResult::structured(json!({ "result": other })),
        Err(error) => error.into_answer(),
    };
    let mut structured = match error.body {
        Value::Object(object) => object,
        other => {
            let mut object = Map::new();
            object.insert("message".into(), other);
            object
        }
    };
    // A prescribed body's `status` (an unknown job's `NOT_FOUND`) is part of the answer and
    // stays as REST gives it.
    structured
        .entry("status")
        .or_insert_with(|| json!(error.status.as_u16()));
    CallToolResult::structured_error(Value::Object(structured))
}

/// The tools, from the OpenAPI document: each operation's query parameters and body fields
/// make its input schema (references resolved), its summary and description its description.
fn catalogue(document: &Value, operations: HashMap<String, Operation>) -> Catalogue {
    let mut tools = Vec::new();
    let Some(paths) = document["paths"].as_object() else {
        return Catalogue { tools, operations };
    };
    for (path, item) in paths {
        let Some(item) = item.as_object() else {
            continue;
        };
        for (method, operation) in item {
            let Ok(method) = method.to_ascii_uppercase().parse::<Method>() else {
                continue;
            };
            let Some(name) = operation["operationId"].as_str() else {
                continue;
            };
            // Only operations that answer once are tools (an event stream is for watching;
            // its polling operation is the tool).
            let Some(operation_tool) = operations.get(name) else {
                continue;
            };
            let mut properties = Map::new();
            let mut required: Vec<Value> = Vec::new();
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                let parameter = resolve(document, parameter, 0);
                if parameter["in"] != "query" {
                    continue;
                }
                let Some(field) = parameter["name"].as_str() else {
                    continue;
                };
                let field = field.trim_end_matches("[]").to_owned();
                let mut schema = resolve(document, &parameter["schema"], 0);
                if let (Some(text), Some(object)) =
                    (parameter["description"].as_str(), schema.as_object_mut())
                {
                    object.insert("description".into(), json!(text));
                }
                if parameter["required"] == true {
                    required.push(json!(field));
                }
                properties.insert(field, schema);
            }
            let body = &operation["requestBody"]["content"]["application/json"]["schema"];
            if !body.is_null() {
                let body = resolve(document, body, 0);
                // A body with flattened parts is an `allOf` of objects: their fields together.
                let parts = match body["allOf"].as_array() {
                    Some(parts) => parts.clone(),
                    None => vec![body],
                };
                for part in parts {
                    if let Some(fields) = part["properties"].as_object() {
                        for (field, schema) in fields {
                            properties.insert(field.clone(), schema.clone());
                        }
                    }
                    required.extend(part["required"].as_array().cloned().unwrap_or_default());
                }
            }
            let mut input = Map::new();
            input.insert("type".into(), json!("object"));
            input.insert("properties".into(), Value::Object(properties));
            if !required.is_empty() {
                input.insert("required".into(), Value::Array(required));
            }
            let rest_path = path.strip_prefix(BASE_PATH).unwrap_or(path);
            let mut description = String::new();
            for part in [
                operation["summary"].as_str(),
                operation["description"].as_str(),
            ]
            .into_iter()
            .flatten()
            {
                if !description.contains(part) {
                    if !description.is_empty() {
                        description.push_str("\n\n");
                    }
                    description.push_str(part);
                }
            }
            if let Some(hint) = poll_hint(document, operation) {
                description.push_str("\n\n");
                description.push_str(hint);
            }
            if CREDENTIAL_TOOLS.contains(&name) {
                description.push_str(
                    "\n\nManages credentials: offered to API keys only, never to an app \
                     connected with OAuth (a key it made would outlive its grant).",
                );
            }
            description.push_str(&format!("\n\nREST: {method} {rest_path}."));
            let mut tool = Tool::new(name.to_owned(), description, Arc::new(input));
            tool.title = operation["summary"].as_str().map(first_sentence);
            tool.annotations = Some(annotations::annotations(
                operation_tool.effect,
                tool.title.clone(),
            ));
            let success = match &operation_tool.answer_schema {
                Some(schema) => schema.clone(),
                None => resolve(
                    document,
                    &operation["responses"]["200"]["content"]["application/json"]["schema"],
                    0,
                ),
            };
            tool.output_schema = annotations::output_schema(&success).map(Arc::new);
            tools.push(tool);
        }
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    Catalogue { tools, operations }
}

/// Which tool follows a long operation up, by what its success answer carries.
fn poll_hint(document: &Value, operation: &Value) -> Option<&'static str> {
    let answer = resolve(
        document,
        &operation["responses"]["200"]["content"]["application/json"]["schema"],
        0,
    );
    let properties = answer["properties"].as_object()?;
    if properties.contains_key("job_id") {
        Some(
            "Long-running: the answer's `job_id` is a background job; poll it with \
             `leads_get_status` until `completed`, then read the leads with `leads_get_leads` \
             or `leads_get`.",
        )
    } else if properties.contains_key("run_id") {
        Some(
            "Long-running: the answer's `run_id` is a design run; poll it with \
             `pages_generate_status` until `success`, then read the design with \
             `pages_design`.",
        )
    } else {
        None
    }
}

/// A title: the summary's first sentence, on one line.
fn first_sentence(summary: &str) -> String {
    let line = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.find(". ") {
        Some(end) => line[..=end].to_owned(),
        None => line,
    }
}

/// `value` with every `{"$ref": "#/components/..."}` replaced by what it names (to a depth
/// that covers the document; deeper references are left as they are).
fn resolve(document: &Value, value: &Value, depth: usize) -> Value {
    if depth > 16 {
        return value.clone();
    }
    match value {
        Value::Object(object) => {
            if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
                let pointer = reference.trim_start_matches('#');
                if let Some(target) = document.pointer(pointer) {
                    return resolve(document, target, depth + 1);
                }
            }
            Value::Object(
                object
                    .iter()
                    .map(|(key, inner)| (key.clone(), resolve(document, inner, depth + 1)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| resolve(document, item, depth + 1))
                .collect(),
        ),
        other => other.clone(),
    }
}
