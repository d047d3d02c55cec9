//! Requests to a workspace's own domain (`go.example.com`, verified: `core_client`'s
//! `served_domains`): only that workspace's visitor routes are served there, the `/p/` prefix
//! optional (`/{campaign_slug}/{lead_slug}`, its `/beacon` and `/og.png`, `/p/track.js`);
//! anything else on that host (the API, the app, another workspace's page or card, kept
//! images, which pages name at the public URL and which may be any workspace's) is the
//! not-found page. The request goes on with its path as the visitor routes name it and
//! the [`Served`] domain as an extension, which each route checks against the page's own
//! workspace. Every other host is the deployment's own and passes untouched.

use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use futures_util::future::Either;
use http::{StatusCode, Uri, header};
use std::convert::Infallible;
use std::future::Ready;

use super::html;
use super::notices::Notice;
use crate::core_client::Core;
pub use crate::core_client::served_domains::Served;

/// The host a request names: its `Host` header (what a proxy or cache in front keys on too),
/// else its URI's authority (HTTP/2), lower case, without port or final dot.
pub fn request_host(request: &Request) -> Option<String> {
    let host = match request.headers().get(header::HOST) {
        Some(value) => {
            let value = value.to_str().ok()?;
            // `name:port`, or `[v6]:port` (never a served domain).
            match value.rsplit_once(':') {
                Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name.to_owned(),
                _ => value.to_owned(),
            }
        }
        None => request.uri().host()?.to_owned(),
    };
    Some(host.trim_end_matches('.').to_ascii_lowercase())
}

/// The visitor route a path on a workspace's own domain names, as the routes spell it: `None`
/// for what is not served there.
pub fn visitor_path(path: &str) -> Option<String> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let slug = |s: &&str| !s.is_empty();
    match segments.as_slice() {
        ["p", "track.js"] => Some(path.to_owned()),
        // A certificate for this domain being ordered (`acme_challenges.rs`).
        [".well-known", "acme-challenge", token] if !token.is_empty() => Some(path.to_owned()),
        ["p", c, l] | ["p", c, l, "beacon" | "og.png"] if slug(c) && slug(l) => {
            Some(path.to_owned())
        }
        [c, l] | [c, l, "beacon" | "og.png"] if slug(c) && slug(l) && *c != "p" => {
            Some(format!("/p{path}"))
        }
        _ => None,
    }
}

/// The path a visitor asked for on a workspace's own domain, before it was spelled as the
/// visitor routes spell it (`/{campaign}/{lead}` for `/p/{campaign}/{lead}`): what their
/// browser keeps cookies for.
#[derive(Debug, Clone)]
pub struct AskedPath(pub String);

/// Routes requests to workspaces' own domains (see the module) ahead of the service it wraps.
#[derive(Clone)]
pub struct OwnDomains<S> {
    core: Core,
    inner: S,
}

impl<S> OwnDomains<S> {
    pub fn new(core: Core, inner: S) -> Self {
        Self { core, inner }
    }
}

impl<S> tower::Service<Request> for OwnDomains<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        // A client never sets this; only a served host does, below.
        request.extensions_mut().remove::<Served>();
        request.extensions_mut().remove::<AskedPath>();
        // Two `Host` headers: a proxy in front may have read the other (RFC 9112, 3.2).
        if request
            .headers()
            .get_all(header::HOST)
            .iter()
            .nth(1)
            .is_some()
        {
            return Either::Left(std::future::ready(Ok(several_hosts())));
        }
        let served = if self.core.serves_own_domains() {
            request_host(&request).and_then(|host| self.core.served_domain(&host))
        } else {
            None
        };
        let Some(served) = served else {
            return Either::Right(self.inner.call(request));
        };
        let Some(path) = visitor_path(request.uri().path()) else {
            return Either::Left(std::future::ready(Ok(not_found())));
        };
        let asked = AskedPath(request.uri().path().to_owned());
        let mut parts = request.uri().clone().into_parts();
        let path_and_query = match request.uri().query() {
            Some(query) => format!("{path}?{query}"),
            None => path,
        };
        parts.path_and_query = path_and_query.parse().ok();
        match Uri::from_parts(parts) {
            Ok(uri) => *request.uri_mut() = uri,
            Err(_) => return Either::Left(std::future::ready(Ok(not_found()))),
        }
        request.extensions_mut().insert(served);
        request.extensions_mut().insert(asked);
        Either::Right(self.inner.call(request))
    }
}

/// A request naming more than one host.
fn several_hosts() -> Response {
    let mut response = super::json_error(
        StatusCode::BAD_REQUEST,
        "A request names one host: send a single Host header.",
    );
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        http::HeaderValue::from_static("nosniff"),
    );
    response
}

/// What a workspace's own domain answers for anything but its own pages.
pub fn not_found() -> Response {
    let mut response = html(StatusCode::NOT_FOUND, Notice::NotFound.html(), None);
    for (name, value) in super::policy_headers("'none'") {
        response.headers_mut().insert(name, value);
    }
    response
}

/// Whether a page of `workspace_id` may be answered for a request that came through `served`
/// (none: the deployment's own host, where every workspace's pages are).
pub fn serves(served: Option<&Served>, workspace_id: i64) -> bool {
    served.is_none_or(|served| served.workspace_id == workspace_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_domains_paths_are_its_visitor_routes_with_or_without_the_prefix() {
        assert_eq!(
            visitor_path("/spring/ada-x1").as_deref(),
            Some("/p/spring/ada-x1")
        );
        assert_eq!(
            visitor_path("/spring/ada-x1/beacon").as_deref(),
            Some("/p/spring/ada-x1/beacon")
        );
        assert_eq!(
            visitor_path("/spring/ada-x1/og.png").as_deref(),
            Some("/p/spring/ada-x1/og.png")
        );
        assert_eq!(
            visitor_path("/p/spring/ada-x1").as_deref(),
            Some("/p/spring/ada-x1")
        );
        assert_eq!(visitor_path("/p/track.js").as_deref(), Some("/p/track.js"));
        assert_eq!(
            visitor_path("/.well-known/acme-challenge/abc").as_deref(),
            Some("/.well-known/acme-challenge/abc")
        );
        // Kept images are named at the public URL by the pages, and are any workspace's: here
        // `/assets/{key}` is only what any two segments are, a page's address.
        assert_eq!(
            visitor_path("/assets/abc").as_deref(),
            Some("/p/assets/abc")
        );
        for refused in [
            "/",
            "/dashboard",
            "/api/external/v1/hello-world-user",
            "/mcp",
            "/spring",
            "/spring/ada/more/than",
            "/p/spring",
            "//x",
        ] {
            assert_eq!(visitor_path(refused), None, "{refused}");
        }
    }
}
