//! Leads of a workspace: one row per person, found again by id, page slug, email (any case)
//! or social profile URL.

use std::collections::BTreeMap;

use sqlx::{Any, Executor, FromRow, Row};

use sqlx::AnyConnection;

use super::{bulk_sql, multi_row_insert, placeholder_list, placeholder_rows, rows_per_statement};
use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct LeadRow {
    pub id: i64,
    pub workspace_id: i64,
    pub slug: String,
    pub first_name: Option<String>,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub company_domain: Option<String>,
    pub social_profile_url: Option<String>,
    /// JSON object of custom variables.
    pub custom_values: String,
    pub created_at: Micros,
}

/// A lead and the slug of the campaign whose page is shown for it (if it has one).
#[derive(Debug, Clone, FromRow)]
pub struct LeadWithPage {
    #[sqlx(flatten)]
    pub lead: LeadRow,
    pub campaign_slug: Option<String>,
}

pub(super) const COLUMNS: &str = "l.id, l.workspace_id, l.slug, l.first_name, l.email, l.company_name, \
                       l.company_domain, l.social_profile_url, l.custom_values, l.created_at";

/// A lead's stored values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeadValues {
    pub first_name: Option<String>,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub company_domain: Option<String>,
    pub social_profile_url: Option<String>,
    /// JSON object of custom variables.
    pub custom_values: String,
}

impl LeadValues {
    fn email_key(&self) -> Option<String> {
        self.email.as_deref().map(str::to_lowercase)
    }
}

/// Every lead of the workspace matching any of the given ids, slugs, lower-cased emails or
/// social profile URLs, each lead once. Asked one column at a time in chunks of bounded
/// parameter count, so any number of keys works on both databases.
pub async fn find_matches(
    conn: &mut AnyConnection,
    workspace_id: i64,
    ids: &[i64],
    slugs: &[String],
    email_keys: &[String],
    socials: &[String],
) -> sqlx::Result<Vec<LeadRow>> {
    let per_statement = rows_per_statement(conn, 1);
    // On PostgreSQL these lookups are planned for their values every time (not prepared and
    // kept): a kept statement gets a plan for any values after five uses, made with the
    // statistics of that moment, and one made while a workspace's leads table was nearly empty
    // read every lead of the workspace for each batch of an import (3 s a batch at 100,000
    // leads, until autovacuum analysed the table) instead of probing the email index (3 ms).
    // SQLite plans every statement anyway, so its statements are kept.
    let kept = super::is_sqlite(conn);
    let mut found: Vec<LeadRow> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for chunk in ids.chunks(per_statement) {
        let sql = match_sql("l.id", chunk.len());
        let mut query = sqlx::query_as::<_, LeadRow>(bulk_sql(conn, sql))
            .persistent(kept)
            .bind(workspace_id);
        for id in chunk {
            query = query.bind(*id);
        }
        for row in query.fetch_all(&mut *conn).await? {
            if seen.insert(row.id) {
                found.push(row);
            }
        }
    }
    for (column, values) in [
        ("l.slug", slugs),
        ("l.email_key", email_keys),
        ("l.social_profile_url", socials),
    ] {
        for chunk in values.chunks(per_statement) {
            let sql = match_sql(column, chunk.len());
            let mut query = sqlx::query_as::<_, LeadRow>(bulk_sql(conn, sql))
                .persistent(kept)
                .bind(workspace_id);
            for text in chunk {
                query = query.bind(text.as_str());
            }
            for row in query.fetch_all(&mut *conn).await? {
                if seen.insert(row.id) {
                    found.push(row);
                }
            }
        }
    }
    Ok(found)
}

fn match_sql(column: &str, count: usize) -> String {
    format!(
        "SELECT {COLUMNS} FROM leads l WHERE l.workspace_id = $1 AND {column} IN ({})",
        placeholder_list(count, 2)
    )
}

