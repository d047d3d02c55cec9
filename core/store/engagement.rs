//! Engagement on lead pages as beacons arrive: raw beacons (`page_events`), and the sums
//! analytics and search read (`page_engagement` per page, `campaign_visitors` per campaign and
//! visitor) kept current; read back by `store::engagement_reports`.

use sqlx::{Any, AnyConnection, Executor, FromRow};

use super::{
    bulk_sql, insert_into, multi_row_insert, placeholder_list, placeholder_rows, rows_per_statement,
};
use crate::time::Micros;

/// A page (a lead in a campaign) found by the slugs of its address.
#[derive(Debug, Clone, FromRow)]
pub struct PageIds {
    pub campaign_slug: String,
    pub lead_slug: String,
    pub campaign_id: i64,
    pub lead_id: i64,
    pub workspace_id: i64,
}

/// The pages of the given leads (by lead slug), in every campaign each is in.
pub async fn pages_of_leads<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_slugs: &[&str],
) -> sqlx::Result<Vec<PageIds>> {
    if lead_slugs.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT COALESCE(c.page_slug, c.slug) AS campaign_slug, l.slug AS lead_slug, c.id AS campaign_id,
                l.id AS lead_id, c.workspace_id
         FROM leads l
         JOIN campaign_leads cl ON cl.lead_id = l.id
         JOIN campaigns c ON c.id = cl.campaign_id AND c.workspace_id = l.workspace_id
         WHERE l.slug IN ({})",
        placeholder_list(lead_slugs.len(), 1)
    );
    let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
    for slug in lead_slugs {
        query = query.bind(*slug);
    }
    query.fetch_all(ex).await
}

/// One beacon to keep.
pub struct NewEvent<'a> {
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub lead_id: i64,
    pub kind: &'a str,
    pub visitor: &'a str,
    /// `person`, `unconfirmed`, `automated` or `scanner_network`; all but `person` are not
    /// counted (`is_bot` 1).
    pub class: &'static str,
    pub reason: String,
    pub view_id: Option<&'a str>,
    pub seconds: i64,
    pub target: Option<&'a str>,
    pub created_at: Micros,
}

