//! The seven `/audiences/...` paths.

use lps::{proto, wire};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Check, Input, Lenient};
use super::workspaces::WorkspaceQuery;

#[derive(Serialize, ToSchema)]
pub struct AudienceBody {
    /// `0` is the built-in Default Audience.
    pub id: i64,
    pub name: String,
    pub description: Option<String>,
    /// Hex colour, e.g. `#1a2b3c`.
    pub color: Option<String>,
    pub lead_count: i64,
    /// The workspace id.
    pub project_id: i64,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreateAudienceRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = String, max_length = 255)]
    pub name: Lenient<String>,
    #[schema(value_type = Option<String>, max_length = 1000)]
    pub description: Lenient<String>,
    /// Hex colour such as `#1a2b3c`.
    #[schema(value_type = Option<String>, pattern = r"^\s*(#?([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6}))?\s*$")]
    pub color: Lenient<String>,
    #[schema(value_type = Option<Vec<i64>>)]
    pub lead_ids: Lenient<Vec<i64>>,
}

#[derive(Serialize, ToSchema)]
pub struct CreatedAudienceBody {
    pub audience_id: i64,
    pub name: String,
    pub description: Option<String>,
    pub lead_count: i64,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct AudienceLeadsRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// Not `0`: the Default Audience cannot be changed, linked or deleted.
    #[schema(value_type = i64, minimum = 1)]
    pub audience_id: Lenient<i64>,
    #[schema(value_type = Vec<i64>, min_items = 1)]
    pub lead_ids: Lenient<Vec<i64>>,
}

#[derive(Serialize, ToSchema)]
pub struct AddedBody {
    pub audience_id: i64,
    pub added: i64,
    /// Unknown, foreign or already present lead ids.
    pub skipped: i64,
    pub lead_count: i64,
}

#[derive(Serialize, ToSchema)]
pub struct RemovedBody {
    pub audience_id: i64,
    pub removed: i64,
    pub lead_count: i64,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct AudienceCampaignRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// Not `0`: the Default Audience cannot be changed, linked or deleted.
    #[schema(value_type = i64, minimum = 1)]
    pub audience_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub campaign_id: Lenient<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct AudienceCampaignBody {
    pub audience_id: i64,
    pub campaign_id: i64,
    pub message: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct DeleteAudienceRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// Not `0`: the Default Audience cannot be changed, linked or deleted.
    #[schema(value_type = i64, minimum = 1)]
    pub audience_id: Lenient<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct DeletedAudienceBody {
    pub audience_id: i64,
    pub leads_kept: i64,
    pub message: String,
}

/// Audience `0` (the Default Audience) first, then the workspace's audiences.
#[utoipa::path(get, path = "/audiences/get-list", tag = "Audiences", params(WorkspaceQuery),
    responses((status = 200, body = Vec<AudienceBody>), (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub(super) async fn get_list(
    caller: Caller,
    Input(query, mut check): Input<WorkspaceQuery>,
) -> Result<Reply<Vec<AudienceBody>>, ApiError> {
    let request = proto::ListAudiencesRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.audiences().list_audiences(request).await },
            |r| r.audiences.into_iter().map(audience).collect(),
        )
        .await
}

/// Creates an audience, optionally with leads.
#[utoipa::path(post, path = "/audiences/create", tag = "Audiences",
    request_body = CreateAudienceRequest,
    responses((status = 200, body = CreatedAudienceBody), (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "Invalid input, e.g. a color that is not hex")))]
pub(super) async fn create(
    caller: Caller,
    Input(body, mut check): Input<CreateAudienceRequest>,
) -> Result<Reply<CreatedAudienceBody>, ApiError> {
    let request = proto::CreateAudienceRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        name: check.field("name", body.name),
        description: check.field("description", body.description),
        color: check.field("color", body.color),
        lead_ids: check.field("lead_ids", body.lead_ids).unwrap_or_default(),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.audiences().create_audience(request).await },
            |r| CreatedAudienceBody {
                audience_id: r.audience_id,
                name: r.name,
                description: r.description,
                lead_count: r.lead_count,
            },
        )
        .await
}

fn audience_leads(body: AudienceLeadsRequest, check: &mut Check) -> proto::AudienceLeadsRequest {
    proto::AudienceLeadsRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        audience_id: check.field("audience_id", body.audience_id),
        lead_ids: check.field("lead_ids", body.lead_ids).unwrap_or_default(),
    }
}

