//! Images of lead pages: those lps keeps (`/assets/{key}`) and a page's link-preview card
//! (`og.png`).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::{html, matches_etag};
use crate::core_client::Core;
use crate::visitor::notices::Notice;
use crate::visitor::own_domains;

/// An image pages show, kept by lps (`jobs::assets`): addressed by its content's SHA-256, so
/// it never changes and browsers keep it for a year.
pub(super) async fn asset(
    State(core): State<Core>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Response {
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
pub(super) async fn preview_image(
    State(core): State<Core>,
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    served: Option<axum::Extension<own_domains::Served>>,
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
        // Another workspace's card on a workspace's own domain: none here.
        Ok(card)
            if !own_domains::serves(
                served.as_ref().map(|served| &served.0),
                card.get_ref().workspace_id,
            ) =>
        {
            return own_domains::not_found();
        }
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
                workspace_id: 0,
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
