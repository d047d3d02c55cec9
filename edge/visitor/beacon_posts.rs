//! `POST /p/{campaign_slug}/{lead_slug}/beacon`: what the tracking script reports, read,
//! checked and queued for core, answered 204 at once (`beacons.rs` sends the queue).

use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Request};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lps::proto;

use super::{TOO_SLOW, json_error};
use crate::http::client_address::ClientAddress;
use crate::visitor::beacons::{BeaconQueue, Refused};
use crate::visitor::own_domains::Served;

/// The largest beacon accepted.
pub(super) const BEACON_LIMIT_BYTES: usize = 4 * 1024;

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
pub(super) async fn beacon(
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    Extension(ClientAddress(client)): Extension<ClientAddress>,
    Extension(queue): Extension<BeaconQueue>,
    served: Option<Extension<Served>>,
    request: Request,
) -> Response {
    use proto::beacon::Kind;
    // The three headers a beacon keeps, read before the body takes the request (the
    // `HeaderMap` extractor would copy every header of every beacon).
    let headers = request.headers();
    let user_agent = at_most(header_text(headers, header::USER_AGENT), 512);
    let visitor_id = visitor_cookie(headers);
    let gpc = headers
        .get("sec-gpc")
        .is_some_and(|v| v.as_bytes().trim_ascii() == b"1");
    let body = match Bytes::from_request(request, &()).await {
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
    let beacon = proto::Beacon {
        campaign_slug,
        lead_slug,
        kind: kind as i32,
        visitor_id,
        ip_address: client.to_string(),
        user_agent,
        webdriver: body.webdriver,
        seconds: body.seconds.unwrap_or(0),
        target: body.target,
        occurred_at: Some(lps::wire::to_proto(lps::wire::now())),
        view_id: body.view_id,
        interaction: body.interaction.unwrap_or_default(),
        visible_seconds: body.visible_seconds.unwrap_or(0),
        gpc,
        workspace_id: served.map(|Extension(served)| served.workspace_id),
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
