//! `GET /pages/design`, `POST /pages/update-design`, `POST /pages/publish`,
//! `POST /pages/unpublish`, `POST /pages/generate`, `GET /pages/generate/status`,
//! `POST /pages/generate/cancel`.

use lps::{proto, wire};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Input, Lenient};

#[derive(Debug, Default, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct CampaignDesignQuery {
    #[param(value_type = i64)]
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[param(value_type = i64)]
    #[schema(value_type = i64)]
    pub campaign_id: Lenient<i64>,
}

/// The Design object; for a campaign without a design exactly
/// `{campaign_id, has_design: false, is_live: false, html: null, css: null, note}`.
#[derive(Serialize, ToSchema)]
pub struct DesignBody {
    pub campaign_id: i64,
    pub has_design: bool,
    pub is_live: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_unpublished_changes: Option<bool>,
    pub html: Option<String>,
    pub css: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct UpdateDesignRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    /// The page body: HTML with minijinja over the lead's variables (`{{ first_name }}`) and
    /// the page-level ones (`{{ cta_url }}`, `{{ branding.logo_url }}`, `{{ sender.name }}`).
    /// Cleaned before it is kept: no scripts, event handlers, `javascript:` addresses, frames,
    /// objects or embeds.
    #[schema(value_type = String, max_length = 500000)]
    pub html: Lenient<String>,
    /// Inlined into the page's head; `@import` and script-like values are removed.
    #[schema(value_type = Option<String>, max_length = 200000)]
    pub css: Lenient<String>,
}

#[derive(Serialize, ToSchema)]
pub struct PublishBody {
    pub campaign_id: i64,
    pub is_live: bool,
    pub published_at: String,
    pub message: String,
}

#[derive(Serialize, ToSchema)]
pub struct UnpublishBody {
    pub campaign_id: i64,
    pub is_live: bool,
    pub message: String,
}

/// The campaign's design: the draft, and whether visitors see a published one.
#[utoipa::path(get, path = "/pages/design", tag = "Pages", params(CampaignDesignQuery),
    responses((status = 200, body = DesignBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn design(
    caller: Caller,
    Input(query, mut check): Input<CampaignDesignQuery>,
) -> Result<Reply<DesignBody>, ApiError> {
    let request = proto::GetDesignRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        campaign_id: check.field("campaign_id", query.campaign_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().get_design(request).await },
            design_body,
        )
        .await
}

fn design_body(d: proto::Design) -> DesignBody {
    DesignBody {
        campaign_id: d.campaign_id,
        has_design: d.has_design,
        is_live: d.is_live,
        has_unpublished_changes: d.has_design.then_some(d.has_unpublished_changes),
        html: d.html,
        css: d.css,
        updated_at: d
            .has_design
            .then(|| d.updated_at.as_ref().map(wire::iso8601).unwrap_or_default()),
        note: d.note,
    }
}

/// Beyond the specification: replaces the campaign's draft with your own HTML and CSS (cleaned
/// and compiled first). Visitors see it once published. Answers the Design object.
#[utoipa::path(post, path = "/pages/update-design", tag = "Pages",
    request_body = UpdateDesignRequest,
    responses((status = 200, body = DesignBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody, description = "Invalid input, or a design that does not compile (`errors.html` names the line)")))]
pub(super) async fn update_design(
    caller: Caller,
    Input(body, mut check): Input<UpdateDesignRequest>,
) -> Result<Reply<DesignBody>, ApiError> {
    let request = proto::UpdateDesignRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        campaign_id: check.field("campaign_id", body.campaign_id),
        html: check.field("html", body.html),
        css: check.field("css", body.css),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().update_design(request).await },
            design_body,
        )
        .await
}

/// Copies the draft over the published snapshot: every page of the campaign shows it at once.
#[utoipa::path(post, path = "/pages/publish", tag = "Pages", request_body = CampaignDesignQuery,
    responses((status = 200, body = PublishBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 409, body = ErrorBody, description = "No design: apply a template or generate one first"),
        (status = 422, body = ErrorBody, description = "Invalid input, or a design that does not compile")))]
