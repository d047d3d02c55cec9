//! Leads listed: a workspace's leads matched by the search's filters, in one of three orders,
//! a keyset page at a time (no offset ceiling), with every campaign page of each.
//!
//! The statement is built from the filter, one condition per filter asked for, every value a
//! numbered parameter ([`Params`]); the same conditions count the matches.

use sqlx::any::AnyArguments;
use sqlx::query::QueryAs;
use sqlx::{Any, Executor, FromRow};

use super::leads::{COLUMNS, FIRST_PAGE, LeadWithPage};
use super::{like_pattern, placeholder_list};
use crate::time::Micros;

/// How a list of leads is ordered; equal keys newest first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LeadOrder {
    /// Newest first.
    #[default]
    Created,
    /// Highest engagement score now first.
    Score,
    /// Most recently active first; never active last.
    LastActivity,
}

/// Where a page starts: just after this lead, as its order places it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum After {
    Created { id: i64 },
    Score { score_base: f64, id: i64 },
    LastActivity { at: Option<Micros>, id: i64 },
}

impl After {
    /// The position of `lead` in `order`.
    pub fn of(order: LeadOrder, lead: &ListedLead) -> Self {
        let id = lead.row.lead.id;
        match order {
            LeadOrder::Created => Self::Created { id },
            LeadOrder::Score => Self::Score {
                score_base: lead.score_base,
                id,
            },
            LeadOrder::LastActivity => Self::LastActivity {
                at: lead.last_activity_at,
                id,
            },
        }
    }

    /// The order this position belongs to.
    pub fn order(&self) -> LeadOrder {
        match self {
            Self::Created { .. } => LeadOrder::Created,
            Self::Score { .. } => LeadOrder::Score,
            Self::LastActivity { .. } => LeadOrder::LastActivity,
        }
    }
}

/// What a list of leads is filtered by (`GET /leads/search`, its CSV export, the dashboard).
#[derive(Debug, Clone, Default)]
pub struct LeadFilter {
    pub workspace_id: i64,
    /// Matched case-insensitively anywhere in first name, email or company name.
    pub text: Option<String>,
    /// Leads with a page in any of these campaigns (their listed page is in one of them).
    pub campaign_ids: Vec<i64>,
    /// Audience ids; `0` is the Default Audience (leads in no audience).
    pub audience_ids: Vec<i64>,
    /// Engagement the lead must have shown on any of its pages, any of these (`page_viewed`,
    /// `button_clicked`, `scroll_100_percent`, `form_submitted`; counted visits only); empty:
    /// no filter.
    pub engagement: Vec<String>,
    /// Only leads whose stored score is at least this (a score now, see `domain::score`).
    pub min_score_base: Option<f64>,
    /// Only leads last active at or after this instant.
    pub active_from: Option<Micros>,
    /// Only leads last active before this instant.
    pub active_to: Option<Micros>,
    /// Only these leads (empty: any).
    pub lead_ids: Vec<i64>,
}

/// A lead as listed: its values, the page shown for it, its score and last activity.
#[derive(Debug, Clone, FromRow)]
pub struct ListedLead {
    #[sqlx(flatten)]
    pub row: LeadWithPage,
    pub score_base: f64,
    pub last_activity_at: Option<Micros>,
}

/// One campaign page of a lead.
#[derive(Debug, Clone, FromRow)]
pub struct LeadPageRow {
    pub lead_id: i64,
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub campaign_name: String,
    pub campaign_slug: String,
    pub lead_slug: String,
    pub created_at: Micros,
}

/// A value bound to a numbered parameter.
#[derive(Debug, Clone)]
enum Param {
    Int(i64),
    Real(f64),
    Text(String),
}

/// The parameters of a statement being built, numbered in the order they are added.
#[derive(Default)]
struct Params(Vec<Param>);

impl Params {
    /// Adds a value; answers its placeholder.
    fn add(&mut self, value: Param) -> String {
        self.0.push(value);
        format!("${}", self.0.len())
    }

    /// Adds each id; answers their placeholders, comma-separated.
    fn ids(&mut self, ids: &[i64]) -> String {
        let first = self.0.len() + 1;
        self.0.extend(ids.iter().map(|id| Param::Int(*id)));
        placeholder_list(ids.len(), first)
    }

    fn bind<O>(
        &self,
        mut query: QueryAs<'static, Any, O, AnyArguments>,
    ) -> QueryAs<'static, Any, O, AnyArguments> {
        for value in &self.0 {
            query = match value {
                Param::Int(v) => query.bind(*v),
                Param::Real(v) => query.bind(*v),
                Param::Text(v) => query.bind(v.clone()),
            };
        }
        query
    }
}

