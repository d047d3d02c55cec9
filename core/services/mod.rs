//! tonic service implementations: each converts its proto request into domain values (every
//! bad field reported at once), calls a function of [`crate::domain`], and converts back.
//! Conversions between proto and domain types sit at the bottom of each file.

mod account;
mod api_tokens;
mod audiences;
mod campaigns;
mod engagement;
mod identity;
mod jobs;
mod leads;
mod pages;
mod visitor;
mod workspaces;

pub use account::AccountService;
pub use api_tokens::ApiTokensService;
pub use audiences::AudiencesService;
pub use campaigns::CampaignsService;
pub use engagement::EngagementService;
pub use identity::IdentityService;
pub use jobs::JobsService;
pub use leads::LeadsService;
pub use pages::PagesService;
pub use visitor::VisitorService;
pub use workspaces::WorkspacesService;

/// A `google.protobuf.Value` as JSON (numbers that are whole stay integers).
pub(crate) fn json_of(value: prost_types::Value) -> serde_json::Value {
    use prost_types::value::Kind;
    match value.kind {
        None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::BoolValue(b)) => b.into(),
        Some(Kind::StringValue(s)) => s.into(),
        Some(Kind::NumberValue(n)) if n.fract() == 0.0 && n.abs() < 9e15 => (n as i64).into(),
        Some(Kind::NumberValue(n)) => serde_json::Number::from_f64(n)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Some(Kind::StructValue(object)) => json_object(object).into(),
        Some(Kind::ListValue(list)) => list.values.into_iter().map(json_of).collect(),
    }
}

/// A `google.protobuf.Struct` as a JSON object.
pub(crate) fn json_object(
    object: prost_types::Struct,
) -> serde_json::Map<String, serde_json::Value> {
    object
        .fields
        .into_iter()
        .map(|(key, value)| (key, json_of(value)))
        .collect()
}
