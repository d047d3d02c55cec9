//! How the edge reaches core: one gRPC transport (in-process or a network channel) and a client
//! of each core service over it; in `lps serve`, unary calls go to core's services directly
//! (`lps::direct`), through the same gatekeeper rules, without encoding. Every face of the edge (REST, visitor pages, and later MCP,
//! OAuth and the dashboard) reaches core through [`Core`] and nothing else.

pub mod deadlines;
pub mod page_cache;
pub mod served_domains;
pub mod tls_certificates;

use lps::grpc::MAX_MESSAGE_BYTES;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use lps::direct::DirectCore;
use lps::proto::render_page_response::Outcome;
use lps::wire::RateLimitState;

use crate::visitor::notices::Notice;
use tower::Service;
use tower::util::BoxCloneSyncService;

use page_cache::{PageCache, RenderedPage};
use served_domains::{Served, ServedDomains};
use tls_certificates::TlsCertificates;

/// A failure of the transport itself (core unreachable). A concrete type rather than a boxed
/// trait object: with `Box<dyn Error>` rustc cannot prove the handlers' futures `Send`.
#[derive(Debug, thiserror::Error)]
#[error("core unreachable: {0}")]
pub struct TransportError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// A gRPC transport to core, whichever way core is reached.
pub type Transport = BoxCloneSyncService<
    http::Request<tonic::body::Body>,
    http::Response<tonic::body::Body>,
    TransportError,
>;

/// Core's services, as the edge's handlers call them, and the pages core rendered, kept in
/// memory (see `page_cache.rs`). Cheap to clone.
#[derive(Clone)]
pub struct Core(Arc<Shared>);

/// What clones of a [`Core`] share (one reference count per clone: every request clones it).
struct Shared {
    transport: Transport,
    /// Core in this process (`lps serve`): unary calls skip the transport.
    direct: Option<DirectCore>,
    pages: Option<Arc<PageCache>>,
    /// Workspaces' own domains, followed with the page changes.
    domains: Arc<ServedDomains>,
    /// The certificates of the HTTPS listener (`--https`), followed with the page changes.
    certificates: Option<Arc<TlsCertificates>>,
}

/// A client of core with the one message limit (`lps::grpc::MAX_MESSAGE_BYTES`, as core's
/// services have) in both directions.
macro_rules! limited {
    ($client:expr) => {
        $client
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    };
}

impl Core {
    /// A client over `transport` (and `direct`, when core runs in this process); with
    /// `page_cache_bytes` above 0 it keeps rendered pages in up to that many bytes and follows
    /// core's page changes (call from within the runtime); with `certificates`, it keeps them
    /// as core issues them (this edge answers HTTPS).
    pub fn new(
        transport: Transport,
        direct: Option<DirectCore>,
        page_cache_bytes: u64,
        certificates: Option<Arc<TlsCertificates>>,
    ) -> Self {
        let pages = (page_cache_bytes > 0).then(|| Arc::new(PageCache::new(page_cache_bytes)));
        let transport = match &pages {
            Some(cache) => BoxCloneSyncService::new(CatchingUp {
                inner: transport,
                cache: cache.clone(),
            }),
            None => transport,
        };
        let core = Self(Arc::new(Shared {
            transport,
            direct,
            pages,
            domains: Arc::default(),
            certificates,
        }));
        tokio::spawn(follow_changes(core.clone()));
        if let Some(cache) = &core.0.pages {
            let cache = Arc::downgrade(cache);
            lps::metrics::on_scrape(move || {
                if let Some(cache) = cache.upgrade() {
                    let (bytes, pages) = cache.size();
                    lps::metrics::page_cache_size(bytes, pages);
                }
            });
        }
        core
    }

    /// The workspace's own domain `host` is (lower case, no port), if it is served.
    pub fn served_domain(&self, host: &str) -> Option<Served> {
        self.0.domains.get(host)
    }

    /// Whether any workspace's own domain is served (most edges serve none: then no request's
    /// host needs reading).
    pub fn serves_own_domains(&self) -> bool {
        self.0.domains.any()
    }

    /// The certificates this edge answers HTTPS with, when it does.
    pub fn certificates(&self) -> Option<&Arc<TlsCertificates>> {
        self.0.certificates.as_ref()
    }

    /// The answer kept for an ACME validation (`None`: no order waits for it, or core could
    /// not say).
    pub async fn acme_challenge(
        &self,
        kind: lps::proto::AcmeChallengeKind,
        name: &str,
    ) -> Option<String> {
        let asked = self
            .visitor()
            .get_acme_challenge(lps::proto::GetAcmeChallengeRequest {
                kind: kind as i32,
                name: name.to_owned(),
            })
            .await;
        match asked {
            Ok(answer) => Some(answer.into_inner().response),
            Err(status) if status.code() == tonic::Code::NotFound => None,
            Err(status) => {
                tracing::warn!(%status, "an ACME challenge could not be read");
                None
            }
        }
    }

