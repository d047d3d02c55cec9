//! A design refused before it is stored or published: it must compile, pass the budget's
//! audit, and render within its budget even for a lead whose every value is as long as a value
//! may be.

use super::context::PageContext;
use super::copy;
use super::design::{CompiledDesign, RenderError};
use super::{pool, sanitise};
use crate::error::FieldViolation;

/// Refuses a design that does not compile, that the budget cannot bound, that fails to render
/// without lead values, or that runs out of its budget for a lead whose every value the design
/// reads is as long as a value may be; names the line and the reason (field `html`). Blocking:
/// call it from [`pool::run`].
/// What is wrong with a design, as the `html` field's violation (the line named when known).
pub fn design_violation(err: RenderError) -> FieldViolation {
    let (line, reason, verb) = match &err {
        RenderError::Refused(refusal) if refusal.syntax => {
            (refusal.line, refusal.reason.clone(), "does not compile")
        }
        RenderError::Refused(refusal) => (refusal.line, refusal.reason.clone(), "is not allowed"),
        RenderError::OverBudget(exceeded) => (None, exceeded.reason(), "is too costly"),
        RenderError::Template(err) => (
            err.line(),
            err.detail()
                .map_or_else(|| err.kind().to_string(), str::to_owned),
            "does not compile",
        ),
    };
    let line = line.map(|l| format!(" on line {l}")).unwrap_or_default();
    FieldViolation::new("html", format!("The design {verb}{line}: {reason}."))
}

pub fn check(html: &str, css: &str) -> Result<(), FieldViolation> {
    let refused = design_violation;
    let (design, audit) = CompiledDesign::compile_audited(html, css).map_err(refused)?;
    tracing::debug!(steps = audit.cost, "design audited");
    // As a lead with no values of a campaign with nothing set renders it.
    let (nothing_set, _) = PageContext::default().for_lead(Default::default());
    design.render_body(nothing_set).map_err(refused)?;
    // A lead with the longest values: what it costs a real lead is what it costs here. Only the
    // budget is held against it (sample text may fail a filter like `int` a real value passes).
    match design.render_body(longest_values(&audit.variables)) {
        Err(err @ RenderError::OverBudget(_)) => Err(refused(err)),
        _ => Ok(()),
    }
}

/// A design from outside cleaned ([`sanitise::design`]) and [`check`]ed on the render pool:
/// what may be stored as a draft.
pub async fn cleaned_and_checked(html: String, css: String) -> crate::Result<(String, String)> {
    in_pool(move || {
        let (html, css) = sanitise::design(&html, &css);
        check(&html, &css).map(|()| (html, css))
    })
    .await
}

/// [`check`] on the render pool, for a design already stored (a draft to publish, a template).
pub async fn checked(html: &str, css: &str) -> crate::Result<()> {
    let (html, css) = (html.to_owned(), css.to_owned());
    in_pool(move || check(&html, &css)).await
}

async fn in_pool<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, FieldViolation> + Send + 'static,
) -> crate::Result<T> {
    pool::run(work).await?.map_err(crate::Error::invalid)
}

/// Each variable the design reads (dotted for attributes) with a value of the longest length a
/// lead's value may have.
fn longest_values(variables: &std::collections::BTreeSet<String>) -> minijinja::value::Value {
    let long: String = "Sample value "
        .chars()
        .cycle()
        .take(crate::domain::lead::MAX_VALUE_CHARS)
        .collect();
    let mut context = serde_json::Map::new();
    for object in ["branding", "sender"] {
        context.insert(
            object.to_owned(),
            serde_json::Value::Object(Default::default()),
        );
    }
    for variable in variables {
        match variable.split_once('.') {
            Some((object, attribute)) => {
                let entry = context
                    .entry(object.to_owned())
                    .or_insert_with(|| serde_json::Value::Object(Default::default()));
                if let serde_json::Value::Object(map) = entry {
                    // The copy's points are a list (of at most six).
                    let value = if variable == "copy.points" {
                        vec![long.clone(); copy::MAX_POINTS].into()
                    } else {
                        long.clone().into()
                    };
                    map.insert(attribute.to_owned(), value);
                }
            }
            None => {
                context
                    .entry(variable.clone())
                    .or_insert_with(|| long.clone().into());
            }
        }
    }
    minijinja::value::Value::from(minijinja::value::Serde(&context))
}
