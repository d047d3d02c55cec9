//! Campaign designs (draft and published snapshot, columns of `campaigns`) and page templates.

use sqlx::{Any, Executor, FromRow};

use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct DesignRow {
    pub campaign_id: i64,
    pub draft_html: Option<String>,
    pub draft_css: Option<String>,
    pub design_updated_at: Option<Micros>,
    pub live_html: Option<String>,
    pub live_css: Option<String>,
    /// 0 or 1.
    pub is_live: i64,
    /// The copy (JSON) with the draft and with the published version.
    pub draft_copy: String,
    pub live_copy: String,
}

pub async fn get<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
) -> sqlx::Result<Option<DesignRow>> {
    sqlx::query_as(
        "SELECT id AS campaign_id, workspace_id, draft_html, draft_css, design_updated_at,
                live_html, live_css, published_at, is_live, draft_copy, live_copy
         FROM campaigns WHERE id = $1",
    )
    .bind(campaign_id)
    .fetch_optional(ex)
    .await
}

pub async fn set_draft<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
    html: &str,
    css: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE campaigns SET draft_html = $2, draft_css = $3, design_updated_at = $4
         WHERE id = $1",
    )
    .bind(campaign_id)
    .bind(html)
    .bind(css)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// The draft's copy (JSON), locked until the write transaction ends, to merge a change into.
pub async fn draft_copy_for_update(
    tx: &mut crate::store::WriteTransaction,
    dialect: crate::store::Dialect,
    campaign_id: i64,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT draft_copy FROM campaigns WHERE id = $1{}",
        dialect.for_update()
    )))
    .bind(campaign_id)
    .fetch_optional(&mut **tx)
    .await
}

/// Replaces the draft's copy (JSON).
pub async fn set_copy<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
    copy: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE campaigns SET draft_copy = $2, design_updated_at = $3 WHERE id = $1")
        .bind(campaign_id)
        .bind(copy)
        .bind(now)
        .execute(ex)
        .await?;
    Ok(())
}

/// Replaces the draft's copy only if nothing was written yet.
pub async fn set_copy_if_unwritten<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
    copy: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE campaigns SET draft_copy = $2, design_updated_at = $3
         WHERE id = $1 AND draft_copy = '{}'",
    )
    .bind(campaign_id)
    .bind(copy)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// Copies the draft over the published snapshot and bumps the version pages are cached by.
pub async fn publish<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE campaigns SET live_html = draft_html, live_css = draft_css, live_copy = draft_copy,
                              published_at = $2,
                              is_live = 1, live_version = live_version + 1
         WHERE id = $1",
    )
    .bind(campaign_id)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

pub async fn unpublish<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE campaigns SET is_live = 0, live_version = live_version + 1 WHERE id = $1")
        .bind(campaign_id)
        .execute(ex)
        .await?;
    Ok(())
}

/// What a page shows beyond the lead: the campaign's call to action and its branding.
#[derive(Debug, Clone, Default, FromRow)]
pub struct PageLook {
    pub cta_url: Option<String>,
    pub branding_name: Option<String>,
    /// The sender's company (the lead's is `PageRow::company_name`).
    pub branding_company_name: Option<String>,
    pub logo_url: Option<String>,
    pub primary_color: Option<String>,
    pub website: Option<String>,
    pub sender_name: Option<String>,
    pub sender_title: Option<String>,
    pub sender_photo_url: Option<String>,
}

/// The columns of [`PageLook`], from `campaigns c` and `brandings b`.
const LOOK_COLUMNS: &str = "c.cta_url, b.name AS branding_name,
    b.company_name AS branding_company_name, b.logo_url,
    b.primary_color, b.website, b.sender_name, b.sender_title, b.sender_photo_url";

/// What serving a page needs to know, found by the two slugs of its address.
#[derive(Debug, Clone, FromRow)]
pub struct PageRow {
    pub campaign_id: i64,
    pub workspace_id: i64,
    pub is_live: i64,
    pub live_version: i64,
    pub lead_id: i64,
    pub first_name: Option<String>,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub company_domain: Option<String>,
    pub social_profile_url: Option<String>,
    pub custom_values: String,
    pub lead_updated_at: Micros,
}

