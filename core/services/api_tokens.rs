//! `lps.v1.ApiTokensService`: generate, list and revoke API keys.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::api_tokens;
use crate::proto::{self, api_tokens_service_server};
use crate::store::api_tokens::TokenRow;
use crate::time;
use crate::validate::{Validated, required, required_text};

/// Longest key name accepted.
const NAME_MAX_CHARS: usize = 255;

pub struct ApiTokensService {
    app: App,
}

impl ApiTokensService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl api_tokens_service_server::ApiTokensService for ApiTokensService {
    async fn generate_api_token(
        &self,
        request: Request<proto::GenerateApiTokenRequest>,
    ) -> Result<Response<proto::GenerateApiTokenResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::GenerateApiTokenRequest { name, workspace_id } = request.get_ref().clone();
        let (name, workspace_id) = (
            required_text("name", name, NAME_MAX_CHARS),
            required("workspace_id", workspace_id),
        )
            .validated(&request)?;
        let key = api_tokens::generate(&self.app.db, principal, workspace_id, &name).await?;
        Ok(Response::new(proto::GenerateApiTokenResponse {
            token: key.plaintext,
            id: key.id,
        }))
    }

    async fn list_api_tokens(
        &self,
        request: Request<proto::ListApiTokensRequest>,
    ) -> Result<Response<proto::ListApiTokensResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ListApiTokensRequest { workspace_id } = request.get_ref();
        let (workspace_id,) = (required("workspace_id", *workspace_id),).validated(&request)?;
        let tokens = api_tokens::list(&self.app.db, principal, workspace_id).await?;
        Ok(Response::new(proto::ListApiTokensResponse {
            tokens: tokens.into_iter().map(api_token).collect(),
        }))
    }

    async fn delete_api_token(
        &self,
        request: Request<proto::DeleteApiTokenRequest>,
    ) -> Result<Response<proto::DeleteApiTokenResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::DeleteApiTokenRequest { token_id } = request.get_ref().clone();
        let (token_id,) =
            (required_text("token_id", token_id, NAME_MAX_CHARS),).validated(&request)?;
        api_tokens::delete(&self.app, principal, &token_id).await?;
        Ok(Response::new(proto::DeleteApiTokenResponse {
            message: "API token deleted successfully".into(),
        }))
    }
}

fn api_token(row: TokenRow) -> proto::ApiToken {
    let TokenRow {
        id,
        name,
        workspace_id,
        created_at,
        last_used_at,
        created_by,
    } = row;
    proto::ApiToken {
        id,
        name,
        created_at: Some(time::to_proto(created_at)),
        last_used_at: last_used_at.map(time::to_proto),
        created_by,
        workspace_id,
    }
}
