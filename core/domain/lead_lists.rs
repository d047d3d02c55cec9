//! Leads listed for people and tools: the search's filters (text, campaigns, audiences, what
//! they did, last activity in a range, hot only), three orders, keyset pages (a cursor naming
//! the last lead listed, so a page far on costs what the first does), every campaign page of
//! each lead, and the export that reads every match a batch at a time.

use std::collections::HashMap;

use crate::auth::Principal;
use crate::domain::domains::page_addresses;
use crate::domain::lead::{LeadPage, LeadView};
use crate::domain::{campaigns, score};
use crate::store::lead_lists::{self, ListedLead};
pub use crate::store::lead_lists::{After, LeadFilter, LeadOrder};
use crate::store::variables;
use crate::{App, Result, time};

/// Leads the export reads per step (with their pages): what it holds in memory at a time.
pub const EXPORT_BATCH: i64 = 500;

/// What a list asks for.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub filter: LeadFilter,
    /// Only leads whose score now is at or above the hot threshold (`--hot-score`; none when
    /// it is 0).
    pub hot_only: bool,
    pub order: LeadOrder,
    /// The page after this lead (a previous page's `next`).
    pub after: Option<After>,
    pub limit: i64,
    /// Matches skipped before the first listed.
    pub offset: i64,
}

/// A page of leads.
#[derive(Debug, Default)]
pub struct Found {
    /// Every match, not only this page's.
    pub total: i64,
    pub leads: Vec<LeadView>,
    /// Where the next page starts, when there is one.
    pub next: Option<After>,
}

/// The filter as the store reads it: the workspace reached, `all` engagement meaning none, hot
/// as a stored score; `None` when it can match nothing (hot only, with no threshold).
async fn resolved(
    app: &App,
    principal: &Principal,
    mut filter: LeadFilter,
    hot_only: bool,
) -> Result<Option<LeadFilter>> {
    filter.workspace_id = principal.reach(&app.db, filter.workspace_id).await?.id;
    if filter.engagement.iter().any(|e| e == "all") {
        filter.engagement.clear();
    }
    if hot_only {
        let threshold = {
            let mut conn = app.db.pool().acquire().await?;
            crate::domain::workspaces::hot_threshold(app, &mut conn, filter.workspace_id).await?
        };
        if threshold <= 0.0 {
            return Ok(None);
        }
        // Hot as the score is shown and `lead.hot` decides: to two decimals.
        let least = threshold - 0.005;
        filter.min_score_base = Some(score::stored(least, time::now()));
    }
    Ok(Some(filter))
}

/// One page of the leads the search matches, with the total and where the next page starts.
pub async fn search(app: &App, principal: &Principal, search: Search) -> Result<Found> {
    let Some(filter) = resolved(app, principal, search.filter, search.hot_only).await? else {
        return Ok(Found::default());
    };
    let pool = app.db.pool();
    let total = lead_lists::count(pool, &filter).await?;
    let mut rows = lead_lists::page(
        pool,
        &filter,
        search.order,
        search.after,
        search.limit + 1,
        search.offset,
    )
    .await?;
    let more = rows.len() as i64 > search.limit;
    rows.truncate(search.limit.max(0) as usize);
    let next = rows
        .last()
        .filter(|_| more)
        .map(|last| After::of(search.order, last));
    Ok(Found {
        total,
        leads: listed(app, rows, &[]).await?,
        next,
    })
}

/// Leads as listed: their score now, last activity and pages (only those in `campaign_ids`,
/// when it names some).
async fn listed(app: &App, rows: Vec<ListedLead>, campaign_ids: &[i64]) -> Result<Vec<LeadView>> {
    let ids: Vec<i64> = rows.iter().map(|row| row.row.lead.id).collect();
    let mut pages: HashMap<i64, Vec<LeadPage>> = HashMap::new();
    let addresses = page_addresses(app).await?;
    for page in lead_lists::pages_of(app.db.pool(), &ids, campaign_ids).await? {
        pages.entry(page.lead_id).or_default().push(LeadPage {
            campaign_id: page.campaign_id,
            campaign_name: page.campaign_name,
            url: addresses.page_url(page.workspace_id, &page.campaign_slug, &page.lead_slug),
            created_at: page.created_at,
        });
    }
    let now = time::now();
    Ok(rows
        .into_iter()
        .map(|row| {
            let id = row.row.lead.id;
            let mut lead = LeadView::new(&addresses, row.row);
            lead.score = score::at(row.score_base, now);
            lead.last_activity_at = row.last_activity_at;
            lead.pages = pages.remove(&id).unwrap_or_default();
            lead
        })
        .collect())
}

/// A lead's score now, last activity and every campaign page, added to its view.
pub async fn complete(app: &App, lead: &mut LeadView) -> Result<()> {
    let pool = app.db.pool();
    let (score_base, last_activity_at) = lead_lists::standing(pool, lead.id).await?;
    lead.score = score::at(score_base, time::now());
    lead.last_activity_at = last_activity_at;
    let addresses = page_addresses(app).await?;
    lead.pages = lead_lists::pages_of(pool, &[lead.id], &[])
        .await?
        .into_iter()
        .map(|page| LeadPage {
            campaign_id: page.campaign_id,
            campaign_name: page.campaign_name,
            url: addresses.page_url(page.workspace_id, &page.campaign_slug, &page.lead_slug),
            created_at: page.created_at,
        })
        .collect();
    Ok(())
}

