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
