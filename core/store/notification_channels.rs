//! A workspace's notification channels, and what the bounds on their messages count (the
//! messages themselves are rows of the callback outbox, `store/callbacks.rs`).

use sqlx::{Any, AnyConnection, Executor, FromRow};

use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct ChannelRow {
    pub id: i64,
    pub workspace_id: i64,
    pub kind: String,
    pub url: String,
    /// Event names, comma-separated.
    pub events: String,
    pub time_zone: String,
    /// Keys an email channel's unsubscribe links.
    pub secret: String,
    /// The local date whose morning digest was last queued.
    pub digest_day: Option<String>,
    pub created_at: Micros,
    pub updated_at: Micros,
}

/// A channel's settings, as created or changed.
pub struct ChannelFields<'a> {
    pub kind: &'a str,
    pub url: &'a str,
    pub events: &'a str,
    pub time_zone: &'a str,
}

const COLUMNS: &str =
    "id, workspace_id, kind, url, events, time_zone, secret, digest_day, created_at, updated_at";

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    fields: &ChannelFields<'_>,
    secret: &str,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO notification_channels
             (workspace_id, kind, url, events, time_zone, secret, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
         RETURNING id",
    )
    .bind(workspace_id)
    .bind(fields.kind)
    .bind(fields.url)
    .bind(fields.events)
    .bind(fields.time_zone)
    .bind(secret)
    .bind(now)
    .fetch_one(ex)
    .await
}

/// The workspace's channels, oldest first.
pub async fn list<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<Vec<ChannelRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM notification_channels WHERE workspace_id = $1 ORDER BY id"
    )))
    .bind(workspace_id)
    .fetch_all(ex)
    .await
}

pub async fn exists(conn: &mut AnyConnection, workspace_id: i64) -> sqlx::Result<bool> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT id FROM notification_channels WHERE workspace_id = $1 LIMIT 1")
            .bind(workspace_id)
            .fetch_optional(conn)
            .await?;
    Ok(found.is_some())
}

pub async fn find<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    channel_id: i64,
) -> sqlx::Result<Option<ChannelRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM notification_channels WHERE workspace_id = $1 AND id = $2"
    )))
    .bind(workspace_id)
    .bind(channel_id)
    .fetch_optional(ex)
    .await
}

/// Every channel (of any workspace) receiving `event`.
pub async fn asking_for<'c>(
    ex: impl Executor<'c, Database = Any>,
    event: &str,
) -> sqlx::Result<Vec<ChannelRow>> {
    // Events are comma-separated names of letters, dots and underscores: matching the name
    // between commas finds it alone.
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM notification_channels
         WHERE ',' || events || ',' LIKE '%,' || $1 || ',%' ORDER BY id"
    )))
    .bind(event)
    .fetch_all(ex)
    .await
}

/// Marks the channel's digest for local day `today` as queued, unless it already was:
/// whether this call did.
pub async fn claim_digest(
    conn: &mut AnyConnection,
    channel_id: i64,
    today: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE notification_channels SET digest_day = $2
         WHERE id = $1 AND (digest_day IS NULL OR digest_day <> $2)",
    )
    .bind(channel_id)
    .bind(today)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What a lead did on the workspace's pages in a range (counted engagement only).
#[derive(Debug, Clone, FromRow)]
pub struct Engaged {
    pub lead_id: i64,
    pub campaign_id: i64,
    pub views: i64,
    pub clicks: i64,
    pub forms: i64,
}

/// The leads of the workspace that engaged in `[from, to)`, most engaged first (forms, then
/// clicks, then views), at most `most`; and how many did in all.
pub async fn engaged_between(
    conn: &mut AnyConnection,
    workspace_id: i64,
    from: Micros,
    to: Micros,
    most: i64,
) -> sqlx::Result<(Vec<Engaged>, i64)> {
    const EACH: &str = "SELECT lead_id, campaign_id,
                CASE WHEN kind = 'view' THEN 1 ELSE 0 END AS views,
                CASE WHEN kind = 'click' THEN 1 ELSE 0 END AS clicks, 0 AS forms
            FROM page_events
            WHERE workspace_id = $1 AND is_bot = 0 AND created_at >= $2 AND created_at < $3
            UNION ALL
            SELECT lead_id, campaign_id, 0, 0, 1 FROM form_submissions
            WHERE workspace_id = $1 AND class = 'person' AND created_at >= $2 AND created_at < $3";
    let lines = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT lead_id, CAST(MIN(campaign_id) AS BIGINT) AS campaign_id,
                CAST(SUM(views) AS BIGINT) AS views, CAST(SUM(clicks) AS BIGINT) AS clicks,
                CAST(SUM(forms) AS BIGINT) AS forms
         FROM ({EACH}) done
         GROUP BY lead_id
         ORDER BY SUM(forms) DESC, SUM(clicks) DESC, SUM(views) DESC, lead_id
         LIMIT $4"
    )))
    .bind(workspace_id)
    .bind(from)
    .bind(to)
    .bind(most)
    .fetch_all(&mut *conn)
    .await?;
    let total: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT CAST(COUNT(DISTINCT lead_id) AS BIGINT) FROM ({EACH}) done"
    )))
    .bind(workspace_id)
    .bind(from)
    .bind(to)
    .fetch_one(&mut *conn)
    .await?;
    Ok((lines, total))
}

