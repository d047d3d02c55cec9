//! Whether a browser's form post comes from this site. Every dashboard form (and the OAuth
//! consent) carries a CSRF token bound to a cookie; this is the second, independent check: a
//! browser names the page a POST comes from in `Origin` (every current browser sends it with a
//! POST), or says how it relates to this site in `Sec-Fetch-Site`. A foreign page, a sandboxed
//! document (`Origin: null`, as a draft preview is) or a sibling subdomain is refused even
//! holding a valid token. A request with neither header (a command-line client) is judged by
//! its token alone.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderMap, Method, StatusCode, header};

use crate::http::html_page::message;

/// This site's origin as `--public-url` names it (`https://lps.example`), if it has one; the
/// request's own `Host` is this site too (a deployment reached under several names).
#[derive(Clone, Debug, Default)]
pub struct OwnOrigin(pub Option<String>);

impl OwnOrigin {
    /// The origin of `public_url` (scheme, host and port), if it is a URL.
    pub fn of(public_url: &str) -> Self {
        Self(
            url::Url::parse(public_url)
                .ok()
                .map(|url| url.origin().ascii_serialization())
                .filter(|origin| origin != "null"),
        )
    }

    /// Whether a request with these headers comes from another site.
    pub fn is_foreign(&self, headers: &HeaderMap) -> bool {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let Ok(origin) = origin.to_str() else {
                return true;
            };
            return !self.is_own(origin, headers);
        }
        match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
            // `none` is a person typing the address or using a bookmark.
            Some(site) => !matches!(site, "same-origin" | "none"),
            None => false,
        }
    }

    fn is_own(&self, origin: &str, headers: &HeaderMap) -> bool {
        if self.0.as_deref() == Some(origin) {
            return true;
        }
        let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"))
            .is_some_and(|authority| authority.eq_ignore_ascii_case(host))
    }
}

/// Middleware: a request that changes something (any method but GET, HEAD and OPTIONS) from
/// another site is answered 403 before its handler runs.
pub async fn refuse_foreign(own: OwnOrigin, request: Request, next: Next) -> Response {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if !safe && own.is_foreign(request.headers()) {
        return refusal();
    }
    next.run(request).await
}

/// What a foreign form is answered.
pub fn refusal() -> Response {
    message(
        StatusCode::FORBIDDEN,
        "Refused",
        "This form was sent from another site. Open lps yourself and try again.",
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn a_post_is_foreign_unless_it_names_this_site() {
        let own = OwnOrigin::of("https://lps.example/");
        let host = ("host", "127.0.0.1:8080");
        assert!(!own.is_foreign(&headers(&[host, ("origin", "https://lps.example")])));
        assert!(!own.is_foreign(&headers(&[host, ("origin", "http://127.0.0.1:8080")])));
        assert!(own.is_foreign(&headers(&[host, ("origin", "https://evil.example")])));
        assert!(own.is_foreign(&headers(&[host, ("origin", "null")])));
        assert!(own.is_foreign(&headers(&[host, ("origin", "http://127.0.0.1:9999")])));
        // Without Origin: what the browser says of the request, else the token alone decides.
        assert!(own.is_foreign(&headers(&[host, ("sec-fetch-site", "cross-site")])));
        assert!(own.is_foreign(&headers(&[host, ("sec-fetch-site", "same-site")])));
        assert!(!own.is_foreign(&headers(&[host, ("sec-fetch-site", "same-origin")])));
        assert!(!own.is_foreign(&headers(&[host])));
    }
}
