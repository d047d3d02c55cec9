//! The core's gRPC surface: every lps service, health and reflection, behind the gatekeeper that
//! authenticates and rate-limits each call.
//!
//! The same [`CoreService`] is served on the gRPC port and handed to the in-process edge as its
//! transport, so a REST call and a gRPC call pass through exactly the same checks.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{HeaderValue, Request, Response};
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::body::Body;
use tonic::service::Routes;
use tonic::transport::Server;
use tower::{Layer, Service};
use tracing::Instrument;

use crate::App;
use crate::auth;
use crate::principal::Principal;
use crate::proto::{
    self, account_service_server::AccountServiceServer,
    api_tokens_service_server::ApiTokensServiceServer,
    audiences_service_server::AudiencesServiceServer,
    callbacks_service_server::CallbacksServiceServer,
    campaigns_service_server::CampaignsServiceServer,
    engagement_service_server::EngagementServiceServer,
    idempotency_service_server::IdempotencyServiceServer,
    identity_service_server::IdentityServiceServer, jobs_service_server::JobsServiceServer,
    leads_service_server::LeadsServiceServer, o_auth_service_server::OAuthServiceServer,
    operations_service_server::OperationsServiceServer, pages_service_server::PagesServiceServer,
    visitor_service_server::VisitorServiceServer,
    workspaces_service_server::WorkspacesServiceServer,
};
use crate::ratelimit::Decision;
use crate::services::{
    AccountService, ApiTokensService, AudiencesService, CallbacksService, CampaignsService,
    EngagementService, IdempotencyService, IdentityService, JobsService, LeadsService,
    OAuthService, OperationsService, PagesService, VisitorService, WorkspacesService,
};
use crate::validate;

/// Response metadata carrying the rate-limit state of the caller's credential.
pub use crate::ratelimit::{RATE_LIMIT_LIMIT, RATE_LIMIT_REMAINING, RETRY_AFTER};
/// The largest gRPC message core and the edge exchange: a request the edge accepted (a JSON
/// body of at most 16 MiB, never smaller than its proto form) always fits.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Response metadata: the id (never the key) of the credential a call was made with, for logs.
pub const CREDENTIAL_ID: &str = "x-lps-credential-id";
/// Request metadata: the id of the request this call serves, for logs.
pub const REQUEST_ID: &str = "x-request-id";
pub use crate::wire::CLIENT_ADDRESS;
/// Request metadata: the `--edge-secret` an edge running apart presents.
pub const EDGE_SECRET: &str = "x-lps-edge-secret";

/// The metadata names above and [`crate::wire`]'s as `http::HeaderName`s, for the code
/// every call passes through: a name given as `&str` is parsed and checked again each time it
/// is looked up or inserted (about 5% of an authenticated API call's time).
pub mod names {
    use http::HeaderName;

    pub use crate::ratelimit::names::{RATE_LIMIT_LIMIT, RATE_LIMIT_REMAINING, RETRY_AFTER};
    pub const CREDENTIAL_ID: HeaderName = HeaderName::from_static(super::CREDENTIAL_ID);
    pub const REQUEST_ID: HeaderName = HeaderName::from_static(super::REQUEST_ID);
    pub const CLIENT_ADDRESS: HeaderName = HeaderName::from_static(crate::wire::CLIENT_ADDRESS);
    pub const GENERATION: HeaderName = HeaderName::from_static(crate::wire::GENERATION_HEADER);
    pub const EARLIER_VIOLATIONS: HeaderName =
        HeaderName::from_static(crate::wire::EARLIER_VIOLATIONS);
    pub const EDGE_SECRET: HeaderName = HeaderName::from_static(super::EDGE_SECRET);

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_names_are_the_metadata_names() {
            for (name, text) in [
                (RATE_LIMIT_LIMIT, crate::grpc::RATE_LIMIT_LIMIT),
                (RATE_LIMIT_REMAINING, crate::grpc::RATE_LIMIT_REMAINING),
                (RETRY_AFTER, crate::grpc::RETRY_AFTER),
                (CREDENTIAL_ID, crate::grpc::CREDENTIAL_ID),
                (REQUEST_ID, crate::grpc::REQUEST_ID),
                (CLIENT_ADDRESS, crate::wire::CLIENT_ADDRESS),
                (GENERATION, crate::wire::GENERATION_HEADER),
                (EARLIER_VIOLATIONS, crate::wire::EARLIER_VIOLATIONS),
                (EDGE_SECRET, crate::grpc::EDGE_SECRET),
            ] {
                assert_eq!(name.as_str(), text);
            }
        }
    }
}

/// All of core as one tower service of gRPC requests.
pub type CoreService = Gatekeeper<Routes>;

/// Every lps service plus health and reflection, wrapped in the gatekeeper.
pub async fn core_service(app: &App) -> CoreService {
    GatekeeperLayer { app: app.clone() }.layer(routes(app).await)
}