pub(super) async fn publish(
    caller: Caller,
    Input(body, mut check): Input<CampaignDesignQuery>,
) -> Result<Reply<PublishBody>, ApiError> {
    let request = proto::CampaignDesignRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        campaign_id: check.field("campaign_id", body.campaign_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().publish(request).await },
            |r| PublishBody {
                campaign_id: r.campaign_id,
                is_live: r.is_live,
                published_at: r
                    .published_at
                    .as_ref()
                    .map(wire::iso8601)
                    .unwrap_or_default(),
                message: r.message,
            },
        )
        .await
}

/// Visitors see the 'not live yet' page again; the draft is kept.
#[utoipa::path(post, path = "/pages/unpublish", tag = "Pages", request_body = CampaignDesignQuery,
    responses((status = 200, body = UnpublishBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn unpublish(
    caller: Caller,
    Input(body, mut check): Input<CampaignDesignQuery>,
) -> Result<Reply<UnpublishBody>, ApiError> {
    let request = proto::CampaignDesignRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        campaign_id: check.field("campaign_id", body.campaign_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().unpublish(request).await },
            |r| UnpublishBody {
                campaign_id: r.campaign_id,
                is_live: r.is_live,
                message: r.message,
            },
        )
        .await
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct GenerateRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    /// What the page should say and look like.
    #[schema(value_type = String, max_length = 20000)]
    pub prompt: Lenient<String>,
    /// `true` starts from a blank page; `false` (default) edits the current design.
    #[schema(value_type = Option<bool>)]
    pub replace: Lenient<bool>,
}

#[derive(Debug, Default, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct DesignRunQuery {
    #[param(value_type = i64)]
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// The `run_id` `POST /pages/generate` answered.
    #[param(value_type = String, max_length = 64)]
    #[schema(value_type = String, max_length = 64)]
    pub run_id: Lenient<String>,
}

#[derive(Serialize, ToSchema)]
pub struct GenerateBody {
    pub run_id: String,
    /// `queued`.
    pub status: String,
    pub campaign_id: i64,
}

/// The Design run object.
#[derive(Serialize, ToSchema)]
pub struct DesignRunBody {
    pub run_id: String,
    /// `queued`, `running`, `success`, `error` or `cancelled`.
    pub status: String,
    pub campaign_id: i64,
    /// Why the run ended in `error`; null otherwise.
    pub error: Option<String>,
}

fn run_status(run: &proto::DesignRun) -> String {
    use proto::design_run::State;
    match run.status() {
        State::Queued => "queued",
        State::Running => "running",
        State::Success => "success",
        State::Error => "error",
        State::Cancelled => "cancelled",
        State::Unspecified => "queued",
    }
    .to_owned()
}

fn design_run_body(run: proto::DesignRun) -> DesignRunBody {
    DesignRunBody {
        status: run_status(&run),
        run_id: run.run_id,
        campaign_id: run.campaign_id,
        error: run.error,
    }
}

/// Generates a design for the campaign with AI, in the background: answers at once with the
/// run to poll. Spends credits (see docs/api-guide.md for costs); on success the draft holds the new
/// design (publish it to show it). Without a model configured it is refused (503) unpaid.
#[utoipa::path(post, path = "/pages/generate", tag = "Pages", request_body = GenerateRequest,
    responses((status = 200, body = GenerateBody),
        (status = 402, body = ErrorBody, description = "No credits remaining"),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody, description = "Extension: no model is configured (reason `NO_MODEL`); nothing is queued and no credits are spent")))]
pub(super) async fn generate(
    caller: Caller,
    Input(body, mut check): Input<GenerateRequest>,
) -> Result<Reply<GenerateBody>, ApiError> {
    let request = proto::GenerateDesignRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        campaign_id: check.field("campaign_id", body.campaign_id),
        prompt: check.field("prompt", body.prompt),
        replace: check.field("replace", body.replace),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().generate_design(request).await },
            |run| GenerateBody {
                status: run_status(&run),
                run_id: run.run_id,
                campaign_id: run.campaign_id,
            },
        )
        .await
}

