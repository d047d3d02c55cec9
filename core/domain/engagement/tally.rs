//! What one batch of beacons adds up to: each page's counted engagement, its visitors, the
//! events announced, the scores' evidence and each campaign's views by class.

use std::collections::BTreeMap;

use crate::domain::beacon::BeaconKind;
use crate::domain::engagement_feed::FeedEvent;
use crate::domain::score;
use crate::domain::visit_class::{VisitClass, VisitCounts};
use crate::store::engagement::{PageDelta, PageIds};
use crate::time::Micros;

/// What one batch adds up: page sums, visitors, the feed and scores.
#[derive(Default)]
pub(super) struct Tally<'a> {
    pub deltas: BTreeMap<(i64, i64), (&'a PageIds, PageDelta)>,
    pub visitors: BTreeMap<(i64, String), (bool, Micros)>,
    pub feed: Vec<FeedEvent>,
    pub scores: score::Evidence,
    /// Views added per campaign, by class (possibly negative: a view confirmed moves).
    pub classes: BTreeMap<i64, VisitCounts>,
}

impl<'a> Tally<'a> {
    /// Counts one beacon of a person's view.
    pub fn count(
        &mut self,
        page: &'a PageIds,
        kind: BeaconKind,
        visitor: &str,
        seconds: i64,
        target: Option<&str>,
        at: Micros,
    ) {
        let (_, delta) = self
            .deltas
            .entry((page.campaign_id, page.lead_id))
            .or_insert_with(|| (page, PageDelta::default()));
        let weight = match kind {
            BeaconKind::View => {
                delta.views += 1;
                delta.first_viewed_at = Some(delta.first_viewed_at.map_or(at, |t| t.min(at)));
                delta.last_viewed_at = Some(delta.last_viewed_at.map_or(at, |t| t.max(at)));
                score::VIEW
            }
            BeaconKind::Click => {
                delta.clicks += 1;
                score::CLICK
            }
            BeaconKind::Scroll => {
                delta.scrolled_to_bottom = true;
                score::REACHED_END
            }
            BeaconKind::Time => {
                delta.engaged_seconds += seconds;
                0.0
            }
            BeaconKind::Confirm => return,
        };
        if weight > 0.0 {
            self.scores.add(
                page.workspace_id,
                page.campaign_id,
                page.lead_id,
                weight,
                at,
            );
        }
        let seen = self
            .visitors
            .entry((page.campaign_id, visitor.to_owned()))
            .or_insert((false, at));
        seen.0 |= kind == BeaconKind::Click;
        seen.1 = seen.1.min(at);
        if kind != BeaconKind::Time || seconds > 0 {
            self.feed.push(FeedEvent {
                event: kind.event().to_owned(),
                workspace_id: page.workspace_id,
                campaign_id: page.campaign_id,
                lead_id: page.lead_id,
                occurred_at: at,
                seconds,
                target: target.map(str::to_owned),
            });
        }
    }

    /// Adds `views` (possibly negative) to a campaign's views of `class`.
    pub fn view_class(&mut self, campaign_id: i64, class: VisitClass, views: i64) {
        self.classes.entry(campaign_id).or_default()[class] += views;
    }
}
