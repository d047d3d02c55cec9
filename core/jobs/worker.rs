//! The job worker: claims pending chunks of input leads in batches and stores them, each batch
//! in one transaction together with the leads' outcomes, the jobs' counters and the callbacks
//! to send. A process killed at any point leaves its batch uncommitted, so the chunks are
//! pending again and are stored exactly once after a restart. On PostgreSQL, workers of
//! several processes share the chunks (`FOR UPDATE SKIP LOCKED`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::csv_import::Mapping;
use crate::domain::announcements::{self, Receiver};
use crate::domain::callback_events::{CallbackEvent, PageGenerated};
use crate::domain::ingest::{self, LeadPayload, Outcome, Target};
use crate::domain::jobs::JobOptions;
use crate::domain::page_changes::{self, Changed};
use crate::domain::{csv_imports, enrichment};
use crate::store::campaigns;
use crate::store::jobs::{self, RowResult};
use crate::{App, Result, time};

/// Input leads stored per transaction (about: whole chunks are claimed, up to four of
/// [`jobs::CHUNK_LEADS`]). A transaction writes each page it changed once, however often it
/// changed it: the leads' indexes are keyed by random slugs and by email, so 1,000 new leads
/// touch most leaf pages of a 100,000-lead index, and 4,000 touch barely more. SQLite alone
/// stored 100,000 leads 37% faster in transactions of 4,000 than of 1,000 (Python's sqlite3,
/// lps's tables). The price: another writer of this process waits for a batch to commit,
/// about 70 ms on the benchmark's machine instead of about 20.
pub const BATCH_LEADS: i64 = 4_000;

/// Starts `count` workers on a thread of their own ([`IMPORTS`]), working until the process
/// ends.
pub fn start(app: &App, count: usize) {
    for _ in 0..count {
        IMPORTS.spawn(run(app.clone()));
    }
}

/// The runtime lead jobs are stored on: one thread of its own, at background priority
/// (`crate::priority`), its writes on a connection of their own whose SQLite thread is
/// background too (`Db::begin_background_write`). A batch normalises, checks and binds
/// thousands of leads between two awaits; on the runtime that answers HTTP every request
/// behind it waited for that, and at the same priority the import took its share of a busy
/// CPU from visitors (a warm page's p99 went from under 1 ms to 27 ms while an import ran on
/// one CPU). Never dropped (a runtime must not be dropped inside another), it lives as long as
/// the process.
static IMPORTS: std::sync::LazyLock<tokio::runtime::Runtime> = std::sync::LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("lps-imports")
        .on_thread_start(crate::priority::lower_this_thread)
        .enable_all()
        .build()
        .expect("a runtime for lead jobs")
});

