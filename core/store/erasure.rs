//! Erasing leads (`POST /leads/delete`) and exporting one (`GET /leads/export`): every row that
//! holds a lead's data, found by the lead's id.
//!
//! The ids are lps's own integers, written into the statements as numbers (they cannot carry
//! SQL), so one list serves several places of a statement.

use std::collections::BTreeMap;

use sqlx::{Any, AnyConnection, Executor, FromRow};

use super::Dialect;
use super::engagement::event_ids_of;
use crate::time::Micros;

/// `1, 2, 3`: ids as a SQL list.
fn id_list(ids: &[i64]) -> String {
    ids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which of the ids are leads of the workspace, locked until the transaction ends (on
/// PostgreSQL a concurrent import of the same lead waits, then finds it gone).
pub async fn lock_leads(
    conn: &mut AnyConnection,
    dialect: Dialect,
    workspace_id: i64,
    ids: &[i64],
) -> sqlx::Result<Vec<i64>> {
    let sql = format!(
        "SELECT id FROM leads WHERE workspace_id = $1 AND id IN ({}) ORDER BY id{}",
        id_list(ids),
        dialect.for_update()
    );
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(workspace_id)
        .fetch_all(&mut *conn)
        .await
}

/// Removes every row of the leads' (their events, sums, form submissions, callbacks pending
/// or sent, enrichments, audience and campaign memberships, the leads), keeping the
/// campaigns' sums consistent: their views by class lose the leads' views, and visitors seen
/// only on these leads' pages stop being counted. Answers the rows removed per kind.
/// The ids are the workspace's leads, locked by [`lock_leads`].
pub async fn erase_leads(
    conn: &mut AnyConnection,
    ids: &[i64],
) -> sqlx::Result<BTreeMap<&'static str, u64>> {
    let list = id_list(ids);
    let mut removed = BTreeMap::new();
    let views: Vec<(i64, String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(views_of(&list)))
        .fetch_all(&mut *conn)
        .await?;
    for (campaign_id, class, count) in views {
        sqlx::query(
            "UPDATE campaign_view_classes SET views = views - $3
             WHERE campaign_id = $1 AND class = $2",
        )
        .bind(campaign_id)
        .bind(class)
        .bind(count)
        .execute(&mut *conn)
        .await?;
    }
    let visitors = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM campaign_visitors AS v
         WHERE EXISTS (SELECT 1 FROM page_events e
                       WHERE e.campaign_id = v.campaign_id AND e.visitor = v.visitor
                         AND e.is_bot = 0 AND e.lead_id IN ({list}))
           AND NOT EXISTS (SELECT 1 FROM page_events o
                           WHERE o.campaign_id = v.campaign_id AND o.visitor = v.visitor
                             AND o.is_bot = 0 AND o.lead_id NOT IN ({list}))"
    )))
    .execute(&mut *conn)
    .await?;
    removed.insert("visitors", visitors.rows_affected());
    for (kind, table) in [
        ("events", "page_events"),
        ("page_sums", "page_engagement"),
        ("form_submissions", "form_submissions"),
        ("callbacks", "callbacks"),
        ("enrichments", "enrichments"),
        ("audience_memberships", "audience_leads"),
        ("pages", "campaign_leads"),
        ("leads", "leads"),
    ] {
        let done = sqlx::query(sqlx::AssertSqlSafe(rows_of(table, &list)))
            .execute(&mut *conn)
            .await?;
        removed.insert(kind, done.rows_affected());
    }
    Ok(removed)
}

/// The statement counting the views of the leads `list`, by campaign and class.
fn views_of(list: &str) -> String {
    format!(
        "SELECT campaign_id, class, CAST(COUNT(*) AS BIGINT) FROM page_events
         WHERE kind = 'view' AND id IN ({}) GROUP BY campaign_id, class",
        event_ids_of(list)
    )
}

/// The statement removing the rows of `table` that belong to the leads `list` (of `leads`:
/// the leads themselves; of `page_events`: their beacons, found as [`event_ids_of`] says).
fn rows_of(table: &str, list: &str) -> String {
    match table {
        "leads" => format!("DELETE FROM leads WHERE id IN ({list})"),
        "page_events" => format!(
            "DELETE FROM page_events WHERE id IN ({})",
            event_ids_of(list)
        ),
        _ => format!("DELETE FROM {table} WHERE lead_id IN ({list})"),
    }
}

/// Keeps the record of an erasure (no personal data).
pub async fn record(
    conn: &mut AnyConnection,
    workspace_id: i64,
    ids: &[i64],
    erased_by: &str,
    removed: &BTreeMap<&'static str, u64>,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO erasures (workspace_id, lead_ids, erased_by, removed, erased_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(workspace_id)
    .bind(serde_json::to_string(ids).unwrap_or_default())
    .bind(erased_by)
    .bind(serde_json::to_string(removed).unwrap_or_default())
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// One beacon of a lead's, every class, for an export.
#[derive(Debug, Clone, FromRow)]
pub struct ExportedEvent {
    pub kind: String,
    pub campaign_id: i64,
    pub class: String,
    pub reason: Option<String>,
    pub seconds: i64,
    pub target: Option<String>,
    pub created_at: Micros,
}

/// The statement answering a lead's beacons of every class, oldest first (`$1`: the lead's id).
fn events_of_lead() -> String {
    format!(
        "SELECT kind, campaign_id, class, reason, seconds, target, created_at FROM page_events
         WHERE id IN ({}) ORDER BY id",
        event_ids_of("$1")
    )
}

pub async fn events_of<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_id: i64,
) -> sqlx::Result<Vec<ExportedEvent>> {
    sqlx::query_as(sqlx::AssertSqlSafe(events_of_lead()))
        .bind(lead_id)
        .fetch_all(ex)
        .await
}

