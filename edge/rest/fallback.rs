//! The answers the router gives by itself (unknown path, wrong method, oversized body), in the
//! API's JSON error shape with the caller's rate-limit headers: the request still counts.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode, Uri};

use crate::operations::BODY_LIMIT_BYTES;
use crate::operations::caller::Caller;
use crate::operations::error::ErrorBody;

/// Unknown paths.
pub async fn not_found(caller: Caller, uri: Uri) -> Response {
    let message = format!("The route {} could not be found.", uri.path());
    refusal(&caller, StatusCode::NOT_FOUND, message).await
}

/// Known paths asked with a method they do not have.
pub async fn method_not_allowed(caller: Caller, method: Method, uri: Uri) -> Response {
    let message = format!(
        "The {method} method is not supported for route {}.",
        uri.path()
    );
    refusal(&caller, StatusCode::METHOD_NOT_ALLOWED, message).await
}

/// A request body over the limit.
pub async fn body_too_large(caller: &Caller) -> Response {
    body_over(caller, BODY_LIMIT_BYTES).await
}

/// A request body over a route's own limit (`POST /leads/import-csv`'s 50 MiB).
pub async fn body_over(caller: &Caller, limit_bytes: usize) -> Response {
    let message = format!(
        "The request body is larger than the limit of {} MiB.",
        limit_bytes / (1024 * 1024)
    );
    refusal(caller, StatusCode::PAYLOAD_TOO_LARGE, message).await
}

/// A request whose body came too slowly (past `--http-body-deadline`, or paused past
/// `--http-body-timeout`): 408.
pub async fn body_too_slow(caller: &Caller) -> Response {
    let message = "The request body did not arrive in time. Please send it again.".to_owned();
    refusal(caller, StatusCode::REQUEST_TIMEOUT, message).await
}

/// An answer the edge gives by itself, with the caller's rate-limit headers.
async fn refusal(caller: &Caller, status: StatusCode, message: String) -> Response {
    let decision = caller.count().await;
    let body = ErrorBody {
        message,
        errors: None,
    };
    let mut response = (status, Json(body)).into_response();
    if let Some(decision) = decision {
        decision.put_headers(response.headers_mut());
    }
    response
}
