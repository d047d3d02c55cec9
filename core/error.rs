//! The one domain error of lps, and the only place it becomes a `tonic::Status`.
//!
//! Field violations travel as `BadRequest` details, reasons (`PLAN_REQUIRED`, `NO_CREDITS`,
//! `NO_LEADS`, ...) as `ErrorInfo`, rate limits as `RetryInfo` plus `retry-after` metadata. The
//! edge turns these back into HTTP in `edge/operations/error.rs`.

use std::time::Duration;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// The `ErrorInfo.domain` of every lps error.
pub const ERROR_DOMAIN: &str = "lps";

/// Result of core operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One invalid input field: its wire name and a message for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldViolation {
    pub field: String,
    pub message: String,
}

impl FieldViolation {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }

    /// `The workspace id field is required.`
    pub fn required(field: &str) -> Self {
        Self::new(field, format!("The {} field is required.", human(field)))
    }

    /// `The workspace id field must be an integer.` and the like, for any expected kind.
    pub fn must_be(field: &str, what: &str) -> Self {
        Self::new(field, format!("The {} field must be {what}.", human(field)))
    }
}

/// A field name as a person reads it: `workspace_id` -> `workspace id`.
fn human(field: &str) -> String {
    field.replace(['_', '.'], " ")
}

/// Everything that can go wrong in core, by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No credential, a malformed one, or a revoked one.
    #[error("Unauthenticated.")]
    Unauthenticated,
    /// The workspace does not exist or the credential may not reach it.
    #[error("Workspace not found or access not permitted.")]
    WorkspaceForbidden,
    /// The account's plan does not include API access.
    #[error(
        "API access requires a Pro or Scale plan. Please upgrade your plan to generate API keys."
    )]
    PlanRequired,
    /// The credential may not do this at all, whatever it names (an app's OAuth token managing
    /// credentials); the message says what can.
    #[error("{0}")]
    Forbidden(&'static str),
    /// A named object does not exist among what the caller reaches; the message names it,
    /// e.g. `API token not found`.
    #[error("{0}")]
    NotFound(&'static str),
    /// No job with that id among the caller's workspaces.
    #[error("Job not found")]
    JobNotFound,
    /// The job exists but has stored no lead yet; retry later.
    #[error("The job has not produced any leads yet. Retry later.")]
    NoLeads,
    /// The account's pool (or the workspace's cap) cannot pay for the operation.
    #[error(
        "No credits remaining: this workspace cannot pay for the operation. Wait for the credits to renew or ask for more."
    )]
    NoCredits,
    /// None of the leads has the inputs the requested enrichment types need; each lead is
    /// listed with why (`skipped_leads`).
    #[error("No lead has the fields the requested enrichment types need (see skipped_leads).")]
    NothingToEnrich(Vec<(i64, String)>),
    /// An OAuth request was refused: the RFC 6749 error code (`invalid_grant`, ...) and why.
    #[error("{1}")]
    OAuth(&'static str, String),
    /// The object is not in a state that allows the operation; the message says what to do.
    #[error("{0}")]
    Precondition(&'static str),
    /// Input failed validation; every violation is listed, not just the first.
    #[error("{}", validation_message(.0))]
    Invalid(Vec<FieldViolation>),
    /// The credential spent its request allowance.
    #[error("Too many requests. Retry after {} seconds.", retry_after_secs(.retry_after))]
    RateLimited { retry_after: Duration },
    /// A concurrent request wrote the same thing first (a unique constraint, a serialisation
    /// failure or a deadlock); operations retry on it, and one that still meets it asks the
    /// caller to retry.
    #[error("A concurrent request changed the same data. Please retry.")]
    Conflict(#[source] sqlx::Error),
    /// Something the operation needs is out for now (storage full, the database unreachable):
    /// nothing was changed, and the same request may succeed in a while.
    #[error("{}", .0.message())]
    Unavailable(Outage),
    /// A bug or an unavailable dependency; logged here, opaque to the caller.
    #[error("Internal server error.")]
    Internal(#[source] anyhow::Error),
}

/// What is out, for [`Error::Unavailable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// The database's storage is full (or failing): writes cannot be kept.
    StorageFull,
    /// The database cannot be reached (refused, gone, or every connection busy past the wait).
    DatabaseUnreachable,
    /// No model server is configured (`--llm-base-url`), so a design cannot be generated: only
    /// the operator can change that, so it is refused before any credit is spent.
    NoModel,
}

impl Outage {
    pub fn message(self) -> &'static str {
        match self {
            Self::StorageFull => {
                "Storage is full: nothing can be saved until space is freed. Nothing was changed; please retry later."
            }
            Self::DatabaseUnreachable => {
                "The database cannot be reached just now. Nothing was changed; please retry."
            }
            Self::NoModel => {
                "No model is configured: this service cannot generate designs until its operator sets a model server (--llm-base-url). No credits were spent; apply a template instead."
            }
        }
    }

    /// The reason callers see (`ErrorInfo`): the edge answers 507 for a full storage.
    pub fn reason(self) -> &'static str {
        match self {
            Self::StorageFull => "STORAGE_FULL",
            Self::DatabaseUnreachable => "DATABASE_UNAVAILABLE",
            Self::NoModel => "NO_MODEL",
        }
    }

    /// When to try again.
    pub fn retry_after(self) -> Duration {
        match self {
            Self::StorageFull => Duration::from_secs(30),
            Self::DatabaseUnreachable => Duration::from_secs(5),
            // Configuring a model takes an operator and a restart, not seconds.
            Self::NoModel => Duration::from_secs(3600),
        }
    }
}

