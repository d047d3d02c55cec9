//! What people did on lead pages, as it is read back: campaigns' sums and daily figures
//! (`/campaigns/analytics`, `/campaigns/analytics/daily`), a lead's sums and timeline, the
//! leads people engaged with lately, and the views not counted by class. Written as beacons
//! arrive by `store::engagement`.

use sqlx::{Any, Executor, FromRow};

use super::engagement::event_ids_of;
use super::placeholder_list;
use crate::local_days::LocalDays;
use crate::time::Micros;

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
/// (the days of `days`' calendar) in `[from, to)`; days with nothing are left out.
pub async fn daily_sums(
    db: &super::Db,
    campaign_id: i64,
    days: &LocalDays,
    from: Micros,
    to: Micros,
) -> sqlx::Result<Vec<DaySums>> {
    let day = days.day_sql("e.created_at", from, to);
    let beacons: Vec<DaySums> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {day} AS day,
                CAST(SUM(CASE WHEN e.kind = 'view' THEN 1 ELSE 0 END) AS BIGINT) AS views,
                CAST(COUNT(DISTINCT CASE WHEN e.kind = 'view' THEN e.visitor END) AS BIGINT)
                    AS unique_visitors,
                CAST(SUM(CASE WHEN e.kind = 'click' THEN 1 ELSE 0 END) AS BIGINT) AS clicks,
                CAST(0 AS BIGINT) AS form_submissions
         FROM page_events e
         WHERE e.campaign_id = $1 AND e.is_bot = 0 AND e.created_at >= $2 AND e.created_at < $3
         GROUP BY {day}"
    )))
    .bind(campaign_id)
    .bind(from)
    .bind(to)
    .fetch_all(db.pool())
    .await?;
    let day = days.day_sql("f.created_at", from, to);
    let forms: Vec<(i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {day} AS day, CAST(COUNT(*) AS BIGINT)
         FROM form_submissions f
         WHERE f.campaign_id = $1 AND f.class = 'person'
           AND f.created_at >= $2 AND f.created_at < $3
         GROUP BY {day}"
    )))
    .bind(campaign_id)
    .bind(from)
    .bind(to)
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
    let sql = format!(
        "SELECT e.kind, e.campaign_id, c.name AS campaign_name, e.seconds, e.target,
                e.created_at, e.class, e.reason
         FROM page_events e JOIN campaigns c ON c.id = e.campaign_id
         WHERE e.id IN ({}) AND (e.is_bot = 0 OR e.kind = 'view') AND e.kind <> 'confirm'
           AND ($2 IS NULL OR e.created_at < $2)
         ORDER BY e.created_at DESC, e.id DESC LIMIT $3",
        event_ids_of("$1")
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(lead_id)
        .bind(before)
        .bind(limit)
        .fetch_all(ex)
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
