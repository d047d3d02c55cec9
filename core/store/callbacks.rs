//! The callback outbox: one row per callback to deliver, kept until delivered or given up, so
//! a restart drops nothing.

use sqlx::{Any, AnyConnection, Executor, FromRow};

use super::{bulk_sql, placeholder_list, placeholder_rows, rows_per_statement};
use crate::time::Micros;

/// The receiving host of a callback address, lower case (empty if it has none): callbacks
/// take turns by it.
pub fn destination_of(url: &str) -> String {
    // Every email goes through the one SMTP server.
    if url.starts_with("mailto:") {
        return "smtp".to_owned();
    }
    url::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
        .unwrap_or_default()
}

/// The receiver of a notification channel's messages: its host, kept apart per channel, so
/// one broken chat webhook (they all share `hooks.slack.com`) is paused on its own and holds
/// up no other channel of the workspace.
pub fn channel_destination(url: &str, channel_id: i64) -> String {
    format!("{} (channel {channel_id})", destination_of(url))
}

/// A callback to enqueue (made by `domain/callback_events.rs`, the one place that does).
pub struct NewCallback {
    /// What happened: a [`crate::domain::callback_events::CallbackEvent`]'s name.
    pub event: &'static str,
    pub workspace_id: i64,
    /// The receiving host (lower case), for taking turns between receivers.
    pub destination: String,
    /// The job that led to it; empty for events that come from no job.
    pub job_id: String,
    pub lead_id: i64,
    pub url: String,
    pub payload: String,
    /// The notification channel it is a message to; `None` for a lead's own callback.
    pub channel_id: Option<i64>,
}

#[derive(Debug, Clone, FromRow)]
pub struct DueCallback {
    pub id: i64,
    pub event: String,
    pub workspace_id: i64,
    pub destination: String,
    pub url: String,
    pub payload: String,
    pub attempts: i64,
}

pub async fn insert_many(
    conn: &mut AnyConnection,
    callbacks: &[NewCallback],
    now: Micros,
) -> sqlx::Result<()> {
    for chunk in callbacks.chunks(rows_per_statement(conn, 11)) {
        insert_chunk(&mut *conn, chunk, now).await?;
    }
    Ok(())
}

/// Queues one callback; its id.
pub async fn insert_one(
    conn: &mut AnyConnection,
    callback: &NewCallback,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO callbacks (event, workspace_id, destination, job_id, lead_id, url, payload,
                                status, next_attempt_at, created_at, channel_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $8, $9)
         RETURNING id",
    )
    .bind(callback.event)
    .bind(callback.workspace_id)
    .bind(callback.destination.as_str())
    .bind(callback.job_id.as_str())
    .bind(callback.lead_id)
    .bind(callback.url.as_str())
    .bind(callback.payload.as_str())
    .bind(now)
    .bind(callback.channel_id)
    .fetch_one(conn)
    .await
}

