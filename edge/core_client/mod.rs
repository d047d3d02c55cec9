//! How the edge reaches core: one gRPC transport (in-process or a network channel) and a client
//! of each core service over it. Every face of the edge (REST, visitor pages, and later MCP,
//! OAuth and the dashboard) reaches core through [`Core`] and nothing else.

pub mod page_cache;

use lps::grpc::MAX_MESSAGE_BYTES;
use lps::proto::{
    account_service_client::AccountServiceClient,
    api_tokens_service_client::ApiTokensServiceClient,
    audiences_service_client::AudiencesServiceClient,
    callbacks_service_client::CallbacksServiceClient,
    campaigns_service_client::CampaignsServiceClient,
    engagement_service_client::EngagementServiceClient,
    idempotency_service_client::IdempotencyServiceClient,
    identity_service_client::IdentityServiceClient, jobs_service_client::JobsServiceClient,
    leads_service_client::LeadsServiceClient, o_auth_service_client::OAuthServiceClient,
    operations_service_client::OperationsServiceClient, pages_service_client::PagesServiceClient,
    visitor_service_client::VisitorServiceClient,
    workspaces_service_client::WorkspacesServiceClient,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Bytes;
use lps::proto::render_page_response::Outcome;

use crate::visitor::notices::Notice;
use tower::Service;
use tower::util::BoxCloneSyncService;

use page_cache::{PageCache, RenderedPage};

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
    pages: Option<Arc<PageCache>>,
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
    /// A client over `transport`; with `page_cache_bytes` above 0 it keeps rendered pages in
    /// up to that many bytes and follows core's page changes (call from within the runtime).
    pub fn new(transport: Transport, page_cache_bytes: u64) -> Self {
        let pages = (page_cache_bytes > 0).then(|| Arc::new(PageCache::new(page_cache_bytes)));
        let transport = match &pages {
            Some(cache) => BoxCloneSyncService::new(CatchingUp {
                inner: transport,
                cache: cache.clone(),
            }),
            None => transport,
        };
        let core = Self(Arc::new(Shared { transport, pages }));
        if let Some(cache) = &core.0.pages {
            tokio::spawn(follow_changes(core.clone(), cache.clone()));
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

    /// The page kept in memory for this address, if there is a current one (no call to core).
    pub fn kept_page(&self, address: &str) -> Option<Arc<RenderedPage>> {
        let page = self.0.pages.as_ref()?.get(address)?;
        lps::metrics::page_cache("hit");
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
        lps::metrics::page_cache("miss");
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
        let page = Arc::new(RenderedPage {
            location: http::HeaderValue::from_str(&answer.location)
                .ok()
                .filter(|_| outcome == Outcome::Moved),
            outcome,
            html: Bytes::from(html),
            etag: http::HeaderValue::from_str(&answer.etag)
                .ok()
                .filter(|etag| !etag.is_empty()),
        });
        if let Some(cache) = &self.0.pages {
            cache.keep(address, &answer, page.clone());
        }
        Ok(page)
    }

    pub fn identity(&self) -> IdentityServiceClient<Transport> {
        limited!(IdentityServiceClient::new(self.0.transport.clone()))
    }

    pub fn workspaces(&self) -> WorkspacesServiceClient<Transport> {
        limited!(WorkspacesServiceClient::new(self.0.transport.clone()))
    }

    pub fn api_tokens(&self) -> ApiTokensServiceClient<Transport> {
        limited!(ApiTokensServiceClient::new(self.0.transport.clone()))
    }

    pub fn callbacks(&self) -> CallbacksServiceClient<Transport> {
        limited!(CallbacksServiceClient::new(self.0.transport.clone()))
    }

    pub fn account(&self) -> AccountServiceClient<Transport> {
        limited!(AccountServiceClient::new(self.0.transport.clone()))
    }

    pub fn campaigns(&self) -> CampaignsServiceClient<Transport> {
        limited!(CampaignsServiceClient::new(self.0.transport.clone()))
    }

    pub fn leads(&self) -> LeadsServiceClient<Transport> {
        limited!(LeadsServiceClient::new(self.0.transport.clone()))
    }

    pub fn jobs(&self) -> JobsServiceClient<Transport> {
        limited!(JobsServiceClient::new(self.0.transport.clone()))
    }

    pub fn audiences(&self) -> AudiencesServiceClient<Transport> {
        limited!(AudiencesServiceClient::new(self.0.transport.clone()))
    }

    pub fn pages(&self) -> PagesServiceClient<Transport> {
        limited!(PagesServiceClient::new(self.0.transport.clone()))
    }

    pub fn engagement(&self) -> EngagementServiceClient<Transport> {
        limited!(EngagementServiceClient::new(self.0.transport.clone()))
    }

    pub fn oauth(&self) -> OAuthServiceClient<Transport> {
        limited!(OAuthServiceClient::new(self.0.transport.clone()))
    }

    pub fn idempotency(&self) -> IdempotencyServiceClient<Transport> {
        limited!(IdempotencyServiceClient::new(self.0.transport.clone()))
    }

    pub fn operations(&self) -> OperationsServiceClient<Transport> {
        limited!(OperationsServiceClient::new(self.0.transport.clone()))
    }

    pub fn visitor(&self) -> VisitorServiceClient<Transport> {
        limited!(VisitorServiceClient::new(self.0.transport.clone()))
    }
}

/// Follows core's change stream into `cache` for as long as the process runs, reconnecting a
/// second after it breaks.
async fn follow_changes(core: Core, cache: Arc<PageCache>) {
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
                        Ok(Some(change)) => cache.apply(&change),
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
        cache.disconnected();
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
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
        let visitor = request.uri().path().starts_with("/lps.v1.VisitorService/");
        let call = self.inner.call(request);
        let cache = self.cache.clone();
        Box::pin(async move {
            let response = call.await?;
            if !visitor
                && let Some(generation) = response
                    .headers()
                    .get(lps::wire::GENERATION_HEADER)
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.parse::<u64>().ok())
            {
                cache.caught_up(generation).await;
            }
            Ok(response)
        })
    }
}
