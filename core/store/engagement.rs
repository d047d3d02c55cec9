//! Engagement on lead pages: raw beacons (`page_events`), and the sums analytics and search read
//! (`page_engagement` per page, `campaign_visitors` per campaign and visitor), kept current as
//! beacons arrive.

use sqlx::{Any, AnyConnection, Executor, FromRow};

use super::{bulk_sql, placeholder_list, placeholder_rows, rows_per_statement};
use crate::time::{self, Micros};

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
        let sql = format!(
            "INSERT INTO page_events (workspace_id, campaign_id, lead_id, kind, visitor, is_bot,
                                      seconds, target, created_at, class, reason, view_id)
             VALUES {}",
            placeholder_rows(chunk.len(), 12, 1, &[])
        );
        let mut query = sqlx::query(bulk_sql(conn, sql));
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

/// A view recorded before, found by its page load's id.
#[derive(Debug, Clone, FromRow)]
pub struct KnownView {
    pub view_id: String,
    pub class: String,
    pub campaign_id: i64,
    pub lead_id: i64,
    pub created_at: Micros,
}

pub async fn views_by_id<'c>(
    ex: impl Executor<'c, Database = Any>,
    view_ids: &[&str],
) -> sqlx::Result<Vec<KnownView>> {
    if view_ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT view_id, class, campaign_id, lead_id, created_at FROM page_events
         WHERE kind = 'view' AND view_id IN ({})",
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

/// The views of the given campaigns not counted, by class: (campaign, class, views).
pub async fn filtered_visits<'c>(
    ex: impl Executor<'c, Database = Any>,
    campaign_ids: &[i64],
) -> sqlx::Result<Vec<(i64, String, i64)>> {
    if campaign_ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT campaign_id, class, views FROM campaign_view_classes
         WHERE class <> 'person' AND campaign_id IN ({})",
        placeholder_list(campaign_ids.len(), 1)
    );
    let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
    for id in campaign_ids {
        query = query.bind(*id);
    }
    query.fetch_all(ex).await
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
            "INSERT INTO page_engagement AS p (campaign_id, lead_id, workspace_id, views,
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
        let sql = format!(
            "INSERT INTO campaign_visitors AS v (campaign_id, visitor, clicked, first_seen_at)
             VALUES {}
             ON CONFLICT (campaign_id, visitor) DO UPDATE SET
                 clicked = CASE WHEN excluded.clicked = 1 THEN 1 ELSE v.clicked END",
            placeholder_rows(chunk.len(), 4, 1, &[])
        );
        let mut query = sqlx::query(bulk_sql(conn, sql));
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

/// One campaign's sums, as `/campaigns/analytics` reports them.
#[derive(Debug, Clone, FromRow)]
pub struct CampaignSums {
    pub campaign_id: i64,
    pub name: String,
    pub pages_generated: i64,
    pub pages_visited: i64,
    pub total_views: i64,
    pub engaged_seconds: i64,
    pub total_clicks: i64,
    pub unique_visitors: i64,
    pub clicking_visitors: i64,
}

/// The sums of the workspace's campaigns (all of them, or those in `campaign_ids`), oldest
/// campaign first.
pub async fn campaign_sums<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    campaign_ids: &[i64],
) -> sqlx::Result<Vec<CampaignSums>> {
    let only = if campaign_ids.is_empty() {
        String::new()
    } else {
        format!("AND c.id IN ({})", placeholder_list(campaign_ids.len(), 2))
    };
    let sql = format!(
        "SELECT c.id AS campaign_id, c.name,
            (SELECT COUNT(*) FROM campaign_leads cl WHERE cl.campaign_id = c.id)
                AS pages_generated,
            (SELECT COUNT(*) FROM page_engagement p WHERE p.campaign_id = c.id AND p.views > 0)
                AS pages_visited,
            (SELECT CAST(COALESCE(SUM(p.views), 0) AS BIGINT) FROM page_engagement p
              WHERE p.campaign_id = c.id) AS total_views,
            (SELECT CAST(COALESCE(SUM(p.engaged_seconds), 0) AS BIGINT) FROM page_engagement p
              WHERE p.campaign_id = c.id) AS engaged_seconds,
            (SELECT CAST(COALESCE(SUM(p.clicks), 0) AS BIGINT) FROM page_engagement p
              WHERE p.campaign_id = c.id) AS total_clicks,
            (SELECT COUNT(*) FROM campaign_visitors v WHERE v.campaign_id = c.id)
                AS unique_visitors,
            (SELECT COUNT(*) FROM campaign_visitors v WHERE v.campaign_id = c.id AND v.clicked = 1)
                AS clicking_visitors
         FROM campaigns c
         WHERE c.workspace_id = $1 {only}
         ORDER BY c.id"
    );
    let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(workspace_id);
    for id in campaign_ids {
        query = query.bind(*id);
    }
    query.fetch_all(ex).await
}

