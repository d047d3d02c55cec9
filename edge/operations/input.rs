//! Reading query strings and JSON bodies into the edge's request types.
//!
//! Every field of a request type is a [`Lenient<T>`]: it deserializes from whatever the client
//! sent and remembers whether that was absent, null, a usable `T`, or something else. Reading a
//! request never fails early; instead a [`Check`] gathers one violation per bad field, so the
//! client hears about every mistake at once, as `errors.<field>`. Whether a field is required is
//! core's decision, not the edge's.

use lps::wire::FieldViolation;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// A field as the client sent it. Request types need no `#[serde(default)]`: a missing field
/// reads as `Absent`.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Lenient<T> {
    /// Missing or null.
    #[default]
    Absent,
    Value(T),
    /// Present but not a `T`.
    Invalid,
}

impl<'de, T: Loose> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::read(deserializer)
    }
}

/// The key of the one-entry object [`query_object`] wraps a text value in: what came from a
/// query string or a form is told apart from a JSON string, which is never a list.
const TEXT: &str = "\u{0}text";

fn text(value: String) -> Value {
    Value::Object(Map::from_iter([(TEXT.to_owned(), Value::String(value))]))
}

/// The text of a value [`text`] wrapped, else the value as it is.
fn from_text(value: Value) -> Result<String, Value> {
    match value {
        Value::Object(mut object) if object.len() == 1 && object.contains_key(TEXT) => {
            match object.remove(TEXT) {
                Some(Value::String(text)) => Ok(text),
                _ => Err(Value::Object(object)),
            }
        }
        value => Err(value),
    }
}

/// Types a [`Lenient`] field can hold, read the forgiving way real clients need: numbers may
/// arrive as strings (query strings only have strings), booleans as `1`/`0`; lists as JSON
/// arrays, and in a query string or form also as `a[]=1&a[]=2`, `a=1&a=2` or `a=1,2` (a JSON
/// string is never a list: `"1,2"` is refused, not read as two ids).
pub trait Loose: Sized {
    /// What the field must be, completing "The x field must be ...".
    const EXPECTED: &'static str;
    fn from_loose(value: Value) -> Option<Self>;

    /// The field from a query string's or a form's text.
    fn from_text(text: String) -> Option<Self> {
        Self::from_loose(Value::String(text))
    }

    /// The field as sent, through a `serde_json::Value` ([`Loose::from_loose`],
    /// [`Loose::from_text`]); a type read in one pass instead says so here.
    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Lenient<Self>, D::Error> {
        // Through `Option` so that serde treats a missing field like null instead of failing.
        Ok(match Option::<Value>::deserialize(deserializer)? {
            None | Some(Value::Null) => Lenient::Absent,
            Some(value) => match from_text(value) {
                Ok(text) => Self::from_text(text),
                Err(value) => Self::from_loose(value),
            }
            .map_or(Lenient::Invalid, Lenient::Value),
        })
    }
}

impl Loose for i64 {
    const EXPECTED: &'static str = "an integer";

