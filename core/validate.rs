//! Checking proto requests into domain values, reporting every bad field at once.
//!
//! "At once" includes what the caller's transport found before the request reached core: the
//! REST edge cannot put a field of the wrong JSON type into a proto message, so it sends those
//! violations along (metadata [`EARLIER_VIOLATIONS`]); the gatekeeper puts them on the request
//! ([`EarlierViolations`]), and [`Validated::validated`], given the request, reports them
//! together with core's own, refusing the request.

use std::sync::{Arc, Mutex};

use crate::error::{Error, FieldViolation};
use crate::local_days::LocalDays;

pub use crate::wire::{EARLIER_VIOLATIONS, decode_violations};

/// The violations the caller's transport found before core, on a request's extensions (put
/// there by the gatekeeper). A service reports them with its own by validating against the
/// request ([`Validated::validated`]); what no validation took, the gatekeeper reports after
/// the call, so a call that reads no field still hears what was wrong with them.
#[derive(Debug, Clone, Default)]
pub struct EarlierViolations(Arc<Mutex<Vec<FieldViolation>>>);

impl EarlierViolations {
    pub fn new(violations: Vec<FieldViolation>) -> Self {
        Self(Arc::new(Mutex::new(violations)))
    }

    /// The request's earlier violations, shared (taking them from either takes them from
    /// both): for a service that moves the message out of the request before validating.
    pub fn of<T>(request: &tonic::Request<T>) -> Self {
        request
            .extensions()
            .get::<Self>()
            .cloned()
            .unwrap_or_default()
    }

    /// The violations not yet reported (taken: each is reported once).
    pub fn take(&self) -> Vec<FieldViolation> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// What a validation reports the earlier violations of: a request, or the violations taken
/// from one before its message was moved out.
pub trait Earlier {
    fn earlier(&self) -> Vec<FieldViolation>;
}

impl<T> Earlier for tonic::Request<T> {
    fn earlier(&self) -> Vec<FieldViolation> {
        self.extensions()
            .get::<EarlierViolations>()
            .map(EarlierViolations::take)
            .unwrap_or_default()
    }
}

impl Earlier for EarlierViolations {
    fn earlier(&self) -> Vec<FieldViolation> {
        self.take()
    }
}

/// The earlier violations, followed by `own` for fields they do not already name.
fn merge_earlier(mut all: Vec<FieldViolation>, own: Vec<FieldViolation>) -> Vec<FieldViolation> {
    for violation in own {
        if !all.iter().any(|earlier| earlier.field == violation.field) {
            all.push(violation);
        }
    }
    all
}

/// One field's outcome.
pub type Field<T> = std::result::Result<T, FieldViolation>;

/// A required field.
pub fn required<T>(field: &str, value: Option<T>) -> Field<T> {
    value.ok_or_else(|| FieldViolation::required(field))
}

/// A required text field: trimmed, not empty, at most `max` characters.
pub fn required_text(field: &str, value: Option<String>, max: usize) -> Field<String> {
    let value = value
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| FieldViolation::required(field))?;
    if value.chars().any(char::is_control) {
        return Err(FieldViolation::new(
            field,
            format!(
                "The {} field must not contain control characters.",
                field.replace('_', " ")
            ),
        ));
    }
    if value.chars().count() > max {
        return Err(FieldViolation::new(
            field,
            format!(
                "The {} field must not be greater than {max} characters.",
                field.replace('_', " ")
            ),
        ));
    }
    Ok(value)
}

/// A document (HTML, CSS): like text, but line breaks and tabs are allowed; `required` refuses
/// a missing or blank one; absent optional ones are empty.
pub fn document(field: &str, value: Option<String>, max: usize, required: bool) -> Field<String> {
    let value = value.unwrap_or_default();
    if required && value.trim().is_empty() {
        return Err(FieldViolation::required(field));
    }
    let label = field.replace('_', " ");
    if value
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(FieldViolation::new(
            field,
            format!(
                "The {label} field must not contain control characters other than line breaks and tabs."
            ),
        ));
    }
    if value.chars().count() > max {
        return Err(FieldViolation::new(
            field,
            format!("The {label} field must not be greater than {max} characters."),
        ));
    }
    Ok(value)
}

/// An optional text field: trimmed, empty read as absent, at most `max` characters.
pub fn optional_text(field: &str, value: Option<String>, max: usize) -> Field<Option<String>> {
    match value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(value) => required_text(field, Some(value), max).map(Some),
    }
}

/// A page size: `default` when absent, else between `min` and `max`.
pub fn limit(field: &str, value: Option<i64>, min: i64, max: i64, default: i64) -> Field<i64> {
    match value {
        None => Ok(default),
        Some(n) if (min..=max).contains(&n) => Ok(n),
        Some(_) => Err(FieldViolation::new(
            field,
            format!(
                "The {} field must be between {min} and {max}.",
                field.replace('_', " ")
            ),
        )),
    }
}

/// An optional `http` or `https` URL.
pub fn optional_url(field: &str, value: Option<String>) -> Field<Option<String>> {
    let Some(value) = value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match reqwest::Url::parse(&value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
            Ok(Some(value))
        }
        _ => Err(FieldViolation::new(
            field,
            format!("The {} field must be a valid URL.", field.replace('_', " ")),
        )),
    }
}

