//! Campaigns of a workspace and the pages their leads have in them (`campaign_leads`).

use sqlx::{Any, Executor, FromRow};

use sqlx::AnyConnection;

use super::{multi_row_insert, rows_per_statement};
use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct CampaignRow {
    pub id: i64,
    pub workspace_id: i64,
    pub branding_id: i64,
    pub name: String,
    pub slug: String,
    /// Where the pages' call to action leads.
    pub cta_url: Option<String>,
    /// The public path segment of its pages when it is not `slug`.
    pub page_slug: Option<String>,
    /// The workspace domain its pages are handed out on (once verified).
    pub domain_id: Option<i64>,
}

impl CampaignRow {
    /// The segment of its pages' addresses (`/p/{this}/{lead_slug}`).
    pub fn public_slug(&self) -> &str {
        self.page_slug.as_deref().unwrap_or(&self.slug)
    }
}

const COLUMNS: &str = "id, workspace_id, branding_id, name, slug, cta_url, page_slug, domain_id";

/// A campaign to store.
pub struct NewCampaign<'a> {
    pub workspace_id: i64,
    pub branding_id: i64,
    pub name: &'a str,
    pub slug: &'a str,
    pub prompt: Option<&'a str>,
    pub cta_url: Option<&'a str>,
}

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign: &NewCampaign<'_>,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO campaigns (workspace_id, branding_id, name, slug, prompt, cta_url, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING id",
    )
    .bind(campaign.workspace_id)
    .bind(campaign.branding_id)
    .bind(campaign.name)
    .bind(campaign.slug)
    .bind(campaign.prompt)
    .bind(campaign.cta_url)
    .bind(now)
    .fetch_one(ex)
    .await
}

pub async fn get<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
) -> sqlx::Result<Option<CampaignRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM campaigns WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(ex)
    .await
}

pub async fn list<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<Vec<CampaignRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM campaigns WHERE workspace_id = $1 ORDER BY id"
    )))
    .bind(workspace_id)
    .fetch_all(ex)
    .await
}

/// Sets where the campaign's call to action leads, and its branding.
pub async fn update_settings<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    name: &str,
    cta_url: Option<&str>,
    branding_id: i64,
    domain_id: Option<i64>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE campaigns SET cta_url = $2, branding_id = $3, name = $4, domain_id = $5
         WHERE id = $1",
    )
    .bind(id)
    .bind(cta_url)
    .bind(branding_id)
    .bind(name)
    .bind(domain_id)
    .execute(ex)
    .await?;
    Ok(())
}

/// Slugs in the workspace equal to `base` or starting with `base-`.
pub async fn slugs_like<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    base: &str,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT slug FROM campaigns WHERE workspace_id = $1 AND (slug = $2 OR slug LIKE $3)",
    )
    .bind(workspace_id)
    .bind(base)
    .bind(format!("{base}-%"))
    .fetch_all(ex)
    .await
}

/// Gives each (campaign, lead) pair a page, keeping pages that exist. Returns how many are new.
pub async fn attach_leads(
    conn: &mut AnyConnection,
    pairs: &[(i64, i64)],
    now: Micros,
) -> sqlx::Result<u64> {
    let mut attached = 0;
    for chunk in pairs.chunks(rows_per_statement(conn, 3)) {
        let sql = multi_row_insert(
            conn,
            "campaign_leads (campaign_id, lead_id, created_at)",
            chunk.len(),
            3,
            "ON CONFLICT DO NOTHING",
        );
        let mut query = sqlx::query(sql);
        for (campaign_id, lead_id) in chunk {
            query = query.bind(*campaign_id).bind(*lead_id).bind(now);
        }
        attached += query.execute(&mut *conn).await?.rows_affected();
    }
    Ok(attached)
}

/// Pages for every lead of an audience in a campaign.
pub async fn attach_audience<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
    audience_id: i64,
    now: Micros,
) -> sqlx::Result<u64> {
    let result = sqlx::query(
        "INSERT INTO campaign_leads (campaign_id, lead_id, created_at)
         SELECT $1, lead_id, $3 FROM audience_leads WHERE audience_id = $2
         ON CONFLICT DO NOTHING",
    )
    .bind(campaign_id)
    .bind(audience_id)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(result.rows_affected())
}

/// Whether another campaign of the workspace has its pages at `public_slug`.
pub async fn public_slug_taken<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    campaign_id: i64,
    public_slug: &str,
) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM campaigns
         WHERE workspace_id = $1 AND id <> $2 AND COALESCE(page_slug, slug) = $3 LIMIT 1",
    )
    .bind(workspace_id)
    .bind(campaign_id)
    .bind(public_slug)
    .fetch_optional(ex)
    .await?;
    Ok(found.is_some())
}

/// Moves the campaign's pages to `public_slug`, keeping `previous` so its links redirect.
pub async fn move_pages(
    conn: &mut AnyConnection,
    campaign_id: i64,
    previous: &str,
    public_slug: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO campaign_old_slugs (campaign_id, slug) VALUES ($1, $2)
         ON CONFLICT (campaign_id, slug) DO NOTHING",
    )
    .bind(campaign_id)
    .bind(previous)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE campaigns SET page_slug = $2 WHERE id = $1")
        .bind(campaign_id)
        .bind(public_slug)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Where a lead's page that used to be at `/p/{old_slug}/{lead_slug}` is now: the campaign's
/// current segment.
pub async fn moved_to<'c>(
    ex: impl Executor<'c, Database = Any>,
    old_slug: &str,
    lead_slug: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT COALESCE(c.page_slug, c.slug) FROM campaign_old_slugs o
         JOIN campaigns c ON c.id = o.campaign_id
         JOIN campaign_leads cl ON cl.campaign_id = c.id
         JOIN leads l ON l.id = cl.lead_id AND l.workspace_id = c.workspace_id
         WHERE o.slug = $1 AND l.slug = $2
         ORDER BY c.id LIMIT 1",
    )
    .bind(old_slug)
    .bind(lead_slug)
    .fetch_optional(ex)
    .await
}
