//! Kept answers of idempotent requests (`idempotency_keys`), one per credential and key.

use sqlx::{Any, Executor, FromRow};

use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct KeptRow {
    pub request_hash: String,
    pub status: Option<i64>,
    pub content_type: Option<String>,
    pub body: Option<Vec<u8>>,
    pub created_at: Micros,
    pub locked_until: Micros,
}

/// Claims the key for a request; false when the credential already has it.
pub async fn claim<'c>(
    ex: impl Executor<'c, Database = Any>,
    credential_id: &str,
    key: &str,
    request_hash: &str,
    now: Micros,
    locked_until: Micros,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO idempotency_keys (credential_id, key, request_hash, created_at, locked_until)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (credential_id, key) DO NOTHING",
    )
    .bind(credential_id)
    .bind(key)
    .bind(request_hash)
    .bind(now)
    .bind(locked_until)
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn get<'c>(
    ex: impl Executor<'c, Database = Any>,
    credential_id: &str,
    key: &str,
) -> sqlx::Result<Option<KeptRow>> {
    sqlx::query_as(
        "SELECT request_hash, status, content_type, body, created_at, locked_until
         FROM idempotency_keys WHERE credential_id = $1 AND key = $2",
    )
    .bind(credential_id)
    .bind(key)
    .fetch_optional(ex)
    .await
}

/// Takes over a key whose row is as `seen` (expired, or abandoned by a request that never
/// finished) for a new request; false when someone else changed it first.
pub async fn take_over<'c>(
    ex: impl Executor<'c, Database = Any>,
    credential_id: &str,
    key: &str,
    seen: &KeptRow,
    request_hash: &str,
    now: Micros,
    locked_until: Micros,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE idempotency_keys
         SET request_hash = $3, status = NULL, content_type = NULL, body = NULL,
             created_at = $4, locked_until = $5
         WHERE credential_id = $1 AND key = $2 AND created_at = $6 AND locked_until = $7",
    )
    .bind(credential_id)
    .bind(key)
    .bind(request_hash)
    .bind(now)
    .bind(locked_until)
    .bind(seen.created_at)
    .bind(seen.locked_until)
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Keeps the answer of the request that claimed the key.
pub async fn keep<'c>(
    ex: impl Executor<'c, Database = Any>,
    credential_id: &str,
    key: &str,
    request_hash: &str,
    status: i64,
    content_type: &str,
    body: &[u8],
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE idempotency_keys SET status = $4, content_type = $5, body = $6
         WHERE credential_id = $1 AND key = $2 AND request_hash = $3 AND status IS NULL",
    )
    .bind(credential_id)
    .bind(key)
    .bind(request_hash)
    .bind(status)
    .bind(content_type)
    .bind(body.to_vec())
    .execute(ex)
    .await?;
    Ok(())
}

/// Lets go of a claimed key whose request left nothing to keep.
pub async fn release<'c>(
    ex: impl Executor<'c, Database = Any>,
    credential_id: &str,
    key: &str,
    request_hash: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "DELETE FROM idempotency_keys
         WHERE credential_id = $1 AND key = $2 AND request_hash = $3 AND status IS NULL",
    )
    .bind(credential_id)
    .bind(key)
    .bind(request_hash)
    .execute(ex)
    .await?;
    Ok(())
}

/// Forgets answers kept since before `cutoff`.
pub async fn forget_older_than<'c>(
    ex: impl Executor<'c, Database = Any>,
    cutoff: Micros,
) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM idempotency_keys WHERE created_at < $1")
        .bind(cutoff)
        .execute(ex)
        .await?;
    Ok(done.rows_affected())
}
