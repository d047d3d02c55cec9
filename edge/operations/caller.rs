//! The caller of an operation as core will see them (the credential, the request id and the
//! client's address, forwarded as gRPC metadata), and the shape of a successful answer.

use std::future::Future;

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use http::request::Parts;
use lps::wire::RateLimitState;
use serde::Serialize;

use super::error::ApiError;
use super::headers::{credential_id, rate_limit_headers};
use super::input::Check;
use crate::core_client::Core;
use crate::http::forwarded::Forwarded;
use crate::http::html_page;
use crate::http::request_log::CredentialId;

/// An operation's caller as core will see them: their credential, request id and address.
/// Kept as the request's own values; the metadata a call forwards is built when a call is made
/// (the edge's own refusals make none).
pub struct Caller {
    core: Core,
    forwarded: Forwarded,
    /// The violations found while reading the request, encoded for core ([`Caller::checked`]).
    earlier_violations: Option<Vec<u8>>,
}

impl Caller {
    /// The caller of a request with these parts (its headers and the client address the HTTP
    /// layer resolved).
    pub fn from_parts(core: Core, parts: &Parts) -> Self {
        Self {
            core,
            forwarded: Forwarded::from_parts(parts),
            earlier_violations: None,
        }
    }

    /// The core client this caller's calls go through.
    pub fn core(&self) -> &Core {
        &self.core
    }

    /// Whether the caller presents a credential core accepts (asked without counting it
    /// against the rate limit; the operation's own call is counted). False without one, and
    /// when core cannot say (the operation's call then answers why).
    pub async fn has_valid_credential(&self) -> bool {
        if self.forwarded.authorization().is_none() {
            return false;
        }
        let check = self.request(lps::proto::CheckCredentialRequest {});
        self.core.identity().check_credential(check).await.is_ok()
    }

