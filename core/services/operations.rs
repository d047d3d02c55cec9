//! `lps.v1.OperationsService`: what operators and orchestrators ask (readiness).

use tonic::{Request, Response, Status};

use crate::App;
use crate::proto::{self, operations_service_server};

pub struct OperationsService {
    app: App,
}

impl OperationsService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl operations_service_server::OperationsService for OperationsService {
    async fn check_ready(
        &self,
        _request: Request<proto::CheckReadyRequest>,
    ) -> Result<Response<proto::CheckReadyResponse>, Status> {
        let readiness = self.app.db.readiness().await;
        Ok(Response::new(proto::CheckReadyResponse {
            ready: readiness.problems.is_empty(),
            problems: readiness.problems,
            migrations_applied: readiness.migrations_applied,
            migrations_known: readiness.migrations_known,
            database_answers: readiness.database_answers,
        }))
    }
}