/// What a page row is read from, spelled once for [`PAGE`] and [`pages`]: its columns, its
/// tables, and the match of a lead's slug and a campaign's page slug (the two expressions).
macro_rules! page_columns {
    () => {
        "c.id AS campaign_id, c.workspace_id, c.is_live, c.live_version,
         l.id AS lead_id, l.first_name, l.email, l.company_name, l.company_domain,
         l.social_profile_url, l.custom_values, l.updated_at AS lead_updated_at"
    };
}
macro_rules! page_tables {
    () => {
        "leads l
         JOIN campaign_leads cl ON cl.lead_id = l.id
         JOIN campaigns c ON c.id = cl.campaign_id"
    };
}
macro_rules! page_matching {
    ($lead_slug:literal, $campaign_slug:literal) => {
        concat!(
            "l.slug = ",
            $lead_slug,
            " AND COALESCE(c.page_slug, c.slug) = ",
            $campaign_slug,
            " AND c.workspace_id = l.workspace_id"
        )
    };
}

/// The lead's page in the campaign, found by the lead's slug (`$1`) and the campaign's page
/// slug (`$2`). Also run on SQLite's own connections by [`super::read_lane`], read by
/// [`PageRow::from_sqlite`].
pub const PAGE: &str = concat!(
    "SELECT ",
    page_columns!(),
    " FROM ",
    page_tables!(),
    " WHERE ",
    page_matching!("$1", "$2")
);

/// The lead's page in the campaign, if the lead has one there.
pub async fn page<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_slug: &str,
    lead_slug: &str,
) -> sqlx::Result<Option<PageRow>> {
    sqlx::query_as(PAGE)
        .bind(lead_slug)
        .bind(campaign_slug)
        .fetch_optional(ex)
        .await
}

/// Addresses [`pages`] looks up in one statement at most.
pub const PAGES_AT_ONCE: usize = 32;

/// [`PAGE`] for several addresses in one statement: `(campaign_slug, lead_slug)` each, at most
/// [`PAGES_AT_ONCE`]. Each row found comes with the position of the address it answers; an
/// address with no page has no row (one with several, as [`PAGE`] would, keeps the first).
pub async fn pages(
    conn: &mut sqlx::AnyConnection,
    asked: &[(&str, &str)],
) -> sqlx::Result<Vec<(usize, PageRow)>> {
    use sqlx::Row;
    use std::sync::OnceLock;
    // Each database's statements, by the number of addresses.
    static SQL: [[OnceLock<String>; PAGES_AT_ONCE]; 2] =
        [const { [const { OnceLock::new() }; PAGES_AT_ONCE] }; 2];
    let is_sqlite = super::is_sqlite(conn);
    let Some(sql) = asked
        .len()
        .checked_sub(1)
        .and_then(|at| SQL[usize::from(is_sqlite)].get(at))
    else {
        return Ok(Vec::new());
    };
    let sql = sql.get_or_init(|| {
        // `PAGE` for each address asked, numbered: one statement per number of them, prepared
        // once per connection like any other. On PostgreSQL each address is its own indexed
        // lookup (`LATERAL`, as `PAGE` alone is planned): planned as one join, a statement
        // prepared before the tables had statistics scanned a campaign's every lead.
        let addresses = super::placeholder_rows(asked.len(), 3, 1, &["BIGINT", "TEXT", "TEXT"]);
        let (columns, from) = (page_columns!(), page_tables!());
        let matching = page_matching!("q.column3", "q.column2");
        if is_sqlite {
            // SQLite has no `LATERAL`, and looks up each address by its index anyway.
            format!(
                "SELECT q.column1 AS asked, {columns} FROM (VALUES {addresses}) AS q, {from}
                 WHERE {matching}"
            )
        } else {
            format!(
                "SELECT q.column1 AS asked, p.* FROM (VALUES {addresses}) AS q
                 CROSS JOIN LATERAL (SELECT {columns} FROM {from} WHERE {matching} LIMIT 1) AS p"
            )
        }
    });
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()));
    for (at, (campaign_slug, lead_slug)) in asked.iter().enumerate() {
        query = query.bind(at as i64).bind(*campaign_slug).bind(*lead_slug);
    }
    let rows = query.fetch_all(&mut *conn).await?;
    let mut found = Vec::with_capacity(rows.len());
    for row in rows {
        let at: i64 = row.try_get("asked")?;
        found.push((at as usize, PageRow::from_row(&row)?));
    }
    Ok(found)
}

