//! The gatekeeper around every gRPC call: its span, its metrics, and the admission it asks
//! for before the call reaches a service.

use super::*;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};

use tonic::body::Body;
use tower::{Layer, Service};
use tracing::Instrument;

use crate::App;

/// Wraps a service in the [`Gatekeeper`].
#[derive(Clone)]
pub struct GatekeeperLayer {
    pub(super) app: App,
}

impl<S> Layer<S> for GatekeeperLayer {
    type Service = Gatekeeper<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Gatekeeper {
            inner,
            app: self.app.clone(),
        }
    }
}

/// Marks a call made by this process's own edge: a request extension, which nothing on the
/// network can set. Such a call's latency is already in the edge's HTTP histogram, so it is
/// counted here but not timed again (a histogram record per call measurably slowed the API).
#[derive(Debug, Clone, Copy)]
pub struct FromEdge;

/// Authenticates every lps call (health and reflection are open), counts it against the
/// credential's rate limit, hands the [`Principal`] to the service through request extensions,
/// and puts the rate-limit state on the response, errors included.
#[derive(Clone)]
pub struct Gatekeeper<S> {
    inner: S,
    app: App,
}

impl<S> Service<Request<Body>> for Gatekeeper<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The clone that was driven ready serves this call; a fresh clone stays for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let app = self.app.clone();
        let request_id = request
            .headers()
            .get(REQUEST_ID)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        // In-process calls already run in the edge's request span; network calls continue
        // their caller's trace from the metadata.
        let in_process = !tracing::Span::current().is_none();
        let network_headers = (!in_process).then(|| request.headers());
        let span = call_span(request.uri().path(), request_id, network_headers);
        let method = request.uri().path().to_owned();
        let timed = request.extensions().get::<FromEdge>().is_none();
        let started = std::time::Instant::now();
        Box::pin(
            async move {
                let response = gate(app, &mut inner, request).await;
                if let Ok(response) = &response {
                    record_call(&method, code_of(response), timed.then_some(started));
                }
                response
            }
            .instrument(span),
        )
    }
}

/// The span a call runs in. Traced, every call is a span of the caller's trace: a call over
/// the network (`network_headers`) continues the trace its metadata names; an in-process call
/// is already under the edge's request span. Untraced, a network call gets its own span with
/// the request id its caller sent, an in-process one none (the edge's span carries the id).
pub(crate) fn call_span(
    path: &str,
    request_id: &str,
    network_headers: Option<&http::HeaderMap>,
) -> tracing::Span {
    let traced = match network_headers {
        None => crate::telemetry::wanted(),
        Some(headers) => crate::telemetry::sampled(headers),
    };
    if traced {
        let span = tracing::info_span!(
            "call",
            otel.name = path,
            otel.kind = "server",
            rpc.system = "grpc",
            request_id,
            trace_id = tracing::field::Empty,
        );
        if let Some(headers) = network_headers {
            crate::telemetry::continue_from(&span, headers);
        }
        span
    } else if tracing::Span::current().is_none() {
        tracing::debug_span!("call", path, request_id)
    } else {
        tracing::Span::none()
    }
}

/// Whether the call comes from an edge whose word on its clients' addresses is believed: this
/// process's own (a request extension nothing on the network can set), or one presenting the
/// configured secret.
fn from_trusted_edge(app: &App, request: &Request<Body>) -> bool {
    if request.extensions().get::<FromEdge>().is_some() {
        return true;
    }
    let presented = request
        .headers()
        .get(EDGE_SECRET)
        .map(|value| value.as_bytes());
    match (app.config.edge_secret.as_deref(), presented) {
        (Some(secret), Some(presented)) => {
            use sha2::Digest;
            // Compared as digests: equal length, so the comparison's time says nothing.
            sha2::Sha256::digest(secret.as_bytes()) == sha2::Sha256::digest(presented)
        }
        _ => false,
    }
}

/// The code of a call's answer: in the headers when the call failed before its answer started
/// (a trailers-only response), else `OK`.
fn code_of(response: &Response<Body>) -> tonic::Code {
    response
        .headers()
        .get("grpc-status")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<i32>().ok())
        .map_or(tonic::Code::Ok, tonic::Code::from)
}

/// Counts a call by method and code, timed unless its caller already times it.
pub(crate) fn record_call(method: &str, code: tonic::Code, started: Option<std::time::Instant>) {
    // Unknown paths are not methods: one series for all of them.
    let method = if code == tonic::Code::Unimplemented {
        "(unknown)"
    } else {
        method
    };
    let seconds = started.map(|started| started.elapsed().as_secs_f64());
    crate::metrics::grpc_call(method, code, seconds);
}

/// The gatekeeper's work for one call.
async fn gate<S>(
    app: App,
    inner: &mut S,
    mut request: Request<Body>,
) -> Result<Response<Body>, Infallible>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    if from_trusted_edge(&app, &request) {
        request
            .extensions_mut()
            .insert(crate::services::TrustedEdge);
    } else {
        request.headers_mut().remove(CLIENT_ADDRESS);
    }
    request.headers_mut().remove(EDGE_SECRET);
    let authorization = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    let peer = request
        .extensions()
        .get::<tonic::transport::server::TcpConnectInfo>()
        .and_then(|info| info.remote_addr());
    let headers = request.headers();
    let bucket = || {
        let forwarded = headers
            .get(CLIENT_ADDRESS)
            .and_then(|value| value.to_str().ok());
        client_bucket(forwarded, peer)
    };
    let admission = admit(&app, request.uri().path(), authorization, bucket).await;
    let mut admitted = match admission {
        Admission::Open => {
            let mut response = inner.call(request).await?;
            put_page_generation(&app, response.headers_mut());
            return Ok(response);
        }
        Admission::Refused(status) => return Ok(status.into_http()),
        Admission::Admitted(admitted) => admitted,
    };
    let earlier = earlier_violations(request.headers());
    let mut response = match admitted.run(request.extensions_mut(), earlier) {
        Err(limited) => limited.into_http(),
        Ok(earlier) => {
            let response = inner.call(request).await;
            match earlier.unreported() {
                None => response?,
                Some(invalid) => invalid.into_http(),
            }
        }
    };
    admitted.settle(&app, response.headers_mut());
    Ok(response)
}
