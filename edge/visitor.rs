//! Visitors' routes: `GET`/`HEAD /p/{campaign_slug}/{lead_slug}`, the lead's page, and `POST`
//! to the same address, a form on it submitted without JavaScript (stored by core, answered
//! with a thank-you page). Public (no key, no API rate-limit headers); core renders the page and
//! stores submissions, the edge adds HTTP caching and security headers.

use axum::Extension;
use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::Uri;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lps::proto::submit_form_response::Outcome as SubmitOutcome;
use lps::proto::{self, render_page_response::Outcome};

use crate::client_address::ClientAddress;
use crate::core_client::Core;

/// The Content-Security-Policy of every visitor page: the design's inlined CSS, images from
/// anywhere over https, lps's own scripts and connections only, forms posting to the page's own
/// origin, and framing only by `frame_ancestors` (default `'none'`).
pub fn content_security_policy(frame_ancestors: &str) -> String {
    format!(
        "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' https: data:; \
         font-src 'self' https: data:; script-src 'self'; connect-src 'self'; \
         form-action 'self'; base-uri 'none'; frame-ancestors {frame_ancestors}"
    )
}

pub fn router(frame_ancestors: &str) -> Router<Core> {
    let policy = HeaderValue::from_str(&content_security_policy(frame_ancestors))
        .unwrap_or_else(|_| HeaderValue::from_static("frame-ancestors 'none'"));
    Router::new()
        .route(
            "/p/{campaign_slug}/{lead_slug}",
            get(page)
                .post(form)
                .layer(DefaultBodyLimit::max(FORM_LIMIT_BYTES)),
        )
        .layer(axum::middleware::map_response(
            move |mut response: Response| {
                let policy = policy.clone();
                async move {
                    let headers = response.headers_mut();
                    headers.insert(header::CONTENT_SECURITY_POLICY, policy);
                    headers.insert(
                        header::REFERRER_POLICY,
                        HeaderValue::from_static("strict-origin-when-cross-origin"),
                    );
                    headers.insert(
                        "permissions-policy",
                        HeaderValue::from_static(
                            "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
                        ),
                    );
                    response
                }
            },
        ))
}

async fn page(
    State(core): State<Core>,
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let request = proto::RenderPageRequest {
        campaign_slug,
        lead_slug,
        if_none_match: headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    };
    let page = match core.visitor().render_page(request).await {
        Ok(reply) => reply.into_inner(),
        Err(status) => {
            tracing::error!(%status, "page could not be rendered");
            return html(
                StatusCode::SERVICE_UNAVAILABLE,
                lps::render::unavailable_page(),
                None,
            );
        }
    };
    match Outcome::try_from(page.outcome).unwrap_or(Outcome::NotFound) {
        Outcome::Page => html(StatusCode::OK, page.html, Some(&page.etag)),
        Outcome::NotModified => {
            let mut response = StatusCode::NOT_MODIFIED.into_response();
            set_etag(response.headers_mut(), &page.etag);
            response
        }
        Outcome::NotLive => html(StatusCode::OK, page.html, None),
        Outcome::NotFound | Outcome::Unspecified => html(StatusCode::NOT_FOUND, page.html, None),
    }
}

/// The largest form post accepted.
const FORM_LIMIT_BYTES: usize = 64 * 1024;

/// A form on the page, posted without JavaScript (`application/x-www-form-urlencoded`).
async fn form(
    State(core): State<Core>,
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    Extension(ClientAddress(client)): Extension<ClientAddress>,
    uri: Uri,
    body: Bytes,
) -> Response {
    let fields = form_urlencoded::parse(&body).into_owned().collect();
    let request = proto::SubmitFormRequest {
        campaign_slug,
        lead_slug,
        form_id: None,
        ip_address: client.to_string(),
        fields,
    };
    match core.visitor().submit_form(request).await {
        Ok(reply) => match reply.into_inner().outcome() {
            SubmitOutcome::Stored => html(
                StatusCode::OK,
                lps::render::thank_you_page(uri.path()),
                None,
            ),
            SubmitOutcome::NotFound | SubmitOutcome::Unspecified => {
                html(StatusCode::NOT_FOUND, lps::render::not_found_page(), None)
            }
        },
        Err(status) if status.code() == tonic::Code::ResourceExhausted => html(
            StatusCode::TOO_MANY_REQUESTS,
            lps::render::slow_down_page(),
            None,
        ),
        Err(status) => {
            tracing::error!(%status, "form could not be stored");
            html(
                StatusCode::SERVICE_UNAVAILABLE,
                lps::render::unavailable_page(),
                None,
            )
        }
    }
}

fn set_etag(headers: &mut HeaderMap, etag: &str) {
    if let Ok(value) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, value);
    }
    // Revalidate every time, so a publish reaches every visitor at once.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
}

fn html(status: StatusCode, body: String, etag: Option<&str>) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    match etag {
        Some(etag) => set_etag(headers, etag),
        None => {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
    }
    response
}
