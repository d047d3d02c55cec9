//! Editing a campaign: its draft's HTML and CSS (`/design`), its draft's words, and its
//! name, call to action and branding.

use axum::extract::{Path, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use lps::proto;
use serde::Serialize;

use super::{campaign_address, design_of};
use crate::core_client::Core;
use crate::dashboard::{
    CampaignScreen, Notice, SCREENS, Settings, SignedForm, after_action, number, redirect_with,
    screen, unavailable,
};

#[derive(Serialize)]
struct DesignView {
    id: i64,
    workspace_id: i64,
    csrf: String,
    html: String,
    css: String,
    error: Option<String>,
}

/// The draft's HTML and CSS to edit.
pub async fn design_form(
    State(core): State<Core>,
    CampaignScreen {
        session,
        person,
        workspace_id,
        campaign,
    }: CampaignScreen,
    headers: HeaderMap,
) -> Response {
    let design = match design_of(&core, &session, workspace_id, campaign.id).await {
        Ok(design) => design,
        Err(status) => return unavailable(&status),
    };
    let view = DesignView {
        id: campaign.id,
        workspace_id,
        csrf: person.csrf_token.clone(),
        html: design.html.unwrap_or_default(),
        css: design.css.unwrap_or_default(),
        error: None,
    };
    screen(
        &headers,
        &format!("Edit the design of {}", campaign.name),
        "design.html",
        view,
    )
}

/// Saves the draft, cleaned and compiled as the API does; a design that does not compile is
/// shown again with what is wrong (the line named) and nothing lost.
pub async fn save_design(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(campaign_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let campaign_id = campaign_id.parse::<i64>().unwrap_or_default();
    let html = form.get("html").cloned().unwrap_or_default();
    let css = form.get("css").cloned().unwrap_or_default();
    let outcome = core
        .pages()
        .update_design(session.request(proto::UpdateDesignRequest {
            workspace_id: number(&form, "workspace_id"),
            campaign_id: Some(campaign_id),
            html: Some(html.clone()),
            css: Some(css.clone()),
        }))
        .await;
    match outcome {
        Ok(_) => redirect_with(
            &settings,
            &campaign_address(campaign_id),
            &Notice::news("The draft was saved: preview it, then publish it."),
        ),
        Err(status) if status.code() == tonic::Code::InvalidArgument => {
            let view = DesignView {
                id: campaign_id,
                workspace_id: number(&form, "workspace_id").unwrap_or_default(),
                csrf: form.get("csrf_token").cloned().unwrap_or_default(),
                html,
                css,
                error: Some(status.message().to_owned()),
            };
            SCREENS.page(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Edit the design",
                "design.html",
                view,
            )
        }
        Err(status) => redirect_with(
            &settings,
            &campaign_address(campaign_id),
            &Notice::alert(status.message()),
        ),
    }
}

/// Saves the draft's words (each field: blank goes back to the default; points one a line).
pub async fn save_copy(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(campaign_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let campaign_id = campaign_id.parse::<i64>().unwrap_or_default();
    let field = |key: &str| Some(form.get(key).cloned().unwrap_or_default());
    let copy = proto::CampaignCopy {
        headline: field("headline"),
        intro: field("intro").map(|t| t.replace("\r\n", "\n")),
        points: Some(proto::CopyPoints {
            items: form
                .get("points")
                .map(|p| p.lines().map(str::to_owned).collect())
                .unwrap_or_default(),
        }),
        cta_label: field("cta_label"),
        signoff: field("signoff").map(|t| t.replace("\r\n", "\n")),
        event_when: field("event_when"),
        event_where: field("event_where"),
    };
    let outcome = core
        .campaigns()
        .update_campaign(session.request(proto::UpdateCampaignRequest {
            workspace_id: number(&form, "workspace_id"),
            campaign_id: Some(campaign_id),
            cta_url: None,
            branding_id: None,
            copy: Some(copy),
            page_slug: None,
            name: None,
            domain_id: None,
        }))
        .await;
    after_action(
        &settings,
        &campaign_address(campaign_id),
        outcome,
        "The words were saved to the draft: preview it, then publish it.",
    )
}

/// Renames the campaign, or changes where its call to action leads or its branding (owners
/// and members alike: core decides who may).
pub async fn save_settings(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(campaign_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let campaign_id = campaign_id.parse::<i64>().unwrap_or_default();
    let outcome = core
        .campaigns()
        .update_campaign(session.request(proto::UpdateCampaignRequest {
            workspace_id: number(&form, "workspace_id"),
            campaign_id: Some(campaign_id),
            name: Some(form.get("name").cloned().unwrap_or_default()),
            cta_url: Some(form.get("cta_url").cloned().unwrap_or_default()),
            branding_id: number(&form, "branding_id"),
            copy: None,
            page_slug: None,
            // Offered to owners, when the workspace has domains (0: the server's address).
            domain_id: number(&form, "domain_id"),
        }))
        .await;
    after_action(
        &settings,
        &campaign_address(campaign_id),
        outcome,
        "The campaign was saved: its pages show the address and branding at once.",
    )
}
