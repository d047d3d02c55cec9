//! Whether a call is let in: its credential, its rate-limit bucket (by credential or by the
//! client's address), calls open to anyone or not counted, and the violations the edge found.

use super::*;

use http::HeaderValue;

use crate::App;
use crate::auth;
use crate::principal::Principal;
use crate::ratelimit::Decision;
use crate::validate;

/// What the gatekeeper decided about a call before it runs (the same for a call over gRPC
/// and for the edge's direct calls in `lps serve`, see `direct.rs`).
// It lives on the stack for one call; boxing the large variant would allocate on every call.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Admission {
    /// It needs no credential (see [`is_open`]).
    Open,
    /// Refused before it runs: no usable credential (counted against the client address);
    /// the status carries the address's rate-limit state.
    Refused(tonic::Status),
    /// Authenticated; whether its credential's rate limit lets it run is [`Admitted::run`]'s.
    Admitted(Admitted),
}

/// A call with a usable credential.
pub(crate) struct Admitted {
    principal: Option<Principal>,
    /// The credential's rate-limit state after counting this call (`None`: it is not counted).
    decision: Option<Decision>,
    credential_id: Option<HeaderValue>,
    /// The call's path and start, for its debug log line (when debug lines are logged).
    logged: Option<(String, std::time::Instant)>,
}

/// The first half of the gatekeeper: whether the call at `path` needs a credential, and if so,
/// who the caller is and whether their rate limit allows it. `bucket` names an unauthenticated
/// caller's rate-limit bucket.
pub(crate) async fn admit(
    app: &App,
    path: &str,
    authorization: Option<&str>,
    bucket: impl FnOnce() -> String,
) -> Admission {
    if is_open(path) {
        return Admission::Open;
    }
    let principal = match authenticated(app, authorization, bucket).await {
        Ok(principal) => principal,
        Err((err, decision)) => {
            let mut status = match decision.into_result() {
                Ok(_) => tonic::Status::from(err),
                Err(limited) => tonic::Status::from(limited),
            };
            decision.put_headers(status.metadata_mut().as_mut());
            return Admission::Refused(status);
        }
    };
    // Bookkeeping around a request is not another request: the request itself counts.
    let decision = if is_uncounted(path) {
        None
    } else {
        Some(count_principal(app, &principal).await)
    };
    Admission::Admitted(Admitted {
        credential_id: HeaderValue::from_str(&principal.token_id).ok(),
        principal: Some(principal),
        decision,
        logged: tracing::enabled!(tracing::Level::DEBUG)
            .then(|| (path.to_owned(), std::time::Instant::now())),
    })
}

/// The caller's principal; or why they have none, with the request counted against their
/// client address (`bucket`), which also slows down key guessing. Counting a principal's
/// request is the caller's part: some calls do not count.
async fn authenticated(
    app: &App,
    authorization: Option<&str>,
    bucket: impl FnOnce() -> String,
) -> Result<Principal, (crate::Error, Decision)> {
    match auth::authenticate(app, authorization).await {
        Ok(principal) => Ok(principal),
        Err(err) => {
            let decision = app.limiter.check(&bucket()).await;
            if decision.retry_after.is_some() {
                crate::metrics::rate_limited("address");
            }
            Err((err, decision))
        }
    }
}

/// A request the edge of this process answers by itself (an unknown route, a wrong method, an
/// oversized body) counted as any call is, with nothing to run: the caller's rate-limit state
/// afterwards, the same as a `HelloWorld` call's gatekeeper reports (which is how an edge
/// running apart asks). See [`crate::direct::DirectCore::count_request`].
pub(crate) async fn count_request(
    app: &App,
    authorization: Option<&str>,
    bucket: impl FnOnce() -> String,
) -> Decision {
    match authenticated(app, authorization, bucket).await {
        Ok(principal) => count_principal(app, &principal).await,
        Err((_, decision)) => decision,
    }
}

/// A request counted against its credential's allowance; a refusal is counted in the metrics
/// here, as an unauthenticated caller's is in [`authenticated`].
async fn count_principal(app: &App, principal: &Principal) -> Decision {
    let decision = app.limiter.check(&principal.token_id).await;
    if decision.retry_after.is_some() {
        crate::metrics::rate_limited("credential");
    }
    decision
}

impl Admitted {
    /// The call's refusal when its credential is over its rate limit; else hands the service
    /// the [`Principal`] and the violations the caller found before core (`earlier`), through
    /// the request's extensions, and returns those violations' handle.
    pub(crate) fn run(
        &mut self,
        extensions: &mut http::Extensions,
        earlier: Vec<crate::error::FieldViolation>,
    ) -> Result<Unreported, tonic::Status> {
        if let Some(Err(err)) = self.decision.map(Decision::into_result) {
            return Err(tonic::Status::from(err));
        }
        if let Some(principal) = self.principal.take() {
            extensions.insert(principal);
        }
        let earlier = validate::EarlierViolations::new(earlier);
        extensions.insert(earlier.clone());
        Ok(Unreported(earlier))
    }

