//! Publishing a campaign's draft and unpublishing it: the live page beside the draft
//! (`/changes`), the step before unpublishing, and the two actions.

use axum::extract::State;
use axum::response::Response;
use http::HeaderMap;
use lps::proto;
use serde::Serialize;

use super::{Form_, campaign_address, design_of};
use crate::core_client::Core;
use crate::dashboard::{
    CampaignScreen, Notice, Settings, SignedForm, number, redirect_with, screen, unavailable,
};
use crate::http::session_cookie::Session;

/// What the changes screen shows: the live page and the draft side by side, and the button
/// that publishes the draft.
#[derive(Serialize)]
struct ChangesView {
    id: i64,
    workspace_id: i64,
    name: String,
    csrf: String,
    changed: bool,
}

/// The live page beside the draft, before publishing the changes.
pub async fn changes(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
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
    if !design.is_live {
        return redirect_with(
            &settings,
            &campaign_address(campaign.id),
            &Notice::alert("The campaign is not live: publish the draft from its page."),
        );
    }
    let view = ChangesView {
        id: campaign.id,
        workspace_id,
        name: campaign.name,
        csrf: person.csrf_token,
        changed: design.has_unpublished_changes,
    };
    screen(&headers, "Publish changes", "changes.html", view)
}

/// A step before unpublishing: what prospects will see meanwhile.
pub async fn confirm_unpublish(
    CampaignScreen {
        person,
        workspace_id,
        campaign,
        ..
    }: CampaignScreen,
) -> Response {
    crate::dashboard::confirm(
        "Unpublish a campaign",
        crate::dashboard::Confirmation {
            question: format!("Unpublish \u{201c}{}\u{201d}?", campaign.name),
            consequence: "Every prospect who opens a link of this campaign will see a \u{201c}not live yet\u{201d} page instead of their page, until you publish again. Leads, pages and engagement are kept.",
            action: "/dashboard/campaigns/unpublish",
            csrf: person.csrf_token,
            fields: vec![
                ("workspace_id", workspace_id.to_string()),
                ("campaign_id", campaign.id.to_string()),
            ],
            button: "Unpublish",
            back: campaign_address(campaign.id),
        },
    )
}

pub async fn publish(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    set_live(core, settings, session, form, true).await
}

pub async fn unpublish(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    set_live(core, settings, session, form, false).await
}

async fn set_live(
    core: Core,
    settings: crate::dashboard::DashboardSettings,
    session: Session,
    form: Form_,
    live: bool,
) -> Response {
    let request = proto::CampaignDesignRequest {
        workspace_id: number(&form, "workspace_id"),
        campaign_id: number(&form, "campaign_id"),
    };
    let request = session.request(request);
    let done = if live {
        core.pages().publish(request).await
    } else {
        core.pages().unpublish(request).await
    };
    let notice = match done {
        Ok(reply) => Notice::news(&reply.into_inner().message),
        Err(status) => Notice::alert(status.message()),
    };
    let back = number(&form, "campaign_id")
        .map(campaign_address)
        .unwrap_or_else(|| "/dashboard".to_owned());
    redirect_with(&settings, &back, &notice)
}
