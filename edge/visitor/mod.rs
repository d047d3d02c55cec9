//! Visitors' routes, public (no key, no API rate-limit headers):
//! - `GET`/`HEAD /p/{campaign_slug}/{lead_slug}`: the lead's page (core renders it, with the
//!   tracking script on live pages; the edge adds HTTP caching and security headers);
//! - `POST /p/{campaign_slug}/{lead_slug}`: a form on the page (stored by core before the
//!   answer: a thank-you page, or JSON for the tracking script's background post);
//! - `GET /p/track.js`: the tracking script;
//! - `POST /p/{campaign_slug}/{lead_slug}/beacon`: what the script reports (view, confirm, click,
//!   scroll, time), queued and sent to core in batches (see `beacons.rs`);
//! - `GET /.well-known/acme-challenge/{token}`: an ACME server's HTTP-01 validation
//!   (`acme_challenges.rs`).
//!
//! A lead's page is answered by [`PagesAheadOfRouter`] ahead of the router, from memory when it
//! is kept there (see `page_cache.rs`), else rendered by core: the same bytes and headers,
//! counted and logged the same way, without the router's layers (~40% of a page hit's CPU,
//! more than the page itself took; a fifth of a first visit's). Only addresses with
//! percent-escapes go through the router to `pages.rs`'s handler. Beacons are taken ahead of
//! the router the same way, by [`BeaconPosts`] (`beacon_posts.rs`).
//!
//! A file per concern: `pages.rs` (a lead's page), `forms.rs` (a form posted on it),
//! `beacon_posts.rs` (a beacon read and queued; `beacons.rs` sends the queue to core, and
//! `beacon_spill.rs` keeps what memory has no room for on disk),
//! `tracking_script.rs`, `images.rs` (kept images and link-preview cards); this file has the
//! routes, the policy headers and the answers they share.

pub mod acme_challenges;
mod beacon_posts;
pub mod beacon_spill;
pub mod beacons;
mod forms;
mod images;
pub mod notices;
pub mod own_domains;
pub mod page_loads;
mod pages;
mod tracking_script;

pub use beacon_posts::BeaconPosts;
pub use own_domains::OwnDomains;
pub use pages::PagesAheadOfRouter;
pub use tracking_script::TRACKING_SCRIPT_PATH;

use axum::Extension;
use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler as _;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use tower::util::MapResponseLayer;

use crate::core_client::Core;
use crate::visitor::beacons::BeaconQueue;
use crate::visitor::page_loads::LoadCookies;
use beacon_posts::{BEACON_LIMIT_BYTES, BEACON_ROUTE, beacon};
use forms::{FORM_LIMIT_BYTES, form};
use images::{asset, preview_image};
use pages::{PAGE_ROUTE, page};
use tracking_script::tracking_script;

/// The Content-Security-Policy of every visitor page: the design's inlined CSS, images from
/// anywhere over https (a design's own; brandings' images are lps's own, `/assets/`), lps's own scripts and connections only, forms posting to the page's own
/// origin, and framing only by `frame_ancestors` (default `'none'`).
pub fn content_security_policy(frame_ancestors: &str) -> String {
    format!(
        "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' https: data:; \
         font-src 'self' https: data:; script-src 'self'; connect-src 'self'; \
         form-action 'self'; base-uri 'none'; frame-ancestors {frame_ancestors}"
    )
}

/// The policies every visitor answer carries (besides `nosniff`, which every answer of lps
/// carries): the Content-Security-Policy, the referrer policy and the permissions policy.
pub fn policy_headers(frame_ancestors: &str) -> [(HeaderName, HeaderValue); 3] {
    let policy = HeaderValue::from_str(&content_security_policy(frame_ancestors))
        .unwrap_or_else(|_| HeaderValue::from_static("frame-ancestors 'none'"));
    [
        (header::CONTENT_SECURITY_POLICY, policy),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("strict-origin-when-cross-origin"),
        ),
        (
            HeaderName::from_static("permissions-policy"),
            HeaderValue::from_static(
                "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
            ),
        ),
    ]
}

