//! `POST /p/{campaign_slug}/{lead_slug}`: a form on a lead's page, stored by core before the
//! answer (a thank-you page, or JSON for the tracking script's background post).

use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, Uri, header};
use lps::proto;
use lps::proto::submit_form_response::Outcome as SubmitOutcome;

use super::{TOO_SLOW, html, json_error};
use crate::core_client::Core;
use crate::http::client_address::{self, ClientAddress};
use crate::visitor::notices::Notice;
use crate::visitor::own_domains::Served;

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
pub(super) const FORM_LIMIT_BYTES: usize = 64 * 1024;

/// A form on the page, posted without JavaScript (`application/x-www-form-urlencoded`).
pub(super) async fn form(
    State(core): State<Core>,
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    Extension(ClientAddress(client)): Extension<ClientAddress>,
    served: Option<Extension<Served>>,
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
        ip_address: client_address::text_of(client),
        fields,
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
        // Set by the page's script when it sees `navigator.webdriver` (a plain post has none).
        webdriver: headers.contains_key(WEBDRIVER_HEADER),
        workspace_id: served.map(|Extension(served)| served.workspace_id),
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
