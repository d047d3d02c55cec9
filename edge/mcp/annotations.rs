//! What a client may know of each tool before calling it: the MCP specification's annotations
//! (whether it only reads, destroys or overwrites, can be repeated, reaches outside lps) and
//! the schema of its structured result.

use rmcp::model::ToolAnnotations;
use serde_json::{Map, Value, json};

use crate::operations::effect::Effect;

/// The annotations of a tool whose operation has `effect` (written beside it in the
/// operations table, `edge/operations/mod.rs`).
pub fn annotations(effect: Effect, title: Option<String>) -> ToolAnnotations {
    let mut annotations = ToolAnnotations::new()
        .read_only(effect.read_only())
        .open_world(effect.reaches_outside);
    annotations.title = title;
    if effect.read_only() {
        annotations
    } else {
        annotations
            .destructive(effect.destructive())
            .idempotent(effect.idempotent())
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
        let tools = crate::operations::table().tools;
        let read = annotations(tools["leads_get"].effect, None);
        assert_eq!(read.read_only_hint, Some(true));
        assert_eq!(read.destructive_hint, None);
        let delete = annotations(tools["leads_delete"].effect, None);
        assert_eq!(delete.read_only_hint, Some(false));
        assert_eq!(delete.destructive_hint, Some(true));
        assert_eq!(delete.idempotent_hint, Some(true));
        assert_eq!(delete.open_world_hint, Some(false));
        let generate = annotations(tools["pages_generate"].effect, None);
        assert_eq!(generate.destructive_hint, Some(false));
        assert_eq!(generate.idempotent_hint, Some(false));
        assert_eq!(generate.open_world_hint, Some(true));
        let publish = annotations(tools["pages_publish"].effect, None);
        assert_eq!(publish.destructive_hint, Some(false));
        assert_eq!(publish.idempotent_hint, Some(true));
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