/// A lead's counted engagement over all its pages.
#[derive(Debug, Clone, Default, FromRow)]
pub struct LeadSums {
    pub views: i64,
    pub first_viewed_at: Option<Micros>,
    pub last_viewed_at: Option<Micros>,
    pub clicks: i64,
    pub scrolled_to_bottom: i64,
    pub engaged_seconds: i64,
    pub form_submissions: i64,
    /// The score at the score epoch (`domain::score`), and when the lead became hot.
    pub score_base: f64,
    pub hot_at: Option<Micros>,
}

pub async fn lead_sums<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_id: i64,
) -> sqlx::Result<LeadSums> {
    sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(p.views), 0) AS BIGINT) AS views,
                MIN(p.first_viewed_at) AS first_viewed_at,
                MAX(p.last_viewed_at) AS last_viewed_at,
                CAST(COALESCE(SUM(p.clicks), 0) AS BIGINT) AS clicks,
                COALESCE(MAX(p.scrolled_to_bottom), 0) AS scrolled_to_bottom,
                CAST(COALESCE(SUM(p.engaged_seconds), 0) AS BIGINT) AS engaged_seconds,
                (SELECT COUNT(*) FROM form_submissions f
                 WHERE f.lead_id = $1 AND f.class = 'person')
                    AS form_submissions,
                COALESCE((SELECT l.score_base FROM leads l WHERE l.id = $1), 0) AS score_base,
                (SELECT l.hot_at FROM leads l WHERE l.id = $1) AS hot_at
         FROM page_engagement p WHERE p.lead_id = $1",
    )
    .bind(lead_id)
    .fetch_one(ex)
    .await
}

/// One day's counted engagement of a campaign (`day`: days since 1970-01-01 in the caller's
/// time zone).
#[derive(Debug, Clone, Default, FromRow)]
pub struct DaySums {
    pub day: i64,
    pub views: i64,
    pub unique_visitors: i64,
    pub clicks: i64,
    pub form_submissions: i64,
}

/// A campaign's counted views, unique visitors and clicks, and its form submissions, per day
/// (days `offset` micros east of UTC) in `[from, to)`; days with nothing are left out.
pub async fn daily_sums(
    db: &super::Db,
    campaign_id: i64,
    offset: Micros,
    from: Micros,
    to: Micros,
) -> sqlx::Result<Vec<DaySums>> {
    let beacons: Vec<DaySums> = sqlx::query_as(
        "SELECT CAST((e.created_at + $2) / $5 AS BIGINT) AS day,
                CAST(SUM(CASE WHEN e.kind = 'view' THEN 1 ELSE 0 END) AS BIGINT) AS views,
                CAST(COUNT(DISTINCT CASE WHEN e.kind = 'view' THEN e.visitor END) AS BIGINT)
                    AS unique_visitors,
                CAST(SUM(CASE WHEN e.kind = 'click' THEN 1 ELSE 0 END) AS BIGINT) AS clicks,
                CAST(0 AS BIGINT) AS form_submissions
         FROM page_events e
         WHERE e.campaign_id = $1 AND e.is_bot = 0 AND e.created_at >= $3 AND e.created_at < $4
         GROUP BY CAST((e.created_at + $2) / $5 AS BIGINT)",
    )
    .bind(campaign_id)
    .bind(offset)
    .bind(from)
    .bind(to)
    .bind(time::MICROS_PER_DAY)
    .fetch_all(db.pool())
    .await?;
    let forms: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT CAST((f.created_at + $2) / $5 AS BIGINT) AS day, CAST(COUNT(*) AS BIGINT)
         FROM form_submissions f
         WHERE f.campaign_id = $1 AND f.class = 'person'
           AND f.created_at >= $3 AND f.created_at < $4
         GROUP BY CAST((f.created_at + $2) / $5 AS BIGINT)",
    )
    .bind(campaign_id)
    .bind(offset)
    .bind(from)
    .bind(to)
    .bind(time::MICROS_PER_DAY)
    .fetch_all(db.pool())
    .await?;
    let mut days = beacons;
    for (day, submissions) in forms {
        match days.iter_mut().find(|d| d.day == day) {
            Some(found) => found.form_submissions = submissions,
            None => days.push(DaySums {
                day,
                form_submissions: submissions,
                ..DaySums::default()
            }),
        }
    }
    Ok(days)
}

