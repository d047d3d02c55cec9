//! `GET /templates/get-list`, `POST /templates/apply`, and the extension
//! `POST /templates/create` (save a campaign's design as a workspace template).

use lps::proto;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Input, Lenient};

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TemplatesQuery {
    #[param(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// Matches the template name, case-insensitively.
    #[param(value_type = Option<String>, max_length = 255)]
    pub search: Lenient<String>,
}

#[derive(Serialize, ToSchema)]
pub struct TemplateBody {
    pub template_id: i64,
    pub name: String,
    pub description: Option<String>,
    /// `workspace` (built by this account) or `premade` (available to everyone).
    pub source: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct ApplyRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub template_id: Lenient<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct AppliedBody {
    pub campaign_id: i64,
    pub template_id: i64,
    /// Whether visitors see a published design (applying does not change it).
    pub is_live: bool,
    pub message: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreateTemplateRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// The campaign whose current design becomes the template.
    #[schema(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    #[schema(value_type = String, max_length = 255)]
    pub name: Lenient<String>,
    #[schema(value_type = Option<String>, max_length = 1000)]
    pub description: Lenient<String>,
}

fn template(t: proto::Template) -> TemplateBody {
    TemplateBody {
        template_id: t.template_id,
        name: t.name,
        description: t.description,
        source: t.source,
    }
}

/// Premade templates and the workspace's own.
#[utoipa::path(get, path = "/templates/get-list", tag = "Templates", params(TemplatesQuery),
    responses((status = 200, body = Vec<TemplateBody>), (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub(super) async fn get_list(
    caller: Caller,
    Input(query, mut check): Input<TemplatesQuery>,
) -> Result<Reply<Vec<TemplateBody>>, ApiError> {
    let request = proto::ListTemplatesRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        search: check.field("search", query.search),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().list_templates(request).await },
            |r| r.templates.into_iter().map(template).collect(),
        )
        .await
}

/// Copies the template's design into the campaign's draft. No credits, immediate.
#[utoipa::path(post, path = "/templates/apply", tag = "Templates", request_body = ApplyRequest,
    responses((status = 200, body = AppliedBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Template not found, or Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn apply(
    caller: Caller,
    Input(body, mut check): Input<ApplyRequest>,
) -> Result<Reply<AppliedBody>, ApiError> {
    let request = proto::ApplyTemplateRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        campaign_id: check.field("campaign_id", body.campaign_id),
        template_id: check.field("template_id", body.template_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().apply_template(request).await },
            |r| AppliedBody {
                campaign_id: r.campaign_id,
                template_id: r.template_id,
                is_live: r.is_live,
                message: r.message,
            },
        )
        .await
}

/// Extension: saves a campaign's current design as a template of the workspace.
#[utoipa::path(post, path = "/templates/create", tag = "Templates",
    request_body = CreateTemplateRequest,
    responses((status = 200, body = TemplateBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 409, body = ErrorBody, description = "The campaign has no design"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn create(
    caller: Caller,
    Input(body, mut check): Input<CreateTemplateRequest>,
) -> Result<Reply<TemplateBody>, ApiError> {
    let request = proto::CreateTemplateRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        campaign_id: check.field("campaign_id", body.campaign_id),
        name: check.field("name", body.name),
        description: check.field("description", body.description),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().create_template(request).await },
            template,
        )
        .await
}