async fn insert_chunk(
    conn: &mut AnyConnection,
    callbacks: &[NewCallback],
    now: Micros,
) -> sqlx::Result<()> {
    let sql = format!(
        "INSERT INTO callbacks (event, workspace_id, destination, job_id, lead_id, url, payload,
                                status, next_attempt_at, created_at, channel_id)
         VALUES {}",
        placeholder_rows(callbacks.len(), 11, 1, &[])
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
            .bind(now)
            .bind(callback.channel_id);
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
/// due of each pair first, then the second of each, and so on, at most `per_pair` of each; none
/// for a receiver paused as unhealthy. Only a read: the sender picks among them and then
/// [`claim`]s its picks.
pub async fn due_candidates<'c>(
    ex: impl Executor<'c, Database = Any>,
    now: Micros,
    per_pair: i64,
    limit: i64,
) -> sqlx::Result<Vec<DueCandidate>> {
    sqlx::query_as(
        "SELECT id, url FROM (
             SELECT c.id, c.url, c.next_attempt_at,
                    ROW_NUMBER() OVER (PARTITION BY c.workspace_id, c.destination
                                       ORDER BY c.next_attempt_at, c.id) AS turn
             FROM callbacks c
             LEFT JOIN callback_endpoints e
                    ON e.workspace_id = c.workspace_id AND e.destination = c.destination
             WHERE c.status = 'pending' AND c.next_attempt_at <= $1
               AND (e.paused_until IS NULL OR e.paused_until <= $1)
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
         RETURNING id, event, workspace_id, destination, url, payload, attempts",
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

/// What one attempt came to, for the delivery log.
#[derive(Debug, Clone, Copy)]
pub struct Attempt {
    /// When it started.
    pub at: Micros,
    /// The receiver's status code; `None` when no answer came (refused, timed out).
    pub status_code: Option<u16>,
    pub latency_ms: i64,
}

pub async fn mark_delivered<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    attempt: Attempt,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE callbacks SET status = 'delivered', attempts = attempts + 1, last_error = NULL,
             last_status_code = $2, last_latency_ms = $3, last_attempt_at = $4, delivered_at = $5
         WHERE id = $1",
    )
    .bind(id)
    .bind(attempt.status_code.map(i64::from))
    .bind(attempt.latency_ms)
    .bind(attempt.at)
    .bind(now)
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
    attempt: Attempt,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE callbacks SET attempts = attempts + 1, last_error = $2,
             status = CASE WHEN $3 IS NULL THEN 'failed' ELSE 'pending' END,
             next_attempt_at = COALESCE($3, next_attempt_at),
             last_status_code = $4, last_latency_ms = $5, last_attempt_at = $6
         WHERE id = $1",
    )
    .bind(id)
    .bind(error)
    .bind(retry_at)
    .bind(attempt.status_code.map(i64::from))
    .bind(attempt.latency_ms)
    .bind(attempt.at)
    .execute(ex)
    .await?;
    Ok(())
}

/// A receiving host answered: it is healthy again (written only when it was not).
pub async fn endpoint_succeeded<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    destination: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE callback_endpoints
         SET consecutive_failures = 0, pauses = 0, paused_until = NULL,
             resumed_at = CASE WHEN unhealthy_since IS NULL THEN resumed_at ELSE $3 END,
             unhealthy_since = NULL
         WHERE workspace_id = $1 AND destination = $2
           AND (consecutive_failures > 0 OR unhealthy_since IS NOT NULL)",
    )
    .bind(workspace_id)
    .bind(destination)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// A receiving host failed once more: its consecutive failures and how often it was paused.
pub async fn endpoint_failed<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    destination: &str,
    error: &str,
    now: Micros,
) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "INSERT INTO callback_endpoints (workspace_id, destination, consecutive_failures,
                                         last_error, last_failure_at)
         VALUES ($1, $2, 1, $3, $4)
         ON CONFLICT (workspace_id, destination) DO UPDATE
         SET consecutive_failures = callback_endpoints.consecutive_failures + 1,
             last_error = $3, last_failure_at = $4
         RETURNING consecutive_failures, pauses",
    )
    .bind(workspace_id)
    .bind(destination)
    .bind(error)
    .bind(now)
    .fetch_one(ex)
    .await
}

/// Marks a receiving host unhealthy (since `now`, unless it already was) and pauses it until
/// `until`, unless a pause is already running (several deliveries to it failing at once pause
/// it once).
pub async fn pause_endpoint<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    destination: &str,
    until: Micros,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE callback_endpoints
         SET paused_until = $3, pauses = pauses + 1,
             unhealthy_since = COALESCE(unhealthy_since, $4)
         WHERE workspace_id = $1 AND destination = $2
           AND (paused_until IS NULL OR paused_until <= $4)",
    )
    .bind(workspace_id)
    .bind(destination)
    .bind(until)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// One callback as the delivery log shows it.
#[derive(Debug, Clone, FromRow)]
pub struct DeliveryRow {
    pub id: i64,
    pub event: String,
    pub lead_id: i64,
    pub job_id: String,
    pub url: String,
    pub status: String,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub last_latency_ms: Option<i64>,
    pub last_attempt_at: Option<Micros>,
    pub next_attempt_at: Micros,
    pub delivered_at: Option<Micros>,
    pub redeliveries: i64,
    pub created_at: Micros,
    /// Its receiver, as health is kept ([`destination_of`], [`channel_destination`]).
    pub destination: String,
}

