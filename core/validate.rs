//! Checking proto requests into domain values, reporting every bad field at once.

use crate::error::{Error, FieldViolation};

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

/// Combines several fields' outcomes: all values, or every violation among them.
pub trait Validated {
    type Output;
    fn validated(self) -> Result<Self::Output, Error>;
}

macro_rules! impl_validated {
    ($($name:ident: $ty:ident),+) => {
        impl<$($ty),+> Validated for ($(Field<$ty>,)+) {
            type Output = ($($ty,)+);

            fn validated(self) -> Result<Self::Output, Error> {
                let ($($name,)+) = self;
                let mut violations = Vec::new();
                $(let $name = $name.map_err(|v| violations.push(v)).ok();)+
                match ($($name,)+) {
                    ($(Some($name),)+) => Ok(($($name,)+)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_violation_is_reported_not_just_the_first() {
        let outcome = (
            required::<i64>("workspace_id", None),
            required_text("name", Some("   ".into()), 10),
        )
            .validated();
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
            .validated()
            .unwrap();
        assert_eq!((id, name.as_str()), (3, "k"));
    }

    #[test]
    fn text_longer_than_its_bound_is_refused() {
        let err = required_text("name", Some("abcdef".into()), 5).unwrap_err();
        assert_eq!(
            err.message,
            "The name field must not be greater than 5 characters."
        );
    }
}