/// An lps service with the one message limit ([`MAX_MESSAGE_BYTES`]) in both directions.
macro_rules! limited {
    ($service:expr) => {
        $service
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    };
}

/// Registers each lps service once: as a route (with the message limit) and as serving in the
/// standard health service.
macro_rules! services {
    ($health:ident, $routes:ident, $($server:ident<$service:ty> = $make:expr),+ $(,)?) => {$(
        $health.set_serving::<$server<$service>>().await;
        $routes.add_service(limited!($server::new($make)));
    )+};
}

async fn routes(app: &App) -> Routes {
    let (health, health_service) = tonic_health::server::health_reporter();
    let mut routes = Routes::builder();
    services!(health, routes,
        IdentityServiceServer<IdentityService> = IdentityService,
        WorkspacesServiceServer<WorkspacesService> = WorkspacesService::new(app),
        ApiTokensServiceServer<ApiTokensService> = ApiTokensService::new(app),
        AccountServiceServer<AccountService> = AccountService::new(app),
        CampaignsServiceServer<CampaignsService> = CampaignsService::new(app),
        LeadsServiceServer<LeadsService> = LeadsService::new(app),
        JobsServiceServer<JobsService> = JobsService::new(app),
        AudiencesServiceServer<AudiencesService> = AudiencesService::new(app),
        PagesServiceServer<PagesService> = PagesService::new(app),
        VisitorServiceServer<VisitorService> = VisitorService::new(app),
        EngagementServiceServer<EngagementService> = EngagementService::new(app),
        CallbacksServiceServer<CallbacksService> = CallbacksService::new(app),
        OAuthServiceServer<OAuthService> = OAuthService::new(app),
        OperationsServiceServer<OperationsService> = OperationsService::new(app),
        IdempotencyServiceServer<IdempotencyService> = IdempotencyService::new(app),
    );
    // Both reflection versions: grpcurl and newer tools ask v1, Python's grpcio-reflection and
    // older grpcurl v1alpha. Health is listed too.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection()
        .build_v1()
        .expect("the descriptor sets compiled in are valid");
    let reflection_v1alpha = reflection()
        .build_v1alpha()
        .expect("the descriptor sets compiled in are valid");

    routes
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .clone()
        .routes()
        .prepare()
}

/// Serves core on `listener` until `shutdown` resolves.
pub async fn serve(
    app: App,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    // Every accepted socket without Nagle's algorithm (a small answer would otherwise wait
    // for the caller's delayed ACK, ~40 ms a call; `serve_with_incoming` ignores the builder's
    // `tcp_nodelay`), with TCP keepalive, and HTTP/2 pings so a caller that vanished is let go.
    let incoming = tonic::transport::server::TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .with_keepalive(Some(Duration::from_secs(30)));
    Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(10)))
        .http2_keepalive_timeout(Some(Duration::from_secs(5)))
        .layer(GatekeeperLayer { app: app.clone() })
        .add_routes(routes(&app).await)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}

/// Wraps a service in the [`Gatekeeper`].
#[derive(Clone)]
pub struct GatekeeperLayer {
    app: App,
}

impl<S> Layer<S> for GatekeeperLayer {
    type Service = Gatekeeper<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Gatekeeper {
            inner,
            app: self.app.clone(),
        }
    }
}

/// Marks a call made by this process's own edge: a request extension, which nothing on the
/// network can set. Such a call's latency is already in the edge's HTTP histogram, so it is
/// counted here but not timed again (a histogram record per call measurably slowed the API).
#[derive(Debug, Clone, Copy)]
pub struct FromEdge;

/// Authenticates every lps call (health and reflection are open), counts it against the
/// credential's rate limit, hands the [`Principal`] to the service through request extensions,
/// and puts the rate-limit state on the response, errors included.
#[derive(Clone)]
pub struct Gatekeeper<S> {
    inner: S,
    app: App,
}

impl<S> Service<Request<Body>> for Gatekeeper<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The clone that was driven ready serves this call; a fresh clone stays for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let app = self.app.clone();
        let request_id = request
            .headers()
            .get(REQUEST_ID)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        // In-process calls already run in the edge's request span; network calls continue
        // their caller's trace from the metadata.
        let in_process = !tracing::Span::current().is_none();
        let network_headers = (!in_process).then(|| request.headers());
        let span = call_span(request.uri().path(), request_id, network_headers);
        let method = request.uri().path().to_owned();
        let timed = request.extensions().get::<FromEdge>().is_none();
        let started = std::time::Instant::now();
        Box::pin(
            async move {
                let response = gate(app, &mut inner, request).await;
                if let Ok(response) = &response {
                    record_call(&method, code_of(response), timed.then_some(started));
                }
                response
            }
            .instrument(span),
        )
    }
}

