//! AI design runs: started (credits taken, or 402 with nothing queued), read, cancelled (credits
//! given back), and carried out by the design worker (`jobs/design_runs.rs`).

use crate::App;
use crate::auth::Principal;
use crate::domain::campaigns;
use crate::domain::credits::{self, Payer};
use crate::error::Outage;
use crate::generator::DesignDraft;
use crate::store::design_runs::{self, NewRun, RunRow};
use crate::store::{self, designs};
use crate::{Error, Result, time};

/// Characters of a prompt kept.
pub const MAX_PROMPT_CHARS: usize = 20_000;

pub const QUEUED: &str = "queued";
pub const RUNNING: &str = "running";
pub const SUCCESS: &str = "success";
pub const ERROR: &str = "error";
pub const CANCELLED: &str = "cancelled";

/// Queues a run for the campaign, taking its credits in the same transaction: without enough
/// credits (the pool, or the workspace's cap), `NoCredits` and nothing is queued; without a
/// model configured, `Unavailable(NoModel)` before anything is spent (there is no offline
/// stand-in: a premade design is a template to apply, free, not a generation to pay for).
pub async fn start(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
    prompt: &str,
    replace: bool,
) -> Result<RunRow> {
    let campaign = campaigns::in_workspace(&app.db, principal, workspace_id, campaign_id).await?;
    if !app.generator.has_model() {
        return Err(Error::Unavailable(Outage::NoModel));
    }
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let payer = Payer::of(&workspace);
    let id = uuid::Uuid::new_v4().to_string();
    let cost = app.config.costs.design_run;
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    credits::spend(&mut tx, payer, cost, "design_run", &id, now).await?;
    let run = NewRun {
        id: &id,
        workspace_id: workspace.id,
        campaign_id: campaign.id,
        prompt,
        replace_design: replace,
        credits: cost,
    };
    design_runs::insert(&mut *tx, &run, now).await?;
    store::notify(&mut tx, app.db.dialect(), crate::jobs::events::CHANNEL, &id).await?;
    tx.commit().await?;
    app.design_runs_due.notify_one();
    app.events.publish(&id);
    Ok(RunRow {
        id,
        workspace_id: workspace.id,
        campaign_id: campaign.id,
        prompt: prompt.to_owned(),
        replace_design: i64::from(replace),
        status: QUEUED.to_owned(),
        error: None,
        credits: cost,
        attempts: 0,
    })
}

/// The run, if it is in the given (reachable) workspace; otherwise "Design run not found".
pub async fn get(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    run_id: &str,
) -> Result<RunRow> {
    let workspace = principal.reach(&app.db, workspace_id).await?;
    design_runs::get(app.db.pool(), run_id)
        .await?
        .filter(|run| run.workspace_id == workspace.id)
        .ok_or(Error::NotFound("Design run not found"))
}

/// Cancels a queued or running run and gives its credits back; a run that has ended is a
/// precondition failure.
pub async fn cancel(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    run_id: &str,
) -> Result<RunRow> {
    let run = get(app, principal, workspace_id, run_id).await?;
    if !end(app, &run, Ending::Cancelled).await? {
        return Err(Error::Precondition(
            "The design run has already ended; only a queued or running run can be cancelled.",
        ));
    }
    get(app, principal, workspace_id, run_id).await
}

/// How a run ends.
pub(crate) enum Ending<'a> {
    /// The design goes into the campaign's draft.
    Success(&'a DesignDraft),
    /// Why, for the run's `error`; the credits are given back.
    Failed(&'a str),
    /// The credits are given back.
    Cancelled,
}

/// Ends a run that has not ended yet, in one transaction with what goes with the ending (the
/// draft, or the refund); false when it had already ended (a cancel won the race, say), and
/// then nothing else is written.
pub(crate) async fn end(app: &App, run: &RunRow, ending: Ending<'_>) -> Result<bool> {
    let payer = Payer::of_workspace(app.db.pool(), run.workspace_id).await?;
    let now = time::now();
    let (from, status, error): (&[&str], _, _) = match ending {
        Ending::Success(_) => (&[RUNNING], SUCCESS, None),
        Ending::Failed(reason) => (&[QUEUED, RUNNING], ERROR, Some(reason)),
        Ending::Cancelled => (&[QUEUED, RUNNING], CANCELLED, None),
    };
    let mut tx = app.db.begin_write().await?;
    let ended = design_runs::finish(&mut *tx, &run.id, from, status, error, now).await?;
    if ended {
        match ending {
            Ending::Success(draft) => {
                designs::set_draft(&mut *tx, run.campaign_id, &draft.html, &draft.css, now).await?;
            }
            Ending::Failed(_) | Ending::Cancelled => {
                credits::refund(
                    &mut tx,
                    payer,
                    run.credits,
                    "design_run_refund",
                    &run.id,
                    now,
                )
                .await?;
            }
        }
    }
    store::notify(
        &mut tx,
        app.db.dialect(),
        crate::jobs::events::CHANNEL,
        &run.id,
    )
    .await?;
    tx.commit().await?;
    app.events.publish(&run.id);
    Ok(ended)
}

/// Tells watchers (this process, and others through PostgreSQL) that the run changed.
pub(crate) async fn announce(app: &App, run_id: &str) {
    app.events.publish(run_id);
    if let Ok(mut conn) = app.db.pool().acquire().await {
        let _ = store::notify(
            &mut conn,
            app.db.dialect(),
            crate::jobs::events::CHANNEL,
            run_id,
        )
        .await;
    }
}