    /// The page kept in memory for this address, if there is a current one (no call to core).
    pub fn kept_page(&self, address: &str) -> Option<Arc<RenderedPage>> {
        let page = self.0.pages.as_ref()?.get(address)?;
        lps::metrics::page_cache(true);
        Some(page)
    }

    /// The page at `/p/{campaign_slug}/{lead_slug}` (`address`, the request's path, names it in
    /// the cache): from memory when it is current there, else rendered by core (and kept).
    pub async fn page(
        &self,
        campaign_slug: &str,
        lead_slug: &str,
        address: &str,
    ) -> Result<Arc<RenderedPage>, tonic::Status> {
        if let Some(page) = self.kept_page(address) {
            return Ok(page);
        }
        self.rendered_page(campaign_slug, lead_slug, address).await
    }

    /// The page at `address` rendered by core (and kept, when it may be), for a caller that
    /// found none kept ([`Core::kept_page`]).
    pub async fn rendered_page(
        &self,
        campaign_slug: &str,
        lead_slug: &str,
        address: &str,
    ) -> Result<Arc<RenderedPage>, tonic::Status> {
        lps::metrics::page_cache(false);
        let mut answer = self
            .visitor()
            .render_page(lps::proto::RenderPageRequest {
                campaign_slug: campaign_slug.to_owned(),
                lead_slug: lead_slug.to_owned(),
            })
            .await?
            .into_inner();
        let outcome = Outcome::try_from(answer.outcome).unwrap_or(Outcome::NotFound);
        let html = match outcome {
            Outcome::Page => std::mem::take(&mut answer.html),
            Outcome::NotLive => Notice::NotLive.html(),
            Outcome::Unavailable => Notice::Unavailable.html(),
            Outcome::NotFound | Outcome::Unspecified => Notice::NotFound.html(),
            Outcome::Moved => String::new(),
        };
        let page = Arc::new(
            RenderedPage::new(outcome, html, &answer.etag, &answer.location)
                .of_workspace(answer.workspace_id),
        );
        if let Some(cache) = &self.0.pages {
            cache.keep(address, &answer, page.clone());
        }
        Ok(page)
    }

    /// Counts a request the edge answers by itself (an unknown route, a wrong method, an
    /// oversized body) against its caller's rate limit, as core counts any call: the caller's
    /// rate-limit state afterwards (`None` only if core could not be asked). In `lps serve`
    /// core counts it directly, with no call built or answered; with core apart, it is a
    /// `HelloWorld` call (`as_call`, the caller's), whose gatekeeper counts it the same way
    /// and reports the state in its metadata.
    pub async fn count_request(
        &self,
        authorization: Option<&str>,
        client: Option<IpAddr>,
        as_call: impl FnOnce() -> tonic::Request<lps::proto::HelloWorldRequest>,
    ) -> Option<RateLimitState> {
        if let Some(direct) = &self.0.direct {
            return Some(direct.count_request(authorization, client).await);
        }
        let metadata = match self.identity().hello_world(as_call()).await {
            Ok(reply) => reply.into_parts().0,
            Err(status) => status.metadata().clone(),
        };
        RateLimitState::from_headers(metadata.as_ref())
    }

    pub fn identity(&self) -> IdentityClient {
        IdentityClient(self.clone())
    }

    pub fn workspaces(&self) -> WorkspacesClient {
        WorkspacesClient(self.clone())
    }

    pub fn api_tokens(&self) -> ApiTokensClient {
        ApiTokensClient(self.clone())
    }

    pub fn callbacks(&self) -> CallbacksClient {
        CallbacksClient(self.clone())
    }

    pub fn account(&self) -> AccountClient {
        AccountClient(self.clone())
    }

    pub fn campaigns(&self) -> CampaignsClient {
        CampaignsClient(self.clone())
    }

    pub fn leads(&self) -> LeadsClient {
        LeadsClient(self.clone())
    }

    pub fn jobs(&self) -> JobsClient {
        JobsClient(self.clone())
    }

    pub fn audiences(&self) -> AudiencesClient {
        AudiencesClient(self.clone())
    }

    pub fn pages(&self) -> PagesClient {
        PagesClient(self.clone())
    }

    pub fn engagement(&self) -> EngagementClient {
        EngagementClient(self.clone())
    }

    pub fn oauth(&self) -> OAuthClient {
        OAuthClient(self.clone())
    }

    pub fn idempotency(&self) -> IdempotencyClient {
        IdempotencyClient(self.clone())
    }

    pub fn operations(&self) -> OperationsClient {
        OperationsClient(self.clone())
    }

    pub fn visitor(&self) -> VisitorClient {
        VisitorClient(self.clone())
    }

