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
    #[sqlx(flatten)]
    pub look: BrandingLook,
}

/// What pages show of the sender.
#[derive(Debug, Clone, Default, PartialEq, Eq, FromRow)]
pub struct BrandingLook {
    pub company_name: Option<String>,
    pub logo_url: Option<String>,
    pub primary_color: Option<String>,
    pub website: Option<String>,
    pub sender_name: Option<String>,
    pub sender_title: Option<String>,
    pub sender_photo_url: Option<String>,
}

const COLUMNS: &str = "id, workspace_id, name, is_default, company_name, logo_url, \
    primary_color, website, sender_name, sender_title, sender_photo_url";

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    name: &str,
    is_default: bool,
    look: &BrandingLook,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO brandings (workspace_id, name, is_default, company_name, logo_url,
                               primary_color, website, sender_name, sender_title,
                               sender_photo_url, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         RETURNING id",
    )
    .bind(workspace_id)
    .bind(name)
    .bind(i64::from(is_default))
    .bind(look.company_name.as_deref())
    .bind(look.logo_url.as_deref())
    .bind(look.primary_color.as_deref())
    .bind(look.website.as_deref())
    .bind(look.sender_name.as_deref())
    .bind(look.sender_title.as_deref())
    .bind(look.sender_photo_url.as_deref())
    .bind(now)
    .fetch_one(ex)
    .await
}

pub async fn get<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
) -> sqlx::Result<Option<BrandingRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM brandings WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(ex)
    .await
}

/// Replaces a branding's name and look.
pub async fn update<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    name: &str,
    look: &BrandingLook,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE brandings SET name = $2, company_name = $3, logo_url = $4, primary_color = $5,
                website = $6, sender_name = $7, sender_title = $8, sender_photo_url = $9
         WHERE id = $1",
    )
    .bind(id)
    .bind(name)
    .bind(look.company_name.as_deref())
    .bind(look.logo_url.as_deref())
    .bind(look.primary_color.as_deref())
    .bind(look.website.as_deref())
    .bind(look.sender_name.as_deref())
    .bind(look.sender_title.as_deref())
    .bind(look.sender_photo_url.as_deref())
    .execute(ex)
    .await?;
    Ok(())
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
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM brandings WHERE workspace_id = $1 ORDER BY is_default DESC, id"
    )))
    .bind(workspace_id)
    .fetch_all(ex)
    .await
}