/// Records the callback address later events about these leads are sent to.
pub async fn set_callback_url(
    conn: &mut AnyConnection,
    lead_ids: &[i64],
    url: &str,
) -> sqlx::Result<()> {
    for chunk in lead_ids.chunks(rows_per_statement(conn, 1)) {
        let sql = format!(
            "UPDATE leads SET callback_url = $1 WHERE id IN ({})",
            placeholder_list(chunk.len(), 2)
        );
        let mut query = sqlx::query(bulk_sql(conn, sql)).bind(url);
        for id in chunk {
            query = query.bind(*id);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// The callback address of a lead, if it was upserted with one.
pub async fn callback_url<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_id: i64,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT callback_url FROM leads WHERE id = $1")
        .bind(lead_id)
        .fetch_optional(ex)
        .await
        .map(Option::flatten)
}

/// Inserts new leads in a few multi-row statements; returns each one's (id, slug).
pub async fn insert_many(
    conn: &mut AnyConnection,
    workspace_id: i64,
    leads: &[(String, LeadValues)],
    source: Option<&str>,
    now: Micros,
) -> sqlx::Result<Vec<(i64, String)>> {
    let mut inserted = Vec::with_capacity(leads.len());
    for chunk in leads.chunks(rows_per_statement(conn, 12)) {
        inserted.extend(insert_chunk(&mut *conn, workspace_id, chunk, source, now).await?);
    }
    Ok(inserted)
}

async fn insert_chunk(
    conn: &mut AnyConnection,
    workspace_id: i64,
    leads: &[(String, LeadValues)],
    source: Option<&str>,
    now: Micros,
) -> sqlx::Result<Vec<(i64, String)>> {
    let sqlite = super::is_sqlite(conn);
    let sql = multi_row_insert(
        conn,
        "leads (workspace_id, slug, first_name, email, email_key, company_name,
               company_domain, social_profile_url, custom_values, source, created_at,
               updated_at)",
        leads.len(),
        12,
        if sqlite { "" } else { "RETURNING id, slug" },
    );
    let mut query = sqlx::query(sql);
    for (slug, values) in leads {
        query = query
            .bind(workspace_id)
            .bind(slug.as_str())
            .bind(values.first_name.as_deref())
            .bind(values.email.as_deref())
            .bind(values.email_key())
            .bind(values.company_name.as_deref())
            .bind(values.company_domain.as_deref())
            .bind(values.social_profile_url.as_deref())
            .bind(values.custom_values.as_str())
            .bind(source)
            .bind(now)
            .bind(now);
    }
    if !sqlite {
        let rows = query.fetch_all(&mut *conn).await?;
        return rows
            .iter()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
            .collect();
    }
    // SQLite hands each returned row from its thread to ours, one wake-up a row (a tenth of an
    // import's time). The rows of one insert get consecutive ids instead (each new id is the
    // largest so far plus one, and nothing else writes meanwhile): the last is the
    // connection's last insert; the first is checked by its slug, and only if that ever
    // failed would the ids be read back by slug.
    query.execute(&mut *conn).await?;
    let Some((first_slug, _)) = leads.first() else {
        return Ok(Vec::new());
    };
    let first: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM leads WHERE id = last_insert_rowid() - $1 AND slug = $2",
    )
    .bind(leads.len() as i64 - 1)
    .bind(first_slug.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    match first {
        Some(first) => Ok(leads
            .iter()
            .zip(first..)
            .map(|((slug, _), id)| (id, slug.clone()))
            .collect()),
        None => ids_of_slugs(conn, leads).await,
    }
}

/// The ids of leads just inserted, by their slugs.
async fn ids_of_slugs(
    conn: &mut AnyConnection,
    leads: &[(String, LeadValues)],
) -> sqlx::Result<Vec<(i64, String)>> {
    let mut found = Vec::with_capacity(leads.len());
    for chunk in leads.chunks(rows_per_statement(conn, 1)) {
        let sql = format!(
            "SELECT id, slug FROM leads WHERE slug IN ({})",
            placeholder_list(chunk.len(), 1)
        );
        let mut query = sqlx::query_as(bulk_sql(conn, sql));
        for (slug, _) in chunk {
            query = query.bind(slug.as_str());
        }
        found.extend(query.fetch_all(&mut *conn).await?);
    }
    Ok(found)
}

pub async fn update<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    values: &LeadValues,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE leads SET first_name = $2, email = $3, email_key = $4, company_name = $5,
                          company_domain = $6, social_profile_url = $7, custom_values = $8,
                          updated_at = $9
         WHERE id = $1",
    )
    .bind(id)
    .bind(values.first_name.as_deref())
    .bind(values.email.as_deref())
    .bind(values.email_key())
    .bind(values.company_name.as_deref())
    .bind(values.company_domain.as_deref())
    .bind(values.social_profile_url.as_deref())
    .bind(values.custom_values.as_str())
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

