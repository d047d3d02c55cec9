//! A lead's engagement score: the evidence of a person's interest, each piece weighted and
//! decaying by half every [`HALF_LIFE_DAYS`] days.
//!
//! | evidence | weight |
//! |---|---|
//! | a person's view of the lead's page | 1 |
//! | a return visit (a person's view when the page was viewed before) | 2 more |
//! | reaching the end of the page | 1 |
//! | a click on a link or button | 3 |
//! | a form submission | 5 |
//!
//! score(now) = sum of weight x 2^(-(now - when) / half-life). It is kept in one column as its
//! value at a fixed epoch (`score_base` = sum of weight x 2^((when - epoch) / half-life)), so
//! adding evidence is one addition and ordering leads by `score_base` orders them by today's
//! score, with no rewrite as time passes. With a 14-day half-life the stored value stays inside
//! a double (2^1023) for 39 years after the epoch, into the 2060s.
//!
//! A lead is hot the first time its score reaches the threshold (`--hot-score`, 8 by default:
//! say a view, a click and a form, or a few return visits with clicks); then, when the lead
//! has a callback address, a signed `lead.hot` callback is queued, once.

use std::collections::BTreeMap;

use crate::App;
use crate::domain::lead;
use crate::store::callbacks::{self, NewCallback};
use crate::store::leads;
use crate::time::{self, Micros};

pub const HALF_LIFE_DAYS: i64 = 14;
/// 2025-01-01T00:00:00Z.
const EPOCH: Micros = 1_735_689_600_000_000;

pub const VIEW: f64 = 1.0;
pub const RETURN_VISIT: f64 = 2.0;
pub const REACHED_END: f64 = 1.0;
pub const CLICK: f64 = 3.0;
pub const FORM: f64 = 5.0;

fn half_lives_since_epoch(at: Micros) -> f64 {
    (at - EPOCH) as f64 / (HALF_LIFE_DAYS * time::MICROS_PER_DAY) as f64
}

/// What evidence of `weight` at `at` adds to the stored score.
pub fn stored(weight: f64, at: Micros) -> f64 {
    weight * half_lives_since_epoch(at).exp2()
}

/// The score at `now` of a stored score, to two decimals.
pub fn at(score_base: f64, now: Micros) -> f64 {
    let score = score_base * (-half_lives_since_epoch(now)).exp2();
    (score * 100.0).round() / 100.0
}

/// Evidence gathered for leads, to add in one transaction.
#[derive(Debug, Default)]
pub struct Evidence {
    /// Per lead: its workspace, the campaign of the latest evidence, and the stored score to
    /// add.
    leads: BTreeMap<i64, (i64, i64, f64)>,
}

impl Evidence {
    pub fn add(
        &mut self,
        workspace_id: i64,
        campaign_id: i64,
        lead_id: i64,
        weight: f64,
        at: Micros,
    ) {
        let entry = self
            .leads
            .entry(lead_id)
            .or_insert((workspace_id, campaign_id, 0.0));
        entry.1 = campaign_id;
        entry.2 += stored(weight, at);
    }

    /// Adds the evidence to the leads' scores; queues `lead.hot` for a lead that crosses the
    /// threshold for the first time. Answers whether a callback was queued.
    pub async fn apply(self, app: &App, tx: &mut sqlx::AnyConnection) -> crate::Result<bool> {
        let now = time::now();
        let mut queued = false;
        for (lead_id, (workspace_id, campaign_id, add)) in self.leads {
            let Some((score_base, hot_at)) = leads::add_score(tx, lead_id, add).await? else {
                continue;
            };
            let score = at(score_base, now);
            if hot_at.is_some()
                || app.config.hot_score <= 0.0
                || score < app.config.hot_score
                || !leads::mark_hot(tx, lead_id, now).await?
            {
                continue;
            }
            let Some(url) = leads::callback_url(&mut *tx, lead_id).await? else {
                continue;
            };
            let page_url = crate::store::engagement::page_slugs(&mut *tx, campaign_id, lead_id)
                .await?
                .map(|(campaign, lead)| lead::page_url(&app.config.public_url, &campaign, &lead));
            let payload = serde_json::json!({
                "event": callbacks::LEAD_HOT,
                "lead_id": lead_id,
                "campaign_id": campaign_id,
                "score": score,
                "threshold": app.config.hot_score,
                "page_url": page_url,
                "hot_at": time::iso8601(&time::to_proto(now)),
            });
            let callback = NewCallback {
                event: callbacks::LEAD_HOT,
                workspace_id,
                destination: callbacks::destination_of(&url),
                job_id: String::new(),
                lead_id,
                url,
                payload: payload.to_string(),
            };
            callbacks::insert_many(tx, &[callback], now).await?;
            queued = true;
        }
        Ok(queued)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_halves_every_half_life_and_stronger_evidence_weighs_more() {
        let now = EPOCH + 400 * time::MICROS_PER_DAY;
        let half_life = HALF_LIFE_DAYS * time::MICROS_PER_DAY;
        assert_eq!(at(stored(CLICK, now), now), 3.0);
        assert_eq!(at(stored(CLICK, now - half_life), now), 1.5);
        assert_eq!(at(stored(FORM, now - 2 * half_life), now), 1.25);
        // Form > click > view at the same time; recent > old for the same evidence.
        assert!(stored(FORM, now) > stored(CLICK, now));
        assert!(stored(CLICK, now) > stored(VIEW, now));
        assert!(stored(VIEW, now) > stored(VIEW, now - time::MICROS_PER_DAY));
        // Far from the epoch the stored value is still a finite double.
        let far = EPOCH + 30 * 365 * time::MICROS_PER_DAY;
        assert!(stored(FORM, far).is_finite());
        assert_eq!(at(stored(FORM, far), far), 5.0);
    }
}
