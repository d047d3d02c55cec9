//! TLS certificates ordered by ACME, their validation answers and the ACME account
//! (`certificates`, `acme_challenges`, `acme_accounts`; what they mean:
//! `domain/certificates.rs`).

use sqlx::{Any, AnyConnection, Executor, FromRow};

use crate::time::Micros;

/// A name's certificate as kept (`chain_pem` and `key_pem` are `None` until the first is
/// issued).
#[derive(Debug, Clone, FromRow)]
pub struct CertificateRow {
    pub hostname: String,
    pub chain_pem: Option<String>,
    pub key_pem: Option<String>,
    pub not_after: Option<Micros>,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub next_order_at: Micros,
}

const COLUMNS: &str = "hostname, chain_pem, key_pem, not_after, \
     CAST(attempts AS BIGINT) AS attempts, last_error, next_order_at";

/// Wants a certificate for `hostname`: a new name is due at once; one kept unwanted (its
/// domain deleted, then added again) is wanted again as it was (its certificate, its next
/// order, its backoff). Whether a certificate came back with it.
pub async fn want(conn: &mut AnyConnection, hostname: &str, now: Micros) -> sqlx::Result<bool> {
    let back: Option<Option<String>> = sqlx::query_scalar(
        "UPDATE certificates SET unwanted_since = NULL, updated_at = $2
         WHERE hostname = $1 AND unwanted_since IS NOT NULL
         RETURNING chain_pem",
    )
    .bind(hostname)
    .bind(now)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(chain) = back {
        return Ok(chain.is_some());
    }
    sqlx::query(
        "INSERT INTO certificates (hostname, next_order_at, updated_at) VALUES ($1, $2, $2)
         ON CONFLICT (hostname) DO NOTHING",
    )
    .bind(hostname)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(false)
}

/// Every name a certificate is wanted for.
pub async fn hostnames<'c>(ex: impl Executor<'c, Database = Any>) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT hostname FROM certificates WHERE unwanted_since IS NULL ORDER BY hostname",
    )
    .fetch_all(ex)
    .await
}

/// No longer wants `hostname`'s certificate (its domain is no longer served): kept unwanted,
/// no longer served nor ordered, its answers dropped; whether it had a certificate.
pub async fn forget(conn: &mut AnyConnection, hostname: &str, now: Micros) -> sqlx::Result<bool> {
    sqlx::query("DELETE FROM acme_challenges WHERE hostname = $1")
        .bind(hostname)
        .execute(&mut *conn)
        .await?;
    let chain: Option<Option<String>> = sqlx::query_scalar(
        "UPDATE certificates SET unwanted_since = $2, lease_until = NULL, updated_at = $2
         WHERE hostname = $1 AND unwanted_since IS NULL
         RETURNING chain_pem",
    )
    .bind(hostname)
    .bind(now)
    .fetch_optional(conn)
    .await?;
    Ok(chain.flatten().is_some())
}

/// Deletes what was unwanted before `before` (its certificate, if any, of no more use).
pub async fn prune<'c>(ex: impl Executor<'c, Database = Any>, before: Micros) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM certificates WHERE unwanted_since < $1")
        .bind(before)
        .execute(ex)
        .await?;
    Ok(())
}

/// Orders started since `since` (any name's, wanted or not): the deployment's budget.
pub async fn ordered_since<'c>(
    ex: impl Executor<'c, Database = Any>,
    since: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM certificates WHERE ordered_at > $1")
        .bind(since)
        .fetch_one(ex)
        .await
}

/// Every issued certificate: what the edges serve.
pub async fn issued<'c>(
    ex: impl Executor<'c, Database = Any>,
) -> sqlx::Result<Vec<CertificateRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM certificates
         WHERE chain_pem IS NOT NULL AND unwanted_since IS NULL ORDER BY hostname"
    )))
    .fetch_all(ex)
    .await
}

pub async fn find<'c>(
    ex: impl Executor<'c, Database = Any>,
    hostname: &str,
) -> sqlx::Result<Option<CertificateRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM certificates WHERE hostname = $1 AND unwanted_since IS NULL"
    )))
    .bind(hostname)
    .fetch_optional(ex)
    .await
}

/// Whether any name's order is due and free to take (read before taking, so that a pass with
/// nothing due writes nothing).
pub async fn any_due<'c>(ex: impl Executor<'c, Database = Any>, now: Micros) -> sqlx::Result<bool> {
    let found: Option<String> = sqlx::query_scalar(
        "SELECT hostname FROM certificates
         WHERE next_order_at <= $1 AND unwanted_since IS NULL
         AND (lease_until IS NULL OR lease_until <= $1) LIMIT 1",
    )
    .bind(now)
    .fetch_optional(ex)
    .await?;
    Ok(found.is_some())
}

