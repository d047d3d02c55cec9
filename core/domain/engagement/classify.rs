//! What each beacon of a batch is taken for ([`VisitClass`]), and what the batch adds up to:
//! pure (no database, no clock), so every rule is tested here. A view is `unconfirmed` until
//! a beacon of its page load brings the evidence of a person; then it, and everything its load
//! sent before, is a person's and counted.

use std::collections::HashMap;

use super::Recorded;
use super::automation::automation_reason;
use super::tally::Tally;
use super::visitors::{Batch, valid_view_id};
use crate::domain::beacon::{Beacon, BeaconKind, CONFIRM_SECONDS, MAX_SECONDS};
use crate::domain::beacon_budget::{Allowance, BeaconBudget};
use crate::domain::scanner_networks::ScannerNetworks;
use crate::domain::visit_class::VisitClass;
use crate::keys::PageLoads;
use crate::store::engagement::{NewEvent, PageIds};
use crate::time::Micros;

/// What classification consults besides the batch: all of it in memory, none of it storage.
pub(super) struct Judges<'j> {
    pub scanner_networks: &'j ScannerNetworks,
    /// Each address's, network's and view's allowance of beacons.
    pub budget: &'j BeaconBudget,
    /// Which page load ids lps served.
    pub page_loads: &'j PageLoads,
}

/// A beacon's class and why.
#[derive(Debug, Clone)]
struct Verdict {
    class: VisitClass,
    reason: String,
}

impl Verdict {
    fn new(class: VisitClass, reason: impl Into<String>) -> Self {
        Self {
            class,
            reason: reason.into(),
        }
    }
}

/// One page load's view, as this batch knows it.
pub(super) struct ViewState {
    class: VisitClass,
    page: (i64, i64),
    shown_at: Micros,
    /// Recorded by an earlier batch (its stored beacons are confirmed in the database).
    stored: bool,
    /// This batch's beacons of the view kept unconfirmed so far (indexes into `events`).
    waiting: Vec<usize>,
}

impl ViewState {
    /// A view an earlier batch recorded: its class, page (campaign, lead) and when it was shown.
    pub fn stored(class: VisitClass, page: (i64, i64), shown_at: Micros) -> Self {
        Self {
            class,
            page,
            shown_at,
            stored: true,
            waiting: Vec::new(),
        }
    }
}

/// A view an earlier batch recorded unconfirmed and this one confirms: its stored beacons are
/// counted by the transaction that confirms them (only if still unconfirmed there).
pub(super) struct Confirmed<'a> {
    pub view_id: String,
    pub reason: String,
    pub page: &'a PageIds,
}

/// What a batch comes to: the events to keep, what counts, and the outcome by class.
#[derive(Default)]
pub(super) struct Classified<'a> {
    pub events: Vec<NewEvent<'a>>,
    pub tally: Tally<'a>,
    pub confirmed: Vec<Confirmed<'a>>,
    pub recorded: Recorded,
}

/// What a beacon is by itself, before its view is looked at.
enum Alone {
    /// Nothing against it: the seconds its budget allows.
    Unremarkable { seconds: i64 },
    /// Automation's or a scanner network's.
    Judged(Verdict),
    /// Past its address's budget: dropped.
    Throttled,
}

/// Classifies a batch: each beacon for a known page gets a class and a reason (its view's, for
/// a beacon after the view), and what a person did is added up. `views` are the views earlier
/// batches recorded that this one's beacons belong to, by page load id.
pub(super) fn classify<'a>(
    batch: &'a Batch,
    mut views: HashMap<String, ViewState>,
    judges: &Judges<'_>,
) -> Classified<'a> {
    let mut out = Classified {
        events: Vec::with_capacity(batch.beacons.len()),
        ..Classified::default()
    };
    let each = batch
        .beacons
        .iter()
        .zip(&batch.pages)
        .zip(&batch.visitors)
        .zip(&batch.targets);
    for (((beacon, page), visitor), target) in each {
        // A beacon sent on a workspace's own domain is for that workspace's pages only.
        let Some(page) = page
            .as_deref()
            .filter(|page| beacon.workspace_id.is_none_or(|w| w == page.workspace_id))
        else {
            out.recorded.dropped += 1;
            continue;
        };
        let view_id = PageLoad::of(beacon, judges.page_loads);
        let (own, seconds) = match alone(beacon, page, visitor, judges) {
            Alone::Throttled => {
                out.recorded.throttled += 1;
                continue;
            }
            Alone::Judged(verdict) => (Some(verdict), clamped_seconds(beacon)),
            Alone::Unremarkable { seconds } => (None, seconds),
        };
        let (verdict, count_now) = if beacon.kind == BeaconKind::View {
            out.view(beacon, page, view_id, own, &mut views)
        } else {
            out.after_view(beacon, page, view_id, own, &mut views)
        };
        out.recorded.stored[verdict.class] += 1;
        out.events.push(NewEvent {
            workspace_id: page.workspace_id,
            campaign_id: page.campaign_id,
            lead_id: page.lead_id,
            kind: beacon.kind.as_str(),
            visitor,
            class: verdict.class.as_str(),
            reason: verdict.reason,
            // Only a load lps served is kept, and looked up by later batches: a made-up id
            // names nothing, and a stranger's ids would fill the index of loads.
            view_id: view_id.served(),
            seconds,
            target: target.as_deref(),
            created_at: beacon.occurred_at,
        });
        if count_now {
            let at = beacon.occurred_at;
            out.tally
                .count(page, beacon.kind, visitor, seconds, target.as_deref(), at);
        }
    }
    out
}