pub async fn insert_events(conn: &mut AnyConnection, events: &[NewEvent<'_>]) -> sqlx::Result<()> {
    for chunk in events.chunks(rows_per_statement(conn, 12)) {
        // Kept once made: at full load most batches have the same number of rows, and
        // writing their placeholders was a tenth of the beacons' recorder's time.
        let sql = multi_row_insert(
            conn,
            "page_events (workspace_id, campaign_id, lead_id, kind, visitor, is_bot, seconds,
                          target, created_at, class, reason, view_id)",
            chunk.len(),
            12,
            "",
        );
        let mut query = sqlx::query(sql);
        for event in chunk {
            query = query
                .bind(event.workspace_id)
                .bind(event.campaign_id)
                .bind(event.lead_id)
                .bind(event.kind)
                .bind(event.visitor)
                .bind(i64::from(event.class != "person"))
                .bind(event.seconds)
                .bind(event.target)
                .bind(event.created_at)
                .bind(event.class)
                .bind(event.reason.as_str())
                .bind(event.view_id);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// The statement answering the ids of the beacons of the leads `leads` (a parameter such as
/// `$1`, or a list of ids): the pairs merged into `page_event_leads`, found by key, and those
/// stored since the last merge, read whole from `page_event_leads_new` (at most about
/// [`MERGE_AT`] and a batch). Migration 0042 says why a lead's beacons are not an index of
/// `page_events`.
pub fn event_ids_of(leads: &str) -> String {
    format!(
        "SELECT event_id FROM page_event_leads WHERE lead_id IN ({leads})
         UNION ALL SELECT event_id FROM page_event_leads_new WHERE lead_id IN ({leads})"
    )
}

/// How many beacons' pairs `page_event_leads_new` gathers before they are merged into
/// `page_event_leads`. Each merge visits the pages of `page_event_leads` in order, at most once
/// each, so the more a merge carries, the fewer pages a beacon costs; and every read of a
/// lead's beacons reads the unmerged pairs whole (~10 bytes each: ~0.5 MiB, ~1 ms).
pub const MERGE_AT: usize = 50_000;

/// Moves every pair of `page_event_leads_new` into `page_event_leads`, sorted by lead, in the
/// caller's transaction. On PostgreSQL one statement moves exactly the pairs it deletes, so a
/// batch committed concurrently is neither lost nor moved twice; SQLite has one writer.
pub async fn merge_event_leads(conn: &mut AnyConnection) -> sqlx::Result<()> {
    if super::is_sqlite(conn) {
        sqlx::query(
            "INSERT INTO page_event_leads (lead_id, event_id)
             SELECT lead_id, event_id FROM page_event_leads_new ORDER BY lead_id, event_id",
        )
        .execute(&mut *conn)
        .await?;
        sqlx::query("DELETE FROM page_event_leads_new")
            .execute(&mut *conn)
            .await?;
    } else {
        sqlx::query(
            "WITH moved AS (DELETE FROM page_event_leads_new RETURNING lead_id, event_id)
             INSERT INTO page_event_leads (lead_id, event_id)
             SELECT lead_id, event_id FROM moved ORDER BY lead_id, event_id",
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// A view recorded before, found by its page load's id.
#[derive(Debug, Clone, FromRow)]
pub struct KnownView {
    pub view_id: String,
    pub class: String,
    pub campaign_id: i64,
    pub lead_id: i64,
    pub created_at: Micros,
}

/// The views of the page loads `view_ids` (each load's first), for the loads that have one.
pub async fn views_by_id<'c>(
    ex: impl Executor<'c, Database = Any>,
    view_ids: &[&str],
) -> sqlx::Result<Vec<KnownView>> {
    if view_ids.is_empty() {
        return Ok(Vec::new());
    }
    // A load's first view is its view: a later one in the same load is kept as "a second
    // view in one page load" (automated), which must not stand for the load.
    let sql = format!(
        "SELECT view_id, class, campaign_id, lead_id, created_at FROM page_events
         WHERE id IN (SELECT MIN(id) FROM page_events
                      WHERE kind = 'view' AND view_id IN ({}) GROUP BY view_id)",
        placeholder_list(view_ids.len(), 1)
    );
    let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
    for id in view_ids {
        query = query.bind(*id);
    }
    query.fetch_all(ex).await
}

/// A beacon of an unconfirmed view, counted now that the view is confirmed.
#[derive(Debug, Clone, FromRow)]
pub struct ConfirmedEvent {
    pub kind: String,
    pub visitor: String,
    pub seconds: i64,
    pub target: Option<String>,
    pub created_at: Micros,
}

/// Confirms a view recorded unconfirmed: it and its page load's other unconfirmed beacons
/// become a person's. Answers what changed (nothing when another process confirmed it first).
pub async fn confirm_view(
    conn: &mut AnyConnection,
    view_id: &str,
    reason: &str,
) -> sqlx::Result<Vec<ConfirmedEvent>> {
    sqlx::query_as(
        "UPDATE page_events SET class = 'person', is_bot = 0,
             reason = CASE WHEN kind = 'view' THEN $2 ELSE 'part of a person''s view' END
         WHERE view_id = $1 AND class = 'unconfirmed'
         RETURNING kind, visitor, seconds, target, created_at",
    )
    .bind(view_id)
    .bind(reason)
    .fetch_all(&mut *conn)
    .await
}

/// Adds to campaigns' views by class: (campaign, class, views to add, possibly negative).
pub async fn add_view_classes(
    conn: &mut AnyConnection,
    changes: &[(i64, &'static str, i64)],
) -> sqlx::Result<()> {
    for (campaign_id, class, views) in changes {
        sqlx::query(
            "INSERT INTO campaign_view_classes AS v (campaign_id, class, views)
             VALUES ($1, $2, $3)
             ON CONFLICT (campaign_id, class) DO UPDATE SET views = v.views + excluded.views",
        )
        .bind(*campaign_id)
        .bind(*class)
        .bind(*views)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The public slugs of a lead's page in a campaign.
pub async fn page_slugs<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_id: i64,
    lead_id: i64,
) -> sqlx::Result<Option<(String, String)>> {
    sqlx::query_as(
        "SELECT COALESCE(c.page_slug, c.slug), l.slug FROM campaigns c, leads l
         WHERE c.id = $1 AND l.id = $2",
    )
    .bind(campaign_id)
    .bind(lead_id)
    .fetch_optional(ex)
    .await
}

/// What one batch adds to one page's counted engagement.
#[derive(Debug, Clone, Default)]
pub struct PageDelta {
    pub views: i64,
    pub first_viewed_at: Option<Micros>,
    pub last_viewed_at: Option<Micros>,
    pub clicks: i64,
    pub scrolled_to_bottom: bool,
    pub engaged_seconds: i64,
}

/// One page's delta, with the page it is for.
pub struct PageChange<'a> {
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub lead_id: i64,
    pub delta: &'a PageDelta,
}

/// Adds each delta to its page's sums, several pages per statement; returns each page's views
/// afterwards, as (campaign, lead, views).
pub async fn add_to_pages(
    conn: &mut AnyConnection,
    changes: &[PageChange<'_>],
) -> sqlx::Result<Vec<(i64, i64, i64)>> {
    let mut views_after = Vec::with_capacity(changes.len());
    for chunk in changes.chunks(rows_per_statement(conn, 9)) {
        let sql = format!(
            "{} page_engagement AS p (campaign_id, lead_id, workspace_id, views,
                                   first_viewed_at, last_viewed_at, clicks,
                                   scrolled_to_bottom, engaged_seconds)
             VALUES {}
             ON CONFLICT (campaign_id, lead_id) DO UPDATE SET
                 views = p.views + excluded.views,
                 first_viewed_at = COALESCE(p.first_viewed_at, excluded.first_viewed_at),
                 last_viewed_at = COALESCE(excluded.last_viewed_at, p.last_viewed_at),
                 clicks = p.clicks + excluded.clicks,
                 scrolled_to_bottom = CASE WHEN excluded.scrolled_to_bottom = 1 THEN 1
                                           ELSE p.scrolled_to_bottom END,
                 engaged_seconds = p.engaged_seconds + excluded.engaged_seconds
             RETURNING campaign_id, lead_id, views",
            insert_into(conn),
            // PostgreSQL cannot tell the type of a NULL timestamp in a multi-row VALUES.
            placeholder_rows(
                chunk.len(),
                9,
                1,
                &[
                    "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT",
                    "BIGINT"
                ]
            )
        );
        let mut query = sqlx::query_as::<_, (i64, i64, i64)>(bulk_sql(conn, sql));
        for change in chunk {
            let delta = change.delta;
            query = query
                .bind(change.campaign_id)
                .bind(change.lead_id)
                .bind(change.workspace_id)
                .bind(delta.views)
                .bind(delta.first_viewed_at)
                .bind(delta.last_viewed_at)
                .bind(delta.clicks)
                .bind(i64::from(delta.scrolled_to_bottom))
                .bind(delta.engaged_seconds);
        }
        views_after.extend(query.fetch_all(&mut *conn).await?);
    }
    Ok(views_after)
}

/// A visitor seen on a campaign's pages, and whether they clicked.
pub struct VisitorSeen<'a> {
    pub campaign_id: i64,
    pub visitor: &'a str,
    pub clicked: bool,
    pub seen_at: Micros,
}

/// Records visitors (each once per campaign; `clicked` once true stays true).
pub async fn add_visitors(
    conn: &mut AnyConnection,
    visitors: &[VisitorSeen<'_>],
) -> sqlx::Result<()> {
    for chunk in visitors.chunks(rows_per_statement(conn, 4)) {
        let sql = multi_row_insert(
            conn,
            "campaign_visitors AS v (campaign_id, visitor, clicked, first_seen_at)",
            chunk.len(),
            4,
            "ON CONFLICT (campaign_id, visitor) DO UPDATE SET
                 clicked = CASE WHEN excluded.clicked = 1 THEN 1 ELSE v.clicked END",
        );
        let mut query = sqlx::query(sql);
        for visitor in chunk {
            query = query
                .bind(visitor.campaign_id)
                .bind(visitor.visitor)
                .bind(i64::from(visitor.clicked))
                .bind(visitor.seen_at);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

/// The salt of `day` (`YYYY-MM-DD`), made on first use; salts of days before `oldest_kept`
/// are deleted.
pub async fn day_salt(
    conn: &mut AnyConnection,
    day: &str,
    fresh_salt: &str,
    oldest_kept: &str,
) -> sqlx::Result<String> {
    sqlx::query(
        "INSERT INTO visitor_salts (day, salt) VALUES ($1, $2) ON CONFLICT (day) DO NOTHING",
    )
    .bind(day)
    .bind(fresh_salt)
    .execute(&mut *conn)
    .await?;
    sqlx::query("DELETE FROM visitor_salts WHERE day < $1")
        .bind(oldest_kept)
        .execute(&mut *conn)
        .await?;
    sqlx::query_scalar("SELECT salt FROM visitor_salts WHERE day = $1")
        .bind(day)
        .fetch_one(&mut *conn)
        .await
}

/// Deletes up to `limit` events older than `cutoff`; answers how many.
pub async fn delete_events_before(
    conn: &mut AnyConnection,
    cutoff: Micros,
    limit: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM page_events WHERE id IN (
             SELECT id FROM page_events WHERE created_at < $1 ORDER BY id LIMIT $2)",
    )
    .bind(cutoff)
    .bind(limit)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Db, test_workspace};

    /// Stores one view for each lead of `leads`, in that order, in one transaction.
    async fn store_views(db: &Db, leads: &[i64]) {
        let events: Vec<NewEvent> = leads
            .iter()
            .map(|&lead_id| NewEvent {
                workspace_id: 1,
                campaign_id: 1,
                lead_id,
                kind: "view",
                visitor: "c:v",
                class: "person",
                reason: String::new(),
                view_id: None,
                seconds: 0,
                target: None,
                created_at: 0,
            })
            .collect();
        let mut tx = db.begin_write().await.unwrap();
        insert_events(&mut tx, &events).await.unwrap();
        tx.commit().await.unwrap();
    }

    async fn ids_of(db: &Db, lead_id: i64) -> Vec<i64> {
        let mut ids: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(event_ids_of("$1")))
            .bind(lead_id)
            .fetch_all(db.pool())
            .await
            .unwrap();
        ids.sort_unstable();
        ids
    }

    async fn rows(db: &Db, table: &str) -> Vec<(i64, i64)> {
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT lead_id, event_id FROM {table} ORDER BY lead_id, event_id"
        )))
        .fetch_all(db.pool())
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn a_leads_beacons_are_found_before_and_after_a_merge_and_forgotten_when_deleted() {
        let (_dir, db) = test_workspace().await;
        store_views(&db, &[1, 2, 1, 3, 2, 1]).await;
        assert_eq!(ids_of(&db, 1).await, [1, 3, 6]);
        assert_eq!(rows(&db, "page_event_leads_new").await.len(), 6);

        let mut tx = db.begin_write().await.unwrap();
        merge_event_leads(&mut tx).await.unwrap();
        tx.commit().await.unwrap();
        assert!(rows(&db, "page_event_leads_new").await.is_empty());
        assert_eq!(
            rows(&db, "page_event_leads").await,
            [(1, 1), (1, 3), (1, 6), (2, 2), (2, 5), (3, 4)]
        );
        assert_eq!(ids_of(&db, 1).await, [1, 3, 6]);

        // Found in both tables at once, then deleted from each.
        store_views(&db, &[1, 2, 1]).await;
        assert_eq!(ids_of(&db, 1).await, [1, 3, 6, 7, 9]);
        sqlx::query("DELETE FROM page_events WHERE id IN (3, 7)")
            .execute(db.pool())
            .await
            .unwrap();
        assert_eq!(ids_of(&db, 1).await, [1, 6, 9]);
        assert_eq!(ids_of(&db, 2).await, [2, 5, 8]);
        let named: Vec<i64> = [
            rows(&db, "page_event_leads").await,
            rows(&db, "page_event_leads_new").await,
        ]
        .concat()
        .into_iter()
        .map(|(_, event_id)| event_id)
        .collect();
        assert!(!named.contains(&3) && !named.contains(&7), "{named:?}");
    }
}