const DELIVERY_COLUMNS: &str = "id, event, lead_id, job_id, url, status, attempts, \
    last_status_code, last_error, last_latency_ms, last_attempt_at, next_attempt_at, \
    delivered_at, redeliveries, created_at, destination";

/// Which of a workspace's callbacks to list.
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    pub status: Option<String>,
    pub event: Option<String>,
    pub lead_id: Option<i64>,
    /// Only callbacks older (smaller id) than this one: the previous page's last.
    pub before_id: Option<i64>,
}

/// A workspace's callbacks, newest first, up to `limit`.
pub async fn list_deliveries<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    filter: &DeliveryFilter,
    limit: i64,
) -> sqlx::Result<Vec<DeliveryRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {DELIVERY_COLUMNS} FROM callbacks
         WHERE workspace_id = $1
           AND ($2 IS NULL OR status = $2)
           AND ($3 IS NULL OR event = $3)
           AND ($4 IS NULL OR lead_id = $4)
           AND ($5 IS NULL OR id < $5)
         ORDER BY id DESC
         LIMIT $6"
    )))
    .bind(workspace_id)
    .bind(filter.status.as_deref())
    .bind(filter.event.as_deref())
    .bind(filter.lead_id)
    .bind(filter.before_id)
    .bind(limit)
    .fetch_all(ex)
    .await
}

/// One of a workspace's callbacks.
pub async fn find_delivery<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    id: i64,
) -> sqlx::Result<Option<DeliveryRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {DELIVERY_COLUMNS} FROM callbacks WHERE workspace_id = $1 AND id = $2"
    )))
    .bind(workspace_id)
    .bind(id)
    .fetch_optional(ex)
    .await
}

/// Queues a delivered or given-up callback again, due at once, with a fresh round of attempts;
/// `false` when it is not (any longer) in either state (a pending one is already queued).
pub async fn redeliver<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    id: i64,
    now: Micros,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE callbacks SET status = 'pending', attempts = 0, next_attempt_at = $3,
             redeliveries = redeliveries + 1
         WHERE workspace_id = $1 AND id = $2 AND status IN ('delivered', 'failed')",
    )
    .bind(workspace_id)
    .bind(id)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Ends a receiving host's pause now (an owner asked for a redelivery to it): the next
/// attempt is its probe.
pub async fn unpause_endpoint<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    destination: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE callback_endpoints SET paused_until = $3
         WHERE workspace_id = $1 AND destination = $2 AND paused_until > $3",
    )
    .bind(workspace_id)
    .bind(destination)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// A receiving host's health, as the owner sees it.
#[derive(Debug, Clone, FromRow)]
pub struct EndpointRow {
    pub destination: String,
    pub consecutive_failures: i64,
    pub unhealthy_since: Option<Micros>,
    pub paused_until: Option<Micros>,
    pub last_error: Option<String>,
    pub last_failure_at: Option<Micros>,
    pub resumed_at: Option<Micros>,
    /// Its callbacks waiting to be delivered.
    pub pending: i64,
}

/// The workspace's receiving hosts that have failed since their last success or were ever
/// paused, most troubled first.
pub async fn list_endpoints<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<Vec<EndpointRow>> {
    sqlx::query_as(
        "SELECT e.destination, e.consecutive_failures, e.unhealthy_since, e.paused_until,
                e.last_error, e.last_failure_at, e.resumed_at,
                (SELECT COUNT(*) FROM callbacks c
                 WHERE c.workspace_id = e.workspace_id AND c.destination = e.destination
                   AND c.status = 'pending') AS pending
         FROM callback_endpoints e
         WHERE e.workspace_id = $1
         ORDER BY e.unhealthy_since IS NULL, e.consecutive_failures DESC, e.destination
         LIMIT 100",
    )
    .bind(workspace_id)
    .fetch_all(ex)
    .await
}

/// When the next callback falls due, if any is pending.
pub async fn next_due_at<'c>(
    ex: impl Executor<'c, Database = Any>,
) -> sqlx::Result<Option<Micros>> {
    sqlx::query_scalar("SELECT MIN(next_attempt_at) FROM callbacks WHERE status = 'pending'")
        .fetch_one(ex)
        .await
}
