//! A campaign in the dashboard: `/dashboard/campaigns/{id}` (its state, publish or unpublish,
//! its figures and charts per day, its latest form submissions with every answer), the
//! gallery of templates shown rendered on it (`/templates`), its draft's HTML and CSS
//! (`/design`), an AI design run and its progress (`/generate`, `/runs/{run_id}`), its draft
//! previewed as a lead (`/preview`) and its form submissions as CSV (`/submissions.csv`).
//!
//! Here the new campaign and what the others share; the page in `page.rs`; publishing and
//! unpublishing in `publish.rs`; the preview and the gallery in `templates.rs`; the design,
//! words and settings forms in `edit.rs`; design runs in `runs.rs`; the CSV in
//! `submissions.rs`.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::Response;
use lps::proto;

mod edit;
mod page;
mod publish;
mod runs;
mod submissions;
mod templates;

pub use edit::{design_form, save_copy, save_design, save_settings};
pub use page::page;
pub use publish::{changes, confirm_unpublish, publish, unpublish};
pub use runs::{cancel_run, generate, run};
pub use submissions::submissions_csv;
pub use templates::{apply_template, gallery, preview};

use crate::core_client::Core;
use crate::dashboard::{Notice, Settings, SignedForm, number, redirect_with, text};
use crate::http::session_cookie::Session;

type Form_ = BTreeMap<String, String>;

fn campaign_address(campaign_id: i64) -> String {
    format!("/dashboard/campaigns/{campaign_id}")
}

/// A new campaign in a workspace: its name, branding, and where its call to action leads;
/// then its page, to pick a design.
pub async fn create(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let request = proto::CreateCampaignRequest {
        workspace_id: number(&form, "workspace_id"),
        name: text(&form, "name"),
        branding_id: number(&form, "branding_id"),
        prompt: None,
        cta_url: text(&form, "cta_url"),
    };
    match core
        .campaigns()
        .create_campaign(session.request(request))
        .await
    {
        Ok(reply) => {
            let created = reply.into_inner();
            let done = format!(
                "The campaign \u{201c}{}\u{201d} was created. Pick a template or generate a design to give it pages.",
                created.name
            );
            redirect_with(
                &settings,
                &campaign_address(created.campaign_id),
                &Notice::news(&done),
            )
        }
        Err(status) => redirect_with(&settings, "/dashboard", &Notice::alert(status.message())),
    }
}

/// The campaign's design: its state, draft and words.
async fn design_of(
    core: &Core,
    session: &Session,
    workspace_id: i64,
    campaign_id: i64,
) -> Result<proto::Design, tonic::Status> {
    let request = proto::GetDesignRequest {
        workspace_id: Some(workspace_id),
        campaign_id: Some(campaign_id),
    };
    Ok(core
        .pages()
        .get_design(session.request(request))
        .await?
        .into_inner())
}
