//! `lps.v1.CampaignsService`: campaigns and brandings.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::campaigns;
use crate::proto::{self, campaigns_service_server};
use crate::store::campaigns::CampaignRow;
use crate::validate::{Validated, optional_text, required, required_text};

pub struct CampaignsService {
    app: App,
}

impl CampaignsService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl campaigns_service_server::CampaignsService for CampaignsService {
    async fn list_campaigns(
        &self,
        request: Request<proto::ListCampaignsRequest>,
    ) -> Result<Response<proto::ListCampaignsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id,) =
            (required("workspace_id", request.get_ref().workspace_id),).validated()?;
        let rows = campaigns::list(&self.app.db, principal, workspace_id).await?;
        Ok(Response::new(proto::ListCampaignsResponse {
            campaigns: rows.into_iter().map(campaign).collect(),
        }))
    }

    async fn create_campaign(
        &self,
        request: Request<proto::CreateCampaignRequest>,
    ) -> Result<Response<proto::CreateCampaignResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::CreateCampaignRequest {
            workspace_id,
            name,
            branding_id,
            prompt,
        } = request.get_ref().clone();
        let (workspace_id, name, prompt) = (
            required("workspace_id", workspace_id),
            required_text("name", name, 255),
            optional_text("prompt", prompt, 20_000),
        )
            .validated()?;
        let created = campaigns::create(
            &self.app.db,
            principal,
            workspace_id,
            &name,
            branding_id,
            prompt.as_deref(),
        )
        .await?;
        Ok(Response::new(proto::CreateCampaignResponse {
            campaign_id: created.id,
            name: created.name,
            slug: created.slug,
            note: campaigns::NO_DESIGN_NOTE.to_owned(),
        }))
    }

    async fn list_brandings(
        &self,
        request: Request<proto::ListBrandingsRequest>,
    ) -> Result<Response<proto::ListBrandingsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id,) =
            (required("workspace_id", request.get_ref().workspace_id),).validated()?;
        let rows = campaigns::brandings(&self.app.db, principal, workspace_id).await?;
        Ok(Response::new(proto::ListBrandingsResponse {
            brandings: rows
                .into_iter()
                .map(|row| proto::Branding {
                    branding_id: row.id,
                    name: row.name,
                    is_default: row.is_default != 0,
                })
                .collect(),
        }))
    }
}

fn campaign(row: CampaignRow) -> proto::Campaign {
    proto::Campaign {
        id: row.id,
        name: row.name,
        slug: row.slug,
    }
}
