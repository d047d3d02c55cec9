//! An operation's caller and input read from an HTTP request: the forwarded headers, and the
//! query string with the body (JSON or a form) as one object of fields.

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::response::Response;
use http::StatusCode;
use http::request::Parts;
use lps::wire::FieldViolation;
use serde::de::DeserializeOwned;

use super::fallback::{body_too_large, body_too_slow};
use crate::core_client::Core;
use crate::operations::bulk::{BULK_BODY_BYTES, on_bulk_thread};
use crate::operations::caller::Caller;
use crate::operations::input::{Check, Input, body_object, query_object};

impl<S> FromRequestParts<S> for Caller
where
    Core: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Ok(Caller::from_parts(Core::from_ref(state), parts))
    }
}

/// The query string's fields and, except on `GET`, the body's: JSON or a form
/// (`application/x-www-form-urlencoded`), the body winning where both name a field, as
/// clients of such APIs expect. A body that is not JSON, or not an object, reads as empty with
/// a violation on `body`; one over the limit is a 413. A large body is parsed on the bulk
/// thread (`operations::bulk`), off the runtime answering visitors.
///
/// The credential is checked before a byte of the body is read: a request without a valid one
/// goes on with no body (core answers it 401, counted against the client's address as every
/// refusal is), so a stranger can make the edge hold no more than a request's head.
impl<T, S> FromRequest<S> for Input<T>
where
    T: DeserializeOwned + Default + Send + 'static,
    Core: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let mut check = Check::default();
        let mut fields = query_object(request.uri().query().unwrap_or(""));
        if request.method() == http::Method::GET {
            return Ok(Input::read(fields, check));
        }
        let is_form = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
        let (parts, body) = request.into_parts();
        let caller = Caller::from_parts(Core::from_ref(state), &parts);
        if !caller.has_valid_credential().await {
            return Ok(Input::read(fields, check));
        }
        let bytes = match Bytes::from_request(Request::from_parts(parts, body), state).await {
            Ok(bytes) => bytes,
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(body_too_large(&caller).await);
            }
            Err(rejection) if crate::http::server::is_slow_body(&rejection) => {
                return Err(body_too_slow(&caller).await);
            }
            Err(rejection) => {
                check.violation(FieldViolation::new("body", rejection.body_text()));
                Bytes::new()
            }
        };
        let bulk = bytes.len() > BULK_BODY_BYTES;
        let read = move || {
            match body_object(&bytes, is_form) {
                Ok(body) => fields.extend(body),
                Err(violation) => check.violation(violation),
            }
            Input::read(fields, check)
        };
        Ok(match bulk {
            true => on_bulk_thread(async move { read() }).await,
            false => read(),
        })
    }
}
