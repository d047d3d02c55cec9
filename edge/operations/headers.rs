//! What core's reply metadata becomes in an answer, over every face: the rate-limit headers
//! (`X-RateLimit-*`, `Retry-After`) and the credential's id for the request log.

use http::HeaderMap;
use lps::grpc::names::{CREDENTIAL_ID, RATE_LIMIT_LIMIT, RATE_LIMIT_REMAINING, RETRY_AFTER};
use tonic::metadata::MetadataMap;

use crate::http::request_log::CredentialId;

/// The credential id core reported, for the request log (never sent to the client).
pub fn credential_id(metadata: &MetadataMap) -> Option<CredentialId> {
    metadata
        .as_ref()
        .get(CREDENTIAL_ID)
        .and_then(|value| value.to_str().ok())
        .map(|id| CredentialId(id.to_owned()))
}

/// `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `Retry-After`, copied from core's metadata
/// of the same names (header names are case-insensitive).
pub fn rate_limit_headers(metadata: &MetadataMap) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for name in [RATE_LIMIT_LIMIT, RATE_LIMIT_REMAINING, RETRY_AFTER] {
        if let Some(value) = metadata.as_ref().get(&name) {
            headers.insert(name, value.clone());
        }
    }
    headers
}
