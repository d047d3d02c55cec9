//! Form submissions on lead pages: written once, read newest first.

use sqlx::{Any, Executor, FromRow};

use super::placeholder_list;
use crate::time::Micros;

/// A submission to store.
pub struct NewSubmission<'a> {
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub lead_id: i64,
    pub form_id: &'a str,
    pub page_url: &'a str,
    pub ip_address: &'a str,
    pub email: Option<&'a str>,
    /// JSON object of the other fields.
    pub fields: &'a str,
    /// `person`, `automated` or `scanner_network` (`VisitClass`), and why when not a person.
    pub class: &'a str,
    pub reason: Option<&'a str>,
}

#[derive(Debug, Clone, FromRow)]
pub struct SubmissionRow {
    pub id: i64,
    pub campaign_id: i64,
    pub lead_id: i64,
    pub form_id: String,
    pub page_url: String,
    pub ip_address: String,
    pub email: Option<String>,
    pub fields: String,
    pub created_at: Micros,
    pub class: String,
    pub reason: Option<String>,
}

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    submission: &NewSubmission<'_>,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO form_submissions (workspace_id, campaign_id, lead_id, form_id, page_url,
                                       ip_address, email, fields, created_at, class, reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         RETURNING id",
    )
    .bind(submission.workspace_id)
    .bind(submission.campaign_id)
    .bind(submission.lead_id)
    .bind(submission.form_id)
    .bind(submission.page_url)
    .bind(submission.ip_address)
    .bind(submission.email)
    .bind(submission.fields)
    .bind(now)
    .bind(submission.class)
    .bind(submission.reason)
    .fetch_one(ex)
    .await
}

/// The newest `limit` submissions in the given workspaces, of one campaign if given, with an
/// id below `before_id` if given (the next page).
pub async fn newest<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_ids: &[i64],
    campaign_id: Option<i64>,
    before_id: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<SubmissionRow>> {
    if workspace_ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id, workspace_id, campaign_id, lead_id, form_id, page_url, ip_address, email,
                fields, created_at, class, reason
         FROM form_submissions
         WHERE ($1 IS NULL OR campaign_id = $1) AND ($2 IS NULL OR id < $2)
           AND workspace_id IN ({})
         ORDER BY id DESC LIMIT $3",
        placeholder_list(workspace_ids.len(), 4)
    );
    let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(campaign_id)
        .bind(before_id)
        .bind(limit);
    for id in workspace_ids {
        query = query.bind(*id);
    }
    query.fetch_all(ex).await
}

/// A lead's submission, with its campaign's name, for the lead's timeline.
#[derive(Debug, Clone, FromRow)]
pub struct LeadSubmissionRow {
    pub campaign_id: i64,
    pub campaign_name: String,
    pub form_id: String,
    pub email: Option<String>,
    pub fields: String,
    pub created_at: Micros,
    pub class: String,
    pub reason: Option<String>,
}

/// A lead's submissions, newest first: the `limit` before `before`.
pub async fn of_lead<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_id: i64,
    before: Option<Micros>,
    limit: i64,
) -> sqlx::Result<Vec<LeadSubmissionRow>> {
    sqlx::query_as(
        "SELECT f.campaign_id, c.name AS campaign_name, f.form_id, f.email, f.fields,
                f.created_at, f.class, f.reason
         FROM form_submissions f JOIN campaigns c ON c.id = f.campaign_id
         WHERE f.lead_id = $1 AND ($2 IS NULL OR f.created_at < $2)
         ORDER BY f.created_at DESC, f.id DESC LIMIT $3",
    )
    .bind(lead_id)
    .bind(before)
    .bind(limit)
    .fetch_all(ex)
    .await
}