    /// A gRPC request carrying the caller's credential, request id and address, and the
    /// violations found while reading the request.
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = self.forwarded.request(message);
        if let Some(violations) = &self.earlier_violations {
            request.metadata_mut().insert_bin(
                lps::wire::EARLIER_VIOLATIONS,
                tonic::metadata::MetadataValue::from_bytes(violations),
            );
        }
        request
    }

    /// Counts a request the edge answers by itself (unknown route, wrong method, oversized
    /// body, a replayed answer): it still counts, against the credential or, for a missing or
    /// bad one, the client address; core decides, as for any call. The caller's rate-limit
    /// state afterwards.
    pub async fn count(&self) -> Option<RateLimitState> {
        let authorization = self
            .forwarded
            .authorization()
            .and_then(|value| value.to_str().ok());
        self.core
            .count_request(authorization, self.forwarded.client(), || {
                self.request(lps::proto::HelloWorldRequest {})
            })
            .await
    }

    /// [`Caller::count`]'s state as the rate-limit headers that report it.
    pub async fn rate_limit_headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(decision) = self.count().await {
            decision.put_headers(&mut headers);
        }
        headers
    }

    /// The whole of a REST handler's work after reading its input: core is asked (with the
    /// violations found while reading, which core reports together with its own), and its
    /// reply is shaped into the documented body with the rate-limit headers.
    pub async fn call<M, R, T, F>(
        self,
        check: Check,
        message: M,
        rpc: impl FnOnce(Core, tonic::Request<M>) -> F,
        shape: impl FnOnce(R) -> T,
    ) -> Result<Reply<T>, ApiError>
    where
        F: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        let caller = self.checked(check);
        let reply = rpc(caller.core.clone(), caller.request(message)).await?;
        Ok(Reply::new(reply, shape))
    }

    /// A watch call as Server-Sent Events: each message core streams becomes one event whose
    /// data is the documented JSON body (`onmessage` in a browser's `EventSource`); the
    /// response ends when core's stream does. A refusal before the first message is an
    /// ordinary JSON error; a failure later is a last event named `error` with `{"message"}`.
    pub async fn stream<M, R, T, F>(
        self,
        check: Check,
        message: M,
        rpc: impl FnOnce(Core, tonic::Request<M>) -> F,
        shape: fn(R) -> T,
    ) -> Result<Response, ApiError>
    where
        F: Future<Output = Result<tonic::Response<tonic::Streaming<R>>, tonic::Status>>,
        R: Send + 'static,
        T: Serialize + 'static,
    {
        use axum::response::sse::{Event, KeepAlive, Sse};
        use tokio_stream::StreamExt;

        let caller = self.checked(check);
        let reply = rpc(caller.core.clone(), caller.request(message)).await?;
        let headers = rate_limit_headers(reply.metadata());
        let credential = credential_id(reply.metadata());
        let events = reply.into_inner().map(move |item| {
            let event = match item {
                Ok(message) => Event::default().json_data(shape(message)),
                Err(status) => Event::default()
                    .event("error")
                    .json_data(serde_json::json!({ "message": status.message() })),
            };
            Ok::<_, std::convert::Infallible>(event.unwrap_or_default())
        });
        let mut response =
            (headers, Sse::new(events).keep_alive(KeepAlive::default())).into_response();
        if let Some(credential) = credential {
            response.extensions_mut().insert(credential);
        }
        Ok(response)
    }

    /// A file core streams (a CSV export): each message becomes the bytes `encode` makes of
    /// it, sent as it comes, so the file is never held whole. A refusal before the first
    /// message is an ordinary JSON error; a failure later cuts the body short, so the client
    /// sees a failed download, never a silently short file.
    pub async fn download<M, R, F>(
        self,
        check: Check,
        message: M,
        rpc: impl FnOnce(Core, tonic::Request<M>) -> F,
        content_type: &'static str,
        disposition: &'static str,
        mut encode: impl FnMut(R) -> axum::body::Bytes + Send + 'static,
    ) -> Result<Response, ApiError>
    where
        F: Future<Output = Result<tonic::Response<tonic::Streaming<R>>, tonic::Status>>,
        R: Send + 'static,
    {
        use tokio_stream::StreamExt;

        let caller = self.checked(check);
        let reply = rpc(caller.core.clone(), caller.request(message)).await?;
        let headers = rate_limit_headers(reply.metadata());
        let credential = credential_id(reply.metadata());
        let chunks = reply.into_inner().map(move |item| match item {
            Ok(message) => Ok(encode(message)),
            Err(status) => {
                tracing::warn!(%status, "a download stopped");
                Err(std::io::Error::other(status.message().to_owned()))
            }
        });
        let mut response = (
            headers,
            [
                (http::header::CONTENT_TYPE, content_type),
                (http::header::CONTENT_DISPOSITION, disposition),
                (http::header::CACHE_CONTROL, "no-store"),
            ],
            axum::body::Body::from_stream(chunks),
        )
            .into_response();
        if let Some(credential) = credential {
            response.extensions_mut().insert(credential);
        }
        Ok(response)
    }

    /// The caller with the violations found while reading the request attached: core reports
    /// them together with its own (every bad field at once, after the credential and rate-limit
    /// checks, like any other call) and refuses the request.
    pub fn checked(mut self, check: Check) -> Self {
        let violations = check.into_violations();
        if !violations.is_empty() {
            self.earlier_violations = Some(lps::wire::encode_violations(&violations));
        }
        self
    }
}

/// A successful reply: the documented JSON body with the caller's rate-limit headers.
pub struct Reply<T> {
    headers: HeaderMap,
    credential: Option<CredentialId>,
    body: T,
}

impl<T> Reply<T> {
    /// Shapes core's reply into the documented body, keeping its rate-limit metadata.
    pub fn new<M>(response: tonic::Response<M>, shape: impl FnOnce(M) -> T) -> Self {
        let headers = rate_limit_headers(response.metadata());
        Self {
            headers,
            credential: credential_id(response.metadata()),
            body: shape(response.into_inner()),
        }
    }
}

impl<T> Reply<T> {
    /// The same reply with its body reshaped.
    pub fn map<U>(self, shape: impl FnOnce(T) -> U) -> Reply<U> {
        Reply {
            headers: self.headers,
            credential: self.credential,
            body: shape(self.body),
        }
    }
}

impl Reply<String> {
    /// The body as a previewed page ([`html_page::preview`]) with the rate-limit headers.
    pub fn into_html(self) -> Response {
        let mut response = html_page::preview(self.body, html_page::Framing::Never);
        response.headers_mut().extend(self.headers);
        if let Some(credential) = self.credential {
            response.extensions_mut().insert(credential);
        }
        response
    }
}

impl<T: Serialize> Reply<T> {
    /// The body alone, as JSON (for a face that carries no HTTP headers).
    pub fn into_json(self) -> serde_json::Value {
        serde_json::to_value(self.body).unwrap_or_default()
    }
}

impl<T: Serialize> IntoResponse for Reply<T> {
    fn into_response(self) -> Response {
        let mut response = (self.headers, Json(self.body)).into_response();
        if let Some(credential) = self.credential {
            response.extensions_mut().insert(credential);
        }
        response
    }
}
