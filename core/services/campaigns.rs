//! `lps.v1.CampaignsService`: campaigns and brandings.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::campaigns;
use crate::error::FieldViolation;
use crate::proto::{self, campaigns_service_server};
use crate::store::campaigns::CampaignRow;
use crate::validate::{Field, Validated, optional_text, optional_url, required, required_text};

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
            (required("workspace_id", request.get_ref().workspace_id),).validated(&request)?;
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
            cta_url,
        } = request.get_ref().clone();
        let (workspace_id, name, prompt, cta_url) = (
            required("workspace_id", workspace_id),
            required_text("name", name, 255),
            optional_text("prompt", prompt, 20_000),
            cta_url_field(cta_url),
        )
            .validated(&request)?;
        let created = campaigns::create(
            &self.app.db,
            principal,
            workspace_id,
            &name,
            branding_id,
            prompt.as_deref(),
            cta_url.as_deref(),
        )
        .await?;
        Ok(Response::new(proto::CreateCampaignResponse {
            campaign_id: created.id,
            name: created.name,
            slug: created.slug,
            note: campaigns::NO_DESIGN_NOTE.to_owned(),
        }))
    }

    async fn update_campaign(
        &self,
        request: Request<proto::UpdateCampaignRequest>,
    ) -> Result<Response<proto::CampaignSettings>, Status> {
        let principal = Principal::of(&request)?;
        let proto::UpdateCampaignRequest {
            workspace_id,
            campaign_id,
            cta_url,
            branding_id,
        } = request.get_ref().clone();
        let clears = cta_url.as_deref().is_some_and(|url| url.trim().is_empty());
        let (workspace_id, campaign_id, new_cta_url) = (
            required("workspace_id", workspace_id),
            required("campaign_id", campaign_id),
            cta_url_field(cta_url),
        )
            .validated(&request)?;
        let change = campaigns::SettingsChange {
            cta_url: if clears {
                Some(None)
            } else {
                new_cta_url.map(Some)
            },
            branding_id,
        };
        let campaign =
            campaigns::update_settings(&self.app, principal, workspace_id, campaign_id, change)
                .await?;
        Ok(Response::new(proto::CampaignSettings {
            campaign_id: campaign.id,
            name: campaign.name,
            slug: campaign.slug,
            branding_id: campaign.branding_id,
            cta_url: campaign.cta_url,
        }))
    }

    async fn list_brandings(
        &self,
        request: Request<proto::ListBrandingsRequest>,
    ) -> Result<Response<proto::ListBrandingsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id,) =
            (required("workspace_id", request.get_ref().workspace_id),).validated(&request)?;
        let rows = campaigns::brandings(&self.app.db, principal, workspace_id).await?;
        Ok(Response::new(proto::ListBrandingsResponse {
            brandings: rows
                .into_iter()
                .map(|row| proto::Branding {
                    branding_id: row.id,
                    name: row.name,
                    is_default: row.is_default != 0,
                    company_name: row.look.company_name,
                    logo_url: row.look.logo_url,
                    primary_color: row.look.primary_color,
                    website: row.look.website,
                    sender_name: row.look.sender_name,
                    sender_title: row.look.sender_title,
                    sender_photo_url: row.look.sender_photo_url,
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

/// A call-to-action address: http(s), at most 2,048 characters.
fn cta_url_field(value: Option<String>) -> Field<Option<String>> {
    let url = optional_url("cta_url", value)?;
    match url {
        Some(url) if url.len() > 2048 => Err(FieldViolation::new(
            "cta_url",
            "The cta url field must not be greater than 2048 characters.",
        )),
        url => Ok(url),
    }
}
