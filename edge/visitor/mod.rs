//! Visitors' routes, public (no key, no API rate-limit headers):
//! - `GET`/`HEAD /p/{campaign_slug}/{lead_slug}`: the lead's page (core renders it, with the
//!   tracking script on live pages; the edge adds HTTP caching and security headers);
//! - `POST /p/{campaign_slug}/{lead_slug}`: a form on the page (stored by core before the
//!   answer: a thank-you page, or JSON for the tracking script's background post);
//! - `GET /p/track.js`: the tracking script;
//! - `POST /p/{campaign_slug}/{lead_slug}/beacon`: what the script reports (view, confirm, click,
//!   scroll, time), queued and sent to core in batches (see `beacons.rs`).
//!
//! A page kept in memory (see `page_cache.rs`) is answered by [`PagesFromMemory`] ahead of the
//! router: the same bytes and headers, counted and logged the same way, without the router's
//! layers (~40% of a page hit's CPU, more than the page itself took). Everything else,
//! including every page not in memory, goes through the router to [`page`].

pub mod beacons;
pub mod notices;
pub mod page_loads;

use std::convert::Infallible;
use std::future::Ready;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::Extension;
use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::future::Either;
use http::Uri;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use lps::proto::submit_form_response::Outcome as SubmitOutcome;
use lps::proto::{self, render_page_response::Outcome};

use crate::visitor::notices::Notice;
use axum::handler::Handler as _;
use tower::util::MapResponseLayer;

use crate::core_client::Core;
use crate::core_client::page_cache::RenderedPage;
use crate::http::client_address::ClientAddress;
use crate::http::request_log;
use crate::visitor::beacons::{BeaconQueue, Refused};
use crate::visitor::page_loads::LoadCookies;

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

/// The tracking script's source, commented.
const TRACKING_SCRIPT_SOURCE: &str = include_str!("assets/track.js");

/// The tracking script every live page loads: its source without comment lines (at most 4 KB
/// served; a test holds it to that).
static TRACKING_SCRIPT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    TRACKING_SCRIPT_SOURCE
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .map(|line| format!("{}\n", line.trim_start()))
        .collect()
});
/// Where pages load it from (core writes this address into live pages).
pub const TRACKING_SCRIPT_PATH: &str = lps::wire::TRACKING_SCRIPT_PATH;

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

/// The route of a lead's page, as metrics and logs name it.
const PAGE_ROUTE: &str = "/p/{campaign_slug}/{lead_slug}";

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
            "/p/{campaign_slug}/{lead_slug}/beacon",
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
        .route("/p/{campaign_slug}/{lead_slug}/og.png", get(preview_image));
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

async fn page(
    State(core): State<Core>,
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    // The request itself rather than its headers and URI: extracting those would copy them.
    request: Request,
    loads: LoadCookies,
) -> Response {
    match core
        .page(&campaign_slug, &lead_slug, request.uri().path())
        .await
    {
        Ok(page) => page_answer(&page, request.headers(), request.uri().path(), &loads),
        Err(status) => {
            tracing::error!(%status, "page could not be rendered");
            let mut response = html(
                StatusCode::SERVICE_UNAVAILABLE,
                Notice::Unavailable.html(),
                None,
            );
            // Core or its database out for now: a browser or crawler may come back.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            response
        }
    }
}

