//! Enrichment of leads: one row per (job, lead) naming the types to run for that lead;
//! pending -> running (leased, so a row whose process died is taken over) -> done | failed.

use sqlx::{Any, AnyConnection, Executor, FromRow};

use super::{Dialect, bulk_sql, placeholder_rows, rows_per_statement};
use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct EnrichmentRow {
    pub id: i64,
    pub job_id: String,
    pub workspace_id: i64,
    pub lead_id: i64,
    /// Comma-separated types, in the order they run.
    pub types: String,
    pub credits: i64,
    pub attempts: i64,
}

const COLUMNS: &str = "id, job_id, workspace_id, lead_id, types, credits, attempts";

/// What a new row is made of.
pub struct NewEnrichment {
    pub lead_id: i64,
    pub types: String,
    pub credits: i64,
}

/// Rows to run (`pending`).
pub async fn insert_many(
    conn: &mut AnyConnection,
    job_id: &str,
    workspace_id: i64,
    rows: &[NewEnrichment],
    now: Micros,
) -> sqlx::Result<()> {
    insert(conn, job_id, workspace_id, rows, "pending", None, now).await
}

/// Rows that will not run (`failed` with `error`), recorded so the job's errors list them.
pub async fn insert_failed(
    conn: &mut AnyConnection,
    job_id: &str,
    workspace_id: i64,
    rows: &[NewEnrichment],
    error: &str,
    now: Micros,
) -> sqlx::Result<()> {
    insert(conn, job_id, workspace_id, rows, "failed", Some(error), now).await
}

async fn insert(
    conn: &mut AnyConnection,
    job_id: &str,
    workspace_id: i64,
    rows: &[NewEnrichment],
    status: &str,
    error: Option<&str>,
    now: Micros,
) -> sqlx::Result<()> {
    for chunk in rows.chunks(rows_per_statement(conn, 9)) {
        let sql = format!(
            "INSERT INTO enrichments (job_id, workspace_id, lead_id, types, credits, status,
                                      error, created_at, updated_at)
             VALUES {}",
            placeholder_rows(chunk.len(), 9, 1, &[])
        );
        let mut query = sqlx::query(bulk_sql(conn, sql));
        for row in chunk {
            query = query
                .bind(job_id)
                .bind(workspace_id)
                .bind(row.lead_id)
                .bind(row.types.as_str())
                .bind(row.credits)
                .bind(status)
                .bind(error)
                .bind(now)
                .bind(now);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// Takes up to `limit` pending rows (and running ones whose lease ran out: their process
/// died), oldest first, and leases them until `lease_until`.
pub async fn claim(
    conn: &mut AnyConnection,
    dialect: Dialect,
    limit: i64,
    now: Micros,
    lease_until: Micros,
) -> sqlx::Result<Vec<EnrichmentRow>> {
    let mut rows: Vec<EnrichmentRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE enrichments
         SET status = 'running', attempts = attempts + 1, lease_until = $2, updated_at = $1
         WHERE id IN (SELECT id FROM enrichments
                      WHERE status = 'pending' OR (status = 'running' AND lease_until < $1)
                      ORDER BY id LIMIT $3{})
         RETURNING {COLUMNS}",
        dialect.skip_locked()
    )))
    .bind(now)
    .bind(lease_until)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.sort_by_key(|row| row.id);
    Ok(rows)
}

/// Whether anything waits (a read, so an idle worker does not queue behind writers).
pub async fn has_due<'c>(ex: impl Executor<'c, Database = Any>, now: Micros) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM enrichments
         WHERE status = 'pending' OR (status = 'running' AND lease_until < $1) LIMIT 1",
    )
    .bind(now)
    .fetch_optional(ex)
    .await?;
    Ok(found.is_some())
}

/// Ends a running row: `done` (some or all types worked) or `failed` (none did), with the
/// reasons of the types that failed. False when the row was no longer running (its lease ran
/// out and another process took it).
pub async fn finish<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    attempts: i64,
    status: &str,
    error: Option<&str>,
    now: Micros,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE enrichments SET status = $3, error = $4, lease_until = NULL, updated_at = $5
         WHERE id = $1 AND attempts = $2 AND status = 'running'",
    )
    .bind(id)
    .bind(attempts)
    .bind(status)
    .bind(error)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The types still to run for a lead, in request order, each once.
pub async fn pending_types<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_id: i64,
) -> sqlx::Result<Vec<String>> {
    let rows: Vec<String> = sqlx::query_scalar(
        "SELECT types FROM enrichments
         WHERE lead_id = $1 AND status IN ('pending', 'running') ORDER BY id",
    )
    .bind(lead_id)
    .fetch_all(ex)
    .await?;
    let mut types: Vec<String> = Vec::new();
    for kind in rows.iter().flat_map(|row| row.split(',')) {
        if !types.iter().any(|known| known == kind) {
            types.push(kind.to_owned());
        }
    }
    Ok(types)
}

/// Rows of a job still to run.
pub async fn unfinished_in_job<'c>(
    ex: impl Executor<'c, Database = Any>,
    job_id: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM enrichments WHERE job_id = $1 AND status IN ('pending', 'running')",
    )
    .bind(job_id)
    .fetch_one(ex)
    .await
}

/// Why types failed for the leads of a job, `(lead_id, error)`, in queue order.
pub async fn errors_of_job<'c>(
    ex: impl Executor<'c, Database = Any>,
    job_id: &str,
    limit: usize,
) -> sqlx::Result<Vec<(i64, String)>> {
    sqlx::query_as(
        "SELECT lead_id, error FROM enrichments
         WHERE job_id = $1 AND error IS NOT NULL ORDER BY id LIMIT $2",
    )
    .bind(job_id)
    .bind(limit as i64)
    .fetch_all(ex)
    .await
}

/// Jobs whose enrichment is over (`step_social`/`step_import` with nothing left to run) end:
/// `completed`, or `failed` when every row failed. Returns their ids.
pub async fn end_finished_jobs(conn: &mut AnyConnection, now: Micros) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "UPDATE jobs SET
             status = CASE
                 WHEN EXISTS (SELECT 1 FROM enrichments e
                              WHERE e.job_id = jobs.id AND e.status = 'done') THEN 'completed'
                 WHEN kind = 'enrich' THEN 'failed'
                 ELSE 'completed' END,
             error = CASE
                 WHEN kind = 'enrich' AND NOT EXISTS (SELECT 1 FROM enrichments e
                              WHERE e.job_id = jobs.id AND e.status = 'done')
                 THEN 'No lead could be enriched (see errors).'
                 ELSE error END,
             updated_at = $1
         WHERE status IN ('step_social', 'step_import')
           AND NOT EXISTS (SELECT 1 FROM enrichments e
                           WHERE e.job_id = jobs.id AND e.status IN ('pending', 'running'))
         RETURNING id",
    )
    .bind(now)
    .fetch_all(conn)
    .await
}
