//! How the edge reaches core: one gRPC transport (in-process or a network channel) and a client
//! of each core service over it. Every face of the edge (REST, visitor pages, and later MCP,
//! OAuth and the dashboard) reaches core through [`Core`] and nothing else.

use lps::grpc::MAX_MESSAGE_BYTES;
use lps::proto::{
    account_service_client::AccountServiceClient,
    api_tokens_service_client::ApiTokensServiceClient,
    audiences_service_client::AudiencesServiceClient,
    campaigns_service_client::CampaignsServiceClient,
    engagement_service_client::EngagementServiceClient,
    identity_service_client::IdentityServiceClient, jobs_service_client::JobsServiceClient,
    leads_service_client::LeadsServiceClient, o_auth_service_client::OAuthServiceClient,
    pages_service_client::PagesServiceClient, visitor_service_client::VisitorServiceClient,
    workspaces_service_client::WorkspacesServiceClient,
};
use tower::util::BoxCloneSyncService;

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

/// Core's services, as the edge's handlers call them. Cheap to clone.
#[derive(Clone)]
pub struct Core {
    transport: Transport,
}

impl Core {
    pub fn new(transport: Transport) -> Self {
        Self { transport }
    }

    pub fn identity(&self) -> IdentityServiceClient<Transport> {
        IdentityServiceClient::new(self.transport.clone())
    }

    pub fn workspaces(&self) -> WorkspacesServiceClient<Transport> {
        WorkspacesServiceClient::new(self.transport.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    pub fn api_tokens(&self) -> ApiTokensServiceClient<Transport> {
        ApiTokensServiceClient::new(self.transport.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    pub fn account(&self) -> AccountServiceClient<Transport> {
        AccountServiceClient::new(self.transport.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    pub fn campaigns(&self) -> CampaignsServiceClient<Transport> {
        CampaignsServiceClient::new(self.transport.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    pub fn leads(&self) -> LeadsServiceClient<Transport> {
        LeadsServiceClient::new(self.transport.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    pub fn jobs(&self) -> JobsServiceClient<Transport> {
        JobsServiceClient::new(self.transport.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    pub fn audiences(&self) -> AudiencesServiceClient<Transport> {
        AudiencesServiceClient::new(self.transport.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    pub fn pages(&self) -> PagesServiceClient<Transport> {
        PagesServiceClient::new(self.transport.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    pub fn engagement(&self) -> EngagementServiceClient<Transport> {
        EngagementServiceClient::new(self.transport.clone())
    }

    pub fn oauth(&self) -> OAuthServiceClient<Transport> {
        OAuthServiceClient::new(self.transport.clone())
    }

    pub fn visitor(&self) -> VisitorServiceClient<Transport> {
        VisitorServiceClient::new(self.transport.clone())
    }
}
