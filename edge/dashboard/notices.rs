//! The notice an action leaves for the page it redirects to (post/redirect/get): a
//! short-lived cookie, signed with the deployment's key so only this deployment can write one,
//! shown once by `screen` (in `mod.rs`).

use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderMap, HeaderValue, header};
use serde::Serialize;

use super::DashboardSettings;
use crate::http::session_cookie;

/// The short-lived cookie that carries what an action did to the page it redirects to
/// (post/redirect/get: a reload shows the page again and repeats nothing).
pub(super) const NOTICE_COOKIE: &str = "lps_notice";

/// The key notices are signed with: the deployment's, set when the router is made.
pub(super) static NOTICE_KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();

/// Back to `to` after an action, saying what happened (post/redirect/get).
pub(super) fn after_action<T>(
    settings: &DashboardSettings,
    to: &str,
    outcome: Result<T, tonic::Status>,
    done: &str,
) -> Response {
    let notice = match outcome {
        Ok(_) => Notice::news(done),
        Err(status) => Notice::alert(status.message()),
    };
    redirect_with(settings, to, &notice)
}

/// A redirect to `to` carrying `notice` for the page it lands on.
pub(super) fn redirect_with(settings: &DashboardSettings, to: &str, notice: &Notice) -> Response {
    let mut response = Redirect::to(to).into_response();
    if let Ok(cookie) = HeaderValue::from_str(&session_cookie::set(
        NOTICE_COOKIE,
        &signed_notice(notice),
        settings.secure_cookies,
        60,
    )) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The MAC of a notice's encoded text, under the deployment's key.
fn notice_mac(encoded: &str) -> hmac::Hmac<sha2::Sha256> {
    use hmac::Mac;
    let key = NOTICE_KEY.get_or_init(|| lps::keys::derive(None, "lps dashboard notices v1"));
    let mut mac =
        hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(encoded.as_bytes());
    mac
}

/// A notice as its cookie carries it: the JSON (base64url), a dot, and its MAC (base64url).
fn signed_notice(notice: &Notice) -> String {
    use base64::Engine;
    use hmac::Mac;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let encoded = b64.encode(serde_json::to_vec(notice).unwrap_or_default());
    let tag = b64.encode(notice_mac(&encoded).finalize().into_bytes());
    format!("{encoded}.{tag}")
}

/// The notice an action left for this page, if any: only one this deployment signed (a
/// notice cookie written by anyone else, a sibling subdomain say, is not shown).
pub(super) fn notice_of(headers: &HeaderMap) -> Option<Notice> {
    use base64::Engine;
    use hmac::Mac;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let value = session_cookie::read(headers, NOTICE_COOKIE)?;
    let (encoded, tag) = value.split_once('.')?;
    notice_mac(encoded)
        .verify_slice(&b64.decode(tag).ok()?)
        .ok()?;
    serde_json::from_slice(&b64.decode(encoded).ok()?).ok()
}

/// What the home page says first after an action.
#[derive(Serialize, serde::Deserialize)]
pub(super) struct Notice {
    /// A failure (shown as an alert) or news.
    pub(super) alert: bool,
    pub(super) text: String,
    /// A value shown once to copy (a new key).
    pub(super) secret: Option<String>,
}

impl Notice {
    pub(super) fn alert(text: &str) -> Self {
        Self {
            alert: true,
            text: text.to_owned(),
            secret: None,
        }
    }

    pub(super) fn news(text: &str) -> Self {
        Self {
            alert: false,
            text: text.to_owned(),
            secret: None,
        }
    }
}