/// The page load a beacon says it belongs to.
#[derive(Clone, Copy)]
pub(super) enum PageLoad<'b> {
    /// No id, or not one a script could have sent.
    Missing,
    /// An id no edge of this deployment made for the beacon's page.
    NotServed,
    /// A load lps served of the beacon's page.
    Served(&'b str),
}

impl<'b> PageLoad<'b> {
    pub fn of(beacon: &'b Beacon, page_loads: &PageLoads) -> Self {
        match beacon.view_id.as_deref().filter(|id| valid_view_id(id)) {
            None => Self::Missing,
            Some(id) if page_loads.verify(id, &beacon.campaign_slug, &beacon.lead_slug) => {
                Self::Served(id)
            }
            Some(_) => Self::NotServed,
        }
    }

    pub fn served(self) -> Option<&'b str> {
        match self {
            Self::Served(id) => Some(id),
            _ => None,
        }
    }
}

/// Why a beacon of a load lps never served is automation's.
const NOT_SERVED: &str = "no page load lps served has this id: the page was never fetched";

/// A time beacon's seconds within what one beacon may add; none for other kinds.
fn clamped_seconds(beacon: &Beacon) -> i64 {
    match beacon.kind {
        BeaconKind::Time => beacon.seconds.clamp(0, MAX_SECONDS),
        _ => 0,
    }
}

/// What the beacon is by itself: automation, a scanner network, or over a budget.
fn alone(beacon: &Beacon, page: &PageIds, visitor: &str, judges: &Judges<'_>) -> Alone {
    if let Some(reason) = automation_reason(&beacon.user_agent, beacon.webdriver) {
        return Alone::Judged(Verdict::new(VisitClass::Automated, reason));
    }
    if let Some(range) = judges.scanner_networks.find(&beacon.ip_address) {
        return Alone::Judged(Verdict::new(
            VisitClass::ScannerNetwork,
            format!("from a scanner network ({range})"),
        ));
    }
    match judges.budget.take(
        &beacon.ip_address,
        (page.campaign_id, page.lead_id),
        visitor,
        beacon.kind,
        clamped_seconds(beacon),
        beacon.occurred_at,
    ) {
        Allowance::Count { seconds } => Alone::Unremarkable { seconds },
        Allowance::Automated(reason) => Alone::Judged(Verdict::new(VisitClass::Automated, reason)),
        Allowance::Throttled => Alone::Throttled,
    }
}

impl<'a> Classified<'a> {
    /// A view: automation's when its page load id is missing, not one lps served, or seen
    /// before; else what the beacon is by itself, or a person's with evidence, or unconfirmed.
    /// Returns the verdict and whether it counts now.
    fn view(
        &mut self,
        beacon: &Beacon,
        page: &'a PageIds,
        load: PageLoad<'_>,
        own: Option<Verdict>,
        views: &mut HashMap<String, ViewState>,
    ) -> (Verdict, bool) {
        let at = beacon.occurred_at;
        let verdict = match load {
            PageLoad::Missing => Verdict::new(
                VisitClass::Automated,
                "sent without a page load id: lps never served this view's page",
            ),
            PageLoad::NotServed => Verdict::new(VisitClass::Automated, NOT_SERVED),
            PageLoad::Served(id) if views.contains_key(id) => {
                Verdict::new(VisitClass::Automated, "a second view in one page load")
            }
            PageLoad::Served(id) => {
                let verdict = own.unwrap_or_else(|| match evidence(beacon, at) {
                    Some(evidence) => Verdict::new(VisitClass::Person, evidence),
                    None => Verdict::new(
                        VisitClass::Unconfirmed,
                        "shown; no interaction or 3 s visible yet",
                    ),
                });
                // An unconfirmed view waits (as the first of its load's beacons) for the
                // evidence that would count it.
                let waiting = if verdict.class == VisitClass::Unconfirmed {
                    vec![self.events.len()]
                } else {
                    Vec::new()
                };
                let view = ViewState {
                    class: verdict.class,
                    page: (page.campaign_id, page.lead_id),
                    shown_at: at,
                    stored: false,
                    waiting,
                };
                views.insert(id.to_owned(), view);
                verdict
            }
        };
        self.tally.view_class(page.campaign_id, verdict.class, 1);
        let counted = verdict.class.counted();
        (verdict, counted)
    }

