//! `GET /p/track.js`: the tracking script every live page loads.

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};

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

/// The tracking script; browsers keep it an hour and then revalidate.
pub(super) async fn tracking_script(headers: HeaderMap) -> Response {
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
