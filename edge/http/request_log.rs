//! One log line per HTTP request, and the request id that ties every line of a request
//! together.
//!
//! The id is the client's `X-Request-Id` when it sent a usable one, else a new UUID; it is
//! returned on every response, forwarded to core in metadata (so core's log lines carry it too)
//! and recorded on the request's `tracing` span. The line names the method, the route template
//! (never the concrete path, which can carry lead slugs), the status, the latency and the
//! credential's id (never the key).

use std::time::Instant;

use axum::response::Response;
use http::{HeaderMap, HeaderValue, Method};
use lps::grpc::names;
use tracing::Span;

/// Which credential a reply was for, left on the response by the REST layer for this log.
#[derive(Debug, Clone)]
pub struct CredentialId(pub String);

/// The request's id: the client's when usable, else a new UUID.
pub fn request_id(headers: &HeaderMap) -> HeaderValue {
    headers
        .get(names::REQUEST_ID)
        .filter(|value| usable(value.as_bytes()))
        .cloned()
        .unwrap_or_else(|| {
            let mut text = [0; uuid::fmt::Hyphenated::LENGTH];
            let text = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut text);
            HeaderValue::from_bytes(text.as_bytes()).expect("a UUID is a valid header value")
        })
}

/// The span every line of the request is logged in; with tracing on, the request's trace
/// (named by method and route), continuing the caller's `traceparent` (its `trace_id` on every
/// line).
pub fn span(request_id: &HeaderValue, headers: &HeaderMap, method: &Method, route: &str) -> Span {
    let request_id = request_id.to_str().unwrap_or_default();
    if !lps::telemetry::sampled(headers) {
        return tracing::info_span!("request", request_id);
    }
    let span = tracing::info_span!(
        "request",
        request_id,
        trace_id = tracing::field::Empty,
        otel.name = tracing::field::Empty,
        otel.kind = "server",
        http.response.status_code = tracing::field::Empty,
    );
    // Before the trace is continued: an OpenTelemetry span's name is fixed once it starts.
    span.record("otel.name", format!("{method} {route}").as_str());
    lps::telemetry::continue_from(&span, headers);
    span
}

/// Counts and logs an answered request, and puts its id on the response.
pub fn finish(
    span: &Span,
    method: &Method,
    route: &str,
    started: Instant,
    request_id: HeaderValue,
    response: &mut Response,
) {
    let seconds = started.elapsed().as_secs_f64();
    let status = response.status().as_u16();
    lps::metrics::http_request(route, method, status, seconds);
    if lps::telemetry::enabled() {
        span.record("http.response.status_code", status);
    }
    span.in_scope(|| {
        let credential = response.extensions().get::<CredentialId>();
        tracing::info!(
            %method,
            route,
            status,
            latency_ms = seconds * 1000.0,
            credential = credential.map_or("-", |id| id.0.as_str()),
            "request"
        );
    });
    response.headers_mut().insert(names::REQUEST_ID, request_id);
}

/// Visible ASCII, at most 200 characters: anything else is replaced by a new id.
fn usable(id: &[u8]) -> bool {
    !id.is_empty() && id.len() <= 200 && id.iter().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_visible_ids_are_taken_from_clients() {
        assert!(usable(b"abc-123"));
        assert!(!usable(b""));
        assert!(!usable(b"has space"));
        assert!(!usable(&[b'a'; 201]));
    }
}