/// Adds leads; unknown or foreign ids are counted as skipped.
#[utoipa::path(post, path = "/audiences/add-leads", tag = "Audiences",
    request_body = AudienceLeadsRequest,
    responses((status = 200, body = AddedBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Audience not found"), (status = 422, body = ErrorBody)))]
pub(super) async fn add_leads(
    caller: Caller,
    Input(body, mut check): Input<AudienceLeadsRequest>,
) -> Result<Reply<AddedBody>, ApiError> {
    let request = audience_leads(body, &mut check);
    caller
        .call(
            check,
            request,
            |core, request| async move { core.audiences().add_leads(request).await },
            |r| AddedBody {
                audience_id: r.audience_id,
                added: r.added,
                skipped: r.skipped,
                lead_count: r.lead_count,
            },
        )
        .await
}

/// Removes leads from the audience; the leads themselves are kept.
#[utoipa::path(post, path = "/audiences/remove-leads", tag = "Audiences",
    request_body = AudienceLeadsRequest,
    responses((status = 200, body = RemovedBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn remove_leads(
    caller: Caller,
    Input(body, mut check): Input<AudienceLeadsRequest>,
) -> Result<Reply<RemovedBody>, ApiError> {
    let request = audience_leads(body, &mut check);
    caller
        .call(
            check,
            request,
            |core, request| async move { core.audiences().remove_leads(request).await },
            |r| RemovedBody {
                audience_id: r.audience_id,
                removed: r.removed,
                lead_count: r.lead_count,
            },
        )
        .await
}

fn audience_campaign(
    body: AudienceCampaignRequest,
    check: &mut Check,
) -> proto::AudienceCampaignRequest {
    proto::AudienceCampaignRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        audience_id: check.field("audience_id", body.audience_id),
        campaign_id: check.field("campaign_id", body.campaign_id),
    }
}

fn audience_campaign_body(r: proto::AudienceCampaignResponse) -> AudienceCampaignBody {
    AudienceCampaignBody {
        audience_id: r.audience_id,
        campaign_id: r.campaign_id,
        message: r.message,
    }
}

/// Links the audience to a campaign: its leads, present and future, get pages there.
#[utoipa::path(post, path = "/audiences/link-to-campaign", tag = "Audiences",
    request_body = AudienceCampaignRequest,
    responses((status = 200, body = AudienceCampaignBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Audience or campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn link_to_campaign(
    caller: Caller,
    Input(body, mut check): Input<AudienceCampaignRequest>,
) -> Result<Reply<AudienceCampaignBody>, ApiError> {
    let request = audience_campaign(body, &mut check);
    caller
        .call(
            check,
            request,
            |core, request| async move { core.audiences().link_campaign(request).await },
            audience_campaign_body,
        )
        .await
}

/// Removes only the link; the audience, its leads and existing pages are untouched.
#[utoipa::path(post, path = "/audiences/unlink-from-campaign", tag = "Audiences",
    request_body = AudienceCampaignRequest,
    responses((status = 200, body = AudienceCampaignBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn unlink_from_campaign(
    caller: Caller,
    Input(body, mut check): Input<AudienceCampaignRequest>,
) -> Result<Reply<AudienceCampaignBody>, ApiError> {
    let request = audience_campaign(body, &mut check);
    caller
        .call(
            check,
            request,
            |core, request| async move { core.audiences().unlink_campaign(request).await },
            audience_campaign_body,
        )
        .await
}

/// Deletes the segment only; its leads stay in the workspace.
#[utoipa::path(post, path = "/audiences/delete", tag = "Audiences",
    request_body = DeleteAudienceRequest,
    responses((status = 200, body = DeletedAudienceBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn delete(
    caller: Caller,
    Input(body, mut check): Input<DeleteAudienceRequest>,
) -> Result<Reply<DeletedAudienceBody>, ApiError> {
    let request = proto::DeleteAudienceRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        audience_id: check.field("audience_id", body.audience_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.audiences().delete_audience(request).await },
            |r| DeletedAudienceBody {
                audience_id: r.audience_id,
                leads_kept: r.leads_kept,
                message: r.message,
            },
        )
        .await
}

fn audience(a: proto::Audience) -> AudienceBody {
    let proto::Audience {
        id,
        name,
        description,
        color,
        lead_count,
        project_id,
        created_at,
        updated_at,
    } = a;
    AudienceBody {
        id,
        name,
        description,
        color,
        lead_count,
        project_id,
        created_at: created_at.as_ref().map(wire::iso8601).unwrap_or_default(),
        updated_at: updated_at.as_ref().map(wire::iso8601).unwrap_or_default(),
    }
}
