//! The design worker: takes queued runs (and running ones whose process died, by their lease),
//! asks the generator, and ends each run in `success` (the cleaned, compiled design in the
//! campaign's draft) or `error` (a readable reason, credits given back). A run cancelled
//! meanwhile keeps its `cancelled` status and its draft is not touched.

use std::time::Duration;

use crate::App;
use crate::domain::design_runs::{self, Ending};
use crate::generator::DesignDraft;
use crate::render;
use crate::store::design_runs::{self as runs, RunRow};
use crate::store::designs;
use crate::time;

/// Attempts before a run that keeps losing its process ends in `error`.
const MAX_ATTEMPTS: i64 = 3;
/// How often the queue is looked at without a nudge.
const POLL: Duration = Duration::from_secs(2);

pub async fn run(app: App) {
    loop {
        match next(&app).await {
            Ok(Some(run)) => carry_out(&app, run).await,
            Ok(None) => {
                let _ = tokio::time::timeout(POLL, app.design_runs_due.notified()).await;
            }
            Err(err) => {
                tracing::error!(error = %err, "design runs could not be claimed");
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

async fn next(app: &App) -> crate::Result<Option<RunRow>> {
    let now = time::now();
    // Until then the run is this process's; after it, another (or a restarted) process takes
    // it over.
    let lease_until = now + app.config.design_run_lease.as_micros() as i64;
    let mut tx = app.db.begin_write().await?;
    let run = runs::claim_next(&mut tx, app.db.dialect(), now, lease_until).await?;
    tx.commit().await?;
    if let Some(run) = &run {
        design_runs::announce(app, &run.id).await;
    }
    Ok(run)
}

async fn carry_out(app: &App, run: RunRow) {
    let outcome = if run.attempts > MAX_ATTEMPTS {
        Err("The design run was interrupted too many times.".to_owned())
    } else {
        generate(app, &run).await
    };
    let ended = match &outcome {
        Ok(draft) => design_runs::end(app, &run, Ending::Success(draft)).await,
        Err(reason) => design_runs::end(app, &run, Ending::Failed(reason)).await,
    };
    if let Err(err) = ended {
        // The lease runs out and the run is taken again.
        tracing::error!(error = %err, run = run.id, "a design run could not be ended");
    }
}

/// The cleaned, compiled design for the run, or why there is none.
async fn generate(app: &App, run: &RunRow) -> Result<DesignDraft, String> {
    let current = if run.replace_design == 0 {
        designs::get(app.db.pool(), run.campaign_id)
            .await
            .map_err(|_| "The current design could not be read.".to_owned())?
            .and_then(|row| {
                row.draft_html.map(|html| DesignDraft {
                    html,
                    css: row.draft_css.unwrap_or_default(),
                })
            })
    } else {
        None
    };
    let draft = app.generator.design(&run.prompt, current.as_ref()).await?;
    let (html, css) = render::cleaned_and_checked(draft.html, draft.css)
        .await
        .map_err(|err| match err {
            crate::Error::Invalid(violations) => format!(
                "The generated design cannot be used: {}",
                violations
                    .first()
                    .map_or("it does not compile.", |v| v.message.as_str())
            ),
            _ => "The generated design could not be checked; try again.".to_owned(),
        })?;
    Ok(DesignDraft { html, css })
}
