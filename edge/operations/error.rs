//! The only place a `tonic::Status` becomes an answer: an HTTP status and the JSON body, the
//! same for REST (as the response) and MCP (as the tool error's content).
//!
//! gRPC code -> HTTP: Unauthenticated 401, PermissionDenied 403, NotFound 404,
//! InvalidArgument 422 (with `errors`), FailedPrecondition 409 (402 for reason `NO_CREDITS`),
//! ResourceExhausted 429 (with `Retry-After`), Unavailable 503 (`{status: "NO_LEADS", message}`
//! for reason `NO_LEADS`; 507 for `STORAGE_FULL`; `Retry-After` on every 503 and 507).
//! Internal failures say nothing of their cause.

use std::collections::BTreeMap;

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Serialize;
use tonic::{Code, Status};
use tonic_types::StatusExt;
use utoipa::ToSchema;

use super::headers::{credential_id, rate_limit_headers};
use crate::http::request_log::CredentialId;

/// Every error body: a message for a person and, for validation failures, the messages of
/// each invalid field.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    #[schema(example = "The workspace id field is required.")]
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = json!({"workspace_id": ["The workspace id field is required."]}))]
    pub errors: Option<BTreeMap<String, Vec<String>>>,
}

/// A 422 of `POST /leads/enrich`: an [`ErrorBody`] (`errors` for invalid fields) or, when no
/// lead has the inputs the requested types need, `skipped_leads`.
#[derive(Debug, Serialize, ToSchema)]
pub struct EnrichErrorBody {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<BTreeMap<String, Vec<String>>>,
    /// Every lead not enriched, with why.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>, example = json!([{"lead_id": 7, "reason": "The lead has no company_domain."}]))]
    pub skipped_leads: Option<serde_json::Value>,
}

/// The body prescribed for an unknown job: `{"status": "not_found"}` from
/// `/leads/get-status`, `{"status": "NOT_FOUND"}` from the job-leads paths.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobNotFoundBody {
    #[schema(example = "not_found")]
    pub status: String,
}

/// The body prescribed for a job that has stored no lead yet (503; retry later).
#[derive(Debug, Serialize, ToSchema)]
pub struct NoLeadsBody {
    #[schema(example = "NO_LEADS")]
    pub status: String,
    pub message: String,
}

/// A failed REST call, from core or from the router, optionally with a body the
/// specification prescribes instead of the usual `{message}`.
#[derive(Debug)]
pub struct ApiError {
    status: Status,
    body: Option<serde_json::Value>,
}

impl From<Status> for ApiError {
    fn from(status: Status) -> Self {
        Self { status, body: None }
    }
}

impl ApiError {
    /// The same status and headers, with `body` as the whole JSON body.
    pub fn with_body(mut self, body: serde_json::Value) -> Self {
        self.body = Some(body);
        self
    }

    /// Whether core answered with this `ErrorInfo` reason.
    fn has_reason(&self, reason: &str) -> bool {
        self.status
            .get_error_details()
            .error_info()
            .is_some_and(|info| info.reason == reason)
    }

    /// An unknown job answered with the body the path prescribes ([`JobNotFoundBody`]).
    pub fn job_not_found_as(self, status_value: &str) -> Self {
        if self.has_reason("JOB_NOT_FOUND") {
            self.with_body(serde_json::json!({ "status": status_value }))
        } else {
            self
        }
    }
}

/// A failed operation as answered: the HTTP status, the caller's rate-limit headers, the
/// credential for the log, and the JSON body.
pub struct ErrorAnswer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub credential: Option<CredentialId>,
    pub body: serde_json::Value,
}

