//! The OpenAPI document at `/api/external/v1/openapi.json`.

use crate::common::*;

#[tokio::test]
async fn the_document_lists_every_implemented_path_with_errors_and_security() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let document = server
        .send(server.client.get(server.url("/openapi.json")))
        .await
        .expect(200)
        .json();
    assert_eq!(document["openapi"], "3.1.0");
    assert_eq!(
        document["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    for (path, method) in [
        ("/hello-world", "get"),
        ("/hello-world-user", "get"),
        ("/automation/test", "get"),
        ("/workspaces/get-list", "get"),
        ("/workspaces/get-variable-list", "get"),
        ("/generate-api-token", "post"),
        ("/get-api-tokens", "get"),
        ("/delete-api-token", "delete"),
        ("/account/credits", "get"),
        ("/campaigns/get-list", "get"),
        ("/campaigns/create", "post"),
        ("/brandings/get-list", "get"),
        ("/leads/upsert-leads", "post"),
        ("/leads/upsert-lead", "post"),
        ("/leads/import-to-workspace", "post"),
        ("/leads/get-status", "get"),
        ("/leads/get-leads", "get"),
        ("/leads/search", "get"),
        ("/leads/get", "get"),
        ("/audiences/get-list", "get"),
        ("/audiences/create", "post"),
        ("/audiences/add-leads", "post"),
        ("/audiences/remove-leads", "post"),
        ("/audiences/link-to-campaign", "post"),
        ("/audiences/unlink-from-campaign", "post"),
        ("/audiences/delete", "post"),
        ("/automation/upsert-lead", "post"),
        ("/automation/upsert-lead-basic", "post"),
        ("/automation/get-leads", "get"),
        ("/automation/get-leads-from-job", "get"),
        ("/automation/get-form-submissions", "get"),
        ("/pages/design", "get"),
        ("/pages/publish", "post"),
        ("/pages/unpublish", "post"),
        ("/templates/get-list", "get"),
        ("/templates/apply", "post"),
        ("/templates/create", "post"),
    ] {
        let operation = &document["paths"][format!("{BASE}{path}")][method];
        assert!(operation.is_object(), "{method} {path} missing");
        assert!(operation["responses"]["200"].is_object(), "{path} 200");
        assert!(operation["responses"]["401"].is_object(), "{path} 401");
        assert!(
            operation["responses"]["429"]["headers"]["Retry-After"].is_object(),
            "{path}"
        );
        assert_eq!(
            operation["security"][0]["bearer"],
            serde_json::json!([]),
            "{path}"
        );
    }
    let variables = &document["paths"][format!("{BASE}/workspaces/get-variable-list")]["get"];
    assert_eq!(variables["parameters"][0]["name"], "workspace_id");
    assert_eq!(variables["parameters"][0]["required"], true);
    assert!(variables["responses"]["422"].is_object());
    let upsert = &document["paths"][format!("{BASE}/leads/upsert-leads")]["post"];
    let schema = &upsert["requestBody"]["content"]["application/json"]["schema"];
    assert!(schema.is_object(), "{upsert}");
    let get_leads = &document["paths"][format!("{BASE}/leads/get-leads")]["get"];
    assert!(get_leads["responses"]["503"].is_object());
}

/// The document as served, pretty-printed the way `docs/openapi.json` is committed.
async fn served_document(server: &Server) -> serde_json::Value {
    server
        .send(server.client.get(server.url("/openapi.json")))
        .await
        .expect(200)
        .json()
}

#[tokio::test]
async fn the_committed_document_is_the_one_served() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let served = serde_json::to_string_pretty(&served_document(&server).await).unwrap() + "\n";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json");
    if std::env::var_os("LPS_UPDATE_OPENAPI").is_some() {
        std::fs::write(path, &served).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == served,
        "docs/openapi.json is out of date: run `LPS_UPDATE_OPENAPI=1 cargo test \
         the_committed_document_is_the_one_served` and commit it"
    );
}

/// The required fields of a request body schema, through `$ref` and `allOf`.
fn required_fields(document: &serde_json::Value, schema: &serde_json::Value) -> Vec<String> {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        return required_fields(document, &document["components"]["schemas"][name]);
    }
    let mut fields: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect();
    for part in schema["allOf"].as_array().into_iter().flatten() {
        fields.extend(required_fields(document, part));
    }
    fields
}

#[tokio::test]
async fn every_documented_required_field_is_exactly_what_the_server_requires() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let document = served_document(&server).await;
    let mut checked = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let mut required: Vec<String> = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["required"] == true)
                .filter_map(|p| p["name"].as_str().map(str::to_owned))
                .collect();
            let body = &operation["requestBody"]["content"]["application/json"]["schema"];
            if body.is_object() {
                required.extend(required_fields(&document, body));
            }
            required.sort();
            required.dedup();
            // Nothing sent at all: every required field, and only those, is reported missing
            // (other rules, such as "at least one of", may add messages of their own).
            let url = format!("{}{path}", server.http);
            let request = match method.as_str() {
                "get" => server.client.get(url),
                "delete" => server.client.delete(url),
                _ => server.client.post(url).json(&serde_json::json!({})),
            };
            let reply = server.send(request.bearer_auth(&account.api_key)).await;
            if required.is_empty() {
                assert_ne!(reply.status, 422, "{method} {path}: {}", reply.json());
                continue;
            }
            let body = reply.expect(422).json();
            let errors = body["errors"]
                .as_object()
                .unwrap_or_else(|| panic!("{method} {path}: {body}"));
            for field in &required {
                assert!(
                    errors.contains_key(field),
                    "{method} {path}: {field} in {body}"
                );
            }
            for (field, messages) in errors {
                let says_required = messages[0]
                    .as_str()
                    .unwrap()
                    .ends_with("field is required.");
                assert!(
                    !says_required || required.contains(field),
                    "{method} {path}: {field} is required but not documented so"
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked > 20,
        "only {checked} operations have required fields"
    );
}
