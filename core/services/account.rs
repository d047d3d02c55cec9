//! `lps.v1.AccountService`: plan and credits.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::account::{self, Credits};
use crate::proto::{self, account_service_server};
use crate::time;
use crate::validate::{Validated, required};

pub struct AccountService {
    app: App,
}

impl AccountService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl account_service_server::AccountService for AccountService {
    async fn get_credits(
        &self,
        request: Request<proto::GetCreditsRequest>,
    ) -> Result<Response<proto::GetCreditsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::GetCreditsRequest { workspace_id } = request.get_ref();
        let (workspace_id,) = (required("workspace_id", *workspace_id),).validated(&request)?;
        let credits = account::credits(&self.app.db, principal, workspace_id).await?;
        Ok(Response::new(credits_reply(credits)))
    }
}

fn credits_reply(credits: Credits) -> proto::GetCreditsResponse {
    let Credits {
        plan,
        remaining,
        workspace_used,
        workspace_limit,
        renews_at,
    } = credits;
    proto::GetCreditsResponse {
        plan,
        remaining,
        workspace_used,
        workspace_limit,
        renews_at: Some(time::to_proto(renews_at)),
    }
}
