//! What the metrics sampler reads about the whole deployment: open jobs, queued leads, rows by
//! status, and the credit ledger's new entries.

use sqlx::{Any, Executor};

use crate::time::Micros;

/// `(kind, status, count)` of jobs in one of `statuses`.
pub async fn open_jobs<'c>(
    ex: impl Executor<'c, Database = Any>,
    statuses: &[&str],
) -> sqlx::Result<Vec<(String, String, i64)>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT kind, status, COUNT(*) FROM jobs WHERE status IN ({}) GROUP BY kind, status",
        super::status_list(statuses)
    )))
    .fetch_all(ex)
    .await
}

/// Input leads waiting for the job worker.
pub async fn queued_leads<'c>(ex: impl Executor<'c, Database = Any>) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(row_count), 0) AS BIGINT) FROM job_chunks WHERE status = 'pending'",
    )
    .fetch_one(ex)
    .await
}

/// `(status, count)` of a table with a `status` column (a fixed name, never input).
pub async fn counts_by_status<'c>(
    ex: impl Executor<'c, Database = Any>,
    table: &'static str,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT status, COUNT(*) FROM {table} GROUP BY status"
    )))
    .fetch_all(ex)
    .await
}

/// The last credit ledger entry recorded before `at`.
pub async fn last_ledger_entry_before<'c>(
    ex: impl Executor<'c, Database = Any>,
    at: Micros,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT MAX(id) FROM credit_ledger WHERE created_at < $1")
        .bind(at)
        .fetch_one(ex)
        .await
}

/// `(id, amount, reason)` of ledger entries after `last_id` recorded by `settled`, oldest first.
pub async fn ledger_entries_after<'c>(
    ex: impl Executor<'c, Database = Any>,
    last_id: i64,
    settled: Micros,
) -> sqlx::Result<Vec<(i64, i64, String)>> {
    sqlx::query_as(
        "SELECT id, amount, reason FROM credit_ledger
         WHERE id > $1 AND created_at <= $2 ORDER BY id LIMIT 10000",
    )
    .bind(last_id)
    .bind(settled)
    .fetch_all(ex)
    .await
}