    /// A direct call's answer (of the RPC at `path`) once the page cache has applied the page
    /// changes core had made by then, as [`CatchingUp`] does for calls over gRPC.
    async fn caught_up<R>(
        &self,
        path: &str,
        answer: Result<tonic::Response<R>, tonic::Status>,
    ) -> Result<tonic::Response<R>, tonic::Status> {
        let Some(cache) = &self.0.pages else {
            return answer;
        };
        let metadata = match &answer {
            Ok(response) => response.metadata(),
            Err(status) => status.metadata(),
        };
        let generation = metadata
            .as_ref()
            .get(lps::grpc::names::GENERATION)
            .and_then(|value| value.to_str().ok());
        if let Some(generation) = awaited_generation(path, generation) {
            cache.caught_up(generation).await;
        }
        answer
    }
}

/// The page generation an answer of the RPC at `path` must wait for the page cache to reach
/// (`generation`, the answer's `x-lps-page-generation`): none for visitors' own calls, which
/// the pages themselves answer (and the change stream, which feeds the cache).
fn awaited_generation(path: &str, generation: Option<&str>) -> Option<u64> {
    if path.starts_with("/lps.v1.VisitorService/") {
        return None;
    }
    generation?.parse().ok()
}

// The clients of core's services, generated from the proto files by `build.rs`.
include!(concat!(env!("OUT_DIR"), "/lps.v1.core_client.rs"));

/// Follows core's change stream into the page cache (and the served domains and certificates,
/// asked again whenever the stream says they changed or starts afresh, before the change
/// counts as applied) for as long as the process runs, reconnecting a second after it breaks.
async fn follow_changes(core: Core) {
    let cache = core.0.pages.clone();
    let domains = core.0.domains.clone();
    loop {
        match core
            .visitor()
            .watch_page_changes(lps::proto::WatchPageChangesRequest {})
            .await
        {
            Ok(stream) => {
                let mut stream = stream.into_inner();
                loop {
                    match stream.message().await {
                        Ok(Some(change)) => {
                            if change.everything || change.domains {
                                refresh_domains(&core, &domains).await;
                            }
                            if let Some(certificates) = &core.0.certificates
                                && (change.everything || change.certificates)
                            {
                                refresh_certificates(&core, certificates).await;
                            }
                            if let Some(cache) = &cache {
                                cache.apply(&change);
                            }
                        }
                        Ok(None) => break,
                        Err(status) => {
                            tracing::warn!(%status, "page change stream broke");
                            break;
                        }
                    }
                }
            }
            Err(status) => tracing::warn!(%status, "cannot follow page changes"),
        }
        if let Some(cache) = &cache {
            cache.disconnected();
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Asks core which domains are served (what was served stays if core cannot say).
async fn refresh_domains(core: &Core, domains: &ServedDomains) {
    match core
        .visitor()
        .list_served_domains(lps::proto::ListServedDomainsRequest {})
        .await
    {
        Ok(list) => domains.replace(list.into_inner().domains),
        Err(status) => tracing::warn!(%status, "the served domains could not be listed"),
    }
}

/// Asks core for the certificates issued (what was served stays if core cannot say).
async fn refresh_certificates(core: &Core, certificates: &TlsCertificates) {
    match core
        .visitor()
        .list_certificates(lps::proto::ListCertificatesRequest {})
        .await
    {
        Ok(list) => certificates.replace(list.into_inner().certificates),
        Err(status) => tracing::warn!(%status, "the TLS certificates could not be listed"),
    }
}

/// The transport of a client that keeps pages: every answer of core waits until the page cache
/// has applied the page changes core had made by then (its `x-lps-page-generation`), so a
/// caller never hears of a change its next visit would not see. Visitors' own calls (and the
/// change stream itself) pass straight through.
#[derive(Clone)]
struct CatchingUp {
    inner: Transport,
    cache: Arc<PageCache>,
}

impl Service<http::Request<tonic::body::Body>> for CatchingUp {
    type Response = http::Response<tonic::body::Body>;
    type Error = TransportError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, TransportError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let path = request.uri().path().to_owned();
        let call = self.inner.call(request);
        let cache = self.cache.clone();
        Box::pin(async move {
            let response = call.await?;
            let generation = response
                .headers()
                .get(lps::grpc::names::GENERATION)
                .and_then(|value| value.to_str().ok());
            if let Some(generation) = awaited_generation(&path, generation) {
                cache.caught_up(generation).await;
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::awaited_generation;

    #[test]
    fn only_calls_outside_the_visitor_service_wait_for_the_page_cache() {
        let leads = "/lps.v1.LeadsService/UpsertLeads";
        assert_eq!(awaited_generation(leads, Some("42")), Some(42));
        assert_eq!(awaited_generation(leads, None), None);
        assert_eq!(awaited_generation(leads, Some("not a number")), None);
        let page = "/lps.v1.VisitorService/RenderPage";
        assert_eq!(awaited_generation(page, Some("42")), None);
    }
}
