//! Durable jobs: a job and one row per input lead, written together; workers claim pending
//! rows in batches and record each row's outcome in the same transaction as its lead.

use sqlx::{Any, AnyConnection, Executor, FromRow};

use super::leads::{self, LeadWithPage};
use super::{Dialect, placeholder_rows, rows_per_statement};
use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct JobRow {
    pub id: String,
    pub workspace_id: i64,
    pub kind: String,
    pub status: String,
    pub campaign_id: Option<i64>,
    pub audience_id: Option<i64>,
    pub callback_url: Option<String>,
    pub options: String,
    pub total_rows: i64,
    pub processed_rows: i64,
    pub failed_rows: i64,
    pub error: Option<String>,
}

const COLUMNS: &str = "id, workspace_id, kind, status, campaign_id, audience_id, callback_url, \
                       options, total_rows, processed_rows, failed_rows, error";

/// What a new job is made of.
pub struct NewJob<'a> {
    pub id: &'a str,
    pub workspace_id: i64,
    pub kind: &'a str,
    pub campaign_id: Option<i64>,
    pub audience_id: Option<i64>,
    pub callback_url: Option<&'a str>,
    pub options: &'a str,
    pub total_rows: i64,
}

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    job: &NewJob<'_>,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO jobs (id, workspace_id, kind, status, campaign_id, audience_id, callback_url,
                           options, total_rows, created_at, updated_at)
         VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $9)",
    )
    .bind(job.id)
    .bind(job.workspace_id)
    .bind(job.kind)
    .bind(job.campaign_id)
    .bind(job.audience_id)
    .bind(job.callback_url)
    .bind(job.options)
    .bind(job.total_rows)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// The job's input rows, `(row_index, payload JSON)`, all pending.