/// What a visitor is answered for a page core rendered at `path`: the page (with a new load's
/// token, `page_loads`), 304 when the browser's copy is current (a load too), or core's notice
/// (not live, not found).
fn page_answer(
    page: &RenderedPage,
    request_headers: &HeaderMap,
    path: &str,
    loads: &LoadCookies,
) -> Response {
    match page.outcome {
        Outcome::Page => {
            let etag = page.etag();
            let current = request_headers
                .get(header::IF_NONE_MATCH)
                .and_then(|v| v.to_str().ok())
                .zip(etag.and_then(|tag| tag.to_str().ok()))
                .is_some_and(|(tags, etag)| matches_etag(tags, etag));
            let mut response = if current {
                let mut response = StatusCode::NOT_MODIFIED.into_response();
                set_etag(response.headers_mut(), etag);
                response
            } else {
                html(StatusCode::OK, page.html.clone(), etag)
            };
            if let Some(cookie) = loads.for_page(path) {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            response
        }
        Outcome::NotLive => html(StatusCode::OK, page.html.clone(), None),
        // The campaign's pages moved (`page_slug`): old links keep working.
        Outcome::Moved => match page.location() {
            Some(location) => (
                StatusCode::MOVED_PERMANENTLY,
                [(header::LOCATION, location.clone())],
            )
                .into_response(),
            None => html(StatusCode::NOT_FOUND, Notice::NotFound.html(), None),
        },
        Outcome::Unavailable => html(StatusCode::SERVICE_UNAVAILABLE, page.html.clone(), None),
        Outcome::NotFound | Outcome::Unspecified => {
            html(StatusCode::NOT_FOUND, page.html.clone(), None)
        }
    }
}

/// Answers `GET`/`HEAD` of a lead's page kept in memory ahead of the service it wraps (the
/// router), and passes every other request on. The answer is [`page`]'s for the same page:
/// [`page_answer`], the policy headers of the visitor routes, and the request id, metrics and
/// log line of `request_log`.
#[derive(Clone)]
pub struct PagesFromMemory<S> {
    core: Core,
    policies: Policies,
    loads: LoadCookies,
    inner: S,
}

impl<S> PagesFromMemory<S> {
    pub fn new(core: Core, frame_ancestors: &str, loads: LoadCookies, inner: S) -> Self {
        Self {
            core,
            policies: Policies::new(frame_ancestors),
            loads,
            inner,
        }
    }

    fn answer(&self, request: &Request) -> Option<Response> {
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            return None;
        }
        let address = request.uri().path();
        if !is_page_address(address) {
            return None;
        }
        let started = Instant::now();
        let page = self.core.kept_page(address)?;
        let request_id = request_log::request_id(request.headers());
        let span = request_log::span(&request_id, request.headers(), method, PAGE_ROUTE);
        let mut response = page_answer(&page, request.headers(), address, &self.loads);
        if method == Method::HEAD {
            // As the router answers HEAD: the length the body would have, and no body.
            use axum::body::HttpBody;
            let length = response.body().size_hint().exact().unwrap_or(0);
            response
                .headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(length));
            *response.body_mut() = axum::body::Body::empty();
        }
        self.policies.put(response.headers_mut());
        request_log::finish(
            &span,
            method,
            PAGE_ROUTE,
            started,
            request_id,
            &mut response,
        );
        Some(response)
    }
}

/// Whether `path` is `/p/{campaign_slug}/{lead_slug}` (two non-empty segments, as the router's
/// route matches).
fn is_page_address(path: &str) -> bool {
    path.strip_prefix("/p/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(campaign, lead)| {
            !campaign.is_empty() && !lead.is_empty() && !lead.contains('/')
        })
}

impl<S> tower::Service<Request> for PagesFromMemory<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.answer(&request) {
            Some(response) => Either::Left(std::future::ready(Ok(response))),
            None => Either::Right(self.inner.call(request)),
        }
    }
}

/// What a visitor's body that came too slowly is answered (408).
const TOO_SLOW: &str = "The request did not arrive in time. Please send it again.";

/// A form post over [`FORM_LIMIT_BYTES`]: JSON for the tracking script, a notice for a person.
fn form_too_large(wants_json: bool) -> Response {
    let message = "A form post is at most 64 KB.";
    if wants_json {
        json_error(StatusCode::PAYLOAD_TOO_LARGE, message)
    } else {
        html(
            StatusCode::PAYLOAD_TOO_LARGE,
            Notice::Other {
                heading: "Too large",
                sentence: message,
            }
            .html(),
            None,
        )
    }
}

/// The header the page's script adds to a form post when `navigator.webdriver` is set.
const WEBDRIVER_HEADER: &str = "x-lps-webdriver";

/// The largest form post accepted.
const FORM_LIMIT_BYTES: usize = 64 * 1024;

/// A form on the page, posted without JavaScript (`application/x-www-form-urlencoded`).
async fn form(
    State(core): State<Core>,
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    Extension(ClientAddress(client)): Extension<ClientAddress>,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // The tracking script posts in the background and asks for JSON.
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"));
    let body = match body {
        Ok(body) => body,
        Err(rejection) if crate::http::server::is_slow_body(&rejection) => {
            return json_error(StatusCode::REQUEST_TIMEOUT, TOO_SLOW);
        }
        Err(_) => return form_too_large(wants_json),
    };
    let fields = form_urlencoded::parse(&body).into_owned().collect();
    let request = proto::SubmitFormRequest {
        campaign_slug,
        lead_slug,
        form_id: None,
        ip_address: client.to_string(),
        fields,
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
        // Set by the page's script when it sees `navigator.webdriver` (a plain post has none).
        webdriver: headers.contains_key(WEBDRIVER_HEADER),
    };
    let answer = match core.visitor().submit_form(request).await {
        Ok(reply) => match reply.into_inner().outcome() {
            SubmitOutcome::Stored => FormAnswer::Stored,
            SubmitOutcome::NotFound | SubmitOutcome::Unspecified => FormAnswer::NotFound,
        },
        Err(status) if status.code() == tonic::Code::ResourceExhausted => FormAnswer::TooMany,
        Err(status) => {
            tracing::error!(%status, "form could not be stored");
            FormAnswer::Unavailable
        }
    };
    if wants_json {
        answer.json()
    } else {
        answer.page(uri.path())
    }
}

