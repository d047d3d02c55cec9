//! AI design runs: queued -> running -> success | error | cancelled, leased while running so a
//! run whose process died is taken over.

use sqlx::{Any, AnyConnection, Executor, FromRow};

use super::Dialect;
use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct RunRow {
    pub id: String,
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub prompt: String,
    /// 0 or 1.
    pub replace_design: i64,
    pub status: String,
    pub error: Option<String>,
    pub credits: i64,
    pub attempts: i64,
}

const COLUMNS: &str =
    "id, workspace_id, campaign_id, prompt, replace_design, status, error, credits, attempts";

pub struct NewRun<'a> {
    pub id: &'a str,
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub prompt: &'a str,
    pub replace_design: bool,
    pub credits: i64,
}

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    run: &NewRun<'_>,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO design_runs (id, workspace_id, campaign_id, prompt, replace_design, status,
                                  credits, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $7)",
    )
    .bind(run.id)
    .bind(run.workspace_id)
    .bind(run.campaign_id)
    .bind(run.prompt)
    .bind(i64::from(run.replace_design))
    .bind(run.credits)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

pub async fn get<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<RunRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM design_runs WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(ex)
    .await
}

/// Takes the oldest queued run, or a running one whose lease ran out (its process died), and
/// leases it until `lease_until`.
pub async fn claim_next(
    conn: &mut AnyConnection,
    dialect: Dialect,
    now: Micros,
    lease_until: Micros,
) -> sqlx::Result<Option<RunRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE design_runs
         SET status = 'running', attempts = attempts + 1, lease_until = $2, updated_at = $1
         WHERE id = (SELECT id FROM design_runs
                     WHERE status = 'queued' OR (status = 'running' AND lease_until < $1)
                     ORDER BY created_at LIMIT 1{})
         RETURNING {COLUMNS}",
        dialect.skip_locked()
    )))
    .bind(now)
    .bind(lease_until)
    .fetch_optional(conn)
    .await
}

/// Ends a run that is still `from` (queued or running) in `to`; false when it had already
/// ended (a cancel won the race, say).
pub async fn finish<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: &str,
    from: &[&str],
    to: &str,
    error: Option<&str>,
    now: Micros,
) -> sqlx::Result<bool> {
    let from_list = super::status_list(from);
    let done = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE design_runs SET status = $2, error = $3, lease_until = NULL, updated_at = $4
         WHERE id = $1 AND status IN ({from_list})"
    )))
    .bind(id)
    .bind(to)
    .bind(error)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}