/// A channel of any workspace (for an unsubscribe link, which names no workspace).
pub async fn find_any<'c>(
    ex: impl Executor<'c, Database = Any>,
    channel_id: i64,
) -> sqlx::Result<Option<ChannelRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM notification_channels WHERE id = $1"
    )))
    .bind(channel_id)
    .fetch_optional(ex)
    .await
}

/// Replaces a channel's address if it is still `was`; whether it was.
pub async fn set_url<'c>(
    ex: impl Executor<'c, Database = Any>,
    channel_id: i64,
    was: &str,
    url: &str,
    now: Micros,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE notification_channels SET url = $3, updated_at = $4 WHERE id = $1 AND url = $2",
    )
    .bind(channel_id)
    .bind(was)
    .bind(url)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The addresses (lower case) of the people of the workspace's account, removed ones aside:
/// who an email channel may go to.
pub async fn teammate_emails<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT lower(u.email) FROM users u JOIN workspaces w ON w.account_id = u.account_id
         WHERE w.id = $1 AND u.role <> 'removed'",
    )
    .bind(workspace_id)
    .fetch_all(ex)
    .await
}

/// Replaces a channel's settings; whether it exists.
pub async fn update<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    channel_id: i64,
    fields: &ChannelFields<'_>,
    now: Micros,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE notification_channels
         SET kind = $3, url = $4, events = $5, time_zone = $6, updated_at = $7,
             secret = CASE WHEN secret = '' THEN $8 ELSE secret END
         WHERE workspace_id = $1 AND id = $2",
    )
    .bind(workspace_id)
    .bind(channel_id)
    .bind(fields.kind)
    .bind(fields.url)
    .bind(fields.events)
    .bind(fields.time_zone)
    .bind(now)
    // A channel made before email channels had none.
    .bind(crate::random::token(32))
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Deletes a channel; whether it existed. Its messages still queued are not sent.
pub async fn delete(
    conn: &mut AnyConnection,
    workspace_id: i64,
    channel_id: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM notification_channels WHERE workspace_id = $1 AND id = $2")
        .bind(workspace_id)
        .bind(channel_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM callbacks WHERE channel_id = $1 AND status = 'pending'")
        .bind(channel_id)
        .execute(&mut *conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// How many messages the channel was given since `since`: all of them, and those about
/// `lead_id` for `event`.
pub async fn sent_since(
    conn: &mut AnyConnection,
    channel_id: i64,
    lead_id: i64,
    event: &str,
    since: Micros,
) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "SELECT CAST(COUNT(*) AS BIGINT),
                CAST(COALESCE(SUM(CASE WHEN lead_id = $2 AND event = $3 THEN 1 ELSE 0 END), 0)
                     AS BIGINT)
         FROM callbacks WHERE channel_id = $1 AND created_at >= $4",
    )
    .bind(channel_id)
    .bind(lead_id)
    .bind(event)
    .bind(since)
    .fetch_one(conn)
    .await
}

/// Who a message is about: the lead's name parts, email and company, and the campaign's name.
#[derive(Debug, Clone, Default, FromRow)]
pub struct LeadCard {
    pub first_name: Option<String>,
    pub custom_values: String,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub campaign_name: Option<String>,
    pub score_base: f64,
}

pub async fn lead_card(
    conn: &mut AnyConnection,
    lead_id: i64,
    campaign_id: i64,
) -> sqlx::Result<Option<LeadCard>> {
    sqlx::query_as(
        "SELECT l.first_name, l.custom_values, l.email, l.company_name,
                (SELECT c.name FROM campaigns c WHERE c.id = $2) AS campaign_name,
                CAST(l.score_base AS DOUBLE PRECISION) AS score_base
         FROM leads l WHERE l.id = $1",
    )
    .bind(lead_id)
    .bind(campaign_id)
    .fetch_optional(conn)
    .await
}