/// Every lead a search matches, read [`EXPORT_BATCH`] at a time, newest first (by id, so a
/// lead whose score or activity changes meanwhile is read once), each with its pages in the
/// filter's campaigns (every page without a campaign filter).
pub struct Exporter {
    app: App,
    /// `None`: nothing matches.
    filter: Option<LeadFilter>,
    after: Option<After>,
    /// The workspace's custom variables, oldest first.
    pub custom_keys: Vec<String>,
}

/// Starts an export of what `search` matches (its order, page and offset aside), only
/// `campaign_id`'s pages when given ("Campaign not found" unless it is the workspace's).
pub async fn export(
    app: &App,
    principal: &Principal,
    search: Search,
    campaign_id: Option<i64>,
) -> Result<Exporter> {
    let workspace_id = search.filter.workspace_id;
    let mut filter = resolved(app, principal, search.filter, search.hot_only).await?;
    if let Some(campaign_id) = campaign_id {
        let campaign =
            campaigns::in_workspace(&app.db, principal, workspace_id, campaign_id).await?;
        // That campaign's pages, of the leads the filter's campaigns (if any) allow.
        filter = filter
            .filter(|f| f.campaign_ids.is_empty() || f.campaign_ids.contains(&campaign.id))
            .map(|mut f| {
                f.campaign_ids = vec![campaign.id];
                f
            });
    }
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let custom_keys = variables::list_custom_keys(app.db.pool(), workspace.id).await?;
    Ok(Exporter {
        app: app.clone(),
        filter,
        after: None,
        custom_keys,
    })
}

impl Exporter {
    /// The next leads, or none once every match was read.
    pub async fn next_batch(&mut self) -> Result<Vec<LeadView>> {
        let Some(filter) = &self.filter else {
            return Ok(Vec::new());
        };
        let rows = lead_lists::page(
            self.app.db.pool(),
            filter,
            LeadOrder::Created,
            self.after,
            EXPORT_BATCH,
            0,
        )
        .await?;
        let campaign_ids = filter.campaign_ids.clone();
        match rows.last() {
            Some(last) if rows.len() as i64 == EXPORT_BATCH => {
                self.after = Some(After::of(LeadOrder::Created, last));
            }
            _ => self.filter = None,
        }
        listed(&self.app, rows, &campaign_ids).await
    }
}

/// A position as the cursor clients pass back (`after`): the order's letter, its key and the
/// lead's id, dot-separated (`c.42`, `s.{score bits in hex}.42`, `a.{micros}.42`, `a.-.42` for
/// never active). Clients treat it as opaque; `GET /leads/search` documents its shape as a
/// pattern (`edge/operations/lead_lists.rs`).
pub fn cursor(after: &After) -> String {
    match after {
        After::Created { id } => format!("c.{id}"),
        After::Score { score_base, id } => format!("s.{:016x}.{id}", score_base.to_bits()),
        After::LastActivity { at: Some(at), id } => format!("a.{at}.{id}"),
        After::LastActivity { at: None, id } => format!("a.-.{id}"),
    }
}

/// The position a cursor names, if it is one [`cursor`] could have made.
pub fn read_cursor(text: &str) -> Option<After> {
    let digits = |part: &str| {
        (!part.is_empty() && part.len() <= 18 && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse().ok())
            .flatten()
    };
    let mut parts = text.split('.');
    let after = match (parts.next()?, parts.next()?, parts.next()) {
        ("c", id, None) => After::Created { id: digits(id)? },
        ("s", bits, Some(id))
            if bits.len() == 16 && bits.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
        {
            After::Score {
                score_base: f64::from_bits(u64::from_str_radix(bits, 16).ok()?),
                id: digits(id)?,
            }
        }
        ("a", "-", Some(id)) => After::LastActivity {
            at: None,
            id: digits(id)?,
        },
        ("a", at, Some(id)) => After::LastActivity {
            at: Some(digits(at)?),
            id: digits(id)?,
        },
        _ => return None,
    };
    parts.next().is_none().then_some(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_names_the_same_position_when_read_back() {
        for after in [
            After::Created { id: 42 },
            After::Score {
                score_base: 1_234.567_891_234_5,
                id: 7,
            },
            After::Score {
                score_base: 0.0,
                id: 1,
            },
            After::LastActivity {
                at: Some(1_780_000_000_000_000),
                id: 9,
            },
            After::LastActivity { at: None, id: 3 },
        ] {
            assert_eq!(read_cursor(&cursor(&after)), Some(after));
        }
        for bad in [
            "",
            "!!",
            "c.",
            "c.-1",
            "x.1.2",
            "c.1.2",
            "s.3ff.1",
            "a.1",
            "c.1234567890123456789",
        ] {
            assert_eq!(read_cursor(bad), None, "{bad}");
        }
        for good in [
            "c.42",
            "s.3ff8000000000000.7",
            "a.-.3",
            "a.1780000000000000.9",
        ] {
            assert!(read_cursor(good).is_some(), "{good}");
        }
    }
}
