//! CSV imports: the mapping each workspace chose per header row, and a job's rows staged while
//! the file is still being read (chunks `staged` until the file's end queues them).

use sqlx::{Any, AnyConnection, Executor};

use crate::time::Micros;

/// The choices remembered for this header row (`Header=field` each), if any.
pub async fn remembered<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    headers: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT choices FROM csv_import_mappings WHERE workspace_id = $1 AND headers = $2",
    )
    .bind(workspace_id)
    .bind(headers)
    .fetch_optional(ex)
    .await
}

pub async fn remember<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    headers: &str,
    choices: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO csv_import_mappings (workspace_id, headers, choices, updated_at)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (workspace_id, headers) DO UPDATE SET choices = $3, updated_at = $4",
    )
    .bind(workspace_id)
    .bind(headers)
    .bind(choices)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// Stages chunks of the file's rows after the `first_row` rows already staged (each item is
/// a chunk's row count and JSON array of rows, as read) and counts them in the job's total.
pub async fn stage(
    conn: &mut AnyConnection,
    job_id: &str,
    first_row: i64,
    chunks: &[(usize, String)],
    now: Micros,
) -> sqlx::Result<i64> {
    let next = super::jobs::insert_chunks_from(conn, job_id, first_row, chunks, "staged").await?;
    sqlx::query("UPDATE jobs SET total_rows = $2, updated_at = $3 WHERE id = $1")
        .bind(job_id)
        .bind(next)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    Ok(next)
}

/// Whether the job still has staged rows or none yet (a job still receiving its file).
pub async fn receiving<'c>(
    ex: impl Executor<'c, Database = Any>,
    job_id: &str,
) -> sqlx::Result<bool> {
    let other: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM job_chunks WHERE job_id = $1 AND status <> 'staged' LIMIT 1",
    )
    .bind(job_id)
    .fetch_optional(ex)
    .await?;
    Ok(other.is_none())
}

/// Queues the job's staged rows for the worker.
pub async fn queue<'c>(ex: impl Executor<'c, Database = Any>, job_id: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE job_chunks SET status = 'pending' WHERE job_id = $1 AND status = 'staged'")
        .bind(job_id)
        .execute(ex)
        .await?;
    Ok(())
}

/// Deletes a job that never received its whole file, and its staged rows.
pub async fn abandon(conn: &mut AnyConnection, job_id: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM job_chunks WHERE job_id = $1 AND status = 'staged'")
        .bind(job_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM csv_import_rejects WHERE job_id = $1")
        .bind(job_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM jobs WHERE id = $1")
        .bind(job_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// A CSV import's jobs still receiving their file (no chunk past `staged`, still pending)
/// whose last row was staged before `idle_since`.
const ABANDONED: &str = "jobs.status = 'pending' AND jobs.updated_at < $1
     AND jobs.options LIKE '%\"csv\":%'
     AND NOT EXISTS (SELECT 1 FROM job_chunks c WHERE c.job_id = jobs.id AND c.status <> 'staged')";

/// The ids of CSV imports abandoned while receiving their file, idle since before
/// `idle_since` (at most 100 per sweep).
pub async fn abandoned<'c>(
    ex: impl Executor<'c, Database = Any>,
    idle_since: Micros,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM jobs WHERE {ABANDONED} LIMIT 100"
    )))
    .bind(idle_since)
    .fetch_all(ex)
    .await
}

/// Whether this job is (still) an abandoned CSV import.
pub async fn abandoned_job<'c>(
    ex: impl Executor<'c, Database = Any>,
    job_id: &str,
    idle_since: Micros,
) -> sqlx::Result<bool> {
    let found: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM jobs WHERE {ABANDONED} AND jobs.id = $2"
    )))
    .bind(idle_since)
    .bind(job_id)
    .fetch_optional(ex)
    .await?;
    Ok(found.is_some())
}

/// Keeps a CSV job's rejected rows (`line`, the row's fields as a JSON array, why).
pub async fn reject(
    conn: &mut AnyConnection,
    job_id: &str,
    rows: &[(i64, String, &str)],
    now: Micros,
) -> sqlx::Result<()> {
    for group in rows.chunks(super::sql::rows_per_statement(conn, 5)) {
        let sql = format!(
            "INSERT INTO csv_import_rejects (job_id, line, fields, reason, created_at) VALUES {}
             ON CONFLICT (job_id, line) DO NOTHING",
            super::sql::placeholder_rows(group.len(), 5, 1, &[])
        );
        let mut query = sqlx::query(super::sql::bulk_sql(conn, sql));
        for (line, fields, reason) in group {
            query = query
                .bind(job_id)
                .bind(*line)
                .bind(fields)
                .bind(*reason)
                .bind(now);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// A job's rejected rows after `after_line`, in line order: (line, fields as JSON, reason).
pub async fn rejects<'c>(
    ex: impl Executor<'c, Database = Any>,
    job_id: &str,
    after_line: u64,
    limit: u32,
) -> sqlx::Result<Vec<(i64, String, String)>> {
    sqlx::query_as(
        "SELECT line, fields, reason FROM csv_import_rejects
         WHERE job_id = $1 AND line > $2 ORDER BY line LIMIT $3",
    )
    .bind(job_id)
    .bind(i64::try_from(after_line).unwrap_or(i64::MAX))
    .bind(i64::from(limit))
    .fetch_all(ex)
    .await
}

/// Deletes rejected rows kept since before `before` (at most 10,000 at a time).
pub async fn prune_rejects<'c>(
    ex: impl Executor<'c, Database = Any>,
    before: Micros,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM csv_import_rejects WHERE (job_id, line) IN
             (SELECT job_id, line FROM csv_import_rejects WHERE created_at < $1 LIMIT 10000)",
    )
    .bind(before)
    .execute(ex)
    .await?;
    Ok(done.rows_affected())
}

/// The payload of the job's first staged chunk, if any.
pub async fn first_staged<'c>(
    ex: impl Executor<'c, Database = Any>,
    job_id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT payload FROM job_chunks WHERE job_id = $1 AND status = 'staged'
         ORDER BY first_row LIMIT 1",
    )
    .bind(job_id)
    .fetch_optional(ex)
    .await
}

/// Replaces a job's options (a CSV import's mapping chosen at its end).
pub async fn set_options<'c>(
    ex: impl Executor<'c, Database = Any>,
    job_id: &str,
    options: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET options = $2 WHERE id = $1")
        .bind(job_id)
        .bind(options)
        .execute(ex)
        .await?;
    Ok(())
}
