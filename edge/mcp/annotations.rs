//! What a client may know of each tool before calling it: the MCP specification's annotations
//! (whether it only reads, destroys or overwrites, can be repeated, reaches outside lps) and
//! the schema of its structured result.

use rmcp::model::ToolAnnotations;
use serde_json::{Map, Value, json};

/// Tools that delete or overwrite what exists (a design, settings, a lead's values, a
/// membership, a key, a published page, the signing secret), as opposed to only adding.
const DESTRUCTIVE: [&str; 16] = [
    "automation_upsert_lead",
    "automation_upsert_lead_basic",
    "leads_upsert_leads",
    "audiences_delete",
    "audiences_remove_leads",
    "audiences_unlink_from_campaign",
    "brandings_update",
    "callbacks_rotate_secret",
    "campaigns_update",
    "delete_api_token",
    "leads_delete",
    "pages_generate_cancel",
    "pages_unpublish",
    "pages_update_design",
    "templates_apply",
    "leads_upsert_lead",
];

/// Tools whose repeated call with the same arguments changes nothing more (upserts by key,
/// setting a state, removing).
const IDEMPOTENT: [&str; 16] = [
    "audiences_add_leads",
    "audiences_delete",
    "audiences_link_to_campaign",
    "audiences_remove_leads",
    "audiences_unlink_from_campaign",
    "brandings_update",
    "campaigns_update",
    "delete_api_token",
    "leads_delete",
    "leads_upsert_lead",
    "leads_upsert_leads",
    "pages_generate_cancel",
    "pages_publish",
    "pages_unpublish",
    "pages_update_design",
    "templates_apply",
];

/// Tools that reach outside lps: fetching leads' websites, asking the model, or sending
/// callbacks to the caller's receivers.
const OPEN_WORLD: [&str; 9] = [
    "automation_upsert_lead",
    "automation_upsert_lead_basic",
    "callbacks_redeliver",
    "leads_enrich",
    "leads_import_to_workspace",
    "leads_upsert_lead",
    "leads_upsert_leads",
    "pages_generate",
    "campaigns_create",
];

/// The annotations of the tool `name`, which REST serves with `method`: a `GET` only reads.
pub fn annotations(name: &str, method: &http::Method, title: Option<String>) -> ToolAnnotations {
    let read_only = method == http::Method::GET;
    let mut annotations = ToolAnnotations::new()
        .read_only(read_only)
        .open_world(OPEN_WORLD.contains(&name));
    annotations.title = title;
    if read_only {
        annotations
    } else {
        annotations
            .destructive(DESTRUCTIVE.contains(&name))
            .idempotent(IDEMPOTENT.contains(&name))
    }
}

/// The schema of a tool's structured result: the operation's JSON success body (references
/// resolved), wrapped as `{"result": ...}` where the body is not an object, as the result is;
/// `None` for operations that answer REST with something else than JSON.
pub fn output_schema(success_body: &Value) -> Option<Map<String, Value>> {
    if success_body.is_null() {
        return None;
    }
    let mut schema = without_openapi_formats(success_body.clone());
    if schema["type"] != "object" {
        schema = json!({
            "type": "object",
            "properties": { "result": schema },
            "required": ["result"],
        });
    }
    match schema {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

/// `schema` without OpenAPI's own formats (`int64`, `double`, ...), which JSON Schema
/// validators do not know and strict ones refuse.
fn without_openapi_formats(schema: Value) -> Value {
    const OPENAPI_FORMATS: [&str; 5] = ["int32", "int64", "float", "double", "byte"];
    match schema {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .filter(|(key, value)| {
                    !(key == "format"
                        && value.as_str().is_some_and(|f| OPENAPI_FORMATS.contains(&f)))
                })
                .map(|(key, value)| (key, without_openapi_formats(value)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(without_openapi_formats).collect())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_get_only_reads_and_a_delete_destroys() {
        let read = annotations("leads_get", &http::Method::GET, None);
        assert_eq!(read.read_only_hint, Some(true));
        assert_eq!(read.destructive_hint, None);
        let delete = annotations("leads_delete", &http::Method::POST, None);
        assert_eq!(delete.read_only_hint, Some(false));
        assert_eq!(delete.destructive_hint, Some(true));
        assert_eq!(delete.idempotent_hint, Some(true));
        assert_eq!(delete.open_world_hint, Some(false));
        let generate = annotations("pages_generate", &http::Method::POST, None);
        assert_eq!(generate.destructive_hint, Some(false));
        assert_eq!(generate.open_world_hint, Some(true));
    }

    #[test]
    fn every_tool_the_hints_name_is_an_operation() {
        let runs = crate::operations::table().runs;
        for name in DESTRUCTIVE.iter().chain(&IDEMPOTENT).chain(&OPEN_WORLD) {
            assert!(runs.contains_key(*name), "{name} is no operation");
        }
    }

    #[test]
    fn a_body_that_is_not_an_object_is_wrapped_as_the_result_is() {
        let list = json!({"type": "array", "items": {"type": "integer", "format": "int64"}});
        let schema = output_schema(&list).unwrap();
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
                "required": ["result"],
            })
        );
        assert!(output_schema(&Value::Null).is_none());
    }
}
