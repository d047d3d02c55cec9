//! Brandings of a workspace (created outside the API; every workspace has a default one).

use sqlx::{Any, Executor, FromRow};

use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct BrandingRow {
    pub id: i64,
    pub workspace_id: i64,
    pub name: String,
    /// 0 or 1.
    pub is_default: i64,
}

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    name: &str,
    is_default: bool,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO brandings (workspace_id, name, is_default, created_at)
         VALUES ($1, $2, $3, $4)
         RETURNING id",
    )
    .bind(workspace_id)
    .bind(name)
    .bind(i64::from(is_default))
    .bind(now)
    .fetch_one(ex)
    .await
}

/// Makes `id` the workspace's only default branding.
pub async fn make_default<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    id: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE brandings SET is_default = CASE WHEN id = $2 THEN 1 ELSE 0 END
         WHERE workspace_id = $1",
    )
    .bind(workspace_id)
    .bind(id)
    .execute(ex)
    .await?;
    Ok(())
}

/// Default first, then oldest first.
pub async fn list<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<Vec<BrandingRow>> {
    sqlx::query_as(
        "SELECT id, workspace_id, name, is_default FROM brandings
         WHERE workspace_id = $1 ORDER BY is_default DESC, id",
    )
    .bind(workspace_id)
    .fetch_all(ex)
    .await
}