pub async fn insert_rows(
    conn: &mut AnyConnection,
    job_id: &str,
    payloads: &[String],
) -> sqlx::Result<()> {
    let rows = rows_per_statement(conn, 4);
    for (chunk_number, chunk) in payloads.chunks(rows).enumerate() {
        let sql = format!(
            "INSERT INTO job_rows (job_id, row_index, payload, status) VALUES {}",
            placeholder_rows(chunk.len(), 4, 1, &[])
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (offset, payload) in chunk.iter().enumerate() {
            let index = (chunk_number * rows + offset) as i64;
            query = query
                .bind(job_id)
                .bind(index)
                .bind(payload.as_str())
                .bind("pending");
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

pub async fn get<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<JobRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM jobs WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(ex)
    .await
}

/// A claimed input row.
#[derive(Debug, Clone, FromRow)]
pub struct ClaimedRow {
    pub id: i64,
    pub job_id: String,
    pub row_index: i64,
    pub payload: String,
}

/// Claims up to `limit` pending rows, oldest first, for the caller's open transaction; they
/// stay invisible to other workers until it ends, and pending again if it never commits.
///
/// On PostgreSQL the row locks of `FOR UPDATE SKIP LOCKED` do that without a write (each
/// update is a new row version there; `finish_rows` writes the outcome once). On SQLite the
/// claim is an update, so the transaction holds the write lock from its first statement.
pub async fn claim_rows(
    conn: &mut AnyConnection,
    dialect: Dialect,
    limit: i64,
) -> sqlx::Result<Vec<ClaimedRow>> {
    let sql = match dialect {
        Dialect::Postgres => {
            "SELECT id, job_id, row_index, payload FROM job_rows
             WHERE status = 'pending' ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"
        }
        Dialect::Sqlite => {
            "UPDATE job_rows SET status = 'claimed'
             WHERE id IN (SELECT id FROM job_rows WHERE status = 'pending' ORDER BY id LIMIT $1)
             RETURNING id, job_id, row_index, payload"
        }
    };
    let mut rows: Vec<ClaimedRow> = sqlx::query_as(sql).bind(limit).fetch_all(conn).await?;
    rows.sort_by_key(|row| row.id);
    Ok(rows)
}

/// One row's outcome: the lead it stored, or why it could not.
pub struct RowResult<'a> {
    pub row_id: i64,
    pub lead_id: Option<i64>,
    pub error: Option<&'a str>,
}

/// Records outcomes of claimed rows in one statement.
pub async fn finish_rows(conn: &mut AnyConnection, results: &[RowResult<'_>]) -> sqlx::Result<()> {
    for chunk in results.chunks(rows_per_statement(conn, 3)) {
        let sql = format!(
            "UPDATE job_rows
             SET status = CASE WHEN v.column3 IS NULL THEN 'stored' ELSE 'failed' END,
                 lead_id = v.column2, error = v.column3
             FROM (VALUES {}) AS v
             WHERE job_rows.id = v.column1",
            placeholder_rows(chunk.len(), 3, 1, &["BIGINT", "BIGINT", "TEXT"])
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for result in chunk {
            query = query
                .bind(result.row_id)
                .bind(result.lead_id)
                .bind(result.error);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// Counts `processed` more rows (of which `failed` failed) and moves the status on:
/// `processing` while rows remain, then `completed`, or `failed` when no row could be stored.
pub async fn advance<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: &str,
    processed: i64,
    failed: i64,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE jobs SET
             processed_rows = processed_rows + $2,
             failed_rows = failed_rows + $3,
             status = CASE
                 WHEN processed_rows + $2 < total_rows THEN 'processing'
                 WHEN failed_rows + $3 >= total_rows THEN 'failed'
                 ELSE 'completed' END,
             error = CASE
                 WHEN processed_rows + $2 >= total_rows AND failed_rows + $3 >= total_rows
                 THEN 'No lead could be stored; every row failed (see errors).'
                 ELSE error END,
             updated_at = $4
         WHERE id = $1",
    )
    .bind(id)
    .bind(processed)
    .bind(failed)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// Failed rows of a job, `(row_index, error)`, in input order.
pub async fn row_errors<'c>(
    ex: impl Executor<'c, Database = Any>,
    job_id: &str,
    limit: usize,
) -> sqlx::Result<Vec<(i64, String)>> {
    sqlx::query_as(
        "SELECT row_index, error FROM job_rows
         WHERE job_id = $1 AND status = 'failed' ORDER BY row_index LIMIT $2",
    )
    .bind(job_id)
    .bind(limit as i64)
    .fetch_all(ex)
    .await
}

/// The leads a job stored, in input order (a lead stored twice by one job is listed once),
/// with the slug of the job's campaign page or, failing that, the lead's first page.
pub async fn stored_leads<'c>(
    ex: impl Executor<'c, Database = Any>,
    job: &JobRow,
) -> sqlx::Result<Vec<LeadWithPage>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {columns},
                COALESCE((SELECT c.slug FROM campaign_leads cl
                          JOIN campaigns c ON c.id = cl.campaign_id
                          WHERE cl.lead_id = l.id AND cl.campaign_id = $2),
                         {first_page}) AS campaign_slug
         FROM leads l
         JOIN (SELECT lead_id, MIN(row_index) AS first_row FROM job_rows
               WHERE job_id = $1 AND status = 'stored' GROUP BY lead_id) r ON r.lead_id = l.id
         ORDER BY r.first_row",
        columns = leads::COLUMNS,
        first_page = leads::FIRST_PAGE,
    )))
    .bind(&job.id)
    .bind(job.campaign_id)
    .fetch_all(ex)
    .await
}

/// Rows still waiting anywhere: whether a worker has anything to do.
pub async fn has_pending_rows<'c>(ex: impl Executor<'c, Database = Any>) -> sqlx::Result<bool> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT id FROM job_rows WHERE status = 'pending' LIMIT 1")
            .fetch_optional(ex)
            .await?;
    Ok(found.is_some())
}

/// Moves a job from one of `from` to `to`; false when it was in none of them.
pub async fn set_status_from<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: &str,
    from: &[&str],
    to: &str,
    now: Micros,
) -> sqlx::Result<bool> {
    let from_list = super::status_list(from);
    let done = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE jobs SET status = $2, updated_at = $3 WHERE id = $1 AND status IN ({from_list})"
    )))
    .bind(id)
    .bind(to)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// An import whose rows are all handled but whose leads still wait for enrichment goes on to
/// `step_social` instead of ending.
pub async fn continue_with_enrichment<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE jobs SET status = 'step_social', updated_at = $2
         WHERE id = $1 AND status = 'completed'
           AND EXISTS (SELECT 1 FROM enrichments e
                       WHERE e.job_id = jobs.id AND e.status IN ('pending', 'running'))",
    )
    .bind(id)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// Counts one more lead of an enrichment job (`kind = 'enrich'`) as handled; imports count
/// their input rows instead.
pub async fn count_enriched<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: &str,
    failed: i64,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE jobs SET processed_rows = processed_rows + 1, failed_rows = failed_rows + $2,
                         updated_at = $3
         WHERE id = $1 AND kind = 'enrich'",
    )
    .bind(id)
    .bind(failed)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}
