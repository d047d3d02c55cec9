//! Completes the OpenAPI document gathered from the handlers with what every operation shares:
//! the bearer security scheme, the rate-limit headers, and the 401, 429 and 500 responses.

use utoipa::openapi::path::Operation;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{Object, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, HeaderBuilder, InfoBuilder, OpenApi, OpenApiVersion, Ref, RefOr,
};
use utoipa::{PartialSchema, ToSchema};

use super::error::ErrorBody;

const SCHEME: &str = "bearer";

/// Text lps accepts anywhere: no control characters (core refuses them).
const TEXT: &str = r"^[^\u0000-\u001F\u007F-\u009F]*$";
/// Required text: as [`TEXT`], and not blank (blank reads as missing).
const REQUIRED_TEXT: &str = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$";

/// A document (HTML, CSS): text that may hold line breaks and tabs.
const DOCUMENT: &str = r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$";
/// A required document: as [`DOCUMENT`], and not blank.
const REQUIRED_DOCUMENT: &str = r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$";

/// An `http(s)` address core accepts for callbacks (and call-to-action addresses): a host name whose last label starts with a
/// letter (a numeric one would be read as an IPv4 address), an optional port and path.
/// A branding's colour (`#0f766e`, also 3, 4 or 8 hex digits), or empty.
const HEX_COLOR: &str = r"^$|^#([0-9A-Fa-f]{3,4}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$";

const CALLBACK_URL: &str =
    r"^https?://([A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*(:[0-9]{1,4})?(/[!-~]*)?$";

/// The finished document as served: [`finish`], then the rules every text input follows
/// written into each request schema (one place, so no field can forget them).
pub fn document_json(document: OpenApi) -> serde_json::Value {
    let mut json = serde_json::to_value(finish(document)).expect("the document serialises");
    constrain_text_inputs(&mut json);
    describe_event_streams(&mut json);
    describe_idempotency_key(&mut json);
    json
}

/// A `text/event-stream` answer is a sequence of events: its schema describes one event (as
/// OpenAPI 3.2's `itemSchema` does and tools validate), whose `data` is the JSON document the
/// handler declared, or `{"message"}` for an event named `error`.
fn describe_event_streams(document: &mut serde_json::Value) {
    let Some(paths) = document.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    for operation in paths
        .values_mut()
        .filter_map(|item| item.as_object_mut())
        .flat_map(|item| item.values_mut())
    {
        let Some(responses) = operation
            .get_mut("responses")
            .and_then(|r| r.as_object_mut())
        else {
            continue;
        };
        for response in responses.values_mut() {
            let Some(stream) = response.pointer_mut("/content/text~1event-stream") else {
                continue;
            };
            let data = stream.get("schema").cloned().unwrap_or_default();
            stream["schema"] = serde_json::json!({
                "type": "object",
                "description": "One event. `data` is the JSON document; an event named `error` \
                                (the stream failed after it started) carries `{\"message\"}`.",
                "properties": {
                    "event": {"type": "string", "enum": ["message", "error"]},
                    "data": {
                        "type": "string",
                        "contentMediaType": "application/json",
                        "contentSchema": {"oneOf": [data,
                            {"$ref": "#/components/schemas/ErrorBody"}]},
                    },
                    "id": {"type": "string"},
                    "retry": {"type": "integer"},
                },
                "required": ["data"],
            });
        }
    }
}

/// Adds [`TEXT`] / [`REQUIRED_TEXT`] (with `minLength: 1`) to every free-text string of every
/// query parameter and request body. (`get_mut` throughout: indexing a JSON object mutably
/// would insert nulls where keys are missing.)
fn constrain_text_inputs(document: &mut serde_json::Value) {
    let mut body_schemas = Vec::new();
    if let Some(paths) = document.get_mut("paths").and_then(|p| p.as_object_mut()) {
        for item in paths.values_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for operation in item.values_mut() {
                if let Some(parameters) = operation
                    .get_mut("parameters")
                    .and_then(|p| p.as_array_mut())
                {
                    for parameter in parameters {
                        let required = parameter.get("required") == Some(&true.into());
                        if let Some(schema) = parameter.get_mut("schema") {
                            constrain_string(schema, required);
                        }
                    }
                }
                let reference = operation
                    .pointer("/requestBody/content/application~1json/schema/$ref")
                    .and_then(|r| r.as_str());
                if let Some(reference) = reference {
                    body_schemas.push(
                        reference
                            .trim_start_matches("#/components/schemas/")
                            .to_owned(),
                    );
                }
            }
        }
    }
    let Some(schemas) = document.pointer_mut("/components/schemas") else {
        return;
    };
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = body_schemas.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(schema) = schemas.get_mut(name.as_str()) {
            body_schemas.extend(constrain_object(schema));
        }
    }
    require_a_lead_identity(schemas);
}