/// Replaces the lead's custom variables (a JSON object).
pub async fn set_custom_values<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    custom_values: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE leads SET custom_values = $2, updated_at = $3 WHERE id = $1")
        .bind(id)
        .bind(custom_values)
        .bind(now)
        .execute(ex)
        .await?;
    Ok(())
}

/// The lead with the slug of its first campaign page.
pub async fn get<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
) -> sqlx::Result<Option<LeadWithPage>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS}, {FIRST_PAGE} AS campaign_slug FROM leads l WHERE l.id = $1"
    )))
    .bind(id)
    .fetch_optional(ex)
    .await
}

/// The slug of the lead's oldest campaign page.
pub(super) const FIRST_PAGE: &str =
    "(SELECT COALESCE(c.page_slug, c.slug) FROM campaign_leads cl JOIN campaigns c ON c.id = cl.campaign_id
   WHERE cl.lead_id = l.id ORDER BY cl.created_at, cl.campaign_id LIMIT 1)";

/// The audiences a lead is in, as (id, name).
pub async fn audiences_of<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_id: i64,
) -> sqlx::Result<Vec<(i64, String)>> {
    sqlx::query_as(
        "SELECT a.id, a.name FROM audience_leads al JOIN audiences a ON a.id = al.audience_id
         WHERE al.lead_id = $1 ORDER BY a.id",
    )
    .bind(lead_id)
    .fetch_all(ex)
    .await
}

/// A campaign's leads for polling, newest first.
pub async fn in_campaign<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
    created_after: Option<Micros>,
    after_id: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<LeadRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM campaign_leads cl JOIN leads l ON l.id = cl.lead_id
         WHERE cl.campaign_id = $1
           AND ($2 IS NULL OR l.created_at >= $2)
           AND ($3 IS NULL OR l.id > $3)
         ORDER BY l.id DESC LIMIT $4"
    )))
    .bind(campaign_id)
    .bind(created_after)
    .bind(after_id)
    .bind(limit)
    .fetch_all(ex)
    .await
}

/// What each lead gained in `hour` so far, by lead id: `(score weight, engaged seconds)`,
/// zero when the lead's figures are of an earlier hour. On PostgreSQL the leads' rows stay
/// locked until the transaction ends (taken in id order, so two batches never wait on each
/// other in a cycle), so two processes cannot both spend what is left; SQLite's write
/// transactions are one at a time already. A lead no longer there is absent.
pub async fn hour_gains(
    conn: &mut AnyConnection,
    dialect: super::Dialect,
    lead_ids: &[i64],
    hour: i64,
) -> sqlx::Result<BTreeMap<i64, (f64, i64)>> {
    let mut ids = lead_ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let lock = dialect.for_update();
    let mut gains = BTreeMap::new();
    for chunk in ids.chunks(rows_per_statement(conn, 1)) {
        let sql = format!(
            "SELECT id, budget_hour, budget_score, budget_seconds FROM leads
             WHERE id IN ({}) ORDER BY id{lock}",
            placeholder_list(chunk.len(), 1)
        );
        let mut query = sqlx::query_as::<_, (i64, i64, f64, i64)>(bulk_sql(conn, sql));
        for id in chunk {
            query = query.bind(*id);
        }
        for (id, budget_hour, score, seconds) in query.fetch_all(&mut *conn).await? {
            let gained = if budget_hour == hour {
                (score, seconds)
            } else {
                (0.0, 0)
            };
            gains.insert(id, gained);
        }
    }
    Ok(gains)
}

/// What one lead gains in one transaction: score to add (its value at the score epoch, see
/// `domain::score`) and its hour's figures after it (see [`hour_gains`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gain {
    pub lead_id: i64,
    pub stored: f64,
    pub hour_score: f64,
    pub hour_seconds: i64,
}