/// What became of a posted form, answered as a page (no JavaScript) or as JSON (the tracking
/// script's background post).
enum FormAnswer {
    Stored,
    NotFound,
    TooMany,
    Unavailable,
}

impl FormAnswer {
    fn page(self, page_path: &str) -> Response {
        match self {
            Self::Stored => html(
                StatusCode::OK,
                Notice::ThankYou { back: page_path }.html(),
                None,
            ),
            Self::NotFound => html(StatusCode::NOT_FOUND, Notice::NotFound.html(), None),
            Self::TooMany => html(StatusCode::TOO_MANY_REQUESTS, Notice::SlowDown.html(), None),
            Self::Unavailable => html(
                StatusCode::SERVICE_UNAVAILABLE,
                Notice::Unavailable.html(),
                None,
            ),
        }
    }

    fn json(self) -> Response {
        match self {
            Self::Stored => (
                StatusCode::CREATED,
                Json(serde_json::json!({"message": "Thank you! Your message has been received."})),
            )
                .into_response(),
            Self::NotFound => json_error(StatusCode::NOT_FOUND, "Page not found"),
            Self::TooMany => json_error(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many submissions from your address; try again in a minute.",
            ),
            Self::Unavailable => json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "Temporarily unavailable; please try again in a moment.",
            ),
        }
    }
}

fn json_error(status: StatusCode, message: &str) -> Response {
    (status, Json(serde_json::json!({ "message": message }))).into_response()
}

/// The largest beacon accepted.
const BEACON_LIMIT_BYTES: usize = 4 * 1024;

/// What the tracking script sends (as `text/plain`, so `sendBeacon` needs no preflight).
#[derive(serde::Deserialize)]
struct BeaconBody {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    webdriver: bool,
    #[serde(default)]
    seconds: Option<i64>,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    view_id: Option<String>,
    #[serde(default)]
    interaction: Option<String>,
    #[serde(default)]
    visible_seconds: Option<i64>,
}

/// A beacon: checked, queued for core, answered 204 at once.
async fn beacon(
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    Extension(ClientAddress(client)): Extension<ClientAddress>,
    Extension(queue): Extension<BeaconQueue>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    use proto::beacon::Kind;
    let body = match body {
        Ok(body) => body,
        Err(rejection) if crate::http::server::is_slow_body(&rejection) => {
            return json_error(StatusCode::REQUEST_TIMEOUT, TOO_SLOW);
        }
        Err(_) => return json_error(StatusCode::PAYLOAD_TOO_LARGE, "A beacon is at most 4 KB."),
    };
    let Ok(body) = serde_json::from_slice::<BeaconBody>(&body) else {
        return json_error(
            StatusCode::BAD_REQUEST,
            "The beacon must be a JSON object with a `type`.",
        );
    };
    let kind = match body.kind.as_str() {
        "view" => Kind::View,
        "click" => Kind::Click,
        "scroll" => Kind::Scroll,
        "time" => Kind::Time,
        "confirm" => Kind::Confirm,
        _ => {
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                Json(serde_json::json!({
                    "message": "The beacon type is invalid.",
                    "errors": {"type": ["The type must be one of view, confirm, click, scroll, time."]},
                })),
            )
                .into_response();
        }
    };
    let header_text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let beacon = proto::Beacon {
        campaign_slug,
        lead_slug,
        kind: kind as i32,
        visitor_id: visitor_cookie(&headers),
        ip_address: client.to_string(),
        user_agent: header_text(header::USER_AGENT).chars().take(512).collect(),
        webdriver: body.webdriver,
        seconds: body.seconds.unwrap_or(0),
        target: body.target,
        occurred_at: Some(lps::wire::to_proto(lps::wire::now())),
        view_id: body.view_id,
        interaction: body.interaction.unwrap_or_default(),
        visible_seconds: body.visible_seconds.unwrap_or(0),
        gpc: headers
            .get("sec-gpc")
            .is_some_and(|v| v.as_bytes().trim_ascii() == b"1"),
    };
    match queue.push(beacon) {
        Ok(()) => {
            lps::metrics::beacon_received("accepted");
            StatusCode::NO_CONTENT.into_response()
        }
        Err(refused) => {
            lps::metrics::beacon_received("refused");
            let mut response = json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                match refused {
                    Refused::Full => "Too busy to record this right now.",
                    Refused::Closed => "Shutting down.",
                },
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}

/// The first-party visitor id the tracking script keeps in the `lps_vid` cookie.
fn visitor_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix("lps_vid="))
        .map(str::to_owned)
}

