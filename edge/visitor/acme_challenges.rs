//! `GET /.well-known/acme-challenge/{token}`: an ACME server validating an HTTP-01 challenge
//! (RFC 8555, 8.3) while lps orders a certificate (`--acme-challenge http-01`). Answered on
//! any host, own domains included, with the key authorization core keeps for the token; any
//! other token is the not-found page. Never redirected to HTTPS (`http::https`): the
//! validation comes over plain HTTP, before there is a certificate.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, header};

use crate::core_client::Core;

pub const ACME_CHALLENGE_ROUTE: &str = "/.well-known/acme-challenge/{token}";
/// The path's beginning, for what must pass it untouched.
pub const ACME_CHALLENGE_PREFIX: &str = "/.well-known/acme-challenge/";

pub async fn acme_challenge(State(core): State<Core>, Path(token): Path<String>) -> Response {
    // A token is base64url (RFC 8555, 8.3): nothing else is asked of core.
    let well_formed = !token.is_empty()
        && token.len() <= 128
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let answer = match well_formed {
        true => {
            core.acme_challenge(lps::proto::AcmeChallengeKind::Http01, &token)
                .await
        }
        false => None,
    };
    match answer {
        Some(key_authorization) => {
            let mut response = key_authorization.into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            response
        }
        None => super::own_domains::not_found(),
    }
}