impl PageRow {
    /// A row of [`PAGE`] read by rusqlite, column by column as `FromRow` reads it for sqlx,
    /// by position: a name is looked up among the statement's columns at every read (a few
    /// percent of a first visit). [`PAGE_COLUMNS`] names them in order; a test holds the two
    /// together.
    pub fn from_sqlite(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            campaign_id: row.get(0)?,
            workspace_id: row.get(1)?,
            is_live: row.get(2)?,
            live_version: row.get(3)?,
            lead_id: row.get(4)?,
            first_name: row.get(5)?,
            email: row.get(6)?,
            company_name: row.get(7)?,
            company_domain: row.get(8)?,
            social_profile_url: row.get(9)?,
            custom_values: row.get(10)?,
            lead_updated_at: row.get(11)?,
        })
    }
}

/// The columns of [`PAGE`] in the order [`PageRow::from_sqlite`] reads them.
#[cfg(test)]
pub const PAGE_COLUMNS: [&str; 12] = [
    "campaign_id",
    "workspace_id",
    "is_live",
    "live_version",
    "lead_id",
    "first_name",
    "email",
    "company_name",
    "company_domain",
    "social_profile_url",
    "custom_values",
    "lead_updated_at",
];

/// A campaign's preview address: the campaign, with no lead.
#[derive(Debug, Clone, FromRow)]
pub struct PreviewRow {
    pub campaign_id: i64,
    pub workspace_id: i64,
    pub is_live: i64,
    pub live_version: i64,
}

/// The campaign whose preview address this is (its slug and id must agree).
pub async fn preview<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_slug: &str,
    campaign_id: i64,
) -> sqlx::Result<Option<PreviewRow>> {
    sqlx::query_as(
        "SELECT id AS campaign_id, workspace_id, is_live, live_version
         FROM campaigns WHERE id = $1 AND (slug = $2 OR COALESCE(page_slug, slug) = $2)",
    )
    .bind(campaign_id)
    .bind(campaign_slug)
    .fetch_optional(ex)
    .await
}

/// A published version: its design and what the pages show beyond the lead.
#[derive(Debug, Clone, FromRow)]
pub struct Snapshot {
    pub html: String,
    pub css: String,
    /// The version's copy (JSON).
    pub copy: String,
    #[sqlx(flatten)]
    pub look: PageLook,
}

/// The published snapshot of a version, for compiling it (a cache miss). The call to action and
/// branding belong to the version: changing them bumps it ([`bump_versions`]).
pub async fn live_snapshot<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
    version: i64,
) -> sqlx::Result<Option<Snapshot>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT COALESCE(c.live_html, '') AS html, COALESCE(c.live_css, '') AS css,
                c.live_copy AS copy, {LOOK_COLUMNS}
         FROM campaigns c LEFT JOIN brandings b ON b.id = c.branding_id
         WHERE c.id = $1 AND c.live_version = $2"
    )))
    .bind(campaign_id)
    .bind(version)
    .fetch_optional(ex)
    .await
}

/// The campaign's draft and what its pages would show beyond the lead, for a preview.
pub async fn draft_snapshot<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
) -> sqlx::Result<Option<Snapshot>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT COALESCE(c.draft_html, '') AS html, COALESCE(c.draft_css, '') AS css,
                c.draft_copy AS copy, {LOOK_COLUMNS}
         FROM campaigns c LEFT JOIN brandings b ON b.id = c.branding_id
         WHERE c.id = $1"
    )))
    .bind(campaign_id)
    .fetch_optional(ex)
    .await
}

