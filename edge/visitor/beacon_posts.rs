//! `POST /p/{campaign_slug}/{lead_slug}/beacon`: what the tracking script reports, read,
//! checked and queued for core, answered 204 at once (`beacons.rs` sends the queue).
//!
//! Beacons are the most frequent request lps has (two to five a visit), so they are taken
//! ahead of the router ([`BeaconPosts`], as lead pages are by `PagesAheadOfRouter`): the same
//! answer, the same policy headers, request id, metrics and log line, without the router's
//! matching, extractors and layers. The route stays in the router for what the fast path
//! leaves to it: other methods (405), and slugs written with percent-escapes, which the
//! router's `Path` decodes.

use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::Extension;
use axum::Json;
use axum::extract::{Path, Request};
use axum::response::{IntoResponse, Response};
use futures_util::future::Either;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use lps::proto;
use tracing::Instrument;

use super::{AheadOfRouter, Policies, TOO_SLOW, json_error};
use crate::http::client_address::{self, ClientAddress, TrustedProxies};
use crate::visitor::beacons::{BeaconQueue, Refused};
use crate::visitor::own_domains::Served;

/// The largest beacon accepted.
pub(super) const BEACON_LIMIT_BYTES: usize = 4 * 1024;

/// The route of a beacon, as the router, metrics and logs name it.
pub(super) const BEACON_ROUTE: &str = "/p/{campaign_slug}/{lead_slug}/beacon";

const SEC_GPC: HeaderName = HeaderName::from_static("sec-gpc");

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

/// A beacon the router took (see the module's comment for which).
pub(super) async fn beacon(
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    Extension(ClientAddress(client)): Extension<ClientAddress>,
    Extension(queue): Extension<BeaconQueue>,
    request: Request,
) -> Response {
    accept(campaign_slug, lead_slug, client, &queue, request).await
}

/// A beacon: checked, queued for core, answered 204 at once.
async fn accept(
    campaign_slug: String,
    lead_slug: String,
    client: IpAddr,
    queue: &BeaconQueue,
    request: Request,
) -> Response {
    use proto::beacon::Kind;
    // The three headers a beacon keeps, read before the body takes the request (the
    // `HeaderMap` extractor would copy every header of every beacon).
    let headers = request.headers();
    let user_agent = at_most(header_text(headers, header::USER_AGENT), 512);
    let visitor_id = visitor_cookie(headers);
    let gpc = headers
        .get(SEC_GPC)
        .is_some_and(|v| v.as_bytes().trim_ascii() == b"1");
    let workspace_id = request
        .extensions()
        .get::<Served>()
        .map(|served| served.workspace_id);
    let body = match axum::body::to_bytes(request.into_body(), BEACON_LIMIT_BYTES).await {
        Ok(body) => body,
        Err(error) if crate::http::server::is_slow_body(&error) => {
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
    let beacon = proto::Beacon {
        campaign_slug,
        lead_slug,
        kind: kind as i32,
        visitor_id,
        ip_address: client_address::text_of(client),
        user_agent,
        webdriver: body.webdriver,
        seconds: body.seconds.unwrap_or(0),
        target: body.target,
        occurred_at: Some(lps::wire::to_proto(lps::wire::now())),
        view_id: body.view_id,
        interaction: body.interaction.unwrap_or_default(),
        visible_seconds: body.visible_seconds.unwrap_or(0),
        gpc,
        workspace_id,
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

/// The header `name` as text (empty when missing or not visible ASCII).
fn header_text(headers: &HeaderMap, name: header::HeaderName) -> String {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// `text` cut to its first `bytes` bytes. A header value read as text is visible ASCII only
/// (`HeaderValue::to_str`), so every byte is a character and any cut is between two.
fn at_most(mut text: String, bytes: usize) -> String {
    text.truncate(bytes);
    text
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

/// Takes `POST /p/{campaign_slug}/{lead_slug}/beacon` ahead of the service it wraps (the
/// router) and passes every other request on; the answer is the routed one's, with what the
/// router's `every_request` and the visitor routes' policies put on it.
#[derive(Clone)]
pub struct BeaconPosts<S> {
    queue: BeaconQueue,
    trusted_proxies: TrustedProxies,
    policies: Policies,
    inner: S,
}

impl<S> BeaconPosts<S> {
    pub fn new(
        queue: BeaconQueue,
        trusted_proxies: TrustedProxies,
        frame_ancestors: &str,
        inner: S,
    ) -> Self {
        Self {
            queue,
            trusted_proxies,
            policies: Policies::new(frame_ancestors),
            inner,
        }
    }
}

/// A beacon's answer, on its way.
type Answer = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<S> tower::Service<Request> for BeaconPosts<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Answer, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let slugs = (request.method() == Method::POST)
            .then(|| beacon_slugs(request.uri().path()))
            .flatten();
        let Some((campaign_slug, lead_slug)) = slugs else {
            return Either::Right(self.inner.call(request));
        };
        let Some(client) = client_address::of(&self.trusted_proxies, &request) else {
            return Either::Right(self.inner.call(request));
        };
        let log = AheadOfRouter::start(&request, BEACON_ROUTE, std::time::Instant::now());
        let (campaign_slug, lead_slug) = (campaign_slug.to_owned(), lead_slug.to_owned());
        let (queue, policies) = (self.queue.clone(), self.policies.clone());
        Either::Left(Box::pin(async move {
            let mut response = accept(campaign_slug, lead_slug, client, &queue, request)
                .instrument(log.span.clone())
                .await;
            log.finish(&policies, &mut response);
            Ok(response)
        }))
    }
}

/// The campaign's and lead's slugs of a beacon's path, `/p/{campaign_slug}/{lead_slug}/beacon`
/// (two non-empty segments, as the router matches them), when neither needs decoding.
fn beacon_slugs(path: &str) -> Option<(&str, &str)> {
    let (campaign, lead) = path
        .strip_prefix("/p/")?
        .strip_suffix("/beacon")?
        .split_once('/')?;
    let plain = |slug: &str| !slug.is_empty() && !slug.contains(['/', '%']);
    (plain(campaign) && plain(lead)).then_some((campaign, lead))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_beacon_paths_with_plain_slugs_are_taken_ahead_of_the_router() {
        assert_eq!(
            beacon_slugs("/p/spring/ada-x1/beacon"),
            Some(("spring", "ada-x1"))
        );
        for left in [
            "/p/spring/ada-x1",
            "/p/spring/beacon",
            "/p//ada/beacon",
            "/p/spring//beacon",
            "/p/spring/ada/x/beacon",
            "/p/spring/ada%2Dx1/beacon",
            "/p/spring/ada-x1/beacon/",
            "/q/spring/ada-x1/beacon",
        ] {
            assert_eq!(beacon_slugs(left), None, "{left}");
        }
    }
}