/// Constrains an object schema's string properties; returns the schemas it refers to through
/// `allOf` (flattened parts) and its properties (nested objects), which are request schemas too.
fn constrain_object(schema: &mut serde_json::Value) -> Vec<String> {
    let required: Vec<String> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|names| {
            names
                .iter()
                .filter_map(|name| name.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if let Some(properties) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
        for (name, property) in properties.iter_mut() {
            // Addresses: documented as the safe subset both fields accept.
            if name == "callback_url" || name == "cta_url" {
                property["pattern"] = CALLBACK_URL.into();
            }
            // A branding's addresses and colour; empty removes them in an update.
            if ["logo_url", "website", "sender_photo_url"].contains(&name.as_str()) {
                property["pattern"] = format!("^$|{CALLBACK_URL}").into();
            }
            if name == "primary_color" {
                property["pattern"] = HEX_COLOR.into();
            }
            // The copy's points: each at most as long as core takes.
            if name == "points" && property.get("items").is_some() {
                property["items"]["maxLength"] = 200.into();
            }
            if name == "html" || name == "css" {
                let required = required.contains(name);
                property["pattern"] = if required {
                    REQUIRED_DOCUMENT
                } else {
                    DOCUMENT
                }
                .into();
            }
            constrain_string(property, required.contains(name));
        }
    }
    let mut referred = Vec::new();
    // Objects nested in a property (`copy`) are request schemas too.
    if let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) {
        for property in properties.values() {
            let alternatives = ["oneOf", "anyOf"]
                .iter()
                .filter_map(|key| property.get(*key).and_then(|v| v.as_array()))
                .flatten();
            for reference in std::iter::once(property)
                .chain(alternatives)
                .filter_map(|p| p.get("$ref").and_then(|r| r.as_str()))
            {
                referred.push(
                    reference
                        .trim_start_matches("#/components/schemas/")
                        .to_owned(),
                );
            }
        }
    }
    if let Some(parts) = schema.get_mut("allOf").and_then(|p| p.as_array_mut()) {
        for part in parts {
            match part.get("$ref").and_then(|r| r.as_str()) {
                Some(reference) => referred.push(
                    reference
                        .trim_start_matches("#/components/schemas/")
                        .to_owned(),
                ),
                None => referred.extend(constrain_object(part)),
            }
        }
    }
    referred
}

/// A free-text string schema (or an array of them) gets the text pattern.
fn constrain_string(schema: &mut serde_json::Value, required: bool) {
    let is_type = |schema: &serde_json::Value, wanted: &str| match schema.get("type") {
        Some(serde_json::Value::String(kind)) => kind == wanted,
        Some(serde_json::Value::Array(kinds)) => kinds.iter().any(|kind| kind == wanted),
        _ => false,
    };
    if is_type(schema, "array") {
        if let Some(items) = schema.get_mut("items") {
            constrain_string(items, false);
        }
        return;
    }
    let free_text = is_type(schema, "string")
        && schema.get("enum").is_none()
        && schema.get("format").is_none()
        && schema.get("pattern").is_none();
    let Some(object) = schema.as_object_mut().filter(|_| free_text) else {
        return;
    };
    if required {
        object.insert("pattern".into(), REQUIRED_TEXT.into());
        object.insert("minLength".into(), 1.into());
    } else {
        object.insert("pattern".into(), TEXT.into());
    }
}