/// The campaign's published page and what it shows beyond the lead, when it is live.
pub async fn published_snapshot<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
) -> sqlx::Result<Option<Snapshot>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT COALESCE(c.live_html, '') AS html, COALESCE(c.live_css, '') AS css,
                c.live_copy AS copy, {LOOK_COLUMNS}
         FROM campaigns c LEFT JOIN brandings b ON b.id = c.branding_id
         WHERE c.id = $1 AND c.is_live = 1"
    )))
    .bind(campaign_id)
    .fetch_optional(ex)
    .await
}

/// A sum that changes whenever any campaign's published version does (every publish,
/// unpublish and bump moves one on), for noticing what another process did.
pub async fn published_versions<'c>(ex: impl Executor<'c, Database = Any>) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT CAST(COALESCE(SUM(live_version), 0) AS BIGINT) FROM campaigns")
        .fetch_one(ex)
        .await
}

/// Which campaigns' pages change when something they show changes.
pub enum Affected {
    Campaign(i64),
    Branding(i64),
}

/// Moves the published version of the affected campaigns on, so every process renders their
/// pages afresh (new call to action or branding) and their entity tags change.
pub async fn bump_versions<'c>(
    ex: impl Executor<'c, Database = Any>,
    affected: Affected,
) -> sqlx::Result<()> {
    let (sql, id) = match affected {
        Affected::Campaign(id) => (
            "UPDATE campaigns SET live_version = live_version + 1 WHERE id = $1",
            id,
        ),
        Affected::Branding(id) => (
            "UPDATE campaigns SET live_version = live_version + 1 WHERE branding_id = $1",
            id,
        ),
    };
    sqlx::query(sql).bind(id).execute(ex).await?;
    Ok(())
}

#[derive(Debug, Clone, FromRow)]
pub struct TemplateRow {
    pub id: i64,
    pub workspace_id: Option<i64>,
    pub name: String,
    pub description: Option<String>,
    pub html: String,
    pub css: String,
}

/// Premade templates and the workspace's own, premade first, each by name.
pub async fn list_templates<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    name_like: Option<&str>,
) -> sqlx::Result<Vec<TemplateRow>> {
    sqlx::query_as(
        "SELECT id, workspace_id, name, description, html, css FROM templates
         WHERE (workspace_id IS NULL OR workspace_id = $1)
           AND ($2 IS NULL OR LOWER(name) LIKE $2 ESCAPE '\\')
         ORDER BY CASE WHEN workspace_id IS NULL THEN 0 ELSE 1 END, id",
    )
    .bind(workspace_id)
    .bind(name_like)
    .fetch_all(ex)
    .await
}

/// A template the workspace may use: premade, or its own.
pub async fn template_for<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    id: i64,
) -> sqlx::Result<Option<TemplateRow>> {
    sqlx::query_as(
        "SELECT id, workspace_id, name, description, html, css FROM templates
         WHERE id = $1 AND (workspace_id IS NULL OR workspace_id = $2)",
    )
    .bind(id)
    .bind(workspace_id)
    .fetch_optional(ex)
    .await
}

pub async fn insert_template<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    name: &str,
    description: Option<&str>,
    html: &str,
    css: &str,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO templates (workspace_id, name, description, html, css, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING id",
    )
    .bind(workspace_id)
    .bind(name)
    .bind(description)
    .bind(html)
    .bind(css)
    .bind(now)
    .fetch_one(ex)
    .await
}

/// Adds or refreshes a premade template by its key; its id stays the same across restarts.
pub async fn upsert_premade<'c>(
    ex: impl Executor<'c, Database = Any>,
    key: &str,
    name: &str,
    description: &str,
    html: &str,
    css: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO templates (premade_key, name, description, html, css, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (premade_key) DO UPDATE
         SET name = excluded.name, description = excluded.description,
             html = excluded.html, css = excluded.css",
    )
    .bind(key)
    .bind(name)
    .bind(description)
    .bind(html)
    .bind(css)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}