/// Works until the process ends.
async fn run(app: App) {
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

/// Stores one batch; returns how many input leads it took.
pub async fn process_batch(app: &App) -> Result<usize> {
    // A read first: claiming is a write, and on SQLite an idle worker's writes would queue
    // behind (and delay) everyone else's.
    if !jobs::has_pending_chunks(app.db.background()).await? {
        return Ok(0);
    }
    let dialect = app.db.dialect();
    let now = time::now();
    let mut tx = app.db.begin_background_write().await?;
    let chunks = jobs::claim_chunks(&mut tx, dialect, BATCH_LEADS).await?;
    if chunks.is_empty() {
        tx.rollback().await?;
        return Ok(0);
    }
    let taken: i64 = chunks.iter().map(|chunk| chunk.row_count).sum();
    let mut by_job: BTreeMap<String, Vec<jobs::ClaimedChunk>> = BTreeMap::new();
    for chunk in chunks {
        by_job.entry(chunk.job_id.clone()).or_default().push(chunk);
    }
    let mut wants_callbacks = false;
    let mut wants_enrichment = false;
    // Leads that existed before: their pages change (new ones had none to change).
    let mut updated_leads: Vec<i64> = Vec::new();
    // For metrics, once committed.
    let (mut stored_rows, mut failed_rows) = (0u64, 0u64);
    let mut finished_jobs: Vec<(String, time::Micros)> = Vec::new();
    for (job_id, chunks) in &by_job {
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
        // A CSV import's chunks hold the file's rows, mapped here by the job's mapping.
        // A mapping that no longer reads (it was checked when chosen) fails the rows, not the
        // batch: a retried batch would fail again.
        let mapping = options.csv.as_ref().and_then(|csv| {
            csv_imports::job_mapping(csv)
                .inspect_err(|err| tracing::error!(job_id, error = %err, "a CSV job's mapping"))
                .ok()
        });
        let payloads: Vec<LeadPayload> = chunks
            .iter()
            .flat_map(|chunk| read_chunk(chunk, mapping.as_ref()))
            .collect();
        let outcomes = ingest::store(&mut tx, &target, &payloads, now).await?;
        updated_leads.extend(outcomes.iter().filter_map(|outcome| match outcome {
            Outcome::Stored(lead) if !lead.created => Some(lead.id),
            _ => None,
        }));

        let mut results = outcomes.iter().map(|outcome| match outcome {
            Outcome::Stored(lead) => RowResult::Stored(lead.id),
            Outcome::Failed(reason) => RowResult::Failed(reason.clone()),
        });
        let finished: Vec<(i64, Vec<RowResult>)> = chunks
            .iter()
            .map(|chunk| {
                let count = chunk.row_count as usize;
                (chunk.id, results.by_ref().take(count).collect())
            })
            .collect();
        jobs::finish_chunks(&mut tx, &finished).await?;
        if options.csv.is_some() {
            let reasons = outcomes.iter().map(|outcome| match outcome {
                Outcome::Failed(reason) => Some(reason.as_str()),
                Outcome::Stored(_) => None,
            });
            let rejected = csv_imports::rejected_rows(&payloads, reasons);
            crate::store::csv_imports::reject(&mut tx, job_id, &rejected, now).await?;
        }
        let failed = outcomes
            .iter()
            .filter(|outcome| matches!(outcome, Outcome::Failed(_)))
            .count() as i64;
        let created = outcomes
            .iter()
            .filter(|outcome| matches!(outcome, Outcome::Stored(lead) if lead.created))
            .count() as i64;
        let counts = jobs::Handled {
            processed: outcomes.len() as i64,
            failed,
            created,
        };
        let (status, accepted_at) = jobs::advance(&mut *tx, job_id, counts, now).await?;
        stored_rows += outcomes.len() as u64 - failed as u64;
        failed_rows += failed as u64;

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
        } else if matches!(status.as_str(), "completed" | "failed") {
            finished_jobs.push((status, accepted_at));
        }

        // `lead.page_generated` per lead whose page now exists, when anyone hears it: the
        // job's callback address or a channel of the workspace.
        let heard = job.campaign_id.is_some()
            && (job.callback_url.is_some()
                || announcements::heard_in(&mut tx, job.workspace_id).await?);
        let campaign = match job.campaign_id {
            Some(id) if heard => campaigns::get(&mut *tx, id).await?,
            _ => None,
        };
        if let Some(campaign) = campaign {
            let addresses = crate::domain::domains::page_addresses(app).await?;
            let pending: Vec<CallbackEvent> = outcomes
                .iter()
                .filter_map(|outcome| match outcome {
                    Outcome::Stored(lead) => Some(lead),
                    Outcome::Failed(_) => None,
                })
                .map(|lead| {
                    CallbackEvent::PageGenerated(PageGenerated {
                        job_id: job.id.clone(),
                        lead_id: lead.id,
                        campaign_id: campaign.id,
                        service_page_url: addresses.page_url(
                            campaign.workspace_id,
                            campaign.public_slug(),
                            &lead.slug,
                        ),
                        name: lead.name.clone(),
                        email: lead.email.clone(),
                        company_name: lead.company_name.clone(),
                    })
                })
                .collect();
            let lead_ids: Vec<i64> = pending.iter().map(CallbackEvent::lead_id).collect();
            let to = Receiver {
                workspace_id: job.workspace_id,
                url: job.callback_url.as_deref(),
                job_id: Some(&job.id),
            };
            wants_callbacks |= announcements::announce(&mut tx, app, &to, pending, now).await?;
            if let Some(url) = &job.callback_url {
                crate::store::leads::set_callback_url(&mut tx, &lead_ids, url).await?;
            }
        }
        crate::store::notify(&mut tx, dialect, super::events::CHANNEL, job_id).await?;
    }
    updated_leads.sort_unstable();
    updated_leads.dedup();
    page_changes::commit(app, tx, Changed::Leads(updated_leads)).await?;
    crate::metrics::lead_rows(stored_rows, failed_rows);
    let committed_at = time::now();
    for (status, accepted_at) in finished_jobs {
        let seconds = (committed_at - accepted_at).max(0) as f64 / 1e6;
        crate::metrics::job_finished(&status, seconds);
    }
    for job_id in by_job.keys() {
        app.events.publish(job_id);
    }
    if wants_callbacks {
        app.callbacks_due.notify_one();
    }
    if wants_enrichment {
        app.enrichments_due.notify_one();
    }
    Ok(taken as usize)
}

