//! `lps.v1.AudiencesService`: the seven audience operations.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::audiences::{self, hex_color};
use crate::proto::{self, audiences_service_server};
use crate::store::audiences::AudienceRow;
use crate::time;
use crate::validate::{Validated, optional_text, required, required_list, required_text};

pub struct AudiencesService {
    app: App,
}

impl AudiencesService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl audiences_service_server::AudiencesService for AudiencesService {
    async fn list_audiences(
        &self,
        request: Request<proto::ListAudiencesRequest>,
    ) -> Result<Response<proto::ListAudiencesResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id,) =
            (required("workspace_id", request.get_ref().workspace_id),).validated(&request)?;
        let rows = audiences::list(&self.app.db, principal, workspace_id).await?;
        Ok(Response::new(proto::ListAudiencesResponse {
            audiences: rows.into_iter().map(audience).collect(),
        }))
    }

    async fn create_audience(
        &self,
        request: Request<proto::CreateAudienceRequest>,
    ) -> Result<Response<proto::CreateAudienceResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::CreateAudienceRequest {
            workspace_id,
            name,
            description,
            color,
            lead_ids,
        } = request.get_ref().clone();
        let color = color.filter(|c| !c.trim().is_empty());
        let (workspace_id, name, description, color) = (
            required("workspace_id", workspace_id),
            required_text("name", name, 255),
            optional_text("description", description, 1_000),
            color.as_deref().map(hex_color).transpose(),
        )
            .validated(&request)?;
        let created = audiences::create(
            &self.app.db,
            principal,
            workspace_id,
            &name,
            description.as_deref(),
            color.as_deref(),
            &lead_ids,
        )
        .await?;
        Ok(Response::new(proto::CreateAudienceResponse {
            audience_id: created.id,
            name: created.name,
            description: created.description,
            lead_count: created.lead_count,
        }))
    }

    async fn add_leads(
        &self,
        request: Request<proto::AudienceLeadsRequest>,
    ) -> Result<Response<proto::AddLeadsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id, audience_id, lead_ids) = audience_leads(&request)?;
        let added = audiences::add_leads(
            &self.app.db,
            principal,
            workspace_id,
            audience_id,
            &lead_ids,
        )
        .await?;
        Ok(Response::new(proto::AddLeadsResponse {
            audience_id,
            added: added.added,
            skipped: added.skipped,
            lead_count: added.lead_count,
        }))
    }

    async fn remove_leads(
        &self,
        request: Request<proto::AudienceLeadsRequest>,
    ) -> Result<Response<proto::RemoveLeadsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id, audience_id, lead_ids) = audience_leads(&request)?;
        let (removed, lead_count) = audiences::remove_leads(
            &self.app.db,
            principal,
            workspace_id,
            audience_id,
            &lead_ids,
        )
        .await?;
        Ok(Response::new(proto::RemoveLeadsResponse {
            audience_id,
            removed,
            lead_count,
        }))
    }

    async fn link_campaign(
        &self,
        request: Request<proto::AudienceCampaignRequest>,
    ) -> Result<Response<proto::AudienceCampaignResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id, audience_id, campaign_id) = audience_campaign(&request)?;
        let members = audiences::link(
            &self.app.db,
            principal,
            workspace_id,
            audience_id,
            campaign_id,
        )
        .await?;
        Ok(Response::new(proto::AudienceCampaignResponse {
            audience_id,
            campaign_id,
            message: format!(
                "Audience linked to campaign. Its {members} lead(s), and every lead added later, \
                 have a page in the campaign."
            ),
        }))
    }

    async fn unlink_campaign(
        &self,
        request: Request<proto::AudienceCampaignRequest>,
    ) -> Result<Response<proto::AudienceCampaignResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id, audience_id, campaign_id) = audience_campaign(&request)?;
        audiences::unlink(
            &self.app.db,
            principal,
            workspace_id,
            audience_id,
            campaign_id,
        )
        .await?;
        Ok(Response::new(proto::AudienceCampaignResponse {
            audience_id,
            campaign_id,
            message: "Audience unlinked from campaign. The audience, its leads and their existing \
                      pages are unchanged."
                .into(),
        }))
    }

    async fn delete_audience(
        &self,
        request: Request<proto::DeleteAudienceRequest>,
    ) -> Result<Response<proto::DeleteAudienceResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::DeleteAudienceRequest {
            workspace_id,
            audience_id,
        } = *request.get_ref();
        let (workspace_id, audience_id) = (
            required("workspace_id", workspace_id),
            required("audience_id", audience_id),
        )
            .validated(&request)?;
        let kept = audiences::delete(&self.app.db, principal, workspace_id, audience_id).await?;
        Ok(Response::new(proto::DeleteAudienceResponse {
            audience_id,
            leads_kept: kept,
            message: format!("Audience deleted. Its {kept} lead(s) remain in the workspace."),
        }))
    }
}

fn audience_leads(
    request: &Request<proto::AudienceLeadsRequest>,
) -> Result<(i64, i64, Vec<i64>), Status> {
    let proto::AudienceLeadsRequest {
        workspace_id,
        audience_id,
        lead_ids,
    } = request.get_ref().clone();
    Ok((
        required("workspace_id", workspace_id),
        required("audience_id", audience_id),
        required_list("lead_ids", lead_ids),
    )
        .validated(request)?)
}

fn audience_campaign(
    request: &Request<proto::AudienceCampaignRequest>,
) -> Result<(i64, i64, i64), Status> {
    let proto::AudienceCampaignRequest {
        workspace_id,
        audience_id,
        campaign_id,
    } = *request.get_ref();
    Ok((
        required("workspace_id", workspace_id),
        required("audience_id", audience_id),
        required("campaign_id", campaign_id),
    )
        .validated(request)?)
}

fn audience(row: AudienceRow) -> proto::Audience {
    let AudienceRow {
        id,
        workspace_id,
        name,
        description,
        color,
        lead_count,
        created_at,
        updated_at,
    } = row;
    proto::Audience {
        id,
        name,
        description,
        color,
        lead_count,
        project_id: workspace_id,
        created_at: Some(time::to_proto(created_at)),
        updated_at: Some(time::to_proto(updated_at)),
    }
}
