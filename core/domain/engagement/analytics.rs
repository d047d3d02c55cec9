//! Campaign analytics, read back: reach and engagement per campaign with the views not
//! counted by class, and a campaign's counted engagement per day.

use crate::auth::Principal;
use crate::domain::visit_class::{VisitClass, VisitCounts};
use crate::local_days::LocalDays;
use crate::store::engagement_reports::{self, CampaignSums};
use crate::store::{WorkspaceTable, ids_in_workspace};
use crate::time;
use crate::{App, Error, Result};

/// One campaign's analytics entry.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignAnalytics {
    pub campaign_id: i64,
    pub name: String,
    pub visit_percentage: f64,
    pub click_percentage: f64,
    pub average_time_on_page_seconds: i64,
    pub pages_visited: i64,
    pub unique_visitors: i64,
    pub total_button_clicks: i64,
    pub pages_generated: i64,
    pub total_views: i64,
    /// Views recorded but not counted, by class (a person's, counted, is always 0 here).
    pub filtered_visits: VisitCounts,
}

/// `part / whole x 100` rounded to two decimals; 0 when `whole` is 0.
fn percentage(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        return 0.0;
    }
    (part as f64 * 10_000.0 / whole as f64).round() / 100.0
}

impl From<CampaignSums> for CampaignAnalytics {
    fn from(sums: CampaignSums) -> Self {
        Self {
            campaign_id: sums.campaign_id,
            name: sums.name,
            visit_percentage: percentage(sums.pages_visited, sums.pages_generated),
            click_percentage: percentage(sums.clicking_visitors, sums.unique_visitors),
            average_time_on_page_seconds: if sums.total_views > 0 {
                (sums.engaged_seconds as f64 / sums.total_views as f64).round() as i64
            } else {
                0
            },
            pages_visited: sums.pages_visited,
            unique_visitors: sums.unique_visitors,
            total_button_clicks: sums.total_clicks,
            pages_generated: sums.pages_generated,
            total_views: sums.total_views,
            filtered_visits: VisitCounts::default(),
        }
    }
}

/// Analytics of the workspace's campaigns, all or those named ("Campaign not found" when one
/// is not the workspace's).
pub async fn campaign_analytics(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    campaign_ids: &[i64],
) -> Result<Vec<CampaignAnalytics>> {
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let mut wanted = campaign_ids.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    if !wanted.is_empty() {
        let found = ids_in_workspace(
            app.db.pool(),
            WorkspaceTable::Campaigns,
            workspace.id,
            &wanted,
        )
        .await?;
        if found.len() != wanted.len() {
            return Err(Error::NotFound("Campaign not found"));
        }
    }
    let mut entries: Vec<CampaignAnalytics> = Vec::new();
    for chunk in chunks_or_all(&wanted) {
        entries.extend(
            engagement_reports::campaign_sums(app.db.pool(), workspace.id, chunk)
                .await?
                .into_iter()
                .map(CampaignAnalytics::from),
        );
    }
    let ids: Vec<i64> = entries.iter().map(|e| e.campaign_id).collect();
    for chunk in ids.chunks(500) {
        for (campaign_id, class, views) in
            engagement_reports::filtered_visits(app.db.pool(), chunk).await?
        {
            let Some(entry) = entries.iter_mut().find(|e| e.campaign_id == campaign_id) else {
                continue;
            };
            let class = VisitClass::from_stored(&class)?;
            if !class.counted() {
                entry.filtered_visits[class] += views;
            }
        }
    }
    Ok(entries)
}

/// `ids` in chunks a statement can bind, or one empty chunk (meaning all) when there are none.
fn chunks_or_all(ids: &[i64]) -> Vec<&[i64]> {
    if ids.is_empty() {
        vec![&[]]
    } else {
        ids.chunks(500).collect()
    }
}

/// The most days one request is answered.
pub const MAX_DAYS: i64 = 366;
/// The days answered when the request names none: the last 30, today included.
const DEFAULT_DAYS: i64 = 30;

/// A campaign's counted engagement per day, every day from `from` to `to` (days since
/// 1970-01-01 in `days`' calendar; the last 30 days up to today there when unset), days with nothing as zeros. A range longer than [`MAX_DAYS`] keeps its last
/// days; one that ends before it starts has none.
pub async fn daily_analytics(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
    (from, to): (Option<i64>, Option<i64>),
    days: &LocalDays,
) -> Result<Vec<engagement_reports::DaySums>> {
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let found = ids_in_workspace(
        app.db.pool(),
        WorkspaceTable::Campaigns,
        workspace.id,
        &[campaign_id],
    )
    .await?;
    if found.is_empty() {
        return Err(Error::NotFound("Campaign not found"));
    }
    let to = to.unwrap_or_else(|| days.day_of(time::now()));
    let from = from
        .unwrap_or(to - (DEFAULT_DAYS - 1))
        .max(to - (MAX_DAYS - 1));
    if from > to {
        return Ok(Vec::new());
    }
    let sums = engagement_reports::daily_sums(
        &app.db,
        campaign_id,
        days,
        days.start_of(from),
        days.start_of(to + 1),
    )
    .await?;
    Ok((from..=to)
        .map(|day| {
            sums.iter().find(|sums| sums.day == day).cloned().unwrap_or(
                engagement_reports::DaySums {
                    day,
                    ..Default::default()
                },
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_have_two_decimals_and_nothing_over_nothing_is_zero() {
        assert_eq!(percentage(1, 3), 33.33);
        assert_eq!(percentage(2, 3), 66.67);
        assert_eq!(percentage(3, 3), 100.0);
        assert_eq!(percentage(0, 0), 0.0);
        assert_eq!(percentage(5, 0), 0.0);
    }
}
