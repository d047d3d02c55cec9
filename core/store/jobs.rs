//! Durable jobs: a job and its input staged in chunks of leads, written together; workers
//! claim pending chunks in batches and record each lead's outcome in the same transaction as
//! the lead.

use sqlx::{Any, AnyConnection, Executor, FromRow};

use super::leads::{self, LeadWithPage};
use super::{Dialect, bulk_sql, placeholder_rows, rows_per_statement};
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
    pub created_rows: i64,
    pub error: Option<String>,
}

const COLUMNS: &str = "id, workspace_id, kind, status, campaign_id, audience_id, callback_url, \
                       options, total_rows, processed_rows, failed_rows, created_rows, error";

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

/// Leads staged per chunk row (the worker's batch is about this size too).
pub const CHUNK_LEADS: usize = 1_000;

/// The job's input, staged as pending chunks of at most [`CHUNK_LEADS`] leads: each item of
/// `chunks` is the JSON array of its leads, with how many there are.
pub async fn insert_chunks(
    conn: &mut AnyConnection,
    job_id: &str,
    chunks: &[(usize, String)],
) -> sqlx::Result<()> {
    insert_chunks_from(conn, job_id, 0, chunks, "pending").await?;
    Ok(())
}

/// Inserts `chunks` with `status` (`pending` for the worker, `staged` while a file is still
/// arriving), numbering their rows on from `first_row`; returns the row after the last.
pub async fn insert_chunks_from(
    conn: &mut AnyConnection,
    job_id: &str,
    first_row: i64,
    chunks: &[(usize, String)],
    status: &str,
) -> sqlx::Result<i64> {
    let mut next = first_row;
    for group in chunks.chunks(rows_per_statement(conn, 5)) {
        let sql = format!(
            "INSERT INTO job_chunks (job_id, first_row, row_count, payload, status) VALUES {}",
            placeholder_rows(group.len(), 5, 1, &[])
        );
        let mut query = sqlx::query(bulk_sql(conn, sql));
        for (count, payload) in group {
            query = query
                .bind(job_id)
                .bind(next)
                .bind(*count as i64)
                .bind(payload.as_str())
                .bind(status);
            next += *count as i64;
        }
        query.execute(&mut *conn).await?;
    }
    Ok(next)
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

/// A claimed chunk of input leads.
#[derive(Debug, Clone, FromRow)]
pub struct ClaimedChunk {
    pub id: i64,
    pub job_id: String,
    pub row_count: i64,
    /// JSON array of the chunk's leads.
    pub payload: String,
}

/// The oldest pending chunks whose leads add up to about `leads` (always at least one chunk).
const OLDEST_PENDING: &str = "SELECT id FROM (
         SELECT id, SUM(row_count) OVER (ORDER BY id) - row_count AS leads_before
         FROM job_chunks WHERE status = 'pending' ORDER BY id LIMIT 256) oldest
     WHERE leads_before < $1";

/// Claims the oldest pending chunks, about `leads` leads in all, for the caller's open
/// transaction; they stay invisible to other workers until it ends, and pending again if it
/// never commits.
///
/// On PostgreSQL the row locks of `FOR UPDATE SKIP LOCKED` do that without a write (each
/// update is a new row version there; `finish_chunks` writes the outcome once); when another
/// worker holds the oldest chunks, the next free one is taken alone. On SQLite the claim is
/// an update, so the transaction holds the write lock from its first statement.
pub async fn claim_chunks(
    conn: &mut AnyConnection,
    dialect: Dialect,
    leads: i64,
) -> sqlx::Result<Vec<ClaimedChunk>> {
    let mut chunks: Vec<ClaimedChunk> = match dialect {
        Dialect::Postgres => {
            let oldest: Vec<ClaimedChunk> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT id, job_id, first_row, row_count, payload FROM job_chunks
                 WHERE id IN ({OLDEST_PENDING}) AND status = 'pending'
                 FOR UPDATE SKIP LOCKED"
            )))
            .bind(leads)
            .fetch_all(&mut *conn)
            .await?;
            if oldest.is_empty() {
                sqlx::query_as(
                    "SELECT id, job_id, first_row, row_count, payload FROM job_chunks
                     WHERE status = 'pending' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
                )
                .fetch_all(&mut *conn)
                .await?
            } else {
                oldest
            }
        }
        Dialect::Sqlite => {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "UPDATE job_chunks SET status = 'claimed' WHERE id IN ({OLDEST_PENDING})
                 RETURNING id, job_id, first_row, row_count, payload"
            )))
            .bind(leads)
            .fetch_all(&mut *conn)
            .await?
        }
    };
    chunks.sort_by_key(|chunk| chunk.id);
    Ok(chunks)
}

/// What became of one input lead, as kept in `job_chunks.results`: the id of the lead it
/// stored, or why it could not be stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum RowResult {
    Stored(i64),
    Failed(String),
}

