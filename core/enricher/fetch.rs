//! Pages and feeds fetched for enrichment: real HTTP through the SSRF-guarded client
//! ([`crate::outbound`]), read up to [`MAX_PAGE_BYTES`].

use super::{EnrichError, Enricher};
use crate::outbound;

/// Bytes of a fetched page or feed read at most.
pub(super) const MAX_PAGE_BYTES: usize = 2_000_000;

/// A fetched page: where it ended up and its text.
#[derive(Debug, Clone)]
pub(super) struct Page {
    pub(super) url: reqwest::Url,
    pub(super) body: String,
    pub(super) is_feed: bool,
}

/// A page (or feed), fetched through the guarded client and read up to [`MAX_PAGE_BYTES`].
/// With `quiet_connect`, a failure to connect is [`EnrichError::CannotConnect`], so the caller
/// can try another scheme.
pub(super) async fn fetch(
    enricher: &Enricher,
    url: &str,
    quiet_connect: bool,
) -> Result<Page, EnrichError> {
    crate::telemetry::traced(
        || tracing::info_span!("enrichment fetch", otel.kind = "client"),
        fetch_untraced(enricher, url, quiet_connect),
    )
    .await
}

async fn fetch_untraced(
    enricher: &Enricher,
    url: &str,
    quiet_connect: bool,
) -> Result<Page, EnrichError> {
    reqwest::Url::parse(url).map_err(|_| EnrichError::InvalidAddress(url.to_owned()))?;
    let response = enricher
        .web
        .get(url)
        .map_err(|refused| EnrichError::Refused {
            url: url.to_owned(),
            reason: refused.to_string(),
        })?
        .header(
            reqwest::header::ACCEPT,
            "text/html,application/xhtml+xml,application/rss+xml,application/atom+xml,application/xml;q=0.9,*/*;q=0.5",
        )
        .send()
        .await
        .map_err(|err| {
            let url = url.to_owned();
            if let Some(refused) = outbound::is_refused(&err) {
                EnrichError::Refused {
                    url,
                    reason: refused.to_string(),
                }
            } else if err.is_connect() && quiet_connect {
                EnrichError::CannotConnect
            } else if err.is_timeout() {
                EnrichError::TimedOut(url)
            } else if err.is_connect() {
                EnrichError::Unreachable(url)
            } else {
                EnrichError::NotFetched(url)
            }
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(EnrichError::Status {
            url: url.to_owned(),
            status: status.to_string(),
        });
    }
    let final_url = response.url().clone();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut response = response;
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|_| EnrichError::CutOff(url.to_owned()))?
    {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_PAGE_BYTES {
            return Err(EnrichError::TooLarge(url.to_owned()));
        }
    }
    let body = String::from_utf8_lossy(&bytes).into_owned();
    let is_feed = content_type.contains("xml") && !content_type.contains("xhtml")
        || body.trim_start().starts_with("<?xml") && !body.contains("<html");
    Ok(Page {
        url: final_url,
        body,
        is_feed,
    })
}