impl Error {
    /// An unreachable workspace reported as `instead` (an object in another workspace is "not
    /// found", never forbidden); every other error, outages included, stays what it is.
    pub fn unreachable_as(self, instead: Error) -> Self {
        match self {
            Self::WorkspaceForbidden => instead,
            other => other,
        }
    }

    /// For an operator (start-up, admin commands): the cause itself, which the opaque message
    /// clients get would hide.
    pub fn into_cause(self) -> anyhow::Error {
        match self {
            Self::Internal(source) => source,
            Self::Conflict(source) => source.into(),
            other => anyhow::anyhow!(other),
        }
    }

    /// A validation error of one field.
    pub fn invalid(violation: FieldViolation) -> Self {
        Self::Invalid(vec![violation])
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(err: sqlx::migrate::MigrateError) -> Self {
        Self::Internal(err.into())
    }
}

/// Laravel-style summary: the first message, then how many more there are.
fn validation_message(violations: &[FieldViolation]) -> String {
    match violations {
        [] => "The given data was invalid.".to_owned(),
        [only] => only.message.clone(),
        [first, rest @ ..] => format!(
            "{} (and {} more error{})",
            first.message,
            rest.len(),
            if rest.len() == 1 { "" } else { "s" }
        ),
    }
}

fn retry_after_secs(retry_after: &Duration) -> u64 {
    retry_after.as_secs_f64().ceil().max(1.0) as u64
}

fn with_reason(code: Code, message: String, reason: &str) -> Status {
    Status::with_error_details(
        code,
        message,
        ErrorDetails::with_error_info(reason, ERROR_DOMAIN, []),
    )
}

impl From<Error> for Status {
    fn from(err: Error) -> Self {
        let message = err.to_string();
        match err {
            Error::Unauthenticated => Status::unauthenticated(message),
            Error::WorkspaceForbidden => {
                with_reason(Code::PermissionDenied, message, "WORKSPACE_FORBIDDEN")
            }
            Error::PlanRequired => with_reason(Code::PermissionDenied, message, "PLAN_REQUIRED"),
            Error::Forbidden(_) => with_reason(Code::PermissionDenied, message, "FORBIDDEN"),
            Error::NotFound(_) => Status::not_found(message),
            Error::Precondition(_) => Status::failed_precondition(message),
            Error::NoCredits => with_reason(Code::FailedPrecondition, message, "NO_CREDITS"),
            Error::JobNotFound => with_reason(Code::NotFound, message, "JOB_NOT_FOUND"),
            Error::NoLeads => with_reason(Code::Unavailable, message, "NO_LEADS"),
            Error::OAuth(code, _) => with_reason(Code::InvalidArgument, message, code),
            Error::NothingToEnrich(skipped) => {
                let skipped: Vec<serde_json::Value> = skipped
                    .into_iter()
                    .map(|(lead_id, reason)| serde_json::json!({"lead_id": lead_id, "reason": reason}))
                    .collect();
                Status::with_error_details(
                    Code::InvalidArgument,
                    message,
                    ErrorDetails::with_error_info(
                        "NO_ENRICHABLE_LEADS",
                        ERROR_DOMAIN,
                        [(
                            "skipped_leads".to_owned(),
                            serde_json::Value::from(skipped).to_string(),
                        )],
                    ),
                )
            }
            Error::Invalid(violations) => Status::with_error_details(
                Code::InvalidArgument,
                message,
                ErrorDetails::with_bad_request(
                    violations
                        .into_iter()
                        .map(|v| tonic_types::FieldViolation::new(v.field, v.message))
                        .collect::<Vec<_>>(),
                ),
            ),
            Error::RateLimited { retry_after } => {
                let mut details = ErrorDetails::with_retry_info(Some(retry_after));
                details.set_error_info("RATE_LIMITED", ERROR_DOMAIN, []);
                Status::with_error_details(Code::ResourceExhausted, message, details)
            }
            Error::Conflict(source) => {
                tracing::warn!(error = %source, "write conflict left after retries");
                with_reason(Code::Aborted, message, "CONFLICT")
            }
            Error::Unavailable(outage) => {
                tracing::warn!(reason = outage.reason(), "answered unavailable");
                let mut details = ErrorDetails::with_retry_info(Some(outage.retry_after()));
                details.set_error_info(outage.reason(), ERROR_DOMAIN, []);
                Status::with_error_details(Code::Unavailable, message, details)
            }
            Error::Internal(source) => {
                tracing::error!(error = ?source, "internal error");
                Status::internal(message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_summary_counts_the_other_violations() {
        let err = Error::Invalid(vec![
            FieldViolation::required("workspace_id"),
            FieldViolation::must_be("name", "a string"),
            FieldViolation::must_be("limit", "an integer"),
        ]);
        assert_eq!(
            err.to_string(),
            "The workspace id field is required. (and 2 more errors)"
        );
    }

    #[test]
    fn violations_travel_as_bad_request_details() {
        let status = Status::from(Error::invalid(FieldViolation::required("workspace_id")));
        assert_eq!(status.code(), Code::InvalidArgument);
        let details = status.get_error_details();
        let bad_request = details.bad_request().expect("bad request details");
        assert_eq!(bad_request.field_violations[0].field, "workspace_id");
    }

    #[test]
    fn only_an_unreachable_workspace_reads_as_not_found_never_an_outage() {
        let hidden = Error::WorkspaceForbidden.unreachable_as(Error::JobNotFound);
        assert!(matches!(hidden, Error::JobNotFound));
        let outage = Error::Internal(anyhow::anyhow!("pool timed out"));
        assert!(matches!(
            outage.unreachable_as(Error::JobNotFound),
            Error::Internal(_)
        ));
        let status = Status::from(
            Error::Internal(anyhow::anyhow!("x")).unreachable_as(Error::NotFound("Lead not found")),
        );
        assert_eq!(status.code(), Code::Internal);
    }

    #[test]
    fn internal_errors_do_not_leak_their_source() {
        let status = Status::from(Error::Internal(anyhow::anyhow!("SELECT secret FROM x")));
        assert_eq!(status.message(), "Internal server error.");
    }
}
