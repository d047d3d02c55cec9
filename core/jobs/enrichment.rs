//! The enrichment worker: claims queued leads in small batches (leased, so the leads of a
//! process that died are taken over when the lease runs out), enriches them concurrently
//! outside any transaction (fetching and model calls take seconds), then ends the batch in one
//! transaction ([`crate::domain::enrichment::finish`]).

use std::time::Duration;

use tokio::task::JoinSet;

use crate::App;
use crate::domain::enrichment;
use crate::enricher::{EnrichError, Enriched};
use crate::store::enrichments::{self, EnrichmentRow};
use crate::store::leads;
use crate::time;

/// Leads enriched at once by one worker.
pub const BATCH: i64 = 16;
/// How long claimed leads belong to this process: longer than a lead's enrichment can take
/// (each fetch is bounded to 15 s, each model call to 3 attempts of 90 s).
const LEASE: Duration = Duration::from_secs(600);
/// Attempts before a lead that keeps losing its process fails.
const MAX_ATTEMPTS: i64 = 3;
/// How often the queue is looked at without a nudge.
const POLL: Duration = Duration::from_secs(1);

pub async fn run(app: App) {
    loop {
        match next_batch(&app).await {
            Ok(rows) if !rows.is_empty() => carry_out(&app, rows).await,
            Ok(_) => {
                if let Err(err) = enrichment::end_finished_jobs(&app).await {
                    tracing::error!(error = %err, "enrichment jobs could not be ended");
                }
                let _ = tokio::time::timeout(POLL, app.enrichments_due.notified()).await;
            }
            Err(err) => {
                tracing::error!(error = %err, "enrichments could not be claimed");
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

async fn next_batch(app: &App) -> crate::Result<Vec<EnrichmentRow>> {
    let now = time::now();
    if !enrichments::has_due(app.db.pool(), now).await? {
        return Ok(Vec::new());
    }
    let lease_until = now + LEASE.as_micros() as i64;
    let mut tx = app.db.begin_write().await?;
    let rows = enrichments::claim(&mut tx, app.db.dialect(), BATCH, now, lease_until).await?;
    tx.commit().await?;
    if !rows.is_empty() {
        enrichment::started(app, &rows).await?;
    }
    Ok(rows)
}

async fn carry_out(app: &App, rows: Vec<EnrichmentRow>) {
    let mut running = JoinSet::new();
    for row in rows {
        let app = app.clone();
        running.spawn(async move {
            let found = enrich(&app, &row).await;
            (row, found)
        });
    }
    let mut done = Vec::new();
    while let Some(joined) = running.join_next().await {
        match joined {
            Ok(pair) => done.push(pair),
            Err(err) => tracing::error!(error = %err, "an enrichment task failed"),
        }
    }
    if let Err(err) = crate::store::retry_conflicts(|| enrichment::finish(app, &done)).await {
        // The leases run out and the leads are taken again.
        tracing::error!(error = %err, "an enrichment batch could not be ended");
    }
}

/// What one lead's row finds, as the lead is now.
async fn enrich(app: &App, row: &EnrichmentRow) -> Enriched {
    let kinds = enrichment::kinds_of_row(row);
    let fail_all = |reason: EnrichError| Enriched {
        values: Default::default(),
        failures: kinds.iter().map(|kind| (*kind, reason.clone())).collect(),
    };
    if row.attempts > MAX_ATTEMPTS {
        return fail_all(EnrichError::Interrupted);
    }
    match leads::get(app.db.pool(), row.lead_id).await {
        Ok(Some(lead)) => {
            let facts = enrichment::facts_of(&lead.lead);
            app.enricher.enrich(&facts, &kinds).await
        }
        Ok(None) => fail_all(EnrichError::LeadGone),
        Err(err) => {
            tracing::error!(error = %err, lead = row.lead_id, "a lead could not be read");
            fail_all(EnrichError::LeadUnreadable)
        }
    }
}