/// Takes up to `most` names whose order is due and that no process holds, holding each one
/// until `lease_until` (a process that dies holding one lets it go when the lease ends), and
/// noting its order's start.
pub async fn claim_due(
    conn: &mut AnyConnection,
    now: Micros,
    lease_until: Micros,
    most: i64,
) -> sqlx::Result<Vec<CertificateRow>> {
    let due: Vec<CertificateRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM certificates
         WHERE next_order_at <= $1 AND unwanted_since IS NULL
         AND (lease_until IS NULL OR lease_until <= $1)
         ORDER BY next_order_at LIMIT $2"
    )))
    .bind(now)
    .bind(most)
    .fetch_all(&mut *conn)
    .await?;
    let mut claimed = Vec::with_capacity(due.len());
    for row in due {
        // Held only if no other process took it meanwhile; its order starts now.
        let done = sqlx::query(
            "UPDATE certificates SET lease_until = $2, ordered_at = $3
             WHERE hostname = $1 AND unwanted_since IS NULL
             AND (lease_until IS NULL OR lease_until <= $3)",
        )
        .bind(&row.hostname)
        .bind(lease_until)
        .bind(now)
        .execute(&mut *conn)
        .await?;
        if done.rows_affected() == 1 {
            claimed.push(row);
        }
    }
    Ok(claimed)
}

/// A certificate issued for `hostname`, kept and shared; whether the name is still wanted (if
/// not, it is kept for when it is wanted again, unannounced).
pub async fn keep_issued(
    conn: &mut AnyConnection,
    hostname: &str,
    issued: &Issued<'_>,
    now: Micros,
) -> sqlx::Result<bool> {
    let unwanted_since: Option<Option<Micros>> = sqlx::query_scalar(
        "UPDATE certificates SET chain_pem = $2, key_pem = $3, not_after = $4, issued_at = $5,
             attempts = 0, last_error = NULL, next_order_at = $6, lease_until = NULL,
             updated_at = $5
         WHERE hostname = $1
         RETURNING unwanted_since",
    )
    .bind(hostname)
    .bind(issued.chain_pem)
    .bind(issued.key_pem)
    .bind(issued.not_after)
    .bind(now)
    .bind(issued.renew_at)
    .fetch_optional(conn)
    .await?;
    Ok(matches!(unwanted_since, Some(None)))
}

/// What an order brought.
pub struct Issued<'a> {
    pub chain_pem: &'a str,
    pub key_pem: &'a str,
    pub not_after: Micros,
    pub renew_at: Micros,
}

/// An order that failed: tried again at `next_order_at`; the certificate kept (if any) stays
/// served.
pub async fn keep_failure(
    conn: &mut AnyConnection,
    hostname: &str,
    error: &str,
    attempts: i64,
    next_order_at: Micros,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE certificates SET attempts = $2, last_error = $3, next_order_at = $4,
             lease_until = NULL, updated_at = $5
         WHERE hostname = $1",
    )
    .bind(hostname)
    .bind(attempts)
    .bind(error)
    .bind(next_order_at)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Keeps the answer to a validation of `kind` asked under `name`.
pub async fn keep_challenge<'c>(
    ex: impl Executor<'c, Database = Any>,
    kind: &str,
    name: &str,
    hostname: &str,
    response: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO acme_challenges (kind, name, hostname, response, created_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (kind, name) DO UPDATE SET hostname = $3, response = $4, created_at = $5",
    )
    .bind(kind)
    .bind(name)
    .bind(hostname)
    .bind(response)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// The answer kept for a validation of `kind` under `name`.
pub async fn challenge<'c>(
    ex: impl Executor<'c, Database = Any>,
    kind: &str,
    name: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT response FROM acme_challenges WHERE kind = $1 AND name = $2")
        .bind(kind)
        .bind(name)
        .fetch_optional(ex)
        .await
}

/// Drops the answers kept for `hostname`'s order (done, or given up).
pub async fn drop_challenges<'c>(
    ex: impl Executor<'c, Database = Any>,
    hostname: &str,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM acme_challenges WHERE hostname = $1")
        .bind(hostname)
        .execute(ex)
        .await?;
    Ok(())
}

/// The account kept for `directory` (instant-acme's credentials, JSON).
pub async fn account<'c>(
    ex: impl Executor<'c, Database = Any>,
    directory: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT credentials FROM acme_accounts WHERE directory = $1")
        .bind(directory)
        .fetch_optional(ex)
        .await
}

/// Keeps a new account for `directory` unless another process kept one first (then that one is
/// used: read it again).
pub async fn keep_account<'c>(
    ex: impl Executor<'c, Database = Any>,
    directory: &str,
    credentials: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO acme_accounts (directory, credentials, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (directory) DO NOTHING",
    )
    .bind(directory)
    .bind(credentials)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}
