//! An AI design run for a campaign: starting it (`/generate`), its progress
//! (`/runs/{run_id}`) and cancelling it.

use axum::extract::{Path, State};
use axum::response::Response;
use http::HeaderMap;
use lps::proto;
use serde::Serialize;

use super::campaign_address;
use crate::core_client::Core;
use crate::dashboard::{
    CampaignScreen, Notice, Settings, SignedForm, after_action, number, redirect_with, screen,
    text, unavailable,
};

/// Starts an AI design run and shows its progress.
pub async fn generate(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(campaign_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let campaign_id = campaign_id.parse::<i64>().unwrap_or_default();
    let workspace_id = number(&form, "workspace_id");
    let outcome = core
        .pages()
        .generate_design(session.request(proto::GenerateDesignRequest {
            workspace_id,
            campaign_id: Some(campaign_id),
            prompt: text(&form, "prompt"),
            replace: Some(form.get("replace").is_some_and(|v| v == "on")),
        }))
        .await;
    match outcome {
        Ok(run) => {
            let run = run.into_inner();
            redirect_with(
                &settings,
                &format!(
                    "/dashboard/campaigns/{campaign_id}/runs/{}?workspace_id={}",
                    run.run_id,
                    workspace_id.unwrap_or_default()
                ),
                &Notice::news("The design run started."),
            )
        }
        Err(status) => redirect_with(
            &settings,
            &campaign_address(campaign_id),
            &Notice::alert(status.message()),
        ),
    }
}

#[derive(Serialize)]
struct RunView {
    campaign_id: i64,
    workspace_id: i64,
    run_id: String,
    csrf: String,
    state: &'static str,
    going: bool,
    succeeded: bool,
    error: Option<String>,
}

/// A design run's progress; the screen reloads itself while it runs (with the script).
pub async fn run(
    State(core): State<Core>,
    CampaignScreen {
        session,
        person,
        workspace_id,
        campaign,
    }: CampaignScreen,
    headers: HeaderMap,
    Path((_, run_id)): Path<(String, String)>,
) -> Response {
    let run = match core
        .pages()
        .get_design_run(session.request(proto::DesignRunRequest {
            workspace_id: Some(workspace_id),
            run_id: Some(run_id.clone()),
        }))
        .await
    {
        Ok(reply) => reply.into_inner(),
        Err(status) if status.code() == tonic::Code::NotFound => {
            return crate::dashboard::gone("This design run does not exist.");
        }
        Err(status) => return unavailable(&status),
    };
    use proto::design_run::State as Run;
    let state = Run::try_from(run.status).unwrap_or(Run::Unspecified);
    let view = RunView {
        campaign_id: campaign.id,
        workspace_id,
        run_id,
        csrf: person.csrf_token.clone(),
        state: match state {
            Run::Queued => "Waiting for its turn",
            Run::Running => "Designing",
            Run::Success => "Done: the draft holds the new design",
            Run::Error => "Failed; its credits were given back",
            Run::Cancelled => "Cancelled; its credits were given back",
            Run::Unspecified => "Unknown",
        },
        going: matches!(state, Run::Queued | Run::Running),
        succeeded: state == Run::Success,
        error: run.error,
    };
    screen(
        &headers,
        &format!("AI design run for {}", campaign.name),
        "run.html",
        view,
    )
}

/// Cancels a design run (its credits are given back).
pub async fn cancel_run(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path((campaign_id, run_id)): Path<(String, String)>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let workspace_id = number(&form, "workspace_id");
    let outcome = core
        .pages()
        .cancel_design_run(session.request(proto::DesignRunRequest {
            workspace_id,
            run_id: Some(run_id.clone()),
        }))
        .await;
    after_action(
        &settings,
        &format!(
            "/dashboard/campaigns/{campaign_id}/runs/{run_id}?workspace_id={}",
            workspace_id.unwrap_or_default()
        ),
        outcome,
        "The run was cancelled.",
    )
}