/// A property of an object schema, also inside its `allOf` parts.
fn property_mut<'a>(
    schema: &'a mut serde_json::Value,
    name: &str,
) -> Option<&'a mut serde_json::Value> {
    if schema.pointer(&format!("/properties/{name}")).is_some() {
        return schema.pointer_mut(&format!("/properties/{name}"));
    }
    schema
        .get_mut("allOf")?
        .as_array_mut()?
        .iter_mut()
        .find_map(|part| property_mut(part, name))
}

/// Where core asks for at least one of the lead's identifying values, say so as `anyOf`:
/// `values` of `/leads/upsert-lead` (one of the five default variables) and the automation
/// upserts (unless `is_test`).
fn require_a_lead_identity(schemas: &mut serde_json::Value) {
    use serde_json::json;
    let one_of = |keys: &[&str]| -> Vec<serde_json::Value> {
        keys.iter()
            .map(|key| {
                json!({"required": [key], "properties": {
                    *key: {"type": "string", "minLength": 1, "pattern": REQUIRED_TEXT}}})
            })
            .collect()
    };
    if let Some(values) = schemas
        .get_mut("UpsertLeadRequest")
        .and_then(|schema| property_mut(schema, "values"))
        .and_then(|v| v.as_object_mut())
    {
        values.insert(
            "additionalProperties".into(),
            json!({"type": ["string", "number", "boolean", "null"]}),
        );
        values.insert("anyOf".into(), one_of(&lps::wire::DEFAULT_KEYS).into());
    }
    if let Some(custom) = schemas
        .get_mut("AutomationLead")
        .and_then(|schema| property_mut(schema, "custom_data"))
        .and_then(|v| v.as_object_mut())
    {
        custom.insert(
            "additionalProperties".into(),
            json!({"type": ["string", "number", "boolean", "null"]}),
        );
    }
    for name in ["AutomationLeadRequest", "AutomationLeadBasicRequest"] {
        if let Some(schema) = schemas.get_mut(name).and_then(|s| s.as_object_mut()) {
            let mut branches = one_of(&["email", "social_profile_url", "company_domain"]);
            branches
                .push(json!({"required": ["is_test"], "properties": {"is_test": {"const": true}}}));
            schema.insert("anyOf".into(), branches.into());
        }
    }
}

pub fn finish(mut document: OpenApi) -> OpenApi {
    document.openapi = OpenApiVersion::Version31;
    document.info = InfoBuilder::new()
        .title("Lead Personalisation Service API")
        .version("v1")
        .description(Some(
            "Push leads into a workspace, generate one personalised page per lead, read pages, \
             leads and engagement back. Every endpoint takes `Authorization: Bearer sk-proj-...` \
             and answers JSON, errors included.",
        ))
        .build();

    let components = document.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        SCHEME,
        SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
    );
    components
        .schemas
        .insert(ErrorBody::name().into_owned(), ErrorBody::schema());

    for (path, item) in document.paths.paths.iter_mut() {
        for operation in [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ]
        .into_iter()
        .flatten()
        {
            operation.operation_id = Some(operation_id(path));
            complete(operation);
        }
        if let Some(post) = &mut item.post {
            accept_idempotency_key(post);
        }
    }
    document
}

/// Every POST takes `Idempotency-Key` (see `idempotency.rs`): the 409 of a retry that
/// overtakes its original is on each POST, the header itself is described once
/// ([`describe_idempotency_key`]).
fn accept_idempotency_key(operation: &mut Operation) {
    let responses = &mut operation.responses.responses;
    responses.entry("409".to_owned()).or_insert_with(|| {
        let mut response = error_response(
            "A request with this Idempotency-Key is still being carried out; retry shortly",
        );
        add_rate_limit_headers(&mut response);
        response.headers.insert(
            "Retry-After".into(),
            integer_header("Seconds to wait").into(),
        );
        RefOr::T(response)
    });
}

