//! The core's gRPC surface: every lps service, health and reflection, behind the gatekeeper that
//! authenticates and rate-limits each call.
//!
//! The same [`CoreService`] is served on the gRPC port and handed to the in-process edge as its
//! transport, so a REST call and a gRPC call pass through exactly the same checks.
//!
//! Here the services and the server; the gatekeeper that wraps every call in `gatekeeper.rs`;
//! who a call is and whether it is let in (credential, rate limit, the edge's forwarded
//! violations) in `admission.rs`.

mod admission;
mod gatekeeper;

pub(crate) use admission::*;
pub use gatekeeper::*;

use std::future::Future;

use std::time::Duration;

use tokio::net::TcpListener;
use tonic::service::Routes;
use tonic::transport::Server;
use tower::Layer;

use crate::App;
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
use crate::services::{
    AccountService, ApiTokensService, AudiencesService, CallbacksService, CampaignsService,
    EngagementService, IdempotencyService, IdentityService, JobsService, LeadsService,
    OAuthService, OperationsService, PagesService, VisitorService, WorkspacesService,
};

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
