//! Audiences (segments of a workspace's leads), their members and their campaign links.

use sqlx::{Any, Executor, FromRow};

use sqlx::AnyConnection;

use super::{bulk_sql, placeholder_list, placeholder_rows, rows_per_statement};
use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct AudienceRow {
    pub id: i64,
    pub workspace_id: i64,
    pub name: String,
    pub description: Option<String>,
    pub color: Option<String>,
    pub lead_count: i64,
    pub created_at: Micros,
    pub updated_at: Micros,
}

const COLUMNS: &str = "a.id, a.workspace_id, a.name, a.description, a.color,
    (SELECT COUNT(*) FROM audience_leads al WHERE al.audience_id = a.id) AS lead_count,
    a.created_at, a.updated_at";

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    name: &str,
    description: Option<&str>,
    color: Option<&str>,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO audiences (workspace_id, name, description, color, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $5)
         RETURNING id",
    )
    .bind(workspace_id)
    .bind(name)
    .bind(description)
    .bind(color)
    .bind(now)
    .fetch_one(ex)
    .await
}

pub async fn get<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    id: i64,
) -> sqlx::Result<Option<AudienceRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM audiences a WHERE a.workspace_id = $1 AND a.id = $2"
    )))
    .bind(workspace_id)
    .bind(id)
    .fetch_optional(ex)
    .await
}

pub async fn list<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<Vec<AudienceRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM audiences a WHERE a.workspace_id = $1 ORDER BY a.id"
    )))
    .bind(workspace_id)
    .fetch_all(ex)
    .await
}

/// Leads of the workspace in no audience: the Default Audience's size.
pub async fn count_unassigned<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM leads l WHERE l.workspace_id = $1
           AND NOT EXISTS (SELECT 1 FROM audience_leads al WHERE al.lead_id = l.id)",
    )
    .bind(workspace_id)
    .fetch_one(ex)
    .await
}

pub async fn count_members<'c>(
    ex: impl Executor<'c, Database = Any>,
    audience_id: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM audience_leads WHERE audience_id = $1")
        .bind(audience_id)
        .fetch_one(ex)
        .await
}

/// Adds leads (already known to be in the audience's workspace); returns how many were new.
pub async fn add_members(
    conn: &mut AnyConnection,
    audience_id: i64,
    lead_ids: &[i64],
) -> sqlx::Result<u64> {
    let mut added = 0;
    for chunk in lead_ids.chunks(rows_per_statement(conn, 2)) {
        let sql = format!(
            "INSERT INTO audience_leads (audience_id, lead_id) VALUES {}
             ON CONFLICT DO NOTHING",
            placeholder_rows(chunk.len(), 2, 1, &[])
        );
        let mut query = sqlx::query(bulk_sql(conn, sql));
        for lead_id in chunk {
            query = query.bind(audience_id).bind(*lead_id);
        }
        added += query.execute(&mut *conn).await?.rows_affected();
    }
    Ok(added)
}

pub async fn remove_members(
    conn: &mut AnyConnection,
    audience_id: i64,
    lead_ids: &[i64],
) -> sqlx::Result<u64> {
    let mut removed = 0;
    for chunk in lead_ids.chunks(rows_per_statement(conn, 1)) {
        let sql = format!(
            "DELETE FROM audience_leads WHERE audience_id = $1 AND lead_id IN ({})",
            placeholder_list(chunk.len(), 2)
        );
        let mut query = sqlx::query(bulk_sql(conn, sql)).bind(audience_id);
        for lead_id in chunk {
            query = query.bind(*lead_id);
        }
        removed += query.execute(&mut *conn).await?.rows_affected();
    }
    Ok(removed)
}

pub async fn touch<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE audiences SET updated_at = $2 WHERE id = $1")
        .bind(id)
        .bind(now)
        .execute(ex)
        .await?;
    Ok(())
}

/// Campaigns linked to the audience.
pub async fn linked_campaigns<'c>(
    ex: impl Executor<'c, Database = Any>,
    audience_id: i64,
) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "SELECT campaign_id FROM audience_campaigns WHERE audience_id = $1 ORDER BY campaign_id",
    )
    .bind(audience_id)
    .fetch_all(ex)
    .await
}

pub async fn link<'c>(
    ex: impl Executor<'c, Database = Any>,
    audience_id: i64,
    campaign_id: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO audience_campaigns (audience_id, campaign_id) VALUES ($1, $2)
         ON CONFLICT DO NOTHING",
    )
    .bind(audience_id)
    .bind(campaign_id)
    .execute(ex)
    .await?;
    Ok(())
}

pub async fn unlink<'c>(
    ex: impl Executor<'c, Database = Any>,
    audience_id: i64,
    campaign_id: i64,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM audience_campaigns WHERE audience_id = $1 AND campaign_id = $2")
        .bind(audience_id)
        .bind(campaign_id)
        .execute(ex)
        .await?;
    Ok(())
}

/// Deletes the audience; its memberships and links go with it (the leads stay).
pub async fn delete<'c>(ex: impl Executor<'c, Database = Any>, id: i64) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM audiences WHERE id = $1")
        .bind(id)
        .execute(ex)
        .await?;
    Ok(())
}