/// The `WHERE` conditions of `filter`, their values added to `params`.
fn conditions(filter: &LeadFilter, params: &mut Params) -> String {
    let mut conditions = vec![format!(
        "l.workspace_id = {}",
        params.add(Param::Int(filter.workspace_id))
    )];
    if let Some(text) = &filter.text {
        let p = params.add(Param::Text(like_pattern(text)));
        conditions.push(format!(
            "(LOWER(COALESCE(l.first_name, '')) LIKE {p} ESCAPE '\\'
              OR LOWER(COALESCE(l.email, '')) LIKE {p} ESCAPE '\\'
              OR LOWER(COALESCE(l.company_name, '')) LIKE {p} ESCAPE '\\')"
        ));
    }
    if !filter.campaign_ids.is_empty() {
        conditions.push(format!(
            "EXISTS (SELECT 1 FROM campaign_leads cf WHERE cf.lead_id = l.id
                     AND cf.campaign_id IN ({}))",
            params.ids(&filter.campaign_ids)
        ));
    }
    if !filter.audience_ids.is_empty() {
        let named: Vec<i64> = filter
            .audience_ids
            .iter()
            .copied()
            .filter(|id| *id != 0)
            .collect();
        let mut either = Vec::new();
        if !named.is_empty() {
            either.push(format!(
                "EXISTS (SELECT 1 FROM audience_leads af WHERE af.lead_id = l.id
                         AND af.audience_id IN ({}))",
                params.ids(&named)
            ));
        }
        if filter.audience_ids.contains(&0) {
            either.push(
                "NOT EXISTS (SELECT 1 FROM audience_leads ad WHERE ad.lead_id = l.id)".to_owned(),
            );
        }
        conditions.push(format!("({})", either.join(" OR ")));
    }
    if !filter.engagement.is_empty() {
        let either: Vec<&str> = filter
            .engagement
            .iter()
            .map(|kind| match kind.as_str() {
                "form_submitted" => {
                    "EXISTS (SELECT 1 FROM form_submissions fs WHERE fs.lead_id = l.id
                             AND fs.class = 'person')"
                }
                "page_viewed" => {
                    "EXISTS (SELECT 1 FROM page_engagement pe WHERE pe.lead_id = l.id
                             AND pe.views > 0)"
                }
                "button_clicked" => {
                    "EXISTS (SELECT 1 FROM page_engagement pe WHERE pe.lead_id = l.id
                             AND pe.clicks > 0)"
                }
                "scroll_100_percent" => {
                    "EXISTS (SELECT 1 FROM page_engagement pe WHERE pe.lead_id = l.id
                             AND pe.scrolled_to_bottom = 1)"
                }
                _ => "1 = 0",
            })
            .collect();
        conditions.push(format!("({})", either.join(" OR ")));
    }
    if let Some(min) = filter.min_score_base {
        conditions.push(format!("l.score_base >= {}", params.add(Param::Real(min))));
    }
    if let Some(from) = filter.active_from {
        conditions.push(format!(
            "l.last_activity_at >= {}",
            params.add(Param::Int(from))
        ));
    }
    if let Some(to) = filter.active_to {
        conditions.push(format!(
            "l.last_activity_at < {}",
            params.add(Param::Int(to))
        ));
    }
    if !filter.lead_ids.is_empty() {
        conditions.push(format!("l.id IN ({})", params.ids(&filter.lead_ids)));
    }
    conditions.join(" AND ")
}

/// How many leads the filter matches.
pub async fn count<'c>(
    ex: impl Executor<'c, Database = Any>,
    filter: &LeadFilter,
) -> sqlx::Result<i64> {
    let mut params = Params::default();
    let sql = format!(
        "SELECT COUNT(*) FROM leads l WHERE {}",
        conditions(filter, &mut params)
    );
    let (total,): (i64,) = params
        .bind(sqlx::query_as(sqlx::AssertSqlSafe(sql)))
        .fetch_one(ex)
        .await?;
    Ok(total)
}

