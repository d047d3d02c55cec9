//! The campaign's draft, or a template on it, previewed as a lead would see it (`/preview`),
//! and the gallery of templates shown rendered on it (`/templates`), one to pick for the draft.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use lps::proto;
use serde::Serialize;

use super::{Form_, campaign_address};
use crate::core_client::Core;
use crate::dashboard::{
    CampaignScreen, Settings, SignedForm, after_action, number, screen, unavailable,
};
use crate::http::html_page::{self, Framing, Link, message};

/// The campaign's draft (or, with `template_id`, a template on it) as one of its workspace's
/// leads would see it (sample values without `lead_id`), before it is published: never
/// tracked or counted. The dashboard's gallery shows it in frames.
pub async fn preview(
    State(core): State<Core>,
    CampaignScreen {
        session,
        workspace_id,
        campaign,
        ..
    }: CampaignScreen,
    Query(query): Query<Form_>,
) -> Response {
    let request = proto::PreviewDraftRequest {
        workspace_id: Some(workspace_id),
        campaign_id: Some(campaign.id),
        lead_id: number(&query, "lead_id"),
        template_id: number(&query, "template_id"),
        published: Some(query.get("published").is_some_and(|v| v == "1")),
    };
    match core.pages().preview_draft(session.request(request)).await {
        Ok(reply) => html_page::preview(reply.into_inner().html, Framing::SameOrigin),
        // No design yet, another workspace's lead, a design over its budget: said as core says it.
        Err(status)
            if matches!(
                status.code(),
                tonic::Code::NotFound
                    | tonic::Code::FailedPrecondition
                    | tonic::Code::InvalidArgument
            ) =>
        {
            let back = campaign_address(campaign.id);
            message(
                StatusCode::UNPROCESSABLE_ENTITY,
                "No preview",
                status.message(),
                Some(Link {
                    href: &back,
                    text: "Back to the campaign",
                }),
            )
        }
        Err(status) => unavailable(&status),
    }
}

#[derive(Serialize)]
struct GalleryView {
    id: i64,
    workspace_id: i64,
    name: String,
    csrf: String,
    templates: Vec<TemplateView>,
}

#[derive(Serialize)]
struct TemplateView {
    id: i64,
    name: String,
    description: String,
    /// Premade, or made in this workspace.
    source: &'static str,
}

/// Every template (premade and the workspace's), each shown rendered on this campaign, to
/// pick one for its draft.
pub async fn gallery(
    State(core): State<Core>,
    CampaignScreen {
        session,
        person,
        workspace_id,
        campaign,
    }: CampaignScreen,
    headers: HeaderMap,
) -> Response {
    let templates = match core
        .pages()
        .list_templates(session.request(proto::ListTemplatesRequest {
            workspace_id: Some(workspace_id),
            search: None,
        }))
        .await
    {
        Ok(reply) => reply.into_inner().templates,
        Err(status) => return unavailable(&status),
    };
    let view = GalleryView {
        id: campaign.id,
        workspace_id,
        name: campaign.name.clone(),
        csrf: person.csrf_token.clone(),
        templates: templates
            .into_iter()
            .map(|t| TemplateView {
                id: t.template_id,
                name: t.name,
                description: t.description.unwrap_or_default(),
                source: if t.source == "premade" {
                    "Premade"
                } else {
                    "Made in this workspace"
                },
            })
            .collect(),
    };
    screen(
        &headers,
        &format!("Pick a template for {}", campaign.name),
        "gallery.html",
        view,
    )
}

/// The template picked becomes the campaign's draft (visitors see it once published).
pub async fn apply_template(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(campaign_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let campaign_id = campaign_id.parse::<i64>().ok();
    let outcome = core
        .pages()
        .apply_template(session.request(proto::ApplyTemplateRequest {
            workspace_id: number(&form, "workspace_id"),
            campaign_id,
            template_id: number(&form, "template_id"),
        }))
        .await;
    let done = "The template is the campaign's draft now: preview it, then publish it.";
    after_action(
        &settings,
        &campaign_address(campaign_id.unwrap_or_default()),
        outcome,
        done,
    )
}