/// One callback about a lead, pending or sent, for an export.
#[derive(Debug, Clone, FromRow)]
pub struct ExportedCallback {
    pub url: String,
    pub payload: String,
    pub status: String,
    pub attempts: i64,
    pub created_at: Micros,
}

pub async fn callbacks_of<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_id: i64,
) -> sqlx::Result<Vec<ExportedCallback>> {
    sqlx::query_as(
        "SELECT url, payload, status, attempts, created_at FROM callbacks
         WHERE lead_id = $1 ORDER BY id",
    )
    .bind(lead_id)
    .fetch_all(ex)
    .await
}

/// One enrichment of a lead, for an export.
#[derive(Debug, Clone, FromRow)]
pub struct ExportedEnrichment {
    pub types: String,
    pub status: String,
    pub error: Option<String>,
    pub created_at: Micros,
}

pub async fn enrichments_of<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_id: i64,
) -> sqlx::Result<Vec<ExportedEnrichment>> {
    sqlx::query_as(
        "SELECT types, status, error, created_at FROM enrichments WHERE lead_id = $1 ORDER BY id",
    )
    .bind(lead_id)
    .fetch_all(ex)
    .await
}

/// Remembers the leads as erased (by id only), so a later erasure of them succeeds.
pub async fn remember_erased(
    conn: &mut AnyConnection,
    workspace_id: i64,
    ids: &[i64],
    now: Micros,
) -> sqlx::Result<()> {
    let rows = ids
        .iter()
        .map(|id| format!("({id}, $1, $2)"))
        .collect::<Vec<_>>()
        .join(", ");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO erased_leads (lead_id, workspace_id, erased_at) VALUES {rows}
         ON CONFLICT (lead_id) DO NOTHING"
    )))
    .bind(workspace_id)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Which of the ids were leads of the workspace, erased before.
pub async fn erased_before<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    ids: &[i64],
) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT lead_id FROM erased_leads WHERE workspace_id = $1 AND lead_id IN ({})
         ORDER BY lead_id",
        id_list(ids)
    )))
    .bind(workspace_id)
    .fetch_all(ex)
    .await
}

/// An erasure asked for and not yet finished.
#[derive(Debug, Clone, FromRow)]
pub struct ErasureRequest {
    pub id: i64,
    pub workspace_id: i64,
    /// JSON array of lead ids.
    pub lead_ids: String,
    pub erased_by: String,
}

/// Keeps an erasure request until [`finish_request`]: what core resumes after a kill.
pub async fn insert_request<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    ids: &[i64],
    erased_by: &str,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO erasure_requests (workspace_id, lead_ids, erased_by, requested_at)
         VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(workspace_id)
    .bind(serde_json::to_string(ids).unwrap_or_default())
    .bind(erased_by)
    .bind(now)
    .fetch_one(ex)
    .await
}

/// The request is done: every lead it names is erased.
pub async fn finish_request<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM erasure_requests WHERE id = $1")
        .bind(id)
        .execute(ex)
        .await?;
    Ok(())
}

/// Requests not finished (a process was killed during them), oldest first.
pub async fn unfinished_requests<'c>(
    ex: impl Executor<'c, Database = Any>,
) -> sqlx::Result<Vec<ErasureRequest>> {
    sqlx::query_as("SELECT id, workspace_id, lead_ids, erased_by FROM erasure_requests ORDER BY id")
        .fetch_all(ex)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SQLite plans for `sql` (`$1` bound to a lead's id), one line a step.
    async fn plan(db: &crate::store::Db, sql: &str) -> String {
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}")));
        if sql.contains("$1") {
            query = query.bind(1_i64);
        }
        let steps: Vec<(i64, i64, i64, String)> = query.fetch_all(db.pool()).await.unwrap();
        steps
            .into_iter()
            .map(|step| step.3)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// An erasure holds the writer, so every beacon waits for it, and an export answers a
    /// request: a scan of everyone's beacons (`page_events` keeps 400 days of them by
    /// default) would stall both.
    #[tokio::test]
    async fn a_leads_beacons_are_found_by_key_for_an_erasure_and_an_export() {
        let (_dir, db) = crate::store::test_workspace().await;
        let list = id_list(&[1, 2]);
        for sql in [
            &events_of_lead(),
            &views_of(&list),
            &rows_of("page_events", &list),
        ] {
            let plan = plan(&db, sql).await;
            assert!(
                plan.contains("SEARCH page_event_leads USING PRIMARY KEY (lead_id=?)")
                    && plan.contains("SEARCH page_events USING INTEGER PRIMARY KEY (rowid=?)")
                    && !plan.contains("SCAN page_events\n")
                    && !plan.ends_with("SCAN page_events"),
                "{sql}\n{plan}"
            );
        }
    }
}
