//! The callback outbox: one row per callback to deliver, kept until delivered or given up, so
//! a restart drops nothing.

use sqlx::{Any, AnyConnection, Executor, FromRow};

use super::{bulk_sql, placeholder_list, placeholder_rows, rows_per_statement};
use crate::time::Micros;

/// The event of a callback sent once a lead's page exists.
pub const PAGE_GENERATED: &str = "lead.page_generated";
/// The event of a callback sent when a visitor submitted a form on a lead's page.
pub const FORM_SUBMITTED: &str = "lead.form_submitted";
/// The event of a callback sent on the first counted view of a lead's page.
pub const PAGE_VIEWED: &str = "lead.page_viewed";
/// The event of a callback sent the first time a lead's engagement score crosses the threshold.
pub const LEAD_HOT: &str = "lead.hot";

/// The receiving host of a callback address, lower case (empty if it has none): callbacks
/// take turns by it.
pub fn destination_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
        .unwrap_or_default()
}

/// A callback to enqueue.
pub struct NewCallback {
    /// What happened: `lead.page_generated`, `lead.page_viewed`, `lead.form_submitted`.
    pub event: &'static str,
    pub workspace_id: i64,
    /// The receiving host (lower case), for taking turns between receivers.
    pub destination: String,
    /// The job that led to it; empty for events that come from no job.
    pub job_id: String,
    pub lead_id: i64,
    pub url: String,
    pub payload: String,
}

#[derive(Debug, Clone, FromRow)]
pub struct DueCallback {
    pub id: i64,
    pub event: String,
    pub workspace_id: i64,
    pub url: String,
    pub payload: String,
    pub attempts: i64,
}

pub async fn insert_many(
    conn: &mut AnyConnection,
    callbacks: &[NewCallback],
    now: Micros,
) -> sqlx::Result<()> {
    for chunk in callbacks.chunks(rows_per_statement(conn, 10)) {
        insert_chunk(&mut *conn, chunk, now).await?;
    }
    Ok(())
}

async fn insert_chunk(
    conn: &mut AnyConnection,
    callbacks: &[NewCallback],
    now: Micros,
) -> sqlx::Result<()> {
    let sql = format!(
        "INSERT INTO callbacks (event, workspace_id, destination, job_id, lead_id, url, payload,
                                status, next_attempt_at, created_at)
         VALUES {}",
        placeholder_rows(callbacks.len(), 10, 1, &[])
    );
    let mut query = sqlx::query(bulk_sql(conn, sql));
    for callback in callbacks {
        query = query
            .bind(callback.event)
            .bind(callback.workspace_id)
            .bind(callback.destination.as_str())
            .bind(callback.job_id.as_str())
            .bind(callback.lead_id)
            .bind(callback.url.as_str())
            .bind(callback.payload.as_str())
            .bind("pending")
            .bind(now)
            .bind(now);
    }
    query.execute(conn).await?;
    Ok(())
}

/// A pending callback that is due, as a candidate for delivery (not yet claimed).
#[derive(Debug, Clone, FromRow)]
pub struct DueCandidate {
    pub id: i64,
    pub url: String,
}

/// Up to `limit` due callbacks, taken in turn across (workspace, receiver) pairs: the oldest
/// due of each pair first, then the second of each, and so on, at most `per_pair` of each. Only
/// a read: the sender picks among them and then [`claim`]s its picks.
pub async fn due_candidates<'c>(
    ex: impl Executor<'c, Database = Any>,
    now: Micros,
    per_pair: i64,
    limit: i64,
) -> sqlx::Result<Vec<DueCandidate>> {
    sqlx::query_as(
        "SELECT id, url FROM (
             SELECT id, workspace_id, url, next_attempt_at,
                    ROW_NUMBER() OVER (PARTITION BY workspace_id, destination
                                       ORDER BY next_attempt_at, id) AS turn
             FROM callbacks
             WHERE status = 'pending' AND next_attempt_at <= $1
         ) due
         WHERE turn <= $2
         ORDER BY turn, next_attempt_at, id
         LIMIT $3",
    )
    .bind(now)
    .bind(per_pair)
    .bind(limit)
    .fetch_all(ex)
    .await
}

/// Leases the given callbacks until `lease_until`, those still due only (another process may
/// have taken some meanwhile), so no other sender attempts them before the lease ends. A crash
/// mid-delivery makes them due again when it does.
pub async fn claim(
    conn: &mut AnyConnection,
    ids: &[i64],
    now: Micros,
    lease_until: Micros,
) -> sqlx::Result<Vec<DueCallback>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "UPDATE callbacks SET next_attempt_at = $2
         WHERE status = 'pending' AND next_attempt_at <= $1 AND id IN ({})
         RETURNING id, event, workspace_id, url, payload, attempts",
        placeholder_list(ids.len(), 3)
    );
    let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(now)
        .bind(lease_until);
    for id in ids {
        query = query.bind(*id);
    }
    query.fetch_all(conn).await
}

pub async fn mark_delivered<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE callbacks SET status = 'delivered', attempts = attempts + 1, last_error = NULL
         WHERE id = $1",
    )
    .bind(id)
    .execute(ex)
    .await?;
    Ok(())
}

/// Records a failed attempt: tried again at `retry_at`, or given up when that is `None`.
pub async fn mark_failed<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    error: &str,
    retry_at: Option<Micros>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE callbacks SET attempts = attempts + 1, last_error = $2,
             status = CASE WHEN $3 IS NULL THEN 'failed' ELSE 'pending' END,
             next_attempt_at = COALESCE($3, next_attempt_at)
         WHERE id = $1",
    )
    .bind(id)
    .bind(error)
    .bind(retry_at)
    .execute(ex)
    .await?;
    Ok(())
}

/// When the next callback falls due, if any is pending.
pub async fn next_due_at<'c>(
    ex: impl Executor<'c, Database = Any>,
) -> sqlx::Result<Option<Micros>> {
    sqlx::query_scalar("SELECT MIN(next_attempt_at) FROM callbacks WHERE status = 'pending'")
        .fetch_one(ex)
        .await
}
