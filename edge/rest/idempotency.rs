//! `Idempotency-Key` on every POST of the API (Stripe's convention): the first answer for a key
//! is kept per credential for 24 hours and replayed, with `Idempotent-Replayed: true`, for a
//! retry with the same key and the same request (method, path, query and body, byte for byte);
//! the same key with a different request is a 422; a retry while the first is still being
//! carried out is a 409 with `Retry-After`. Answers that did nothing to keep (429, 5xx) let the
//! key go, so a retry runs again. Core keeps the answers (`IdempotencyService`); this layer
//! only asks before and hands the answer over after.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, to_bytes};
use axum::extract::{FromRequestParts, Request};
use axum::response::{IntoResponse, Response};
use futures_util::future::Either;
use http::{HeaderValue, Method, StatusCode, header};
use lps::proto::{self, begin_idempotent_response::Outcome};
use sha2::{Digest, Sha256};
use tonic_types::{ErrorDetails, StatusExt};
use tower::ServiceExt;
use tracing::Instrument;

use super::fallback::body_too_large;
use crate::core_client::Core;
use crate::operations::caller::Caller;
use crate::operations::error::ApiError;

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The header as error bodies name it (`errors.Idempotency-Key`).
const HEADER_NAME: &str = "Idempotency-Key";
/// The response header on a replayed answer.
pub const REPLAYED: &str = "idempotent-replayed";

/// Wraps the API's routes in [`Guard`].
#[derive(Clone)]
pub struct GuardLayer {
    pub core: Core,
}

impl<S> tower::Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Guard {
            core: self.core.clone(),
            inner,
        }
    }
}

/// The guard around an API route: a POST with an `Idempotency-Key` is [`guarded`]; every other
/// request goes straight to the route (nothing boxed or cloned on its way).
#[derive(Clone)]
pub struct Guard<S> {
    core: Core,
    inner: S,
}

type Guarded = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<S> tower::Service<Request> for Guard<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, Guarded>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if request.method() != Method::POST || !request.headers().contains_key(HEADER) {
            return Either::Left(self.inner.call(request));
        }
        // The clone that was driven ready serves this request; a fresh clone stays.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let core = self.core.clone();
        Either::Right(Box::pin(
            async move { Ok(guarded(core, request, inner).await) },
        ))
    }
}

/// A POST with an `Idempotency-Key`, answered once per key and request.
async fn guarded<S>(core: Core, request: Request, inner: S) -> Response
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    let Some(key) = request.headers().get(HEADER) else {
        let Ok(response) = inner.oneshot(request).await;
        return response;
    };
    // A streamed CSV file is not kept to replay (`POST /leads/import-csv`, up to 50 MiB).
    if request
        .uri()
        .path()
        .strip_prefix(crate::operations::BASE_PATH)
        == Some(crate::operations::CSV_IMPORT_PATH)
    {
        let Ok(response) = inner.oneshot(request).await;
        return response;
    }
    let key = String::from_utf8_lossy(key.as_bytes()).into_owned();
    let (mut parts, body) = request.into_parts();
    let Ok(caller) = Caller::from_request_parts(&mut parts, &core).await;
    if !caller.has_valid_credential().await {
        // Nothing to keep for a caller core refuses, and its body is never read (the
        // operation answers 401 without it).
        let Ok(response) = inner.oneshot(Request::from_parts(parts, body)).await;
        return response;
    }
    let Ok(body) = to_bytes(body, crate::operations::BODY_LIMIT_BYTES).await else {
        return body_too_large(&caller).await;
    };
    let request_hash = digest(&parts.method, &parts.uri, &body);
    // From the claim of the key to keeping the answer, carried out to the end even if the
    // client goes away: a claim whose request was dropped half way would hold the key (a
    // retry hearing 409) until its lock runs out; this way the retry finds the answer kept.
    let request = Request::from_parts(parts, Body::from(body));
    let carried_out = tokio::spawn(
        carry_out(caller, key, request_hash, request, inner).instrument(tracing::Span::current()),
    );
    match carried_out.await {
        Ok(response) => response,
        Err(err) => {
            tracing::error!(error = %err, "an idempotent request failed");
            ApiError::from(tonic::Status::internal("Internal server error.")).into_response()
        }
    }
}

