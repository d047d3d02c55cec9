//! Workspaces of an account, with their share of the account's credits.

use sqlx::{Any, Executor, FromRow};

use crate::time::Micros;

#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct WorkspaceRow {
    pub id: i64,
    pub account_id: i64,
    pub name: String,
    pub slug: String,
    pub credit_limit: Option<i64>,
    pub credits_used: i64,
    pub created_at: Micros,
    /// The score at which its leads are hot; `None`: the server's `--hot-score`.
    pub hot_score: Option<f64>,
    /// Its IANA time zone; `None`: UTC.
    pub time_zone: Option<String>,
}

const COLUMNS: &str = "id, account_id, name, slug, credit_limit, credits_used, created_at,
    CAST(hot_score AS DOUBLE PRECISION) AS hot_score, time_zone";

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
    name: &str,
    slug: &str,
    callback_secret: &str,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO workspaces (account_id, name, slug, callback_secret, created_at)
         VALUES ($1, $2, $3, $4, $5)
         RETURNING id",
    )
    .bind(account_id)
    .bind(name)
    .bind(slug)
    .bind(callback_secret)
    .bind(now)
    .fetch_one(ex)
    .await
}

/// Sets the workspace's own settings; whether it exists.
pub async fn set_settings<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    hot_score: Option<f64>,
    time_zone: Option<&str>,
) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE workspaces SET hot_score = $2, time_zone = $3 WHERE id = $1")
        .bind(id)
        .bind(hot_score)
        .bind(time_zone)
        .execute(ex)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Holds the workspace's row until the transaction ends (PostgreSQL; SQLite's write
/// transactions are one at a time already), so that what the transaction counts of the
/// workspace before it adds to it stays true: whether the workspace exists.
pub async fn lock(
    conn: &mut sqlx::AnyConnection,
    dialect: super::Dialect,
    id: i64,
) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM workspaces WHERE id = $1{}",
        dialect.for_update()
    )))
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(found.is_some())
}

/// The score at which the workspace's leads are hot, if it set one.
pub async fn hot_score<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
) -> sqlx::Result<Option<f64>> {
    let found: Option<Option<f64>> = sqlx::query_scalar(
        "SELECT CAST(hot_score AS DOUBLE PRECISION) FROM workspaces WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(ex)
    .await?;
    Ok(found.flatten())
}

pub async fn get<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
) -> sqlx::Result<Option<WorkspaceRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM workspaces WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(ex)
    .await
}

pub async fn list_for_account<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
) -> sqlx::Result<Vec<WorkspaceRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM workspaces WHERE account_id = $1 ORDER BY id"
    )))
    .bind(account_id)
    .fetch_all(ex)
    .await
}

/// The secrets that sign the workspace's callbacks: the current one, and the one it replaced
/// while their overlap lasts.
#[derive(Debug, Clone, Default, FromRow)]
pub struct CallbackSecrets {
    pub callback_secret: String,
    pub previous_callback_secret: Option<String>,
    pub previous_secret_until: Option<Micros>,
}

impl CallbackSecrets {
    /// The secrets to sign with at `now`, the current one first.
    pub fn signing(&self, now: Micros) -> Vec<&str> {
        let mut secrets = vec![self.callback_secret.as_str()];
        if let (Some(previous), Some(until)) =
            (&self.previous_callback_secret, self.previous_secret_until)
            && until > now
        {
            secrets.push(previous);
        }
        secrets
    }
}

pub async fn callback_secrets<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
) -> sqlx::Result<Option<CallbackSecrets>> {
    sqlx::query_as(
        "SELECT callback_secret, previous_callback_secret, previous_secret_until
         FROM workspaces WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(ex)
    .await
}

/// Makes `secret` the workspace's callback secret; the one it replaces keeps signing beside it
/// until `previous_until`.
pub async fn rotate_callback_secret<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    secret: &str,
    previous_until: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE workspaces SET previous_callback_secret = callback_secret,
             previous_secret_until = $3, callback_secret = $2
         WHERE id = $1",
    )
    .bind(id)
    .bind(secret)
    .bind(previous_until)
    .execute(ex)
    .await?;
    Ok(())
}

/// The secret that signs the workspace's callbacks.
pub async fn callback_secret<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT callback_secret FROM workspaces WHERE id = $1")
        .bind(id)
        .fetch_optional(ex)
        .await
}

/// Slugs already taken that start with `base`, to pick the next free one.
pub async fn slugs_like<'c>(
    ex: impl Executor<'c, Database = Any>,
    base: &str,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT slug FROM workspaces WHERE slug = $1 OR slug LIKE $2")
        .bind(base)
        .bind(format!("{base}-%"))
        .fetch_all(ex)
        .await
}

/// Caps (or with `None` uncaps) the workspace's credit use. False when no such workspace.
pub async fn set_credit_limit<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    limit: Option<i64>,
) -> sqlx::Result<bool> {
    let result = sqlx::query("UPDATE workspaces SET credit_limit = $2 WHERE id = $1")
        .bind(id)
        .bind(limit)
        .execute(ex)
        .await?;
    Ok(result.rows_affected() == 1)
}