/// The tracking script; browsers keep it an hour and then revalidate.
/// An image pages show, kept by lps (`jobs::assets`): addressed by its content's SHA-256, so
/// it never changes and browsers keep it for a year.
async fn asset(State(core): State<Core>, Path(key): Path<String>, headers: HeaderMap) -> Response {
    let etag = format!("\"{key}\"");
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| matches_etag(tags, &etag));
    let answer = core
        .visitor()
        .get_asset(lps::proto::GetAssetRequest { key: key.clone() })
        .await;
    let mut response = match answer {
        Ok(_) if fresh => StatusCode::NOT_MODIFIED.into_response(),
        Ok(asset) => {
            let asset = asset.into_inner();
            let mut response = asset.body.into_response();
            if let Ok(value) = HeaderValue::from_str(&asset.content_type) {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            response
        }
        Err(status) if status.code() == tonic::Code::NotFound => {
            return html(StatusCode::NOT_FOUND, Notice::NotFound.html(), None);
        }
        Err(status) => {
            tracing::error!(%status, "an asset could not be read");
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    response
}

/// How long a stand-in for a lead's link-preview card may be kept: the lead's card is being made
/// and answers soon after.
const STAND_IN_CACHE_CONTROL: &str = "public, max-age=30";

/// How long the edge waits for core's card before its own plain one stands in (core has a
/// deadline of its own for drawing; this covers core or its database not answering at all).
const CARD_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A plain card (1200x630, lps's default brand colour) for when core cannot answer.
const UNAVAILABLE_CARD: &[u8] = include_bytes!("assets/card.png");

/// A live page's link-preview card (`og:image`): fetching it is never a visit. When core could
/// not make the lead's card in time, a stand-in (the campaign's card, or a plain one) answers,
/// kept briefly.
async fn preview_image(
    State(core): State<Core>,
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let mut visitor = core.visitor();
    let asked = visitor.render_preview_image(lps::proto::RenderPageRequest {
        campaign_slug,
        lead_slug,
    });
    let answer = tokio::time::timeout(CARD_WAIT, asked)
        .await
        .unwrap_or_else(|_| Err(tonic::Status::deadline_exceeded("no card in time")));
    let card = match answer {
        Ok(card) => card.into_inner(),
        Err(status) if status.code() == tonic::Code::NotFound => {
            return html(StatusCode::NOT_FOUND, Notice::NotFound.html(), None);
        }
        // Core (or its database) out: the edge's own plain card, never a 503 for a preview.
        Err(status) => {
            tracing::warn!(%status, "a preview card could not be made; the plain one stands in");
            lps::proto::PreviewImage {
                png: UNAVAILABLE_CARD.to_vec(),
                etag: "\"og-unavailable\"".to_owned(),
                stand_in: true,
            }
        }
    };
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| matches_etag(tags, &card.etag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut response = card.png.into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
        response
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if card.stand_in {
            STAND_IN_CACHE_CONTROL
        } else {
            "public, max-age=300"
        }),
    );
    if let Ok(value) = HeaderValue::from_str(&card.etag) {
        headers.insert(header::ETAG, value);
    }
    response
}

async fn tracking_script(headers: HeaderMap) -> Response {
    static ETAG: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        use sha2::Digest;
        format!(
            "\"{}\"",
            &hex::encode(sha2::Sha256::digest(TRACKING_SCRIPT.as_bytes()))[..20]
        )
    });
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == ETAG.as_str()));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        TRACKING_SCRIPT.as_str().into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/javascript; charset=utf-8"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    if let Ok(etag) = HeaderValue::from_str(&ETAG) {
        headers.insert(header::ETAG, etag);
    }
    response
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
