//! What an edge request forwards to core with every call it makes: the caller's credential,
//! the request's id (so core's lines of the call carry it) and the client's address (core's
//! limits by address). The one place HTTP becomes gRPC metadata: the API's caller
//! (`operations/caller.rs`) and the dashboard's session (`session_cookie.rs`) both build their
//! calls here.

use std::net::IpAddr;

use http::request::Parts;
use http::{HeaderMap, HeaderValue};
use lps::grpc::names;
use tonic::metadata::MetadataMap;

use super::client_address::ClientAddress;

/// A request's credential, id and client address, kept as the request's own values; the
/// metadata a call forwards is built when a call is made.
#[derive(Clone, Debug)]
pub struct Forwarded {
    authorization: Option<HeaderValue>,
    request_id: Option<HeaderValue>,
    client: Option<IpAddr>,
}

impl Forwarded {
    /// What a request with these parts forwards: its `Authorization` header, its id (set by
    /// `every_request.rs` on every routed request) and the client address the HTTP layer
    /// resolved.
    pub fn from_parts(parts: &Parts) -> Self {
        Self {
            authorization: parts.headers.get(http::header::AUTHORIZATION).cloned(),
            request_id: parts.headers.get(names::REQUEST_ID).cloned(),
            client: parts
                .extensions
                .get::<ClientAddress>()
                .map(|ClientAddress(client)| *client),
        }
    }

    /// The same, with `token` as the credential instead (a session's, from its cookie).
    pub fn with_bearer(mut self, token: &str) -> Self {
        self.authorization = HeaderValue::try_from(format!("Bearer {token}")).ok();
        self
    }

    /// The `Authorization` value forwarded, if any.
    pub fn authorization(&self) -> Option<&HeaderValue> {
        self.authorization.as_ref()
    }

    /// The client's address, if the HTTP layer resolved one.
    pub fn client(&self) -> Option<IpAddr> {
        self.client
    }

    /// A gRPC request carrying the credential, the request id and the client's address.
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        // Header values are valid metadata values as they are: copied, not checked again.
        let mut forwarded = HeaderMap::with_capacity(4);
        if let Some(authorization) = &self.authorization {
            forwarded.insert(http::header::AUTHORIZATION, authorization.clone());
        }
        if let Some(request_id) = &self.request_id {
            forwarded.insert(names::REQUEST_ID, request_id.clone());
        }
        if let Some(client) = self.client
            && let Ok(value) = HeaderValue::try_from(address_text(client))
        {
            forwarded.insert(names::CLIENT_ADDRESS, value);
        }
        let mut request = tonic::Request::new(message);
        *request.metadata_mut() = MetadataMap::from_headers(forwarded);
        request
    }
}

/// Any handler may take what its request forwards as an argument.
impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Forwarded {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::from_parts(parts))
    }
}

/// The client's address as forwarded to core.
fn address_text(address: IpAddr) -> String {
    let mut text = String::with_capacity(45);
    lps::wire::push_address(&mut text, address);
    text
}
