//! What every request the router answers passes through, as one service around each route: its
//! request id and span with the log line, metrics and id on the answer (`request_log.rs`), the
//! client's address (`client_address.rs`), `X-Content-Type-Options: nosniff` (no answer is
//! ever to be sniffed into another type, JSON read as HTML say), and a Content-Security-Policy
//! that submits and loads nothing on any HTML answer that has none of its own (a screen added
//! without one is safe by default).
//!
//! One hand-written service rather than a middleware per concern: each `from_fn` layer boxes
//! and clones the rest of the stack on every request, which the router floor measurably paid.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::response::Response;
use http::{HeaderValue, Method};
use tracing::Instrument;
use tracing::instrument::Instrumented;

use super::client_address::{self, TrustedProxies};
use super::request_log;

/// Wraps each route (and the fallbacks) in [`EveryRequest`].
#[derive(Clone)]
pub struct EveryRequestLayer {
    pub trusted_proxies: TrustedProxies,
}

impl<S> tower::Layer<S> for EveryRequestLayer {
    type Service = EveryRequest<S>;

    fn layer(&self, inner: S) -> Self::Service {
        EveryRequest {
            inner,
            trusted_proxies: self.trusted_proxies.clone(),
        }
    }
}

#[derive(Clone)]
pub struct EveryRequest<S> {
    inner: S,
    trusted_proxies: TrustedProxies,
}

impl<S> tower::Service<Request> for EveryRequest<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answered<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let request_id = request_log::request_id(request.headers());
        request
            .headers_mut()
            .insert(lps::grpc::names::REQUEST_ID, request_id.clone());
        client_address::resolve(&self.trusted_proxies, &mut request);
        let method = request.method().clone();
        let route = request.extensions().get::<MatchedPath>().cloned();
        let span = request_log::span(
            &request_id,
            request.headers(),
            &method,
            route_of(route.as_ref()),
        );
        Answered {
            inner: self.inner.call(request).instrument(span),
            log: Some(LogLine {
                method,
                route,
                request_id,
                started: Instant::now(),
            }),
        }
    }
}

/// What the request's log line needs once it is answered.
struct LogLine {
    method: Method,
    route: Option<MatchedPath>,
    request_id: HeaderValue,
    started: Instant,
}

/// The route template a request matched, as logs and metrics name it (never the concrete path,
/// which can carry lead slugs).
fn route_of(route: Option<&MatchedPath>) -> &str {
    route.map_or("(unmatched)", MatchedPath::as_str)
}

/// The policy of an HTML answer whose route set none: nothing loaded, nothing submitted,
/// never framed. Every face sets its own (screens, visitor pages, previews); this is the net
/// under a new one that forgot.
const FALLBACK_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'; \
     frame-ancestors 'none'";

fn with_fallback_policy(headers: &mut http::HeaderMap) {
    let is_html = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if is_html && !headers.contains_key(http::header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            http::header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(FALLBACK_POLICY),
        );
    }
}

pin_project_lite::pin_project! {
    /// The route's answer, with the request's log line written and its id and `nosniff` on it.
    pub struct Answered<F> {
        #[pin]
        inner: Instrumented<F>,
        log: Option<LogLine>,
    }
}

impl<F> Future for Answered<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let Ok(mut response) = ready!(this.inner.as_mut().poll(cx));
        let log = this
            .log
            .take()
            .expect("an answered request is polled no more");
        let headers = response.headers_mut();
        headers.insert(
            http::header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        with_fallback_policy(headers);
        request_log::finish(
            this.inner.span(),
            &log.method,
            route_of(log.route.as_ref()),
            log.started,
            log.request_id,
            &mut response,
        );
        Poll::Ready(Ok(response))
    }
}