/// The span a call runs in. Traced, every call is a span of the caller's trace: a call over
/// the network (`network_headers`) continues the trace its metadata names; an in-process call
/// is already under the edge's request span. Untraced, a network call gets its own span with
/// the request id its caller sent, an in-process one none (the edge's span carries the id).
pub(crate) fn call_span(
    path: &str,
    request_id: &str,
    network_headers: Option<&http::HeaderMap>,
) -> tracing::Span {
    let traced = match network_headers {
        None => crate::telemetry::wanted(),
        Some(headers) => crate::telemetry::sampled(headers),
    };
    if traced {
        let span = tracing::info_span!(
            "call",
            otel.name = path,
            otel.kind = "server",
            rpc.system = "grpc",
            request_id,
            trace_id = tracing::field::Empty,
        );
        if let Some(headers) = network_headers {
            crate::telemetry::continue_from(&span, headers);
        }
        span
    } else if tracing::Span::current().is_none() {
        tracing::debug_span!("call", path, request_id)
    } else {
        tracing::Span::none()
    }
}

/// Whether the call comes from an edge whose word on its clients' addresses is believed: this
/// process's own (a request extension nothing on the network can set), or one presenting the
/// configured secret.
fn from_trusted_edge(app: &App, request: &Request<Body>) -> bool {
    if request.extensions().get::<FromEdge>().is_some() {
        return true;
    }
    let presented = request
        .headers()
        .get(EDGE_SECRET)
        .map(|value| value.as_bytes());
    match (app.config.edge_secret.as_deref(), presented) {
        (Some(secret), Some(presented)) => {
            use sha2::Digest;
            // Compared as digests: equal length, so the comparison's time says nothing.
            sha2::Sha256::digest(secret.as_bytes()) == sha2::Sha256::digest(presented)
        }
        _ => false,
    }
}

/// The code of a call's answer: in the headers when the call failed before its answer started
/// (a trailers-only response), else `OK`.
fn code_of(response: &Response<Body>) -> tonic::Code {
    response
        .headers()
        .get("grpc-status")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<i32>().ok())
        .map_or(tonic::Code::Ok, tonic::Code::from)
}

/// Counts a call by method and code, timed unless its caller already times it.
pub(crate) fn record_call(method: &str, code: tonic::Code, started: Option<std::time::Instant>) {
    // Unknown paths are not methods: one series for all of them.
    let method = if code == tonic::Code::Unimplemented {
        "(unknown)"
    } else {
        method
    };
    let seconds = started.map(|started| started.elapsed().as_secs_f64());
    crate::metrics::grpc_call(method, code, seconds);
}

/// The gatekeeper's work for one call.
async fn gate<S>(
    app: App,
    inner: &mut S,
    mut request: Request<Body>,
) -> Result<Response<Body>, Infallible>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    if from_trusted_edge(&app, &request) {
        request
            .extensions_mut()
            .insert(crate::services::TrustedEdge);
    } else {
        request.headers_mut().remove(CLIENT_ADDRESS);
    }
    request.headers_mut().remove(EDGE_SECRET);
    let authorization = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    let peer = request
        .extensions()
        .get::<tonic::transport::server::TcpConnectInfo>()
        .and_then(|info| info.remote_addr());
    let headers = request.headers();
    let bucket = || {
        let forwarded = headers
            .get(CLIENT_ADDRESS)
            .and_then(|value| value.to_str().ok());
        client_bucket(forwarded, peer)
    };
    let admission = admit(&app, request.uri().path(), authorization, bucket).await;
    let mut admitted = match admission {
        Admission::Open => {
            let mut response = inner.call(request).await?;
            put_page_generation(&app, response.headers_mut());
            return Ok(response);
        }
        Admission::Refused(status) => return Ok(status.into_http()),
        Admission::Admitted(admitted) => admitted,
    };
    let earlier = earlier_violations(request.headers());
    let mut response = match admitted.run(request.extensions_mut(), earlier) {
        Err(limited) => limited.into_http(),
        Ok(earlier) => {
            let response = inner.call(request).await;
            match earlier.unreported() {
                None => response?,
                Some(invalid) => invalid.into_http(),
            }
        }
    };
    admitted.settle(&app, response.headers_mut());
    Ok(response)
}

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
fn earlier_violations(headers: &http::HeaderMap) -> Vec<crate::error::FieldViolation> {
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

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use proptest::prelude::*;

    use super::{address_bucket, client_bucket};

    proptest! {
        /// An address's bucket is named alike whether the edge forwarded the address as text
        /// or core counts it directly.
        #[test]
        fn an_address_bucket_is_named_as_a_forwarded_address_is(v4: [u8; 4], v6: [u16; 8]) {
            for address in [IpAddr::from(v4), IpAddr::from(v6)] {
                let forwarded = address.to_string();
                prop_assert_eq!(address_bucket(Some(address)), client_bucket(Some(&forwarded), None));
            }
        }
    }

    #[test]
    fn a_caller_with_no_address_shares_one_bucket() {
        assert_eq!(address_bucket(None), "ip:unknown");
        assert_eq!(client_bucket(None, None), "ip:unknown");
    }
}