/// Claims the key, then replays, refuses or runs the request and keeps its answer.
async fn carry_out<S>(
    caller: Caller,
    key: String,
    request_hash: String,
    request: Request,
    inner: S,
) -> Response
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    let begun = caller
        .core()
        .idempotency()
        .begin_request(caller.request(proto::BeginIdempotentRequest {
            key: key.clone(),
            request_hash: request_hash.clone(),
        }))
        .await;
    let begun = match begun {
        Ok(begun) => begun.into_inner(),
        Err(status) => return ApiError::from(status).into_response(),
    };
    // Answers given here are requests too: they count, and carry the rate-limit headers.
    match begun.outcome() {
        Outcome::Proceed => {}
        Outcome::Replay => {
            return (caller.rate_limit_headers().await, replay(begun)).into_response();
        }
        Outcome::InFlight => {
            let refusal = tonic::Status::aborted(
                "A request with this Idempotency-Key is still being carried out; retry shortly.",
            );
            let mut response = ApiError::from(refusal).into_response();
            response
                .headers_mut()
                .extend(caller.rate_limit_headers().await);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        }
        Outcome::Mismatch | Outcome::Unspecified => {
            let message = "This Idempotency-Key was already used with a different request.";
            let refusal = tonic::Status::with_error_details(
                tonic::Code::InvalidArgument,
                message,
                ErrorDetails::with_bad_request_violation(HEADER_NAME, message),
            );
            let mut response = ApiError::from(refusal).into_response();
            response
                .headers_mut()
                .extend(caller.rate_limit_headers().await);
            return response;
        }
    }
    let Ok(response) = inner.oneshot(request).await;
    let (parts, body) = response.into_parts();
    // The API's answers are JSON documents, never streams, on POST.
    let body = to_bytes(body, usize::MAX).await.unwrap_or_default();
    let status = parts.status.as_u16();
    let keep = status != 429 && status < 500;
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_owned();
    let finish = proto::FinishIdempotentRequest {
        key,
        request_hash,
        status: if keep { u32::from(status) } else { 0 },
        content_type,
        body: if keep { body.to_vec() } else { Vec::new() },
    };
    if let Err(status) = caller
        .core()
        .idempotency()
        .finish_request(caller.request(finish))
        .await
    {
        // The key stays claimed until its lock runs out; a retry before then hears 409.
        tracing::error!(error = %status, "an idempotent answer could not be kept");
    }
    Response::from_parts(parts, Body::from(body))
}

/// What the request asks, as a digest: method, path and query, body.
fn digest(method: &Method, uri: &http::Uri, body: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(method.as_str());
    hash.update(b"\n");
    hash.update(uri.path_and_query().map_or("", |p| p.as_str()));
    hash.update(b"\n");
    hash.update(body);
    hex::encode(hash.finalize())
}

fn replay(kept: proto::BeginIdempotentResponse) -> Response {
    let status = StatusCode::from_u16(kept.status as u16).unwrap_or(StatusCode::OK);
    let content_type = HeaderValue::from_str(&kept.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/json"));
    (
        status,
        [
            (header::CONTENT_TYPE, content_type),
            (
                http::HeaderName::from_static(REPLAYED),
                HeaderValue::from_static("true"),
            ),
        ],
        kept.body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_covers_path_query_and_body() {
        let uri = |u: &str| u.parse::<http::Uri>().unwrap();
        let a = digest(&Method::POST, &uri("/a?x=1"), b"{}");
        assert_eq!(a, digest(&Method::POST, &uri("/a?x=1"), b"{}"));
        assert_ne!(a, digest(&Method::POST, &uri("/a?x=2"), b"{}"));
        assert_ne!(a, digest(&Method::POST, &uri("/b?x=1"), b"{}"));
        assert_ne!(a, digest(&Method::POST, &uri("/a?x=1"), b"{ }"));
    }
}