/// One page of the matching leads in `order`: `limit` of them after `after` (from the first
/// without it), skipping `offset` more. Each with the page shown for it: in the filter's
/// campaigns when it names some, else its oldest.
pub async fn page<'c>(
    ex: impl Executor<'c, Database = Any>,
    filter: &LeadFilter,
    order: LeadOrder,
    after: Option<After>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<ListedLead>> {
    let mut params = Params::default();
    let mut filter_sql = conditions(filter, &mut params);
    if let Some(after) = after {
        filter_sql.push_str(" AND ");
        filter_sql.push_str(&after_condition(after, &mut params));
    }
    let listed_page = if filter.campaign_ids.is_empty() {
        FIRST_PAGE.to_owned()
    } else {
        format!(
            "(SELECT COALESCE(c.page_slug, c.slug) FROM campaign_leads cl JOIN campaigns c ON c.id = cl.campaign_id
              WHERE cl.lead_id = l.id AND cl.campaign_id IN ({})
              ORDER BY cl.created_at, cl.campaign_id LIMIT 1)",
            params.ids(&filter.campaign_ids)
        )
    };
    // Ordering by the score at the epoch is ordering by today's score (see `domain::score`).
    let order_sql = match order {
        LeadOrder::Created => "l.id DESC",
        LeadOrder::Score => "l.score_base DESC, l.id DESC",
        LeadOrder::LastActivity => "l.last_activity_at DESC NULLS LAST, l.id DESC",
    };
    let limit = params.add(Param::Int(limit));
    let offset = params.add(Param::Int(offset));
    let sql = format!(
        "SELECT {COLUMNS}, {listed_page} AS campaign_slug, l.score_base, l.last_activity_at
         FROM leads l WHERE {filter_sql}
         ORDER BY {order_sql} LIMIT {limit} OFFSET {offset}"
    );
    params
        .bind(sqlx::query_as(sqlx::AssertSqlSafe(sql)))
        .fetch_all(ex)
        .await
}

/// The leads after `after` in its order.
fn after_condition(after: After, params: &mut Params) -> String {
    match after {
        After::Created { id } => format!("l.id < {}", params.add(Param::Int(id))),
        After::Score { score_base, id } => {
            let score = params.add(Param::Real(score_base));
            let id = params.add(Param::Int(id));
            format!("(l.score_base < {score} OR (l.score_base = {score} AND l.id < {id}))")
        }
        After::LastActivity { at: Some(at), id } => {
            let at = params.add(Param::Int(at));
            let id = params.add(Param::Int(id));
            format!(
                "(l.last_activity_at < {at} OR (l.last_activity_at = {at} AND l.id < {id})
                  OR l.last_activity_at IS NULL)"
            )
        }
        After::LastActivity { at: None, id } => format!(
            "(l.last_activity_at IS NULL AND l.id < {})",
            params.add(Param::Int(id))
        ),
    }
}

/// Every campaign page of these leads (only those in `campaign_ids`, when it names some):
/// by lead, each lead's oldest first.
pub async fn pages_of<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_ids: &[i64],
    campaign_ids: &[i64],
) -> sqlx::Result<Vec<LeadPageRow>> {
    if lead_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut params = Params::default();
    let mut sql = format!(
        "SELECT cl.lead_id, c.workspace_id, c.id AS campaign_id, c.name AS campaign_name,
                COALESCE(c.page_slug, c.slug) AS campaign_slug, l.slug AS lead_slug, cl.created_at
         FROM campaign_leads cl
         JOIN leads l ON l.id = cl.lead_id
         JOIN campaigns c ON c.id = cl.campaign_id AND c.workspace_id = l.workspace_id
         WHERE cl.lead_id IN ({})",
        params.ids(lead_ids)
    );
    if !campaign_ids.is_empty() {
        sql.push_str(&format!(
            " AND cl.campaign_id IN ({})",
            params.ids(campaign_ids)
        ));
    }
    sql.push_str(" ORDER BY cl.lead_id, cl.created_at, cl.campaign_id");
    params
        .bind(sqlx::query_as(sqlx::AssertSqlSafe(sql)))
        .fetch_all(ex)
        .await
}

/// A lead's score and last activity.
pub async fn standing<'c>(
    ex: impl Executor<'c, Database = Any>,
    lead_id: i64,
) -> sqlx::Result<(f64, Option<Micros>)> {
    sqlx::query_as("SELECT score_base, last_activity_at FROM leads WHERE id = $1")
        .bind(lead_id)
        .fetch_optional(ex)
        .await
        .map(Option::unwrap_or_default)
}

/// Records that a person was active on each lead's pages at the given instant (a later one
/// than it knew).
pub async fn note_activity(
    conn: &mut sqlx::AnyConnection,
    activity: &[(i64, Micros)],
) -> sqlx::Result<()> {
    // Many leads a statement: a batch of beacons touches thousands.
    for chunk in activity.chunks(super::rows_per_statement(conn, 2)) {
        let sql = format!(
            "UPDATE leads SET last_activity_at = a.column2
             FROM (VALUES {}) AS a
             WHERE leads.id = a.column1
               AND (leads.last_activity_at IS NULL OR leads.last_activity_at < a.column2)",
            super::placeholder_rows(chunk.len(), 2, 1, &["BIGINT", "BIGINT"])
        );
        let mut query = sqlx::query(super::bulk_sql(conn, sql));
        for (lead_id, at) in chunk {
            query = query.bind(*lead_id).bind(*at);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}
