//! A lead's engagement score: the evidence of a person's interest, each piece weighted and
//! decaying by half every [`super::score_decay::HALF_LIFE_DAYS`] days.
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
//! What a lead may gain is bounded per clock hour, from every visitor, page and form together:
//! at most [`MOST_POINTS_PER_HOUR`] points of evidence (past it, evidence is kept but adds
//! nothing) and [`MOST_ENGAGED_SECONDS_PER_HOUR`] engaged seconds (an hour of wall time: more
//! than that is not one lead's attention). The figures live with the lead (`leads.budget_*`),
//! so every core process spends from the same budget.
//!
//! A lead is hot the first time its score reaches the threshold (`--hot-score`, 8 by default:
//! say a view, a click and a form, or a few return visits with clicks); then, when the lead
//! has a callback address, a signed `lead.hot` callback is queued, once.

use std::collections::BTreeMap;

use crate::App;
use crate::domain::announcements::{self, Receiver};
use crate::domain::callback_events::{CallbackEvent, LeadHot};
use crate::domain::workspaces;
use crate::store::leads;
use crate::time::{self, Micros};

pub use super::score_decay::{at, stored};

pub const VIEW: f64 = 1.0;
pub const RETURN_VISIT: f64 = 2.0;
pub const REACHED_END: f64 = 1.0;
pub const CLICK: f64 = 3.0;
pub const FORM: f64 = 5.0;

/// The most points of evidence a lead's score gains in one clock hour.
pub const MOST_POINTS_PER_HOUR: f64 = 20.0;
/// The most engaged seconds counted for one lead in one clock hour.
pub const MOST_ENGAGED_SECONDS_PER_HOUR: i64 = 3_600;

/// The clock hour of `at`, as the lead's budget names it.
pub fn hour_of(at: Micros) -> i64 {
    at.div_euclid(3_600 * 1_000_000)
}

/// The part of `wanted` left within `most` once `used` is spent (never below zero).
pub fn within<T: PartialOrd + Copy + std::ops::Sub<Output = T> + Default>(
    wanted: T,
    used: T,
    most: T,
) -> T {
    let zero = T::default();
    let left = if used < most { most - used } else { zero };
    let part = if wanted < left { wanted } else { left };
    if part < zero { zero } else { part }
}

/// The hour's budgets of the leads one transaction adds to: read (and on PostgreSQL locked)
/// once, spent in memory, and written with the scores' gains by [`Evidence::apply_within`], a
/// statement per many leads. A batch of beacons touches thousands of leads: a statement or two
/// per lead was most of a batch's time on SQLite (each one a hand-off to the connection's
/// thread).
pub struct HourBudgets {
    hour: i64,
    now: Micros,
    leads: BTreeMap<i64, Budget>,
}

/// One lead's hour: what it had gained, and what this transaction adds.
#[derive(Debug, Default)]
struct Budget {
    points: f64,
    seconds: i64,
    stored: f64,
    changed: bool,
    scored: bool,
}

impl HourBudgets {
    /// The budgets of `lead_ids` in the hour of `now` (a lead no longer there has none: it
    /// gains nothing).
    pub async fn lock(
        tx: &mut sqlx::AnyConnection,
        dialect: crate::store::Dialect,
        lead_ids: &[i64],
        now: Micros,
    ) -> crate::Result<Self> {
        let gained = leads::hour_gains(tx, dialect, lead_ids, hour_of(now)).await?;
        Ok(Self::of(now, gained))
    }

    /// Budgets from what each lead gained in the hour of `now`, `(points, seconds)`.
    fn of(now: Micros, gained: BTreeMap<i64, (f64, i64)>) -> Self {
        let leads = gained
            .into_iter()
            .map(|(lead_id, (points, seconds))| {
                let budget = Budget {
                    points,
                    seconds,
                    ..Budget::default()
                };
                (lead_id, budget)
            })
            .collect();
        Self {
            hour: hour_of(now),
            now,
            leads,
        }
    }

    /// Counts up to `wanted` engaged seconds for a lead, within its hour's budget; answers how
    /// many count.
    pub fn take_seconds(&mut self, lead_id: i64, wanted: i64) -> i64 {
        let Some(budget) = self.leads.get_mut(&lead_id) else {
            return 0;
        };
        let seconds = within(wanted, budget.seconds, MOST_ENGAGED_SECONDS_PER_HOUR);
        if seconds > 0 {
            budget.seconds += seconds;
            budget.changed = true;
        }
        seconds
    }

    /// Counts up to `weight` points for a lead, within its hour's budget; answers how many
    /// count.
    fn take_points(&mut self, lead_id: i64, weight: f64, stored: f64) -> f64 {
        let Some(budget) = self.leads.get_mut(&lead_id) else {
            return 0.0;
        };
        let counted = within(weight, budget.points, MOST_POINTS_PER_HOUR);
        if counted > 0.0 {
            budget.points += counted;
            budget.stored += stored * counted / weight;
            budget.changed = true;
            budget.scored = true;
        }
        counted
    }

    /// Writes what was spent; answers, for each lead whose score grew, its new score at the
    /// epoch and when it first became hot, if it did.
    async fn write(
        self,
        tx: &mut sqlx::AnyConnection,
    ) -> crate::Result<Vec<(i64, f64, Option<Micros>)>> {
        let gains: Vec<leads::Gain> = self
            .leads
            .iter()
            .filter(|(_, budget)| budget.changed)
            .map(|(lead_id, budget)| leads::Gain {
                lead_id: *lead_id,
                stored: budget.stored,
                hour_score: budget.points,
                hour_seconds: budget.seconds,
            })
            .collect();
        let mut after = leads::add_gains(tx, self.hour, &gains).await?;
        after.retain(|(lead_id, _, _)| self.leads.get(lead_id).is_some_and(|b| b.scored));
        after.sort_unstable_by_key(|(lead_id, _, _)| *lead_id);
        Ok(after)
    }
}

