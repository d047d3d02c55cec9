//! The job worker: claims pending input rows in batches and stores them, each batch in one
//! transaction together with the rows' outcomes, the jobs' counters and the callbacks to send.
//! A process killed at any point leaves its batch uncommitted, so the rows are pending again
//! and are stored exactly once after a restart. On PostgreSQL, workers of several processes
//! share the rows (`FOR UPDATE SKIP LOCKED`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use crate::domain::enrichment;
use crate::domain::ingest::{self, LeadPayload, Outcome, Target};
use crate::domain::jobs::JobOptions;
use crate::domain::page_changes::{self, Changed};
use crate::store::callbacks::{self, NewCallback};
use crate::store::campaigns;
use crate::store::jobs::{self, RowResult};
use crate::{App, Result, time};

/// Input rows stored per transaction.
pub const BATCH_ROWS: i64 = 1_000;

/// Works until the process ends.
pub async fn run(app: App) {
    let mut worked = false;
    loop {
        match crate::store::retry_conflicts(|| process_batch(&app)).await {
            Ok(0) => {
                if std::mem::take(&mut worked) {
                    // A burst of imports is over: give its buffers back to the system.
                    crate::memory::release_freed();
                }
                tokio::select! {
                    _ = app.work.notified() => {}
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                }
            }
            Ok(_) => worked = true,
            Err(err) => {
                tracing::error!(error = ?err, "lead job batch failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Stores one batch; returns how many rows it took.
pub async fn process_batch(app: &App) -> Result<usize> {
    // A read first: claiming is a write, and on SQLite an idle worker's writes would queue
    // behind (and delay) everyone else's.
    if !jobs::has_pending_rows(app.db.pool()).await? {
        return Ok(0);
    }
    let dialect = app.db.dialect();
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    let rows = jobs::claim_rows(&mut tx, dialect, BATCH_ROWS).await?;
    if rows.is_empty() {
        tx.rollback().await?;
        return Ok(0);
    }
    let mut by_job: BTreeMap<String, Vec<jobs::ClaimedRow>> = BTreeMap::new();
    for row in rows.iter().cloned() {
        by_job.entry(row.job_id.clone()).or_default().push(row);
    }
    let mut wants_callbacks = false;
    let mut wants_enrichment = false;
    // Leads that existed before: their pages change (new ones had none to change).
    let mut updated_leads: Vec<i64> = Vec::new();
    for (job_id, rows) in &by_job {
        let Some(job) = jobs::get(&mut *tx, job_id).await? else {
            continue;
        };
        let options: JobOptions = serde_json::from_str(&job.options).unwrap_or_default();
        let target = Target {
            workspace_id: job.workspace_id,
            campaign_ids: job
                .campaign_id
                .into_iter()
                .chain(options.campaign_ids.iter().copied())
                .collect(),
            audience_id: job.audience_id,
            source: options.from.clone(),
        };
        let payloads: Vec<LeadPayload> = rows
            .iter()
            .map(|row| {
                serde_json::from_str(&row.payload).unwrap_or_else(|_| LeadPayload {
                    invalid: Some("The stored lead could not be read.".into()),
                    ..LeadPayload::default()
                })
            })
            .collect();
        let outcomes = ingest::store(&mut tx, &target, &payloads, now).await?;
        updated_leads.extend(outcomes.iter().filter_map(|outcome| match outcome {
            Outcome::Stored(lead) if !lead.created => Some(lead.id),
            _ => None,
        }));

        let results: Vec<RowResult> = rows
            .iter()
            .zip(&outcomes)
            .map(|(row, outcome)| match outcome {
                Outcome::Stored(lead) => RowResult {
                    row_id: row.id,
                    lead_id: Some(lead.id),
                    error: None,
                },
                Outcome::Failed(reason) => RowResult {
                    row_id: row.id,
                    lead_id: None,
                    error: Some(reason.as_str()),
                },
            })
            .collect();
        jobs::finish_rows(&mut tx, &results).await?;
        let failed = results.iter().filter(|r| r.error.is_some()).count() as i64;
        jobs::advance(&mut *tx, job_id, rows.len() as i64, failed, now).await?;

        // The flags' enrichment of the leads just stored.
        let kinds = enrichment::kinds_of_flags(&options);
        if !kinds.is_empty() {
            let mut ids: Vec<i64> = outcomes
                .iter()
                .filter_map(|outcome| match outcome {
                    Outcome::Stored(lead) => Some(lead.id),
                    Outcome::Failed(_) => None,
                })
                .collect();
            ids.sort_unstable();
            ids.dedup();
            let leads =
                crate::store::leads::find_matches(&mut tx, job.workspace_id, &ids, &[], &[], &[])
                    .await?;
            wants_enrichment |=
                enrichment::queue_after_import(app, &mut tx, &job, &kinds, &leads, now).await?;
            jobs::continue_with_enrichment(&mut *tx, job_id, now).await?;
        }

        // A callback per lead whose page now exists.
        let campaign = match job.campaign_id {
            Some(id) if job.callback_url.is_some() => campaigns::get(&mut *tx, id).await?,
            _ => None,
        };
        if let (Some(url), Some(campaign)) = (&job.callback_url, campaign) {
            let pending: Vec<NewCallback> = outcomes
                .iter()
                .filter_map(|outcome| match outcome {
                    Outcome::Stored(lead) => Some(lead),
                    Outcome::Failed(_) => None,
                })
                .map(|lead| {
                    let payload = json!({
                        "event": callbacks::PAGE_GENERATED,
                        "job_id": job.id,
                        "lead_id": lead.id,
                        "campaign_id": campaign.id,
                        "service_page_url":
                            crate::domain::lead::page_url(&app.config.public_url, &campaign.slug, &lead.slug),
                        "name": lead.name,
                        "email": lead.email,
                        "company_name": lead.company_name,
                    });
                    NewCallback {
                        event: callbacks::PAGE_GENERATED,
                        workspace_id: job.workspace_id,
                        destination: callbacks::destination_of(url),
                        job_id: job.id.clone(),
                        lead_id: lead.id,
                        url: url.clone(),
                        payload: payload.to_string(),
                    }
                })
                .collect();
            wants_callbacks |= !pending.is_empty();
            callbacks::insert_many(&mut tx, &pending, now).await?;
            let lead_ids: Vec<i64> = pending.iter().map(|callback| callback.lead_id).collect();
            crate::store::leads::set_callback_url(&mut tx, &lead_ids, url).await?;
        }
        crate::store::notify(&mut tx, dialect, super::events::CHANNEL, job_id).await?;
    }
    updated_leads.sort_unstable();
    updated_leads.dedup();
    page_changes::commit(app, tx, Changed::Leads(updated_leads)).await?;
    for job_id in by_job.keys() {
        app.events.publish(job_id);
    }
    if wants_callbacks {
        app.callbacks_due.notify_one();
    }
    if wants_enrichment {
        app.enrichments_due.notify_one();
    }
    Ok(rows.len())
}