/// What `Idempotency-Key` does, said once: in the document's description and as the reusable
/// parameter `components.parameters.IdempotencyKey`. It is not listed on each POST: generated
/// clients and fuzzers would then send made-up keys, and a key reused with another body is
/// (rightly) refused.
fn describe_idempotency_key(document: &mut serde_json::Value) {
    const WHAT: &str = "Makes a POST safe to retry: the first answer for a key is kept for 24 \
        hours per credential and replayed (with `Idempotent-Replayed: true`) for a retry with \
        the same key and the same request (method, path, query and body, byte for byte); the \
        same key with a different request is a 422 (`errors.Idempotency-Key`); a retry while \
        the first is still being carried out is a 409 with `Retry-After`. 429 and 5xx answers \
        are not kept (the retry runs again). Any 1 to 255 visible ASCII characters; a new UUID \
        per logical request is best.";
    if let Some(description) = document
        .pointer_mut("/info/description")
        .and_then(|d| d.as_str().map(str::to_owned))
    {
        document["info"]["description"] =
            format!("{description}\n\nEvery POST accepts an `Idempotency-Key` header. {WHAT}")
                .into();
    }
    document["components"]["parameters"]["IdempotencyKey"] = serde_json::json!({
        "name": "Idempotency-Key",
        "in": "header",
        "required": false,
        "description": WHAT,
        "schema": {"type": "string", "minLength": 1, "maxLength": 255,
                   "pattern": "^[!-~]+$"},
    });
}

/// An operation's id: its path below the base, with `/` and `-` turned into `_`
/// (`/leads/upsert-leads` is `leads_upsert_leads`). Unique because paths are, and the same
/// name an MCP tool for the operation carries.
pub fn operation_id(path: &str) -> String {
    path.strip_prefix(super::BASE_PATH)
        .unwrap_or(path)
        .trim_matches('/')
        .replace(['/', '-'], "_")
}

/// What a response of this status means, for those the handler did not describe.
fn default_description(code: &str) -> &'static str {
    match code {
        "200" => "Success",
        "401" => "Missing, malformed or revoked key (`Unauthenticated.`)",
        "402" => "Not enough credits",
        "403" => "Workspace not found or access not permitted",
        "404" => "Not found",
        "409" => "Not possible in the object's current state; the message says what to do",
        "413" => "Request body over the limit",
        "422" => "Validation failed: `errors` names every invalid field",
        "429" => "Rate limit exceeded; retry after `Retry-After` seconds",
        "503" => "Temporarily unavailable; retry",
        _ => "Error",
    }
}

fn complete(operation: &mut Operation) {
    operation.security = Some(vec![SecurityRequirement::new(SCHEME, Vec::<String>::new())]);
    for (code, response) in operation.responses.responses.iter_mut() {
        if let RefOr::T(response) = response {
            if response.description.trim().is_empty() {
                response.description = default_description(code).to_owned();
            }
            add_rate_limit_headers(response);
        }
    }
    let shared = [
        ("401", default_description("401")),
        ("413", default_description("413")),
        ("429", default_description("429")),
        ("500", "Internal error; nothing of its cause is shown"),
        ("503", "The service is temporarily unavailable; retry"),
    ];
    let takes_body = operation.request_body.is_some();
    for (code, description) in shared {
        if code == "413" && !takes_body {
            continue;
        }
        operation
            .responses
            .responses
            .entry(code.to_owned())
            .or_insert_with(|| {
                let mut response = error_response(description);
                if code == "429" {
                    add_rate_limit_headers(&mut response);
                    response.headers.insert(
                        "Retry-After".into(),
                        integer_header("Seconds to wait").into(),
                    );
                }
                RefOr::T(response)
            });
    }
}

fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(ErrorBody::name())))
                .build(),
        )
        .build()
}

fn add_rate_limit_headers(response: &mut Response) {
    response.headers.insert(
        "X-RateLimit-Limit".into(),
        integer_header("Requests allowed per minute to this key").into(),
    );
    response.headers.insert(
        "X-RateLimit-Remaining".into(),
        integer_header("Requests left in the current window").into(),
    );
}

fn integer_header(description: &str) -> utoipa::openapi::Header {
    HeaderBuilder::new()
        .schema(Some(Object::with_type(Type::Integer)))
        .description(Some(description))
        .build()
}