/// Marks claimed chunks done with their leads' results (`(chunk id, results)`), in one
/// statement per group of chunks. A finished chunk keeps no input (`payload` becomes `[]`): the
/// leads it stored hold their values, the results say what became of each row, and nothing
/// reads a finished chunk's input; rewriting it here would write every import twice.
pub async fn finish_chunks(
    conn: &mut AnyConnection,
    chunks: &[(i64, Vec<RowResult>)],
) -> sqlx::Result<()> {
    for group in chunks.chunks(rows_per_statement(conn, 2)) {
        let sql = format!(
            "UPDATE job_chunks SET status = 'done', payload = '[]', results = v.column2
             FROM (VALUES {}) AS v
             WHERE job_chunks.id = v.column1",
            placeholder_rows(group.len(), 2, 1, &["BIGINT", "TEXT"])
        );
        let mut query = sqlx::query(bulk_sql(conn, sql));
        for (id, results) in group {
            let results = serde_json::to_string(results).unwrap_or_else(|_| "[]".into());
            query = query.bind(*id).bind(results);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// Every input lead's result so far, `(input index, result)`, in input order.
async fn results<'c>(
    ex: impl Executor<'c, Database = Any>,
    job_id: &str,
) -> sqlx::Result<Vec<(i64, RowResult)>> {
    let chunks: Vec<(i64, String)> = sqlx::query_as(
        "SELECT first_row, results FROM job_chunks
         WHERE job_id = $1 AND status = 'done' ORDER BY first_row",
    )
    .bind(job_id)
    .fetch_all(ex)
    .await?;
    let mut all = Vec::new();
    for (first_row, results) in chunks {
        let results: Vec<RowResult> = serde_json::from_str(&results).unwrap_or_default();
        all.extend(
            results
                .into_iter()
                .enumerate()
                .map(|(offset, result)| (first_row + offset as i64, result)),
        );
    }
    Ok(all)
}

/// Counts `processed` more rows (of which `failed` failed) and moves the status on:
/// `processing` while rows remain, then `completed`, or `failed` when no row could be stored.
/// Returns the new status and when the job was accepted.
pub async fn advance<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: &str,
    handled: Handled,
    now: Micros,
) -> sqlx::Result<(String, Micros)> {
    let Handled {
        processed,
        failed,
        created,
    } = handled;
    sqlx::query_as(
        "UPDATE jobs SET
             processed_rows = processed_rows + $2,
             failed_rows = failed_rows + $3,
             created_rows = created_rows + $5,
             status = CASE
                 WHEN processed_rows + $2 < total_rows THEN 'processing'
                 WHEN failed_rows + $3 >= total_rows THEN 'failed'
                 ELSE 'completed' END,
             error = CASE
                 WHEN processed_rows + $2 >= total_rows AND failed_rows + $3 >= total_rows
                 THEN 'No lead could be stored; every row failed (see errors).'
                 ELSE error END,
             updated_at = $4
         WHERE id = $1
         RETURNING status, created_at",
    )
    .bind(id)
    .bind(processed)
    .bind(failed)
    .bind(now)
    .bind(created)
    .fetch_one(ex)
    .await
}

/// Rows a worker handled in one go: all of them, those that failed, those that made a lead.
#[derive(Debug, Clone, Copy)]
pub struct Handled {
    pub processed: i64,
    pub failed: i64,
    pub created: i64,
}

/// Failed input leads of a job, `(input index, error)`, in input order.
pub async fn row_errors<'c>(
    ex: impl Executor<'c, Database = Any>,
    job_id: &str,
    limit: usize,
) -> sqlx::Result<Vec<(i64, String)>> {
    Ok(results(ex, job_id)
        .await?
        .into_iter()
        .filter_map(|(index, result)| match result {
            RowResult::Failed(error) => Some((index, error)),
            RowResult::Stored(_) => None,
        })
        .take(limit)
        .collect())
}

/// The leads a job stored, in input order (a lead stored twice by one job is listed once),
/// with the slug of the job's campaign page or, failing that, the lead's first page.
pub async fn stored_leads(
    conn: &mut AnyConnection,
    job: &JobRow,
) -> sqlx::Result<Vec<LeadWithPage>> {
    let mut order = std::collections::HashMap::new();
    for (_, result) in results(&mut *conn, &job.id).await? {
        if let RowResult::Stored(id) = result {
            let next = order.len();
            order.entry(id).or_insert(next);
        }
    }
    let ids: Vec<i64> = order.keys().copied().collect();
    let mut found: Vec<LeadWithPage> = Vec::with_capacity(ids.len());
    for group in ids.chunks(rows_per_statement(conn, 1)) {
        let sql = format!(
            "SELECT {columns},
                    COALESCE((SELECT COALESCE(c.page_slug, c.slug) FROM campaign_leads cl
                              JOIN campaigns c ON c.id = cl.campaign_id
                              WHERE cl.lead_id = l.id AND cl.campaign_id = $1),
                             {first_page}) AS campaign_slug
             FROM leads l WHERE l.id IN ({ids})",
            columns = leads::COLUMNS,
            first_page = leads::FIRST_PAGE,
            ids = super::placeholder_list(group.len(), 2),
        );
        let mut query =
            sqlx::query_as::<_, LeadWithPage>(bulk_sql(conn, sql)).bind(job.campaign_id);
        for id in group {
            query = query.bind(*id);
        }
        found.extend(query.fetch_all(&mut *conn).await?);
    }
    found.sort_by_key(|lead| order.get(&lead.lead.id).copied());
    Ok(found)
}

/// Chunks still waiting anywhere: whether a worker has anything to do.
pub async fn has_pending_chunks<'c>(ex: impl Executor<'c, Database = Any>) -> sqlx::Result<bool> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT id FROM job_chunks WHERE status = 'pending' LIMIT 1")
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