/// One beacon of a lead's, as its timeline shows it.
#[derive(Debug, Clone, FromRow)]
pub struct LeadEventRow {
    pub kind: String,
    pub campaign_id: i64,
    pub campaign_name: String,
    pub seconds: i64,
    pub target: Option<String>,
    pub created_at: Micros,
    pub class: String,
    pub reason: Option<String>,
}

/// A lead's counted beacons and every view whatever its class (each with its class and
/// reason), newest first: the `limit` before `before`.
pub async fn lead_events<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_id: i64,
    before: Option<Micros>,
    limit: i64,
) -> sqlx::Result<Vec<LeadEventRow>> {
    sqlx::query_as(
        "SELECT e.kind, e.campaign_id, c.name AS campaign_name, e.seconds, e.target,
                e.created_at, e.class, e.reason
         FROM page_events e JOIN campaigns c ON c.id = e.campaign_id
         WHERE e.lead_id = $1 AND (e.is_bot = 0 OR e.kind = 'view') AND e.kind <> 'confirm'
           AND ($2 IS NULL OR e.created_at < $2)
         ORDER BY e.created_at DESC, e.id DESC LIMIT $3",
    )
    .bind(lead_id)
    .bind(before)
    .bind(limit)
    .fetch_all(ex)
    .await
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

/// A lead's counted activity on one campaign's page over a period.
#[derive(Debug, Clone, FromRow)]
pub struct EngagedRow {
    pub lead_id: i64,
    pub campaign_id: i64,
    pub first_name: Option<String>,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub custom_values: String,
    pub campaign_name: String,
    pub last_at: Micros,
    pub views: i64,
    pub scrolled: i64,
    pub clicks: i64,
    pub forms: i64,
    pub score_base: f64,
}

/// Per lead and campaign, what people (never bots) did since `since` in a workspace: the
/// `limit` most recently active, newest first.
pub async fn engaged<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
    since: Micros,
    limit: i64,
) -> sqlx::Result<Vec<EngagedRow>> {
    sqlx::query_as(
        "SELECT a.lead_id, a.campaign_id, l.first_name, l.email, l.company_name,
                l.custom_values, c.name AS campaign_name,
                CAST(MAX(a.at) AS BIGINT) AS last_at,
                CAST(SUM(a.views) AS BIGINT) AS views,
                CAST(MAX(a.scrolls) AS BIGINT) AS scrolled,
                CAST(SUM(a.clicks) AS BIGINT) AS clicks,
                CAST(SUM(a.forms) AS BIGINT) AS forms, l.score_base
         FROM (
             SELECT lead_id, campaign_id, created_at AS at,
                    CASE WHEN kind = 'view' THEN 1 ELSE 0 END AS views,
                    CASE WHEN kind = 'scroll' THEN 1 ELSE 0 END AS scrolls,
                    CASE WHEN kind = 'click' THEN 1 ELSE 0 END AS clicks,
                    0 AS forms
             FROM page_events
             WHERE workspace_id = $1 AND is_bot = 0 AND kind <> 'confirm' AND created_at >= $2
             UNION ALL
             SELECT lead_id, campaign_id, created_at, 0, 0, 0, 1
             FROM form_submissions
             WHERE workspace_id = $1 AND class = 'person' AND created_at >= $2
         ) a
         JOIN leads l ON l.id = a.lead_id
         JOIN campaigns c ON c.id = a.campaign_id
         GROUP BY a.lead_id, a.campaign_id, l.first_name, l.email, l.company_name,
                  l.custom_values, c.name, l.score_base
         ORDER BY last_at DESC, a.lead_id DESC
         LIMIT $3",
    )
    .bind(workspace_id)
    .bind(since)
    .bind(limit)
    .fetch_all(ex)
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