/// Adds each gain to its lead, many leads a statement; answers each lead's new score and when
/// it first became hot, if it did, as `(lead, score, hot at)`.
pub async fn add_gains(
    conn: &mut AnyConnection,
    hour: i64,
    gains: &[Gain],
) -> sqlx::Result<Vec<(i64, f64, Option<Micros>)>> {
    let mut after = Vec::with_capacity(gains.len());
    for chunk in gains.chunks(rows_per_statement(conn, 4)) {
        // `VALUES` names its columns column1.. on both databases.
        let sql = format!(
            "UPDATE leads SET budget_hour = $1, score_base = score_base + g.column2,
                              budget_score = g.column3, budget_seconds = g.column4
             FROM (VALUES {}) AS g
             WHERE leads.id = g.column1
             RETURNING id, score_base, hot_at",
            // PostgreSQL cannot tell a parameter's type inside VALUES.
            placeholder_rows(
                chunk.len(),
                4,
                2,
                &["BIGINT", "DOUBLE PRECISION", "DOUBLE PRECISION", "BIGINT"]
            )
        );
        let mut query =
            sqlx::query_as::<_, (i64, f64, Option<Micros>)>(bulk_sql(conn, sql)).bind(hour);
        for gain in chunk {
            query = query
                .bind(gain.lead_id)
                .bind(gain.stored)
                .bind(gain.hour_score)
                .bind(gain.hour_seconds);
        }
        after.extend(query.fetch_all(&mut *conn).await?);
    }
    Ok(after)
}

/// Marks a lead hot unless it was already; answers whether this call did.
pub async fn mark_hot(conn: &mut AnyConnection, lead_id: i64, now: Micros) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE leads SET hot_at = $2 WHERE id = $1 AND hot_at IS NULL")
        .bind(lead_id)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_leads(names: &[&str]) -> Vec<(String, LeadValues)> {
        names
            .iter()
            .map(|name| {
                let values = LeadValues {
                    email: Some(format!("{name}@example.com")),
                    custom_values: "{}".into(),
                    ..LeadValues::default()
                };
                (format!("slug-{name}"), values)
            })
            .collect()
    }

    /// What the database says each slug's id is.
    async fn stored_ids(conn: &mut AnyConnection) -> Vec<(i64, String)> {
        sqlx::query_as("SELECT id, slug FROM leads ORDER BY id")
            .fetch_all(conn)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn inserted_leads_are_reported_with_the_ids_they_were_given() {
        let (_dir, db) = crate::store::test_workspace().await;
        let mut tx = db.begin_write().await.unwrap();
        // A gap in the ids: new ones follow the largest.
        sqlx::query(
            "INSERT INTO leads (id, workspace_id, slug, custom_values, created_at, updated_at)
             VALUES (40, 1, 'slug-old', '{}', 0, 0)",
        )
        .execute(&mut *tx)
        .await
        .unwrap();
        let inserted = insert_many(&mut tx, 1, &new_leads(&["a", "b", "c"]), None, 0)
            .await
            .unwrap();
        let stored = stored_ids(&mut tx).await;
        assert_eq!(inserted, stored[1..]);
        assert_eq!(inserted[0].0, 41);
    }

    #[tokio::test]
    async fn a_batch_that_meets_a_taken_slug_midway_leaves_no_lead_behind() {
        // Multi-row inserts are `OR FAIL` on SQLite (`sql::insert_into`): the rows before the
        // conflict stay until the transaction ends, and the failed transaction keeps none.
        let (_dir, db) = crate::store::test_workspace().await;
        let mut tx = db.begin_write().await.unwrap();
        insert_many(&mut tx, 1, &new_leads(&["taken"]), None, 0)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let mut tx = db.begin_write().await.unwrap();
        let batch = new_leads(&["first", "second", "taken", "last"]);
        let err = insert_many(&mut tx, 1, &batch, None, 0).await.unwrap_err();
        assert!(crate::store::conflicts::is_write_conflict(&err), "{err}");
        drop(tx);
        let mut tx = db.begin_write().await.unwrap();
        let slugs: Vec<String> = sqlx::query_scalar("SELECT slug FROM leads ORDER BY id")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
        assert_eq!(slugs, ["slug-taken"]);
    }

    #[tokio::test]
    async fn ids_can_be_read_back_by_slug() {
        let (_dir, db) = crate::store::test_workspace().await;
        let mut tx = db.begin_write().await.unwrap();
        let leads = new_leads(&["a", "b"]);
        insert_many(&mut tx, 1, &leads, None, 0).await.unwrap();
        let mut found = ids_of_slugs(&mut tx, &leads).await.unwrap();
        found.sort();
        assert_eq!(found, stored_ids(&mut tx).await);
    }
}