/// An optional field that, when given (trimmed, not empty), must be one of `allowed`.
pub fn one_of(field: &str, value: Option<String>, allowed: &[&str]) -> Field<Option<String>> {
    match value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(value) if allowed.contains(&value.as_str()) => Ok(Some(value)),
        Some(_) => Err(FieldViolation::new(
            field,
            format!(
                "The {} field must be one of {}.",
                field.replace('_', " "),
                allowed.join(", ")
            ),
        )),
    }
}

/// An optional IANA time zone by name (`Europe/Berlin`); empty read as absent.
pub fn time_zone(field: &str, value: Option<String>) -> Field<Option<LocalDays>> {
    match value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(name) => LocalDays::named(&name).map(Some).ok_or_else(|| {
            FieldViolation::new(
                field,
                format!(
                    "The {} field must be an IANA time zone name, such as Europe/Berlin.",
                    field.replace('_', " ")
                ),
            )
        }),
    }
}

/// A non-empty list.
pub fn required_list<T>(field: &str, values: Vec<T>) -> Field<Vec<T>> {
    if values.is_empty() {
        Err(FieldViolation::required(field))
    } else {
        Ok(values)
    }
}

/// Combines several fields' outcomes: all values, or every violation among them.
pub trait Validated {
    type Output;
    /// The values, or every violation: `request`'s earlier ones and these fields' own.
    fn validated(self, request: &impl Earlier) -> Result<Self::Output, Error>;
}

macro_rules! impl_validated {
    ($($name:ident: $ty:ident),+) => {
        impl<$($ty),+> Validated for ($(Field<$ty>,)+) {
            type Output = ($($ty,)+);

            fn validated(self, request: &impl Earlier) -> Result<Self::Output, Error> {
                let ($($name,)+) = self;
                let mut violations = Vec::new();
                $(let $name = $name.map_err(|v| violations.push(v)).ok();)+
                let violations = merge_earlier(request.earlier(), violations);
                match ($($name,)+) {
                    ($(Some($name),)+) if violations.is_empty() => Ok(($($name,)+)),
                    _ => Err(Error::Invalid(violations)),
                }
            }
        }
    };
}

impl_validated!(a: A);
impl_validated!(a: A, b: B);
impl_validated!(a: A, b: B, c: C);
impl_validated!(a: A, b: B, c: C, d: D);
impl_validated!(a: A, b: B, c: C, d: D, e: E);
impl_validated!(a: A, b: B, c: C, d: D, e: E, f: F);
impl_validated!(a: A, b: B, c: C, d: D, e: E, f: F, g: G);
impl_validated!(a: A, b: B, c: C, d: D, e: E, f: F, g: G, h: H);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_violation_is_reported_not_just_the_first() {
        let outcome = (
            required::<i64>("workspace_id", None),
            required_text("name", Some("   ".into()), 10),
        )
            .validated(&EarlierViolations::default());
        let Err(Error::Invalid(violations)) = outcome else {
            panic!("expected a validation error")
        };
        let fields: Vec<_> = violations.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(fields, ["workspace_id", "name"]);
    }

    #[test]
    fn valid_fields_come_back_as_values() {
        let (id, name) = (
            required("workspace_id", Some(3)),
            required_text("name", Some(" k ".into()), 10),
        )
            .validated(&EarlierViolations::default())
            .unwrap();
        assert_eq!((id, name.as_str()), (3, "k"));
    }

    #[test]
    fn limits_default_and_stay_in_range() {
        assert_eq!(limit("limit", None, 1, 100, 25), Ok(25));
        assert_eq!(limit("limit", Some(100), 1, 100, 25), Ok(100));
        assert_eq!(
            limit("limit", Some(0), 1, 100, 25).unwrap_err().message,
            "The limit field must be between 1 and 100."
        );
    }

    #[test]
    fn urls_must_be_http() {
        assert!(optional_url("callback_url", Some("https://h.example/x".into())).is_ok());
        assert_eq!(optional_url("callback_url", Some(" ".into())), Ok(None));
        assert!(optional_url("callback_url", Some("ftp://h/x".into())).is_err());
        assert!(optional_url("callback_url", Some("not a url".into())).is_err());
    }

    #[test]
    fn text_with_control_characters_is_refused() {
        let err = required_text("name", Some("Spring\0Launch".into()), 50).unwrap_err();
        assert_eq!(
            err.message,
            "The name field must not contain control characters."
        );
    }

    #[test]
    fn text_longer_than_its_bound_is_refused() {
        let err = required_text("name", Some("abcdef".into()), 5).unwrap_err();
        assert_eq!(
            err.message,
            "The name field must not be greater than 5 characters."
        );
    }

    #[test]
    fn a_requests_earlier_violations_come_first_and_are_reported_once() {
        let mut request = tonic::Request::new(());
        let earlier = EarlierViolations::new(vec![FieldViolation::new(
            "workspace_id",
            "The workspace id field must be an integer.",
        )]);
        request.extensions_mut().insert(earlier.clone());
        let Err(Error::Invalid(violations)) = (
            required::<i64>("workspace_id", None),
            required::<i64>("campaign_id", None),
        )
            .validated(&request)
        else {
            panic!("expected a validation error")
        };
        let fields: Vec<&str> = violations.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(fields, ["workspace_id", "campaign_id"]);
        assert!(violations[0].message.contains("must be an integer"));
        // Taken: nothing is left for the gatekeeper to report again.
        assert!(earlier.take().is_empty());
        assert!((required("x", Some(1)),).validated(&request).is_ok());
    }
}
