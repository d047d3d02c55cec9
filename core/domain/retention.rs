//! Raw engagement events (each view, click, scroll, time and confirm beacon) are kept
//! `--event-retention-days` (400 by default), then pruned in the background in bounded batches.
//! What analytics, search, the engagement filter and scores read is kept apart as sums
//! (`page_engagement`, `campaign_visitors`, `campaign_view_classes`, `leads.score_base`), so
//! pruning changes none of them; only the timeline's oldest entries and the daily chart's
//! oldest days go.

use std::time::Duration;

use crate::App;
use crate::time::{self, Micros};

/// Events deleted per statement: short write transactions, whatever the backlog.
const BATCH: i64 = 5_000;
/// How often the pruner looks when there is nothing left to prune.
const EVERY: Duration = Duration::from_secs(3600);

/// Prunes old events once now and then every hour, for good.
pub async fn prune_forever(app: App) {
    loop {
        let cutoff =
            time::now() - i64::from(app.config.event_retention_days) * time::MICROS_PER_DAY;
        match prune(&app, cutoff).await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "old engagement events pruned"),
            Err(err) => tracing::warn!(error = %err, "old engagement events not pruned"),
        }
        tokio::time::sleep(EVERY).await;
    }
}

/// Deletes every event older than `cutoff`, [`BATCH`] per transaction; answers how many.
pub async fn prune(app: &App, cutoff: Micros) -> crate::Result<u64> {
    let mut pruned = 0;
    loop {
        let mut tx = app.db.begin_write().await?;
        let deleted =
            crate::store::engagement::delete_events_before(&mut tx, cutoff, BATCH).await?;
        tx.commit().await?;
        pruned += deleted;
        if deleted < BATCH as u64 {
            return Ok(pruned);
        }
        // Let other writers in between batches.
        tokio::task::yield_now().await;
    }
}
