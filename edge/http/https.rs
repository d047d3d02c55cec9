//! Plain HTTP to a name lps answers over HTTPS itself (`--https`, a certificate issued for the
//! name): redirected (`308`, method and body kept) to the same address over HTTPS, but for
//! an ACME server's HTTP-01 validation (`/.well-known/acme-challenge/`), which must be answered
//! over plain HTTP, and the probes of whatever runs lps (`/healthz`, `/readyz`, `/metrics`),
//! which ask over plain HTTP by design. Names without a certificate (an address, a domain whose certificate is not
//! issued yet) are served over plain HTTP as before. HSTS is on every HTTPS answer
//! (`server.rs`).

use std::convert::Infallible;
use std::future::Ready;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use futures_util::future::Either;
use http::{HeaderValue, StatusCode, header};

use super::server::OverTls;
use crate::core_client::Core;
use crate::visitor::acme_challenges::ACME_CHALLENGE_PREFIX;
use crate::visitor::own_domains::request_host;

/// The probes answered over plain HTTP whatever the host.
const NEVER_MOVED: [&str; 3] = ["/healthz", "/readyz", super::metrics::PATH];

/// Redirects plain HTTP to HTTPS where lps answers it (see the module), ahead of the service
/// it wraps.
#[derive(Clone)]
pub struct HttpsRedirects<S> {
    core: Core,
    /// The HTTPS listener's port (none: this edge answers no HTTPS, nothing is redirected).
    https_port: Option<u16>,
    inner: S,
}

impl<S> HttpsRedirects<S> {
    pub fn new(core: Core, https_port: Option<u16>, inner: S) -> Self {
        Self {
            core,
            https_port,
            inner,
        }
    }

    /// Where `request` is redirected, if it is.
    fn redirect(&self, request: &Request) -> Option<String> {
        let port = self.https_port?;
        let path = request.uri().path();
        if request.extensions().get::<OverTls>().is_some()
            // `OPTIONS *` names no address to move to.
            || !path.starts_with('/')
            || path.starts_with(ACME_CHALLENGE_PREFIX)
            || NEVER_MOVED.contains(&path)
        {
            return None;
        }
        let host = request_host(request)?;
        if !self.core.certificates()?.has(&host) {
            return None;
        }
        let authority = match port {
            443 => host,
            port => format!("{host}:{port}"),
        };
        let path = request
            .uri()
            .path_and_query()
            .map_or("/", |path| path.as_str());
        Some(format!("https://{authority}{path}"))
    }
}

impl<S> tower::Service<Request> for HttpsRedirects<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.redirect(&request) {
            Some(location) => Either::Left(std::future::ready(Ok(moved(&location)))),
            None => Either::Right(self.inner.call(request)),
        }
    }
}

/// The `308` to `location`, with a JSON body saying so like every answer of lps.
fn moved(location: &str) -> Response {
    let mut response = crate::visitor::json_error(
        StatusCode::PERMANENT_REDIRECT,
        "This address is served over HTTPS.",
    );
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}
