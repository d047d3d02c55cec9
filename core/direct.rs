//! Core called directly by the edge of the same process (`lps serve`): the very services and
//! gatekeeper rules of the gRPC surface (`grpc.rs`), without encoding each message to protobuf,
//! routing it by path and decoding it again on both sides. A unary call here and the same call
//! over gRPC are authenticated, rate-limited, counted and answered alike (the header-by-header
//! equality tests of the REST API hold either way); streaming calls still go through the
//! in-process gRPC service (`DirectCore` has no methods for them).
//!
//! One method per unary RPC, named `{service}_{method}` (`identity_hello_world`), is generated
//! by `build.rs` from the proto files, so a new RPC cannot be forgotten here.

use std::future::Future;
use std::sync::Arc;

use tracing::Instrument;

use crate::App;
use crate::grpc::{self, Admission};
use crate::services::{
    AccountService, ApiTokensService, AudiencesService, CallbacksService, CampaignsService,
    EngagementService, IdempotencyService, IdentityService, JobsService, LeadsService,
    OAuthService, OperationsService, PagesService, VisitorService, WorkspacesService,
};

/// Core's services for direct calls from the edge of this process. Cheap to clone.
#[derive(Clone)]
pub struct DirectCore {
    app: App,
    services: Arc<Services>,
}

/// One instance of each lps service (named as `build.rs` names them: the service's name
/// without `Service`, in snake case).
struct Services {
    identity: IdentityService,
    workspaces: WorkspacesService,
    api_tokens: ApiTokensService,
    account: AccountService,
    campaigns: CampaignsService,
    leads: LeadsService,
    jobs: JobsService,
    audiences: AudiencesService,
    pages: PagesService,
    visitor: VisitorService,
    engagement: EngagementService,
    callbacks: CallbacksService,
    o_auth: OAuthService,
    operations: OperationsService,
    idempotency: IdempotencyService,
}

impl DirectCore {
    pub fn new(app: &App) -> Self {
        let services = Services {
            identity: IdentityService,
            workspaces: WorkspacesService::new(app),
            api_tokens: ApiTokensService::new(app),
            account: AccountService::new(app),
            campaigns: CampaignsService::new(app),
            leads: LeadsService::new(app),
            jobs: JobsService::new(app),
            audiences: AudiencesService::new(app),
            pages: PagesService::new(app),
            visitor: VisitorService::new(app),
            engagement: EngagementService::new(app),
            callbacks: CallbacksService::new(app),
            o_auth: OAuthService::new(app),
            operations: OperationsService::new(app),
            idempotency: IdempotencyService::new(app),
        };
        Self {
            app: app.clone(),
            services: Arc::new(services),
        }
    }

    /// Counts a request this process's edge answers by itself (an unknown route, a wrong
    /// method, an oversized body) against the caller's rate limit, exactly as the gatekeeper
    /// counts a call: against the credential `authorization` carries when it is usable, else
    /// against the client's address. The caller's rate-limit state afterwards, as a value: no
    /// call is built, run or answered for it.
    pub async fn count_request(
        &self,
        authorization: Option<&str>,
        client: Option<std::net::IpAddr>,
    ) -> crate::ratelimit::Decision {
        grpc::count_request(&self.app, authorization, || grpc::address_bucket(client)).await
    }

    /// One unary call at `path` through the gatekeeper's rules, answered by `run` (the
    /// service's method). The edge of this process is trusted with its clients' addresses and
    /// already times each request, so the call is counted but not timed again (as `FromEdge`).
    async fn call<T, R, F>(
        &self,
        path: &'static str,
        mut request: tonic::Request<T>,
        run: impl FnOnce(Arc<Services>, tonic::Request<T>) -> F,
    ) -> Result<tonic::Response<R>, tonic::Status>
    where
        F: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        // Metadata is read by `HeaderName`: a name given as `&str` is parsed at every lookup.
        let request_id = request
            .metadata()
            .as_ref()
            .get(grpc::names::REQUEST_ID)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        let span = grpc::call_span(path, request_id, None);
        async move {
            request
                .extensions_mut()
                .insert(crate::services::TrustedEdge);
            request
                .metadata_mut()
                .as_mut()
                .remove(grpc::names::EDGE_SECRET);
            let app = &self.app;
            let metadata = request.metadata().as_ref();
            let authorization = metadata
                .get(http::header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok());
            let bucket = || {
                let forwarded = metadata
                    .get(grpc::names::CLIENT_ADDRESS)
                    .and_then(|value| value.to_str().ok());
                grpc::client_bucket(forwarded, None)
            };
            let answer = match grpc::admit(app, path, authorization, bucket).await {
                Admission::Open => {
                    let mut answer = run(self.services.clone(), request).await;
                    grpc::put_page_generation(app, metadata_of(&mut answer).as_mut());
                    answer
                }
                Admission::Refused(status) => Err(status),
                Admission::Admitted(mut admitted) => {
                    let earlier = grpc::earlier_violations_in(request.metadata());
                    let mut answer = match admitted.run(request.extensions_mut(), earlier) {
                        Err(limited) => Err(limited),
                        Ok(earlier) => {
                            let answer = run(self.services.clone(), request).await;
                            match earlier.unreported() {
                                None => answer,
                                Some(invalid) => Err(invalid),
                            }
                        }
                    };
                    admitted.settle(app, metadata_of(&mut answer).as_mut());
                    answer
                }
            };
            let code = answer
                .as_ref()
                .map_or_else(|status| status.code(), |_| tonic::Code::Ok);
            grpc::record_call(path, code, None);
            answer
        }
        .instrument(span)
        .await
    }
}

/// The metadata of an answer, an error's included (a gRPC client sees an error's headers).
fn metadata_of<R>(
    answer: &mut Result<tonic::Response<R>, tonic::Status>,
) -> &mut tonic::metadata::MetadataMap {
    match answer {
        Ok(response) => response.metadata_mut(),
        Err(status) => status.metadata_mut(),
    }
}

include!(concat!(env!("OUT_DIR"), "/lps.v1.direct_core.rs"));
