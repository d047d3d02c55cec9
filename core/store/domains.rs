//! A workspace's own domains for its pages (`domains`; what they mean: `domain/domains.rs`).

use sqlx::{Any, AnyConnection, Executor, FromRow};

use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct DomainRow {
    pub id: i64,
    pub workspace_id: i64,
    pub hostname: String,
    /// The SHA-256 (hex) of the TXT record's value, which is answered once.
    pub token: String,
    pub status: String,
    pub reason: Option<String>,
    pub attempts: i64,
    pub next_check_at: Option<Micros>,
    pub checked_at: Option<Micros>,
    pub verified_at: Option<Micros>,
    pub missing_since: Option<Micros>,
    pub created_at: Micros,
}

const COLUMNS: &str = "id, workspace_id, hostname, token, status, reason, \
     CAST(attempts AS BIGINT) AS attempts, next_check_at, checked_at, verified_at, \
     missing_since, created_at";

/// Adds a pending domain, first checked at `next_check_at`; `None` when the workspace already
/// has that hostname.
pub async fn insert(
    conn: &mut AnyConnection,
    workspace_id: i64,
    hostname: &str,
    token_hash: &str,
    next_check_at: Micros,
    now: Micros,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar(
        "INSERT INTO domains
             (workspace_id, hostname, token, status, next_check_at, created_at, updated_at)
         VALUES ($1, $2, $3, 'pending', $4, $5, $5)
         ON CONFLICT (workspace_id, hostname) DO NOTHING
         RETURNING id",
    )
    .bind(workspace_id)
    .bind(hostname)
    .bind(token_hash)
    .bind(next_check_at)
    .bind(now)
    .fetch_optional(conn)
    .await
}

pub async fn count<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM domains WHERE workspace_id = $1")
        .bind(workspace_id)
        .fetch_one(ex)
        .await
}

/// The workspace's domains, oldest first.
pub async fn list<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<Vec<DomainRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domains WHERE workspace_id = $1 ORDER BY id"
    )))
    .bind(workspace_id)
    .fetch_all(ex)
    .await
}

pub async fn find<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    domain_id: i64,
) -> sqlx::Result<Option<DomainRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domains WHERE workspace_id = $1 AND id = $2"
    )))
    .bind(workspace_id)
    .bind(domain_id)
    .fetch_optional(ex)
    .await
}

/// Every verified domain (those served), any workspace's.
pub async fn served<'c>(ex: impl Executor<'c, Database = Any>) -> sqlx::Result<Vec<DomainRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domains WHERE status = 'verified' ORDER BY id"
    )))
    .fetch_all(ex)
    .await
}

/// The campaigns handed out on a verified domain: (workspace, public slug, hostname).
pub async fn page_hosts<'c>(
    ex: impl Executor<'c, Database = Any>,
) -> sqlx::Result<Vec<(i64, String, String)>> {
    sqlx::query_as(
        "SELECT c.workspace_id, COALESCE(c.page_slug, c.slug), d.hostname
         FROM campaigns c JOIN domains d ON d.id = c.domain_id AND d.workspace_id = c.workspace_id
         WHERE d.status = 'verified'",
    )
    .fetch_all(ex)
    .await
}

/// Whether `hostname` is a verified domain (one look-up in its unique index).
pub async fn is_served<'c>(
    ex: impl Executor<'c, Database = Any>,
    hostname: &str,
) -> sqlx::Result<bool> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT id FROM domains WHERE hostname = $1 AND status = 'verified'")
            .bind(hostname)
            .fetch_optional(ex)
            .await?;
    Ok(found.is_some())
}

/// Whether `hostname` is verified by a workspace other than `workspace_id`.
pub async fn verified_elsewhere<'c>(
    ex: impl Executor<'c, Database = Any>,
    hostname: &str,
    workspace_id: i64,
) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM domains WHERE hostname = $1 AND status = 'verified'
         AND workspace_id <> $2",
    )
    .bind(hostname)
    .bind(workspace_id)
    .fetch_optional(ex)
    .await?;
    Ok(found.is_some())
}

/// Takes up to `most` domains whose check is due, moving each one's next check to
/// `lease_until` so that another process does not check it at the same time.
pub async fn claim_due(
    conn: &mut AnyConnection,
    now: Micros,
    lease_until: Micros,
    most: i64,
) -> sqlx::Result<Vec<DomainRow>> {
    let due: Vec<DomainRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM domains
         WHERE next_check_at IS NOT NULL AND next_check_at <= $1
         ORDER BY next_check_at LIMIT $2"
    )))
    .bind(now)
    .bind(most)
    .fetch_all(&mut *conn)
    .await?;
    let mut claimed = Vec::with_capacity(due.len());
    for row in due {
        // Claimed only if no one else moved it meanwhile.
        let done = sqlx::query(
            "UPDATE domains SET next_check_at = $1 WHERE id = $2 AND next_check_at = $3",
        )
        .bind(lease_until)
        .bind(row.id)
        .bind(row.next_check_at)
        .execute(&mut *conn)
        .await?;
        if done.rows_affected() == 1 {
            claimed.push(row);
        }
    }
    Ok(claimed)
}

/// What a check found, written back.
pub struct Checked<'a> {
    pub status: &'a str,
    pub reason: Option<&'a str>,
    pub attempts: i64,
    pub next_check_at: Option<Micros>,
    pub verified_at: Option<Micros>,
    pub missing_since: Option<Micros>,
}

/// Writes a check's outcome; whether the domain still exists.
pub async fn set_checked(
    conn: &mut AnyConnection,
    domain_id: i64,
    checked: &Checked<'_>,
    now: Micros,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE domains SET status = $2, reason = $3, attempts = $4, next_check_at = $5,
             verified_at = $6, missing_since = $7, checked_at = $8, updated_at = $8
         WHERE id = $1",
    )
    .bind(domain_id)
    .bind(checked.status)
    .bind(checked.reason)
    .bind(checked.attempts)
    .bind(checked.next_check_at)
    .bind(checked.verified_at)
    .bind(checked.missing_since)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Makes the checks of `hostname`'s domains that stopped (lost to another workspace) due now.
pub async fn check_again(
    conn: &mut AnyConnection,
    hostname: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE domains SET next_check_at = $2
         WHERE hostname = $1 AND status <> 'verified' AND next_check_at IS NULL",
    )
    .bind(hostname)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes a domain (its campaigns go back to the public URL); whether there was one.
pub async fn delete(
    conn: &mut AnyConnection,
    workspace_id: i64,
    domain_id: i64,
) -> sqlx::Result<bool> {
    sqlx::query("UPDATE campaigns SET domain_id = NULL WHERE workspace_id = $1 AND domain_id = $2")
        .bind(workspace_id)
        .bind(domain_id)
        .execute(&mut *conn)
        .await?;
    let done = sqlx::query("DELETE FROM domains WHERE workspace_id = $1 AND id = $2")
        .bind(workspace_id)
        .bind(domain_id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
