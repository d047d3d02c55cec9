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

/// Stages chunks of the job's leads after the `first_row` rows already staged (each item is
/// a chunk's row count and JSON array of leads) and counts them in the job's total.
pub async fn stage(
    conn: &mut AnyConnection,
    job_id: &str,
    first_row: i64,
    chunks: &[(usize, String)],
) -> sqlx::Result<i64> {
    let next = super::jobs::insert_chunks_from(conn, job_id, first_row, chunks, "staged").await?;
    sqlx::query("UPDATE jobs SET total_rows = $2 WHERE id = $1")
        .bind(job_id)
        .bind(next)
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
    sqlx::query("DELETE FROM jobs WHERE id = $1")
        .bind(job_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