impl ApiError {
    /// What the failure answers.
    pub fn into_answer(self) -> ErrorAnswer {
        let status = self.status;
        let headers = rate_limit_headers(status.metadata());
        let details = status.get_error_details();
        let reason = details.error_info().map(|info| info.reason.as_str());
        // A status made here from a transport error (core unreachable, connection reset) keeps
        // its source; one sent by core never has one.
        let unreachable = std::error::Error::source(&status).is_some();
        let http_status = match (status.code(), reason) {
            _ if unreachable => StatusCode::SERVICE_UNAVAILABLE,
            // Core never answers Unknown: tonic makes it of a broken transport (a reset
            // stream, a malformed answer), so it is an outage too.
            (Code::Unknown, _) => StatusCode::SERVICE_UNAVAILABLE,
            (Code::Unavailable, Some("STORAGE_FULL")) => StatusCode::INSUFFICIENT_STORAGE,
            (Code::Unauthenticated, _) => StatusCode::UNAUTHORIZED,
            (Code::PermissionDenied, _) => StatusCode::FORBIDDEN,
            (Code::NotFound, _) => StatusCode::NOT_FOUND,
            (Code::InvalidArgument | Code::OutOfRange, _) => StatusCode::UNPROCESSABLE_ENTITY,
            (Code::FailedPrecondition, Some("NO_CREDITS")) => StatusCode::PAYMENT_REQUIRED,
            (Code::FailedPrecondition | Code::AlreadyExists | Code::Aborted, _) => {
                StatusCode::CONFLICT
            }
            (Code::ResourceExhausted, _) => StatusCode::TOO_MANY_REQUESTS,
            (Code::Unavailable, _) => StatusCode::SERVICE_UNAVAILABLE,
            (Code::DeadlineExceeded, _) => StatusCode::GATEWAY_TIMEOUT,
            (Code::Unimplemented, _) => StatusCode::NOT_IMPLEMENTED,
            (Code::Ok | Code::Cancelled | Code::Internal | Code::DataLoss, _) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        let mut headers = headers;
        if matches!(
            http_status,
            StatusCode::SERVICE_UNAVAILABLE
                | StatusCode::INSUFFICIENT_STORAGE
                | StatusCode::TOO_MANY_REQUESTS
        ) && !headers.contains_key(http::header::RETRY_AFTER)
        {
            // When to come back: core's estimate (a limit of a call counted by no credential,
            // such as `/domains/ask`, says it only there), else a second (an unreachable core).
            let seconds = details
                .retry_info()
                .and_then(|info| info.retry_delay)
                .map_or(1, |delay| delay.as_secs_f64().ceil().max(1.0) as u64);
            headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        ErrorAnswer {
            credential: credential_id(status.metadata()),
            body: Self::body(&status, http_status, reason, self.body, &details),
            status: http_status,
            headers,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let answer = self.into_answer();
        let mut response = (answer.status, answer.headers, Json(answer.body)).into_response();
        if let Some(credential) = answer.credential {
            response.extensions_mut().insert(credential);
        }
        response
    }
}

impl ApiError {
    /// The JSON body: one the specification prescribes, or `{message, errors}`.
    fn body(
        status: &Status,
        http_status: StatusCode,
        reason: Option<&str>,
        prescribed: Option<serde_json::Value>,
        details: &tonic_types::ErrorDetails,
    ) -> serde_json::Value {
        if let Some(body) = prescribed {
            return body;
        }
        if reason == Some("NO_ENRICHABLE_LEADS") {
            let skipped = details
                .error_info()
                .and_then(|info| info.metadata.get("skipped_leads"))
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_else(|| serde_json::json!([]));
            let body = EnrichErrorBody {
                message: status.message().to_owned(),
                errors: None,
                skipped_leads: Some(skipped),
            };
            return serde_json::to_value(body).unwrap_or_default();
        }
        if reason == Some("NO_LEADS") {
            let body = NoLeadsBody {
                status: "NO_LEADS".into(),
                message: status.message().to_owned(),
            };
            return serde_json::to_value(body).unwrap_or_default();
        }
        let message = match http_status {
            // Transport and internal failures may carry causes not meant for clients.
            StatusCode::INTERNAL_SERVER_ERROR => "Internal server error.".to_owned(),
            // Core's own word on an outage it names (storage full, the database unreachable).
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::INSUFFICIENT_STORAGE
                if status.code() == Code::Unavailable && reason.is_some() =>
            {
                status.message().to_owned()
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                "The service is temporarily unavailable. Please retry.".to_owned()
            }
            _ => status.message().to_owned(),
        };
        let errors = details.bad_request().map(|bad_request| {
            let mut errors: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for violation in &bad_request.field_violations {
                errors
                    .entry(violation.field.clone())
                    .or_default()
                    .push(violation.description.clone());
            }
            errors
        });
        serde_json::to_value(ErrorBody { message, errors }).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_unreachable_is_503_and_cores_own_failure_is_500() {
        let reset = Status::from_error(Box::new(std::io::Error::other("connection reset")));
        let response = ApiError::from(reset).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let internal = Status::internal("Internal server error.");
        assert_eq!(
            ApiError::from(internal).into_response().status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    #[test]
    fn rate_limits_and_validation_keep_their_codes() {
        let limited = Status::resource_exhausted("slow down");
        assert_eq!(
            ApiError::from(limited).into_response().status(),
            StatusCode::TOO_MANY_REQUESTS
        );
        let invalid = Status::invalid_argument("bad");
        assert_eq!(
            ApiError::from(invalid).into_response().status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }
}