    /// A beacon after its view (a click, a scroll, time, a confirmation): what it is by itself,
    /// else its view's class. The evidence of a person confirms an unconfirmed view, which then
    /// counts with what its load sent before. Returns the verdict and whether it counts now.
    fn after_view(
        &mut self,
        beacon: &Beacon,
        page: &'a PageIds,
        load: PageLoad<'_>,
        own: Option<Verdict>,
        views: &mut HashMap<String, ViewState>,
    ) -> (Verdict, bool) {
        let view_id = load.served();
        let view = view_id
            .and_then(|id| views.get_mut(id))
            .filter(|view| view.page == (page.campaign_id, page.lead_id));
        let part_of_a_person_s = || Verdict::new(VisitClass::Person, "part of a person's view");
        match (own, view) {
            (Some(own), _) => (own, false),
            (None, None) if matches!(load, PageLoad::NotServed) => {
                (Verdict::new(VisitClass::Automated, NOT_SERVED), false)
            }
            (None, None) => (
                Verdict::new(
                    VisitClass::Unconfirmed,
                    "no shown view of this page load was recorded",
                ),
                false,
            ),
            (None, Some(view)) => match view.class {
                VisitClass::Person => (part_of_a_person_s(), true),
                VisitClass::Unconfirmed => match evidence(beacon, view.shown_at) {
                    Some(evidence) => {
                        self.confirm(view, view_id.unwrap_or_default(), page, &evidence);
                        (part_of_a_person_s(), true)
                    }
                    None => {
                        view.waiting.push(self.events.len());
                        let why = "its view is not confirmed yet";
                        (Verdict::new(VisitClass::Unconfirmed, why), false)
                    }
                },
                class @ (VisitClass::Automated | VisitClass::ScannerNetwork) => {
                    (Verdict::new(class, "part of a view not counted"), false)
                }
            },
        }
    }

    /// An unconfirmed view is a person's: it and what its load sent before in this batch are
    /// counted now; what an earlier batch stored of it is counted when stored.
    fn confirm(&mut self, view: &mut ViewState, view_id: &str, page: &'a PageIds, evidence: &str) {
        view.class = VisitClass::Person;
        self.tally
            .view_class(page.campaign_id, VisitClass::Unconfirmed, -1);
        self.tally
            .view_class(page.campaign_id, VisitClass::Person, 1);
        if view.stored {
            self.confirmed.push(Confirmed {
                view_id: view_id.to_owned(),
                reason: format!("confirmed by {evidence}"),
                page,
            });
        }
        for index in std::mem::take(&mut view.waiting) {
            self.recorded.stored[VisitClass::Unconfirmed] -= 1;
            self.recorded.stored[VisitClass::Person] += 1;
            let event = &mut self.events[index];
            event.class = VisitClass::Person.as_str();
            event.reason = if event.kind == "view" {
                format!("confirmed by {evidence}")
            } else {
                "part of a person's view".to_owned()
            };
            let kind = BeaconKind::from_stored(event.kind).unwrap_or(BeaconKind::Confirm);
            self.tally.count(
                page,
                kind,
                event.visitor,
                event.seconds,
                event.target,
                event.created_at,
            );
        }
    }
}

/// The evidence of a person a beacon of a view shown at `shown_at` brings, if any: an
/// interaction the script saw, a click, or [`CONFIRM_SECONDS`] visible that the time since
/// the view bears out (the script's count alone is not taken on trust).
fn evidence(beacon: &Beacon, shown_at: Micros) -> Option<String> {
    if beacon.kind == BeaconKind::Click {
        return Some("a click".to_owned());
    }
    let interaction = beacon.interaction.trim();
    if !interaction.is_empty() {
        let name: String = interaction
            .chars()
            .take(16)
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        return Some(format!("an interaction ({name})"));
    }
    let visible = match beacon.kind {
        BeaconKind::Time => beacon.seconds.max(beacon.visible_seconds),
        _ => beacon.visible_seconds,
    };
    // A second of slack for the script's and the server's clocks starting apart.
    let elapsed = beacon.occurred_at - shown_at;
    (visible >= CONFIRM_SECONDS && elapsed >= (CONFIRM_SECONDS - 1) * 1_000_000)
        .then(|| format!("visible for {visible} s"))
}

#[cfg(test)]
mod tests;