/// A chunk's leads, exactly `row_count` of them: one that cannot be read fails alone. A CSV
/// import's chunk (`mapping` given) holds rows; one staged before rows were kept as read holds
/// leads, and is read as such.
fn read_chunk(chunk: &jobs::ClaimedChunk, mapping: Option<&Mapping>) -> Vec<LeadPayload> {
    let unreadable = || LeadPayload {
        invalid: Some("The stored lead could not be read.".into()),
        ..LeadPayload::default()
    };
    let read_leads = || -> Vec<LeadPayload> {
        // The chunk was written by `enqueue`, so it reads in one pass; item by item only if not.
        serde_json::from_str(&chunk.payload).unwrap_or_else(|_| {
            let items: Vec<serde_json::Value> =
                serde_json::from_str(&chunk.payload).unwrap_or_default();
            items
                .into_iter()
                .map(|item| serde_json::from_value(item).unwrap_or_else(|_| unreadable()))
                .collect()
        })
    };
    let mut leads = mapping
        .and_then(|mapping| csv_imports::chunk_leads(mapping, &chunk.payload))
        .unwrap_or_else(read_leads);
    leads.resize_with(chunk.row_count as usize, unreadable);
    leads
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(payload: &str, row_count: i64) -> jobs::ClaimedChunk {
        jobs::ClaimedChunk {
            id: 1,
            job_id: "job".into(),
            row_count,
            payload: payload.into(),
        }
    }

    #[test]
    fn a_chunk_yields_exactly_its_row_count_and_a_bad_lead_fails_alone() {
        let leads = read_chunk(&chunk(r#"[{"values":{"email":"a@b.co"}}, 7]"#, 2), None);
        assert_eq!(leads.len(), 2);
        assert_eq!(leads[0].values["email"], "a@b.co");
        assert!(leads[0].invalid.is_none());
        assert!(leads[1].invalid.is_some());

        let unreadable = read_chunk(&chunk("not json", 3), None);
        assert_eq!(unreadable.len(), 3);
        assert!(unreadable.iter().all(|lead| lead.invalid.is_some()));
    }

    #[test]
    fn a_csv_chunk_holds_rows_mapped_by_the_job_and_a_row_that_is_no_lead_fails_with_its_line() {
        let mapping = Mapping::recognise(&["Work Email".into(), "First Name".into()]);
        let rows = r#"[{"line":2,"fields":["ann@example.com","Ann"]},{"line":3,"fields":["Bob"]}]"#;
        let leads = read_chunk(&chunk(rows, 2), Some(&mapping));
        assert_eq!(leads[0].values["email"], "ann@example.com");
        assert_eq!(leads[0].values["first_name"], "Ann");
        assert_eq!(leads[0].row.as_ref().map(|row| row.line), Some(2));
        assert!(leads[0].invalid.is_none());
        let failed = leads[1].invalid.as_deref().unwrap_or_default();
        assert!(failed.starts_with("Line 3: "), "{failed}");
        assert!(failed.contains("1 field"), "{failed}");
        assert_eq!(leads[1].row.as_ref().map(|row| row.fields.len()), Some(1));

        // Staged before rows were kept as read: leads, each with its row.
        let old = r#"[{"values":{"email":"cy@example.com"},"row":{"line":2,"fields":["cy@example.com",""]}}]"#;
        let leads = read_chunk(&chunk(old, 1), Some(&mapping));
        assert_eq!(leads[0].values["email"], "cy@example.com");
        assert!(leads[0].invalid.is_none());
    }

    #[test]
    fn results_are_kept_as_lead_ids_or_reasons() {
        let results = vec![
            RowResult::Stored(7),
            RowResult::Failed("Lead not found".into()),
        ];
        let json = serde_json::to_string(&results).unwrap();
        assert_eq!(json, r#"[7,"Lead not found"]"#);
        assert_eq!(
            serde_json::from_str::<Vec<RowResult>>(&json).unwrap(),
            results
        );
    }
}