/// A design run's status.
#[utoipa::path(get, path = "/pages/generate/status", tag = "Pages", params(DesignRunQuery),
    responses((status = 200, body = DesignRunBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Design run not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn generate_status(
    caller: Caller,
    Input(query, mut check): Input<DesignRunQuery>,
) -> Result<Reply<DesignRunBody>, ApiError> {
    let request = proto::DesignRunRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        run_id: check.field("run_id", query.run_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().get_design_run(request).await },
            design_run_body,
        )
        .await
}

/// Beyond the specification, for browsers and tools that cannot speak gRPC: the design run's
/// progress as Server-Sent Events (`text/event-stream`), one event whenever it moves, each
/// event's data the object `GET /pages/generate/status` answers; the stream ends once the run
/// has ended. Errors before the stream starts are those of `GET /pages/generate/status`.
#[utoipa::path(get, path = "/pages/generate/status/stream", tag = "Pages", params(DesignRunQuery),
    responses((status = 200, content_type = "text/event-stream", body = DesignRunBody,
            description = "Events whose `data` is the Design run object, until the run ends"),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Design run not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn generate_status_stream(
    caller: Caller,
    Input(query, mut check): Input<DesignRunQuery>,
) -> Result<axum::response::Response, ApiError> {
    let request = proto::DesignRunRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        run_id: check.field("run_id", query.run_id),
    };
    caller
        .stream(
            check,
            request,
            |core, request| async move { core.pages().watch_design_run(request).await },
            design_run_body,
        )
        .await
}

/// Beyond the specification: cancels a queued or running design run and gives its credits
/// back. Answers the Design run object.
#[utoipa::path(post, path = "/pages/generate/cancel", tag = "Pages",
    request_body = DesignRunQuery,
    responses((status = 200, body = DesignRunBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Design run not found"),
        (status = 409, body = ErrorBody, description = "The run has already ended"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn generate_cancel(
    caller: Caller,
    Input(body, mut check): Input<DesignRunQuery>,
) -> Result<Reply<DesignRunBody>, ApiError> {
    let request = proto::DesignRunRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        run_id: check.field("run_id", body.run_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().cancel_design_run(request).await },
            design_run_body,
        )
        .await
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PreviewQuery {
    #[param(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[param(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    /// The lead whose values fill the page; sample values without one.
    #[param(value_type = Option<i64>)]
    pub lead_id: Lenient<i64>,
    /// A template (premade or the workspace's) to show on this campaign instead of its draft.
    #[param(value_type = Option<i64>)]
    pub template_id: Lenient<i64>,
}

/// Extension: the campaign's draft as one of the workspace's leads would see it once
/// published (sample values without `lead_id`), as an HTML document: before publishing, and
/// never tracked or counted as a visit. With `template_id`, that template on this campaign
/// instead of the draft (to choose one before applying it).
#[utoipa::path(get, path = "/pages/preview", tag = "Pages", params(PreviewQuery),
    responses(
        (status = 200, content_type = "text/html", body = String, description = "The page as HTML"),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found, Lead not found, or Template not found"),
        (status = 409, body = ErrorBody, description = "The campaign has no design yet"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn preview(
    caller: Caller,
    input: Input<PreviewQuery>,
) -> Result<axum::response::Response, ApiError> {
    Ok(preview_document(caller, input)
        .await?
        .map(|document| document.html)
        .into_html())
}

/// The preview as MCP gives it: the HTML document in `html`.
#[derive(Serialize, ToSchema)]
pub struct PreviewBody {
    pub html: String,
}

/// [`preview`]'s work, answering the document as JSON (the MCP tool's answer).
pub(super) async fn preview_document(
    caller: Caller,
    Input(query, mut check): Input<PreviewQuery>,
) -> Result<Reply<PreviewBody>, ApiError> {
    let request = proto::PreviewDraftRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        campaign_id: check.field("campaign_id", query.campaign_id),
        lead_id: check.field("lead_id", query.lead_id),
        template_id: check.field("template_id", query.template_id),
        published: None,
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.pages().preview_draft(request).await },
            |r| PreviewBody { html: r.html },
        )
        .await
}