/// Evidence gathered for leads, to add in one transaction.
#[derive(Debug, Default)]
pub struct Evidence {
    /// Per lead: its workspace, the campaign of the latest evidence, the stored score to add
    /// and the points it weighs.
    leads: BTreeMap<i64, (i64, i64, f64, f64)>,
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
            .or_insert((workspace_id, campaign_id, 0.0, 0.0));
        entry.1 = campaign_id;
        entry.2 += stored(weight, at);
        entry.3 += weight;
    }

    /// The leads the evidence is for.
    pub fn lead_ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.leads.keys().copied()
    }

    /// Adds the evidence to the leads' scores, each within what its hour's budget leaves;
    /// queues `lead.hot` for a lead that crosses the threshold for the first time. Answers
    /// whether a callback was queued.
    pub async fn apply(self, app: &App, tx: &mut sqlx::AnyConnection) -> crate::Result<bool> {
        let lead_ids: Vec<i64> = self.lead_ids().collect();
        let budgets = HourBudgets::lock(tx, app.db.dialect(), &lead_ids, time::now()).await?;
        self.apply_within(app, tx, budgets).await
    }

    /// [`Evidence::apply`] within budgets read before (which must include every lead of the
    /// evidence), writing what they spent on anything else too.
    pub async fn apply_within(
        self,
        app: &App,
        tx: &mut sqlx::AnyConnection,
        mut budgets: HourBudgets,
    ) -> crate::Result<bool> {
        for (lead_id, (_, _, add, weight)) in &self.leads {
            budgets.take_points(*lead_id, *weight, *add);
        }
        let now = budgets.now;
        let mut queued = false;
        // Each workspace's threshold, read once a batch.
        let mut thresholds: std::collections::HashMap<i64, f64> = Default::default();
        for (lead_id, score_base, hot_at) in budgets.write(tx).await? {
            let Some(&(workspace_id, campaign_id, _, _)) = self.leads.get(&lead_id) else {
                continue;
            };
            if hot_at.is_some() {
                continue;
            }
            let score = at(score_base, now);
            let threshold = match thresholds.get(&workspace_id) {
                Some(threshold) => *threshold,
                None => {
                    let threshold = workspaces::hot_threshold(app, tx, workspace_id).await?;
                    thresholds.insert(workspace_id, threshold);
                    threshold
                }
            };
            if threshold <= 0.0 || score < threshold || !leads::mark_hot(tx, lead_id, now).await? {
                continue;
            }
            let Some(listeners) =
                announcements::listeners_of_lead(tx, workspace_id, lead_id).await?
            else {
                continue;
            };
            let addresses = crate::domain::domains::page_addresses(app).await?;
            let page_url = crate::store::engagement::page_slugs(&mut *tx, campaign_id, lead_id)
                .await?
                .map(|(campaign, lead)| addresses.page_url(workspace_id, &campaign, &lead));
            let event = CallbackEvent::LeadHot(LeadHot {
                lead_id,
                campaign_id,
                score,
                threshold,
                page_url,
                hot_at: time::iso8601(&time::to_proto(now)),
            });
            let to = Receiver {
                workspace_id,
                url: listeners.callback_url.as_deref(),
                job_id: None,
            };
            queued |= announcements::announce(tx, app, &to, vec![event], now).await?;
        }
        Ok(queued)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::score_decay::{EPOCH, HALF_LIFE_DAYS};

    #[test]
    fn an_hour_allows_what_its_budget_leaves_and_never_less_than_nothing() {
        assert_eq!(within(5.0, 0.0, MOST_POINTS_PER_HOUR), 5.0);
        assert_eq!(within(5.0, 18.0, MOST_POINTS_PER_HOUR), 2.0);
        assert_eq!(within(5.0, 25.0, MOST_POINTS_PER_HOUR), 0.0);
        assert_eq!(within(4_000, 0, MOST_ENGAGED_SECONDS_PER_HOUR), 3_600);
        assert_eq!(within(-3, 0, MOST_ENGAGED_SECONDS_PER_HOUR), 0);
        assert_eq!(hour_of(3_600 * 1_000_000 - 1), 0);
        assert_eq!(hour_of(3_600 * 1_000_000), 1);
    }

    #[test]
    fn budgets_spent_in_memory_count_what_each_leads_hour_leaves() {
        let now = EPOCH + 400 * time::MICROS_PER_DAY;
        let gained = BTreeMap::from([(1, (18.0, 3_000)), (2, (0.0, 0))]);
        let mut budgets = HourBudgets::of(now, gained);
        // Lead 1 has 2 points and 600 seconds left; lead 3 is gone and gains nothing.
        assert_eq!(budgets.take_points(1, 5.0, 10.0), 2.0);
        assert_eq!(budgets.take_points(1, 1.0, 2.0), 0.0);
        assert_eq!(budgets.take_seconds(1, 500), 500);
        assert_eq!(budgets.take_seconds(1, 500), 100);
        assert_eq!(budgets.take_points(3, 1.0, 1.0), 0.0);
        assert_eq!(budgets.take_seconds(3, 5), 0);
        assert_eq!(budgets.take_seconds(2, 5), 5);
        let lead = &budgets.leads[&1];
        // The stored score grows by the share of the evidence that counted.
        assert_eq!((lead.points, lead.seconds, lead.stored), (20.0, 3_600, 4.0));
        assert!(lead.scored);
        let lead = &budgets.leads[&2];
        assert!(lead.changed && !lead.scored);
        assert!(!budgets.leads.contains_key(&3));
    }

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