pub fn router(frame_ancestors: &str, beacons: BeaconQueue, loads: LoadCookies) -> Router<Core> {
    // Each layer of a router wraps every route in one more boxed service, cloned and called on
    // every request: a layer only where it is needed (the beacons' queue, the forms' body
    // limit), and the policies in one.
    let routes = Router::new()
        .route(
            PAGE_ROUTE,
            get(move |core, path, request| page(core, path, request, loads.clone()))
                .post(form.layer(DefaultBodyLimit::max(FORM_LIMIT_BYTES))),
        )
        .route(
            BEACON_ROUTE,
            post(
                beacon.layer(
                    tower::ServiceBuilder::new()
                        .layer(DefaultBodyLimit::max(BEACON_LIMIT_BYTES))
                        .layer(Extension(beacons)),
                ),
            ),
        )
        .route(TRACKING_SCRIPT_PATH, get(tracking_script))
        .route(&format!("{}/{{key}}", lps::wire::ASSETS_PATH), get(asset))
        .route("/p/{campaign_slug}/{lead_slug}/og.png", get(preview_image))
        .route(
            acme_challenges::ACME_CHALLENGE_ROUTE,
            get(acme_challenges::acme_challenge),
        );
    let policies = Policies::new(frame_ancestors);
    routes.layer(MapResponseLayer::new(move |mut response: Response| {
        policies.put(response.headers_mut());
        response
    }))
}

/// The policy headers of every visitor answer ([`policy_headers`]), shared by the router's
/// routes and the pages kept in memory.
#[derive(Clone)]
struct Policies(std::sync::Arc<[(HeaderName, HeaderValue); 3]>);

impl Policies {
    fn new(frame_ancestors: &str) -> Self {
        Self(std::sync::Arc::new(policy_headers(frame_ancestors)))
    }

    /// Sets them on an answer, overriding any of the same name.
    fn put(&self, headers: &mut HeaderMap) {
        for (name, value) in self.0.iter() {
            headers.insert(name.clone(), value.clone());
        }
    }
}

/// A visitor request answered ahead of the router (a kept page, a beacon): its request id, span
/// and start, and what the router's layers would put on its answer.
struct AheadOfRouter {
    span: tracing::Span,
    request_id: HeaderValue,
    started: std::time::Instant,
    method: http::Method,
    route: &'static str,
}

impl AheadOfRouter {
    /// For `request` to `route`, whose handling began at `started`.
    fn start(
        request: &axum::extract::Request,
        route: &'static str,
        started: std::time::Instant,
    ) -> Self {
        let request_id = crate::http::request_log::request_id(request.headers());
        let method = request.method().clone();
        let span = crate::http::request_log::span(&request_id, request.headers(), &method, route);
        Self {
            span,
            request_id,
            started,
            method,
            route,
        }
    }

    /// `nosniff`, the visitor policies, the request id, metrics and log line (as
    /// `every_request` and the visitor routes' policies give a routed answer).
    fn finish(self, policies: &Policies, response: &mut Response) {
        let headers = response.headers_mut();
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        policies.put(headers);
        crate::http::request_log::finish(
            &self.span,
            &self.method,
            self.route,
            self.started,
            self.request_id,
            response,
        );
    }
}

/// What a visitor's body that came too slowly is answered (408).
const TOO_SLOW: &str = "The request did not arrive in time. Please send it again.";

/// An error answer as JSON with its `message`, like every answer of lps.
pub fn json_error(status: StatusCode, message: &str) -> Response {
    (status, Json(serde_json::json!({ "message": message }))).into_response()
}

fn set_etag(headers: &mut HeaderMap, etag: Option<&HeaderValue>) {
    if let Some(etag) = etag {
        headers.insert(header::ETAG, etag.clone());
    }
    // Revalidate every time, so a publish reaches every visitor at once.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
}

/// A page answer. `etag` marks a live page (revalidated on every visit); anything else is not
/// to be stored by the browser.
fn html(status: StatusCode, body: impl Into<Bytes>, etag: Option<&HeaderValue>) -> Response {
    // Built as it is sent: `(status, bytes).into_response()` would first set a content type of
    // its own, in a map then grown for the rest.
    let mut response = Response::new(axum::body::Body::from(body.into()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    // Room for every header a page's answer gets (here, the policies, the request id): grown
    // from the default on the way, the map was rebuilt once per page.
    headers.reserve(12);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    match etag {
        Some(_) => set_etag(headers, etag),
        None => {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
    }
    response
}

/// Whether an `If-None-Match` value (a list of tags, or `*`) names `etag`: the one place a
/// conditional GET of a page is decided.
fn matches_etag(if_none_match: &str, etag: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|tag| {
        tag == "*" || tag == etag || tag.strip_prefix("W/").is_some_and(|weak| weak == etag)
    })
}
