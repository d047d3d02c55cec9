//! `lps.v1.IdempotencyService`: the kept answers behind the REST API's `Idempotency-Key`.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::idempotency::{self, Begun};
use crate::proto::{self, begin_idempotent_response::Outcome, idempotency_service_server};

pub struct IdempotencyService {
    app: App,
}

impl IdempotencyService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl idempotency_service_server::IdempotencyService for IdempotencyService {
    async fn begin_request(
        &self,
        request: Request<proto::BeginIdempotentRequest>,
    ) -> Result<Response<proto::BeginIdempotentResponse>, Status> {
        let principal = Principal::of(&request)?;
        let message = request.get_ref();
        let begun =
            idempotency::begin(&self.app, principal, &message.key, &message.request_hash).await?;
        let mut response = proto::BeginIdempotentResponse::default();
        match begun {
            Begun::Proceed => response.set_outcome(Outcome::Proceed),
            Begun::InFlight => response.set_outcome(Outcome::InFlight),
            Begun::Mismatch => response.set_outcome(Outcome::Mismatch),
            Begun::Replay {
                status,
                content_type,
                body,
            } => {
                response.set_outcome(Outcome::Replay);
                response.status = u32::from(status);
                response.content_type = content_type;
                response.body = body;
            }
        }
        Ok(Response::new(response))
    }

    async fn finish_request(
        &self,
        request: Request<proto::FinishIdempotentRequest>,
    ) -> Result<Response<proto::FinishIdempotentResponse>, Status> {
        let principal = Principal::of(&request)?;
        let message = request.get_ref();
        idempotency::finish(
            &self.app,
            principal,
            &message.key,
            &message.request_hash,
            u16::try_from(message.status).unwrap_or(0),
            &message.content_type,
            &message.body,
        )
        .await?;
        Ok(Response::new(proto::FinishIdempotentResponse {}))
    }
}