    /// The second half: the answer's metadata (an error's included) gets the rate-limit state,
    /// the credential's id and the page generation reached.
    pub(crate) fn settle(&self, app: &App, headers: &mut http::HeaderMap) {
        if let Some(decision) = self.decision {
            decision.put_headers(headers);
        }
        if let Some((path, started)) = &self.logged {
            tracing::debug!(
                path,
                latency_ms = started.elapsed().as_secs_f64() * 1000.0,
                credential = self
                    .credential_id
                    .as_ref()
                    .and_then(|id| id.to_str().ok())
                    .unwrap_or("-"),
                "grpc call"
            );
        }
        if let Some(credential_id) = &self.credential_id {
            headers.insert(names::CREDENTIAL_ID, credential_id.clone());
        }
        put_page_generation(app, headers);
    }
}

/// The caller's earlier violations, as handed to the service.
pub(crate) struct Unreported(validate::EarlierViolations);

impl Unreported {
    /// A call that read no field still hears what was wrong with them: the refusal when the
    /// service left some unreported.
    pub(crate) fn unreported(self) -> Option<tonic::Status> {
        let unreported = self.0.take();
        (!unreported.is_empty()).then(|| tonic::Status::from(crate::Error::Invalid(unreported)))
    }
}

/// The page generation reached once a call is done, so a cache of pages can catch up with what
/// the caller now knows (see `domain::page_changes`).
pub(crate) fn put_page_generation(app: &App, headers: &mut http::HeaderMap) {
    headers.insert(
        names::GENERATION,
        HeaderValue::from(app.page_changes.generation()),
    );
}

/// Health checks, reflection, visitors' pages and the steps of logging in and of OAuth that
/// come before any credential need none (and are not rate-limited as API calls; logins have
/// their own limit).
pub(crate) fn is_open(path: &str) -> bool {
    path.starts_with("/grpc.health.")
        || path.starts_with("/grpc.reflection.")
        || path.starts_with("/lps.v1.VisitorService/")
        || path.starts_with("/lps.v1.OperationsService/")
        || matches!(
            path,
            "/lps.v1.OAuthService/Login"
                | "/lps.v1.OAuthService/SetPasswordWithLink"
                | "/lps.v1.OAuthService/Logout"
                | "/lps.v1.OAuthService/RegisterClient"
                | "/lps.v1.OAuthService/DescribeClient"
                | "/lps.v1.OAuthService/ExchangeToken"
                | "/lps.v1.OAuthService/RevokeToken"
                | "/lps.v1.OAuthService/RequestPasswordReset"
                | "/lps.v1.CallbacksService/Unsubscribe"
        )
}

/// Calls that need a credential but are not counted against its rate limit: the bookkeeping
/// of idempotent retries, done around a REST request that is itself counted, the
/// credential check before each MCP message, and the rows and end of a CSV import (one
/// `POST /leads/import-csv`, counted once by its `StartCsvImport`; each call is bounded and
/// needs a job of the caller's still receiving its file).
fn is_uncounted(path: &str) -> bool {
    path.starts_with("/lps.v1.IdempotencyService/")
        || matches!(
            path,
            "/lps.v1.IdentityService/CheckCredential"
                | "/lps.v1.LeadsService/AddCsvImportRows"
                | "/lps.v1.LeadsService/FinishCsvImport"
        )
}

/// The rate-limit bucket of an unauthenticated caller: the client address the edge forwarded
/// ([`CLIENT_ADDRESS`]), else the gRPC peer's.
pub(crate) fn client_bucket(forwarded: Option<&str>, peer: Option<std::net::SocketAddr>) -> String {
    match (forwarded, peer) {
        (Some(address), _) => format!("ip:{address}"),
        (None, peer) => address_bucket(peer.map(|peer| peer.ip())),
    }
}

/// The rate-limit bucket of an unauthenticated caller at `address`, as [`client_bucket`] names
/// it.
pub(crate) fn address_bucket(address: Option<std::net::IpAddr>) -> String {
    let mut bucket = String::with_capacity(48);
    bucket.push_str("ip:");
    match address {
        Some(address) => crate::wire::push_address(&mut bucket, address),
        None => bucket.push_str("unknown"),
    }
    bucket
}

/// Violations the caller's transport found before core (see [`validate::EARLIER_VIOLATIONS`]).
pub(super) fn earlier_violations(headers: &http::HeaderMap) -> Vec<crate::error::FieldViolation> {
    if !headers.contains_key(validate::EARLIER_VIOLATIONS) {
        return Vec::new();
    }
    earlier_violations_in(&tonic::metadata::MetadataMap::from_headers(headers.clone()))
}

/// As [`earlier_violations`], from a call's metadata.
pub(crate) fn earlier_violations_in(
    metadata: &tonic::metadata::MetadataMap,
) -> Vec<crate::error::FieldViolation> {
    // Looked up by its `HeaderName` first: most calls carry none, and a name given as `&str`
    // is parsed again at every lookup.
    if !metadata.as_ref().contains_key(names::EARLIER_VIOLATIONS) {
        return Vec::new();
    }
    match metadata.get_bin(validate::EARLIER_VIOLATIONS) {
        Some(value) => match value.to_bytes() {
            Ok(bytes) => validate::decode_violations(&bytes),
            Err(_) => validate::decode_violations(b""),
        },
        None => Vec::new(),
    }
}