    fn from_loose(value: Value) -> Option<Self> {
        match value {
            // A whole number that fits a 64-bit integer: `7`, or `7.0` as some JSON encoders
            // write whole numbers (exactly, so only up to 2^53); no fractions, nothing out of
            // range. Text (query strings, forms) must be written as an integer.
            Value::Number(n) => n.as_i64().or_else(|| n.as_f64().and_then(whole)),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

impl Loose for f64 {
    const EXPECTED: &'static str = "a number";

    fn from_loose(value: Value) -> Option<Self> {
        match value {
            Value::Number(n) => n.as_f64(),
            // Text (query strings, forms) written as a finite number.
            Value::String(s) => s.trim().parse().ok().filter(|f: &f64| f.is_finite()),
            _ => None,
        }
    }
}

/// A float that is exactly a whole number an `f64` can carry without loss.
fn whole(f: f64) -> Option<i64> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    (f.fract() == 0.0 && f.abs() <= EXACT).then_some(f as i64)
}

impl Loose for String {
    const EXPECTED: &'static str = "a string";

    fn from_loose(value: Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

impl Loose for bool {
    const EXPECTED: &'static str = "true or false";

    fn from_loose(value: Value) -> Option<Self> {
        match value {
            Value::Bool(b) => Some(b),
            Value::Number(n) => match n.as_i64() {
                Some(1) => Some(true),
                Some(0) => Some(false),
                _ => None,
            },
            Value::String(s) => match s.trim() {
                "1" | "true" => Some(true),
                "0" | "false" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }
}

impl<T: Loose> Loose for Vec<T> {
    const EXPECTED: &'static str = "an array";

    fn from_loose(value: Value) -> Option<Self> {
        match value {
            Value::Array(items) => items.into_iter().map(T::from_loose).collect(),
            // A string, a number, an object: not a list.
            _ => None,
        }
    }

    fn from_text(text: String) -> Option<Self> {
        if text.trim().is_empty() {
            return Some(Vec::new());
        }
        text.split(',')
            .map(|part| T::from_text(part.trim().to_owned()))
            .collect()
    }
}

impl Loose for Map<String, Value> {
    const EXPECTED: &'static str = "an object";

    fn from_loose(value: Value) -> Option<Self> {
        match value {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }
}

impl Loose for Value {
    const EXPECTED: &'static str = "a JSON value";

    fn from_loose(value: Value) -> Option<Self> {
        Some(value)
    }
}

/// A JSON array as sent (no comma-splitting: lists of objects only come in JSON bodies), its
/// items as core reads them ([`proto_value`]). Read in one pass ([`ProtoValue`]): the thousands
/// of leads of an upsert were read into `serde_json::Value`s a second time and then converted,
/// a third of the CPU such a request took.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonArray(pub Vec<prost_types::Value>);

impl Loose for JsonArray {
    const EXPECTED: &'static str = "an array";

    fn from_loose(value: Value) -> Option<Self> {
        match value {
            Value::Array(items) => Some(Self(items.into_iter().map(proto_value).collect())),
            _ => None,
        }
    }

    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Lenient<Self>, D::Error> {
        use prost_types::value::Kind;
        // As the default: null is absent, and text (marked as one by `query_object`) is not an
        // array any more than any other value but an array is.
        Ok(match Option::<ProtoValue>::deserialize(deserializer)? {
            None => Lenient::Absent,
            Some(ProtoValue(value)) => match value.kind {
                None | Some(Kind::NullValue(_)) => Lenient::Absent,
                Some(Kind::ListValue(list)) => Lenient::Value(Self(list.values)),
                Some(_) => Lenient::Invalid,
            },
        })
    }
}

/// Any JSON value, read straight from the text or a `Value`, as [`proto_value`] says.
pub struct ProtoValue(pub prost_types::Value);

impl<'de> Deserialize<'de> for ProtoValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ProtoValueVisitor)
    }
}

struct ProtoValueVisitor;

impl ProtoValueVisitor {
    fn value<E>(kind: prost_types::value::Kind) -> Result<ProtoValue, E> {
        Ok(ProtoValue(prost_types::Value { kind: Some(kind) }))
    }

    /// A number as its JSON text, as `serde_json::Number` writes it.
    fn number<E>(number: serde_json::Number) -> Result<ProtoValue, E> {
        Self::value(prost_types::value::Kind::StringValue(number.to_string()))
    }
}

impl<'de> serde::de::Visitor<'de> for ProtoValueVisitor {
    type Value = ProtoValue;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<ProtoValue, E> {
        Self::value(prost_types::value::Kind::BoolValue(b))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<ProtoValue, E> {
        Self::number(n.into())
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<ProtoValue, E> {
        Self::number(n.into())
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<ProtoValue, E> {
        // JSON has no infinities or NaN; serde_json's own `Value` makes them null too.
        match serde_json::Number::from_f64(n) {
            Some(number) => Self::number(number),
            None => self.visit_unit(),
        }
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ProtoValue, E> {
        self.visit_string(s.to_owned())
    }

    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<ProtoValue, E> {
        Self::value(prost_types::value::Kind::StringValue(s))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<ProtoValue, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<ProtoValue, D::Error> {
        ProtoValue::deserialize(deserializer)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<ProtoValue, E> {
        Self::value(prost_types::value::Kind::NullValue(0))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<ProtoValue, A::Error> {
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(ProtoValue(value)) = seq.next_element()? {
            values.push(value);
        }
        Self::value(prost_types::value::Kind::ListValue(
            prost_types::ListValue { values },
        ))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ProtoValue, A::Error> {
        let mut fields = std::collections::BTreeMap::new();
        while let Some((key, ProtoValue(value))) = map.next_entry::<String, ProtoValue>()? {
            fields.insert(key, value);
        }
        Self::value(prost_types::value::Kind::StructValue(prost_types::Struct {
            fields,
        }))
    }
}

/// A JSON value as a `google.protobuf.Value`, for core to read as sent. Numbers travel as
/// their JSON text: a double would lose digits (a 20-digit phone number), and core reads
/// numbers and numeric text alike. Made by [`ProtoValue`], which lists may be read by in one
/// pass.
pub fn proto_value(value: Value) -> prost_types::Value {
    // The one rule is `ProtoValue`'s, which accepts every JSON value.
    match serde_json::from_value::<ProtoValue>(value) {
        Ok(ProtoValue(value)) => value,
        Err(err) => unreachable!("any JSON value reads as a protobuf value: {err}"),
    }
}

/// A JSON object as a `google.protobuf.Struct` (see [`proto_value`]).
pub fn proto_struct(object: Map<String, Value>) -> prost_types::Struct {
    prost_types::Struct {
        fields: object
            .into_iter()
            .map(|(key, value)| (key, proto_value(value)))
            .collect(),
    }
}

/// A timestamp as clients send them: RFC 3339 (`2026-11-22T06:54:38Z`, any offset),
/// `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DDTHH:MM:SS` (UTC), or a date (its midnight, UTC).
pub fn parse_timestamp(text: &str) -> Option<prost_types::Timestamp> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    let text = text.trim();
    let instant = DateTime::parse_from_rfc3339(text)
        .map(|t| t.to_utc())
        .or_else(|_| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").map(|t| t.and_utc())
        })
        .or_else(|_| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc())
        })
        .or_else(|_| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        })
        .ok()?;
    Some(lps::wire::to_proto(instant.timestamp_micros()))
}

/// The violations found while reading one request.
#[derive(Debug, Default)]
pub struct Check {
    violations: Vec<FieldViolation>,
}

impl Check {
    /// The field's value if usable; records a violation if it was present but of the wrong kind.
    /// Absent and null read as `None` (core decides whether the field was required).
    pub fn field<T: Loose>(&mut self, name: &str, value: Lenient<T>) -> Option<T> {
        match value {
            Lenient::Value(v) => Some(v),
            Lenient::Absent => None,
            Lenient::Invalid => {
                self.violations
                    .push(FieldViolation::must_be(name, T::EXPECTED));
                None
            }
        }
    }

    /// A date and time ([`parse_timestamp`]'s forms) if usable; records a violation if the
    /// field was present but not one.
    pub fn timestamp(
        &mut self,
        name: &str,
        value: Lenient<String>,
    ) -> Option<prost_types::Timestamp> {
        let text = self.field(name, value)?;
        let parsed = parse_timestamp(&text);
        if parsed.is_none() {
            self.violation(FieldViolation::must_be(name, "a date and time"));
        }
        parsed
    }

    /// Records a violation found while translating a field.
    pub fn violation(&mut self, violation: FieldViolation) {
        self.violations.push(violation);
    }

    pub fn into_violations(self) -> Vec<FieldViolation> {
        self.violations
    }
}

/// An operation's input read into `T`, and what was wrong with it: the fields the caller sent
/// (over REST the query string and the body together, the body winning where both name a
/// field; over MCP the tool's arguments).
pub struct Input<T>(pub T, pub Check);

impl<T: DeserializeOwned + Default> Input<T> {
    /// Reads `fields`; `check` brings what was already found wrong (an unreadable body).
    pub fn read(fields: Map<String, Value>, check: Check) -> Self {
        // Every field is `Lenient`, so only a type that is not an object of them can fail here.
        let value = serde_json::from_value(Value::Object(fields)).unwrap_or_default();
        Self(value, check)
    }
}

/// Groups query pairs into an object: `a[]=1&a[]=2` and repeated `a=1&a=2` become arrays, a
/// single `a=x` stays text (marked as such: [`Loose`] lists split it on commas). Empty values read as
/// absent, the way form clients send untouched fields.
pub fn query_object(query: &str) -> Map<String, Value> {
    let mut object = Map::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if value.is_empty() {
            continue;
        }
        let (key, is_list) = match key.strip_suffix("[]") {
            Some(base) => (base.to_owned(), true),
            None => (key.into_owned(), false),
        };
        let value = value.into_owned();
        match object.get_mut(&key) {
            Some(Value::Array(items)) => items.push(Value::String(value)),
            Some(existing) => {
                let first = from_text(existing.take()).map_or_else(|other| other, Value::String);
                *existing = Value::Array(vec![first, Value::String(value)]);
            }
            None if is_list => {
                object.insert(key, Value::Array(vec![Value::String(value)]));
            }
            None => {
                object.insert(key, text(value));
            }
        }
    }
    object
}

/// The fields of a request body; an empty body has none.
pub fn body_object(bytes: &[u8], is_form: bool) -> Result<Map<String, Value>, FieldViolation> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    if is_form {
        return Ok(query_object(&String::from_utf8_lossy(bytes)));
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(FieldViolation::new(
            "body",
            "The request body must be a JSON object.",
        )),
        Err(err) => Err(FieldViolation::new(
            "body",
            format!("The request body is not valid JSON: {err}."),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Deserialize)]
    struct Sample {
        workspace_id: Lenient<i64>,
        campaign_ids: Lenient<Vec<i64>>,
        sync: Lenient<bool>,
        name: Lenient<String>,
    }

    fn from_query(query: &str) -> Sample {
        serde_json::from_value(Value::Object(query_object(query))).unwrap()
    }

    #[test]
    fn every_list_form_real_clients_send_is_read() {
        for query in [
            "campaign_ids[]=1&campaign_ids[]=2",
            "campaign_ids=1&campaign_ids=2",
            "campaign_ids=1,2",
            "campaign_ids=1%2C%202",
        ] {
            assert_eq!(
                from_query(query).campaign_ids,
                Lenient::Value(vec![1, 2]),
                "{query}"
            );
        }
        assert_eq!(
            from_query("campaign_ids[]=7").campaign_ids,
            Lenient::Value(vec![7])
        );
    }

    #[test]
    fn a_json_list_is_an_array_and_nothing_else() {
        for body in [
            r#"{"campaign_ids": "1,2"}"#,
            r#"{"campaign_ids": "7"}"#,
            r#"{"campaign_ids": ""}"#,
            r#"{"campaign_ids": 7}"#,
            r#"{"campaign_ids": {"0": 1}}"#,
            r#"{"campaign_ids": true}"#,
        ] {
            let sample: Sample = serde_json::from_str(body).unwrap();
            assert_eq!(sample.campaign_ids, Lenient::Invalid, "{body}");
        }
        let sample: Sample = serde_json::from_str(r#"{"campaign_ids": [1, "2"]}"#).unwrap();
        assert_eq!(sample.campaign_ids, Lenient::Value(vec![1, 2]));
        // Text fields of a query keep commas as written.
        assert_eq!(
            from_query("name=Smith,%20John").name,
            Lenient::Value("Smith, John".to_owned())
        );
    }

    #[test]
    fn numbers_in_strings_are_numbers_and_words_are_not() {
        assert_eq!(
            from_query("workspace_id=12").workspace_id,
            Lenient::Value(12)
        );
        assert_eq!(
            from_query("workspace_id=abc").workspace_id,
            Lenient::Invalid
        );
        assert_eq!(from_query("workspace_id=").workspace_id, Lenient::Absent);
        assert_eq!(from_query("").workspace_id, Lenient::Absent);
    }

    #[test]
    fn numbers_that_are_not_64_bit_integers_are_refused_in_json_as_in_queries() {
        for body in [
            r#"{"workspace_id": 1180591620717411303424}"#,
            r#"{"workspace_id": 1e300}"#,
            r#"{"workspace_id": 2.5}"#,
            r#"{"workspace_id": 1e17}"#,
            r#"{"workspace_id": 9223372036854775808}"#,
        ] {
            let sample: Sample = serde_json::from_str(body).unwrap();
            assert_eq!(sample.workspace_id, Lenient::Invalid, "{body}");
        }
        let list: Sample =
            serde_json::from_str(r#"{"campaign_ids": [1, 9223372036854775808]}"#).unwrap();
        assert_eq!(list.campaign_ids, Lenient::Invalid);
        assert_eq!(
            from_query("workspace_id=1180591620717411303424").workspace_id,
            Lenient::Invalid
        );
        let whole: Sample = serde_json::from_str(r#"{"workspace_id": 7.0}"#).unwrap();
        assert_eq!(whole.workspace_id, Lenient::Value(7));
        assert_eq!(
            from_query("workspace_id=7.0").workspace_id,
            Lenient::Invalid
        );
        assert_eq!(
            from_query("workspace_id=7.5").workspace_id,
            Lenient::Invalid
        );
    }

    #[test]
    fn json_values_keep_their_kinds() {
        let sample: Sample = serde_json::from_str(
            r#"{"workspace_id": "5", "sync": 1, "name": 42, "campaign_ids": null}"#,
        )
        .unwrap();
        assert_eq!(sample.workspace_id, Lenient::Value(5));
        assert_eq!(sample.sync, Lenient::Value(true));
        assert_eq!(sample.name, Lenient::Invalid);
        assert_eq!(sample.campaign_ids, Lenient::Absent);
    }

    #[test]
    fn timestamps_are_read_in_the_forms_clients_send() {
        let micros = |text| parse_timestamp(text).map(|ts| lps::wire::iso8601(&ts));
        assert_eq!(
            micros("2026-11-22T06:54:38Z").unwrap(),
            "2026-11-22T06:54:38.000000Z"
        );
        assert_eq!(
            micros("2026-11-22T07:54:38+01:00").unwrap(),
            "2026-11-22T06:54:38.000000Z"
        );
        assert_eq!(
            micros("2026-11-22 06:54:38").unwrap(),
            "2026-11-22T06:54:38.000000Z"
        );
        assert_eq!(micros("2026-11-22").unwrap(), "2026-11-22T00:00:00.000000Z");
        assert_eq!(micros("yesterday"), None);
    }

    #[test]
    fn json_reaches_core_as_sent_with_every_digit() {
        let value = proto_value(serde_json::json!({"phone": 12345678901234567890u64, "ok": true}));
        let Some(prost_types::value::Kind::StructValue(object)) = value.kind else {
            panic!("an object")
        };
        assert_eq!(
            object.fields["phone"].kind,
            Some(prost_types::value::Kind::StringValue(
                "12345678901234567890".into()
            ))
        );
        assert_eq!(
            object.fields["ok"].kind,
            Some(prost_types::value::Kind::BoolValue(true))
        );
    }

    /// What a list field reads as, from a body (through `Input::read`'s `Value`) and from a
    /// query string.
    fn leads_of(body: &str) -> Lenient<JsonArray> {
        #[derive(Deserialize)]
        struct Body {
            leads: Lenient<JsonArray>,
        }
        let fields = body_object(body.as_bytes(), false).unwrap();
        let read: Body = serde_json::from_value(Value::Object(fields)).unwrap();
        read.leads
    }

    #[test]
    fn a_list_is_read_in_one_pass_as_any_other_field_would_be() {
        let items = || {
            JsonArray(vec![proto_value(
                serde_json::json!({"values": {"email": "a@b.c"}}),
            )])
        };
        assert_eq!(
            leads_of(r#"{"leads": [{"values": {"email": "a@b.c"}}]}"#),
            Lenient::Value(items())
        );
        assert_eq!(
            leads_of(r#"{"leads": []}"#),
            Lenient::Value(JsonArray(vec![]))
        );
        assert_eq!(leads_of(r#"{"leads": null}"#), Lenient::Absent);
        assert_eq!(leads_of(r#"{}"#), Lenient::Absent);
        for not_a_list in [r#""[]""#, "{}", "3", "true", r#"{"values": {}}"#] {
            let body = format!(r#"{{"leads": {not_a_list}}}"#);
            assert_eq!(leads_of(&body), Lenient::Invalid, "{body}");
        }
        // From a query string or a form, text is never a list of objects.
        let query: Lenient<JsonArray> =
            serde_json::from_value(query_object("leads=x").remove("leads").unwrap()).unwrap();
        assert_eq!(query, Lenient::Invalid);
        let lists = query_object("leads[]=x");
        let from_list: Lenient<JsonArray> = serde_json::from_value(lists["leads"].clone()).unwrap();
        assert_eq!(
            from_list,
            Lenient::Value(JsonArray(vec![proto_value(Value::String("x".into()))]))
        );
    }

    /// Any JSON, as text: scalars of every kind (numbers beyond 64 bits, fractions, exponents,
    /// escapes), nested in lists and objects (repeated keys too).
    fn any_json() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let scalar = prop_oneof![
            Just("null".to_owned()),
            any::<bool>().prop_map(|b| b.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>()
                .prop_filter("JSON numbers are finite", |f| f.is_finite())
                .prop_map(|f| format!("{f:e}")),
            "-?[1-9][0-9]{0,29}(\\.[0-9]{1,20})?".prop_map(|n| n.to_owned()),
            any::<String>().prop_map(|s| Value::String(s).to_string()),
        ];
        scalar.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                proptest::collection::vec(("[a-c]{1,2}", inner), 0..6).prop_map(|entries| {
                    let entries: Vec<String> = entries
                        .into_iter()
                        .map(|(key, value)| format!("{}:{value}", Value::String(key)))
                        .collect();
                    format!("{{{}}}", entries.join(","))
                }),
            ]
        })
    }

    proptest::proptest! {
        /// Read in one pass, from the text or from a `Value`, any JSON becomes what reading it
        /// into a `Value` and converting it made.
        #[test]
        fn one_pass_reads_json_as_converting_a_value_does(json in any_json()) {
            let value: Value = serde_json::from_str(&json).unwrap();
            let converted = proto_value(value.clone());
            let ProtoValue(from_text) = serde_json::from_str(&json).unwrap();
            let ProtoValue(from_value) = serde_json::from_value(value).unwrap();
            proptest::prop_assert_eq!(&from_text, &converted);
            proptest::prop_assert_eq!(&from_value, &converted);
        }
    }

    #[test]
    fn bodies_are_json_or_forms_and_empty_is_no_fields() {
        let json = body_object(br#"{"workspace_id": 3}"#, false).unwrap();
        assert_eq!(json["workspace_id"], 3);
        let form = body_object(b"workspace_id=3&name=Ada+L", true).unwrap();
        assert_eq!(from_text(form["name"].clone()), Ok("Ada L".to_owned()));
        assert!(body_object(b"  ", false).unwrap().is_empty());
        assert_eq!(body_object(b"[1]", false).unwrap_err().field, "body");
        assert_eq!(body_object(b"{oops", false).unwrap_err().field, "body");
    }

    #[test]
    fn a_check_names_each_mistyped_field() {
        let mut check = Check::default();
        assert_eq!(check.field("workspace_id", Lenient::<i64>::Invalid), None);
        assert_eq!(
            check.field("name", Lenient::Value("x".to_owned())),
            Some("x".into())
        );
        assert_eq!(check.field("sync", Lenient::<bool>::Absent), None);
        let violations = check.into_violations();
        assert_eq!(violations.len(), 1);
        assert_eq!(
            violations[0].message,
            "The workspace id field must be an integer."
        );
    }
}
