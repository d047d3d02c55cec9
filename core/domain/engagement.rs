//! Engagement on lead pages: recording what pages' tracking scripts report (deciding what is a
//! bot and who is the same visitor), and reading it back as campaign analytics and a lead's
//! engagement.
//!
//! What counts: a beacon from the tracking script of a live page, sent by a browser that does
//! not identify as automation (a user agent on the isbot list or with `HeadlessChrome`, or
//! `navigator.webdriver` true). A plain GET of a page never counts: only the script reports.

use std::collections::{BTreeMap, HashMap};
use std::sync::{LazyLock, Mutex};

use sha2::{Digest, Sha256};

use crate::auth::Principal;
pub use crate::domain::beacon::{Beacon, BeaconKind, CONFIRM_SECONDS, MAX_SECONDS};
use crate::domain::beacon_budget::Allowance;
use crate::domain::callback_events::{self, CallbackEvent, PageViewed, Receiver};
use crate::domain::engagement_feed::FeedEvent;
use crate::domain::lead;
use crate::domain::score;
pub use crate::domain::visit_class::{VisitClass, VisitCounts};
use crate::store::engagement::{
    self, CampaignSums, LeadSums, NewEvent, PageChange, PageDelta, PageIds, VisitorSeen,
};
use crate::store::{WorkspaceTable, form_submissions, ids_in_workspace, leads};
use crate::time::{self, Micros};
use crate::{App, Error, Result};

/// Characters kept of a click's target.
const MAX_TARGET_CHARS: usize = 300;

/// What became of a batch of beacons.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Kept, by class (a person's counted; the others kept, not counted).
    pub stored: VisitCounts,
    /// For no known page: dropped.
    pub dropped: i64,
    /// Past an address's beacon budget (`beacon_budget`): dropped, never counted.
    pub throttled: i64,
}

/// What recording keeps between batches: pages by address (a page's ids never change) and the
/// day's visitor-hash salt.
#[derive(Default)]
pub struct Recorder {
    pages: Mutex<HashMap<(String, String), PageIds>>,
    salt: Mutex<Option<(String, String)>>,
    budget: super::beacon_budget::BeaconBudget,
}

/// Pages remembered by address; beyond this the memory starts over.
const MAX_REMEMBERED_PAGES: usize = 200_000;

static BOTS: LazyLock<isbot::Bots> = LazyLock::new(isbot::Bots::default);

/// A cookie visitor id as the script makes it (hex, 16 to 64 characters); anything else is
/// treated as no cookie.
fn valid_visitor_id(id: &str) -> bool {
    (16..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Who a beacon's visitor is: their cookie id, else a hash of address and browser under the
/// day's salt (so a visitor without cookies is one visitor per day, and after the salt is gone
/// the hash leads back to no one).
fn visitor_key(beacon: &Beacon, salt: &str) -> String {
    match beacon
        .visitor_id
        .as_deref()
        .filter(|id| valid_visitor_id(id))
    {
        Some(id) => format!("c:{id}"),
        None => {
            let digest = Sha256::digest(
                format!("{salt}\n{}\n{}", beacon.ip_address, beacon.user_agent).as_bytes(),
            );
            format!("h:{}", &hex::encode(digest)[..32])
        }
    }
}

/// A view's class and why, as recording decided it.
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

/// Why a beacon is automation's, if it is: `navigator.webdriver`, a headless browser, a bot's
/// or a mail scanner's user agent, or none at all.
pub fn automation_reason(user_agent: &str, webdriver: bool) -> Option<String> {
    if webdriver {
        return Some("navigator.webdriver is set (browser automation)".to_owned());
    }
    if user_agent.trim().is_empty() {
        return Some("no user agent".to_owned());
    }
    if user_agent.contains("HeadlessChrome") {
        return Some("headless browser (HeadlessChrome)".to_owned());
    }
    if let Some(name) = SCANNER_SIGNATURES
        .iter()
        .find(|name| user_agent.contains(**name))
    {
        return Some(format!("mail scanner's user agent ({name})"));
    }
    BOTS.is_bot(user_agent)
        .then(|| "bot's user agent (isbot list)".to_owned())
}

/// Words in the user agents of link scanners that present themselves (most run an ordinary
/// browser's user agent: those are caught by their networks or their lack of evidence).
const SCANNER_SIGNATURES: &[&str] = &[
    "Barracuda",
    "Mimecast",
    "Proofpoint",
    "urldefense",
    "SafeLinks",
    "Trend Micro",
    "Sophos",
    "Forcepoint",
    "ZScaler",
    "Cisco-Secure",
];

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

/// A page load id as the script makes it (hex, 16 to 64 characters).
fn valid_view_id(id: &str) -> bool {
    (16..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// One page load's view, as this batch knows it.
struct ViewState {
    class: VisitClass,
    page: (i64, i64),
    shown_at: Micros,
    /// Recorded by an earlier batch (its stored beacons are confirmed in the database).
    stored: bool,
    /// This batch's beacons of the view kept unconfirmed so far (indexes into `events`).
    waiting: Vec<usize>,
}

/// What one batch adds up: page sums, visitors, the feed and scores.
#[derive(Default)]
struct Tally<'a> {
    deltas: BTreeMap<(i64, i64), (&'a PageIds, PageDelta)>,
    visitors: BTreeMap<(i64, String), (bool, Micros)>,
    feed: Vec<FeedEvent>,
    scores: score::Evidence,
    /// Views added per campaign, by class (possibly negative: a view confirmed moves).
    classes: BTreeMap<i64, VisitCounts>,
}

impl<'a> Tally<'a> {
    /// Counts one beacon of a person's view.
    fn count(
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

    fn view_class(&mut self, campaign_id: i64, class: VisitClass, views: i64) {
        self.classes.entry(campaign_id).or_default()[class] += views;
    }
}

/// Records each lead's latest counted activity among `events` (what people did, as
/// `WatchEngagement` announces it): the leads list shows, sorts and filters by it.
pub async fn note_activity(tx: &mut sqlx::AnyConnection, events: &[FeedEvent]) -> Result<()> {
    let mut latest: BTreeMap<i64, Micros> = BTreeMap::new();
    for event in events {
        let at = latest.entry(event.lead_id).or_insert(event.occurred_at);
        *at = (*at).max(event.occurred_at);
    }
    let latest: Vec<(i64, Micros)> = latest.into_iter().collect();
    crate::store::lead_lists::note_activity(tx, &latest).await?;
    Ok(())
}

/// Stores a batch of beacons in one transaction, each with its class and reason, and adds what
/// counts (a person's views and their page loads' other beacons) to their pages' and
/// campaigns' sums and their leads' scores. A view is recorded `unconfirmed` until a beacon of
/// its page load brings the evidence of a person; then it and everything its load sent before
/// are counted. The first counted view of a page queues a `lead.page_viewed` callback when the
/// lead has a callback address; counted events go to `WatchEngagement`.
pub async fn record(app: &App, beacons: Vec<Beacon>) -> Result<Recorded> {
    let mut recorded = Recorded::default();
    if beacons.is_empty() {
        return Ok(recorded);
    }
    let pages = resolve_pages(app, &beacons).await?;
    let salt = day_salt(app).await?;
    let mut views = known_views(app, &beacons).await?;

    let anonymous = |b: &Beacon| b.gpc && app.config.respect_gpc;
    let visitor_keys: Vec<String> = beacons
        .iter()
        .map(|b| match (anonymous(b), b.view_id.as_deref()) {
            // Global Privacy Control: each page load is its own anonymous visitor.
            (true, Some(id)) if valid_view_id(id) => format!("a:{id}"),
            (true, _) => format!("a:{}", crate::random::token(16)),
            (false, _) => visitor_key(b, &salt),
        })
        .collect();
    let targets: Vec<Option<String>> = beacons
        .iter()
        .map(|b| {
            let target = b.target.as_deref()?;
            Some(target.chars().take(MAX_TARGET_CHARS).collect())
        })
        .collect();
    let mut events: Vec<NewEvent> = Vec::with_capacity(beacons.len());
    let mut tally = Tally::default();
    // Views recorded before this batch and confirmed by it: (view id, the evidence).
    let mut confirmed_stored: Vec<(String, String, &PageIds)> = Vec::new();

    for ((beacon, visitor), target) in beacons.iter().zip(&visitor_keys).zip(&targets) {
        let Some(page) = pages.get(&(beacon.campaign_slug.clone(), beacon.lead_slug.clone()))
        else {
            recorded.dropped += 1;
            continue;
        };
        let view_id = beacon.view_id.as_deref().filter(|id| valid_view_id(id));
        let mut seconds = match beacon.kind {
            BeaconKind::Time => beacon.seconds.clamp(0, MAX_SECONDS),
            _ => 0,
        };
        // What the beacon is by itself: automation, a scanner network, or over a budget.
        let mut verdict = if let Some(reason) =
            automation_reason(&beacon.user_agent, beacon.webdriver)
        {
            Some(Verdict::new(VisitClass::Automated, reason))
        } else if let Some(range) = app.scanner_networks.find(&beacon.ip_address) {
            Some(Verdict::new(
                VisitClass::ScannerNetwork,
                format!("from a scanner network ({range})"),
            ))
        } else {
            match app.recorder.budget.take(
                &beacon.ip_address,
                (page.campaign_id, page.lead_id),
                visitor,
                beacon.kind,
                seconds,
                beacon.occurred_at,
            ) {
                Allowance::Count { seconds: allowed } => {
                    seconds = allowed;
                    None
                }
                Allowance::Automated(reason) => Some(Verdict::new(VisitClass::Automated, reason)),
                Allowance::Throttled => {
                    recorded.throttled += 1;
                    continue;
                }
            }
        };
        let page_key = (page.campaign_id, page.lead_id);
        let at = beacon.occurred_at;
        let mut count_now = false;
        let class = if beacon.kind == BeaconKind::View {
            let verdict = match view_id {
                None => Verdict::new(
                    VisitClass::Automated,
                    "sent without a page load id: lps never served this view's page",
                ),
                Some(id)
                    if !app
                        .page_loads
                        .verify(id, &beacon.campaign_slug, &beacon.lead_slug) =>
                {
                    Verdict::new(
                        VisitClass::Automated,
                        "no page load lps served has this id: the page was never fetched",
                    )
                }
                Some(id) if views.contains_key(id) => {
                    Verdict::new(VisitClass::Automated, "a second view in one page load")
                }
                Some(id) => {
                    let verdict = verdict
                        .take()
                        .unwrap_or_else(|| match evidence(beacon, at) {
                            Some(evidence) => Verdict::new(VisitClass::Person, evidence),
                            None => Verdict::new(
                                VisitClass::Unconfirmed,
                                "shown; no interaction or 3 s visible yet",
                            ),
                        });
                    // An unconfirmed view waits (as the first of its load's beacons) for the
                    // evidence that would count it.
                    let waiting = if verdict.class == VisitClass::Unconfirmed {
                        vec![events.len()]
                    } else {
                        Vec::new()
                    };
                    views.insert(
                        id.to_owned(),
                        ViewState {
                            class: verdict.class,
                            page: page_key,
                            shown_at: at,
                            stored: false,
                            waiting,
                        },
                    );
                    verdict
                }
            };
            tally.view_class(page.campaign_id, verdict.class, 1);
            count_now = verdict.class == VisitClass::Person;
            push_event(
                &mut events,
                page,
                beacon,
                visitor,
                verdict,
                view_id,
                seconds,
                target,
            )
        } else {
            let view = view_id
                .and_then(|id| views.get_mut(id))
                .filter(|view| view.page == page_key);
            let verdict = match (verdict.take(), view) {
                (Some(own), _) => own,
                (None, None) => Verdict::new(
                    VisitClass::Unconfirmed,
                    "no shown view of this page load was recorded",
                ),
                (None, Some(view)) => match view.class {
                    VisitClass::Person => {
                        count_now = true;
                        Verdict::new(VisitClass::Person, "part of a person's view")
                    }
                    VisitClass::Unconfirmed => match evidence(beacon, view.shown_at) {
                        Some(evidence) => {
                            // The view is a person's: count it and what its load sent before.
                            view.class = VisitClass::Person;
                            count_now = true;
                            tally.view_class(page.campaign_id, VisitClass::Unconfirmed, -1);
                            tally.view_class(page.campaign_id, VisitClass::Person, 1);
                            if view.stored {
                                confirmed_stored.push((
                                    view_id.unwrap_or_default().to_owned(),
                                    format!("confirmed by {evidence}"),
                                    page,
                                ));
                            }
                            for index in std::mem::take(&mut view.waiting) {
                                recorded.stored[VisitClass::Unconfirmed] -= 1;
                                recorded.stored[VisitClass::Person] += 1;
                                let event = &mut events[index];
                                event.class = VisitClass::Person.as_str();
                                event.reason = if event.kind == "view" {
                                    format!("confirmed by {evidence}")
                                } else {
                                    "part of a person's view".to_owned()
                                };
                                let kind = BeaconKind::from_stored(event.kind)
                                    .unwrap_or(BeaconKind::Confirm);
                                tally.count(
                                    page,
                                    kind,
                                    event.visitor,
                                    event.seconds,
                                    event.target,
                                    event.created_at,
                                );
                            }
                            Verdict::new(VisitClass::Person, "part of a person's view")
                        }
                        None => {
                            view.waiting.push(events.len());
                            Verdict::new(VisitClass::Unconfirmed, "its view is not confirmed yet")
                        }
                    },
                    class => Verdict::new(class, "part of a view not counted"),
                },
            };
            push_event(
                &mut events,
                page,
                beacon,
                visitor,
                verdict,
                view_id,
                seconds,
                target,
            )
        };
        if count_now {
            tally.count(page, beacon.kind, visitor, seconds, target.as_deref(), at);
        }
        recorded.stored[class] += 1;
    }
    let mut queued_callbacks = false;
    let mut tx = app.db.begin_write().await?;
    engagement::insert_events(&mut tx, &events).await?;
    // Views recorded unconfirmed before and confirmed now: only what this transaction turns
    // from unconfirmed to person is counted (another process may have done it first).
    for (view_id, reason, page) in &confirmed_stored {
        for event in engagement::confirm_view(&mut tx, view_id, reason).await? {
            if let Some(kind) = BeaconKind::from_stored(&event.kind) {
                tally.count(
                    page,
                    kind,
                    &event.visitor,
                    event.seconds,
                    event.target.as_deref(),
                    event.created_at,
                );
            }
        }
    }
    cap_engaged_time(&mut tx, &mut tally.deltas).await?;
    let changes: Vec<PageChange> = tally
        .deltas
        .values()
        .map(|(page, delta)| PageChange {
            workspace_id: page.workspace_id,
            campaign_id: page.campaign_id,
            lead_id: page.lead_id,
            delta,
        })
        .collect();
    for (campaign_id, lead_id, views_after) in engagement::add_to_pages(&mut tx, &changes).await? {
        let Some((page, delta)) = tally.deltas.get(&(campaign_id, lead_id)) else {
            continue;
        };
        if delta.views > 0 && views_after == delta.views {
            // The page's first counted views are these: announce them.
            queued_callbacks |= first_view(app, &mut tx, page, delta).await?;
        } else if delta.views > 0 {
            // A person came back.
            let at = delta.last_viewed_at.unwrap_or_else(time::now);
            tally.scores.add(
                page.workspace_id,
                page.campaign_id,
                page.lead_id,
                score::RETURN_VISIT,
                at,
            );
        }
    }
    let seen: Vec<VisitorSeen> = tally
        .visitors
        .iter()
        .map(|((campaign_id, visitor), (clicked, at))| VisitorSeen {
            campaign_id: *campaign_id,
            visitor,
            clicked: *clicked,
            seen_at: *at,
        })
        .collect();
    engagement::add_visitors(&mut tx, &seen).await?;
    let classes: Vec<(i64, &'static str, i64)> = tally
        .classes
        .iter()
        .flat_map(|(campaign, counts)| {
            counts
                .iter()
                .filter(|(_, views)| *views != 0)
                .map(|(class, views)| (*campaign, class.as_str(), views))
        })
        .collect();
    engagement::add_view_classes(&mut tx, &classes).await?;
    queued_callbacks |= std::mem::take(&mut tally.scores)
        .apply(app, &mut tx)
        .await?;
    note_activity(&mut tx, &tally.feed).await?;
    app.feed
        .announce(&mut tx, app.db.dialect(), &tally.feed)
        .await?;
    tx.commit().await?;
    app.feed.publish_local(tally.feed);
    if queued_callbacks {
        app.callbacks_due.notify_one();
    }
    Ok(recorded)
}

/// Each lead's engaged seconds in this batch, within what its hour still allows
/// (`score::MOST_ENGAGED_SECONDS_PER_HOUR`, from every visitor and page together): time past it
/// is kept in the events but not added to the pages' sums.
async fn cap_engaged_time(
    tx: &mut sqlx::AnyConnection,
    deltas: &mut BTreeMap<(i64, i64), (&PageIds, PageDelta)>,
) -> Result<()> {
    let now = time::now();
    let mut wanted: BTreeMap<i64, i64> = BTreeMap::new();
    for ((_, lead_id), (_, delta)) in deltas.iter() {
        if delta.engaged_seconds > 0 {
            *wanted.entry(*lead_id).or_default() += delta.engaged_seconds;
        }
    }
    for (lead_id, wanted) in wanted {
        let mut left = score::take_engaged_seconds(tx, lead_id, wanted, now).await?;
        for (_, delta) in deltas
            .iter_mut()
            .filter(|((_, lead), _)| *lead == lead_id)
            .map(|(_, entry)| entry)
        {
            let counted = delta.engaged_seconds.min(left);
            delta.engaged_seconds = counted;
            left -= counted;
        }
    }
    Ok(())
}

/// Keeps one beacon, with its verdict; returns its class.
#[allow(clippy::too_many_arguments)]
fn push_event<'a>(
    events: &mut Vec<NewEvent<'a>>,
    page: &PageIds,
    beacon: &'a Beacon,
    visitor: &'a str,
    verdict: Verdict,
    view_id: Option<&'a str>,
    seconds: i64,
    target: &'a Option<String>,
) -> VisitClass {
    let class = verdict.class;
    events.push(NewEvent {
        workspace_id: page.workspace_id,
        campaign_id: page.campaign_id,
        lead_id: page.lead_id,
        kind: beacon.kind.as_str(),
        visitor,
        class: verdict.class.as_str(),
        reason: verdict.reason,
        view_id,
        seconds,
        target: target.as_deref(),
        created_at: beacon.occurred_at,
    });
    class
}

/// The views recorded before that this batch's beacons belong to, by page load id.
async fn known_views(app: &App, beacons: &[Beacon]) -> Result<HashMap<String, ViewState>> {
    let mut ids: Vec<&str> = beacons
        .iter()
        .filter_map(|b| b.view_id.as_deref())
        .filter(|id| valid_view_id(id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut views = HashMap::new();
    for chunk in ids.chunks(500) {
        for view in engagement::views_by_id(app.db.pool(), chunk).await? {
            views.insert(
                view.view_id,
                ViewState {
                    class: VisitClass::from_stored(&view.class)?,
                    page: (view.campaign_id, view.lead_id),
                    shown_at: view.created_at,
                    stored: true,
                    waiting: Vec::new(),
                },
            );
        }
    }
    Ok(views)
}

/// Queues `lead.page_viewed` for a page's first counted view, when the lead has a callback
/// address. Returns whether one was queued.
async fn first_view(
    app: &App,
    tx: &mut sqlx::AnyConnection,
    page: &PageIds,
    delta: &PageDelta,
) -> Result<bool> {
    let Some(url) = leads::callback_url(&mut *tx, page.lead_id).await? else {
        return Ok(false);
    };
    let viewed_at = delta.first_viewed_at.unwrap_or_else(time::now);
    let event = CallbackEvent::PageViewed(PageViewed {
        lead_id: page.lead_id,
        campaign_id: page.campaign_id,
        page_url: lead::page_url(&app.config.public_url, &page.campaign_slug, &page.lead_slug),
        viewed_at: time::iso8601(&time::to_proto(viewed_at)),
    });
    let to = Receiver {
        workspace_id: page.workspace_id,
        url: &url,
        job_id: None,
    };
    callback_events::enqueue(tx, &to, [event], time::now()).await?;
    Ok(true)
}

/// The pages the beacons are for, by (campaign slug, lead slug): remembered ones from memory,
/// the rest in one query.
async fn resolve_pages(
    app: &App,
    beacons: &[Beacon],
) -> Result<HashMap<(String, String), PageIds>> {
    let mut found = HashMap::new();
    let mut missing: Vec<&str> = Vec::new();
    {
        let remembered = app.recorder.pages.lock().unwrap_or_else(|p| p.into_inner());
        for beacon in beacons {
            let key = (beacon.campaign_slug.clone(), beacon.lead_slug.clone());
            if found.contains_key(&key) {
                continue;
            }
            match remembered.get(&key) {
                Some(page) => {
                    found.insert(key, page.clone());
                }
                None => missing.push(&beacon.lead_slug),
            }
        }
    }
    if missing.is_empty() {
        return Ok(found);
    }
    missing.sort_unstable();
    missing.dedup();
    let mut rows = Vec::new();
    for chunk in missing.chunks(200) {
        rows.extend(engagement::pages_of_leads(app.db.pool(), chunk).await?);
    }
    let mut remembered = app.recorder.pages.lock().unwrap_or_else(|p| p.into_inner());
    if remembered.len() + rows.len() > MAX_REMEMBERED_PAGES {
        remembered.clear();
    }
    for page in rows {
        let key = (page.campaign_slug.clone(), page.lead_slug.clone());
        remembered.insert(key.clone(), page.clone());
        found.insert(key, page);
    }
    Ok(found)
}

/// Today's (UTC) visitor-hash salt, shared by every process through the database.
async fn day_salt(app: &App) -> Result<String> {
    let today = chrono::Utc::now().date_naive();
    let day = today.format("%Y-%m-%d").to_string();
    if let Some((cached_day, salt)) = app
        .recorder
        .salt
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        && *cached_day == day
    {
        return Ok(salt.clone());
    }
    let yesterday = (today - chrono::Days::new(1))
        .format("%Y-%m-%d")
        .to_string();
    let fresh = crate::random::token(32);
    let mut tx = app.db.begin_write().await?;
    let salt = engagement::day_salt(&mut tx, &day, &fresh, &yesterday).await?;
    tx.commit().await?;
    *app.recorder.salt.lock().unwrap_or_else(|p| p.into_inner()) = Some((day, salt.clone()));
    Ok(salt)
}

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
            engagement::campaign_sums(app.db.pool(), workspace.id, chunk)
                .await?
                .into_iter()
                .map(CampaignAnalytics::from),
        );
    }
    let ids: Vec<i64> = entries.iter().map(|e| e.campaign_id).collect();
    for chunk in ids.chunks(500) {
        for (campaign_id, class, views) in engagement::filtered_visits(app.db.pool(), chunk).await?
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
/// 1970-01-01 in the time zone `offset_minutes` east of UTC; the last 30 days up to today
/// when unset), days with nothing as zeros. A range longer than [`MAX_DAYS`] keeps its last
/// days; one that ends before it starts has none.
pub async fn daily_analytics(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
    (from, to): (Option<i64>, Option<i64>),
    offset_minutes: i64,
) -> Result<Vec<engagement::DaySums>> {
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
    let offset = offset_minutes * 60_000_000;
    let to = to.unwrap_or_else(|| (time::now() + offset).div_euclid(time::MICROS_PER_DAY));
    let from = from
        .unwrap_or(to - (DEFAULT_DAYS - 1))
        .max(to - (MAX_DAYS - 1));
    if from > to {
        return Ok(Vec::new());
    }
    let sums = engagement::daily_sums(
        &app.db,
        campaign_id,
        offset,
        from * time::MICROS_PER_DAY - offset,
        (to + 1) * time::MICROS_PER_DAY - offset,
    )
    .await?;
    Ok((from..=to)
        .map(|day| {
            sums.iter()
                .find(|sums| sums.day == day)
                .cloned()
                .unwrap_or(engagement::DaySums {
                    day,
                    ..Default::default()
                })
        })
        .collect())
}

/// One entry of a lead's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    /// `page_viewed`, `time_on_page`, `scroll_100_percent`, `button_clicked`,
    /// `form_submitted`.
    pub event: &'static str,
    pub occurred_at: Micros,
    pub campaign_id: i64,
    pub campaign_name: String,
    pub seconds: i64,
    pub target: Option<String>,
    pub form_id: Option<String>,
    /// A form's every answered field, its email among them.
    pub fields: BTreeMap<String, String>,
    /// What the visit was taken for (`person`, `unconfirmed`, `automated`, `scanner_network`);
    /// only views are listed when not a person's.
    pub class: VisitClass,
    /// Why.
    pub reason: Option<String>,
}

/// What a visitor did on a lead's pages, newest first: counted beacons, every view whatever
/// its class (with the reason), and form submissions,
/// the `limit` before `before`, and where the next page starts when there is more.
pub async fn lead_activity(
    app: &App,
    principal: &Principal,
    lead_id: i64,
    before: Option<Micros>,
    limit: i64,
) -> Result<(Vec<Activity>, Option<Micros>)> {
    let not_found = || Error::NotFound("Lead not found");
    let row = leads::get(app.db.pool(), lead_id)
        .await?
        .ok_or_else(not_found)?;
    principal
        .reach(&app.db, row.lead.workspace_id)
        .await
        .map_err(|err| err.unreachable_as(not_found()))?;
    // One more than asked from each: whether there is more is known without another query.
    let events = engagement::lead_events(app.db.pool(), lead_id, before, limit + 1).await?;
    let forms = form_submissions::of_lead(app.db.pool(), lead_id, before, limit + 1).await?;
    let mut all: Vec<Activity> = events
        .into_iter()
        .filter_map(|event| {
            let kind = BeaconKind::from_stored(&event.kind)?;
            Some(VisitClass::from_stored(&event.class).map(|class| Activity {
                event: kind.event(),
                occurred_at: event.created_at,
                campaign_id: event.campaign_id,
                campaign_name: event.campaign_name,
                seconds: event.seconds,
                target: event.target,
                form_id: None,
                fields: BTreeMap::new(),
                class,
                reason: event.reason,
            }))
        })
        .chain(forms.into_iter().map(|form| {
            let mut fields: BTreeMap<String, String> =
                serde_json::from_str(&form.fields).unwrap_or_default();
            if let Some(email) = form.email {
                fields.insert("email".to_owned(), email);
            }
            Ok(Activity {
                event: "form_submitted",
                occurred_at: form.created_at,
                campaign_id: form.campaign_id,
                campaign_name: form.campaign_name,
                seconds: 0,
                target: None,
                form_id: Some(form.form_id),
                fields,
                class: VisitClass::from_stored(&form.class)?,
                reason: Some(
                    form.reason
                        .unwrap_or_else(|| "a form was submitted".to_owned()),
                ),
            })
        }))
        .collect::<Result<_>>()?;
    all.sort_by_key(|entry| std::cmp::Reverse(entry.occurred_at));
    let more = all.len() > limit as usize;
    all.truncate(limit as usize);
    let next_before = if more {
        all.last().map(|entry| entry.occurred_at)
    } else {
        None
    };
    Ok((all, next_before))
}

/// Leads people engaged with in the last `days` days in a workspace, most recently active first.
pub async fn engaged_leads(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    days: i64,
    limit: i64,
) -> Result<Vec<engagement::EngagedRow>> {
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let since = time::now() - days * time::MICROS_PER_DAY;
    Ok(engagement::engaged(app.db.pool(), workspace.id, since, limit).await?)
}

/// A lead's counted engagement over all its pages.
pub async fn of_lead(app: &App, lead_id: i64) -> Result<LeadSums> {
    Ok(engagement::lead_sums(app.db.pool(), lead_id).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automation_is_recognised_and_browsers_are_not() {
        let desktop = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                       Chrome/126.0.0.0 Safari/537.36";
        let is_automation = |ua: &str, webdriver| automation_reason(ua, webdriver).is_some();
        assert!(!is_automation(desktop, false));
        assert!(is_automation(desktop, true), "navigator.webdriver");
        for bot in [
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
             HeadlessChrome/126.0.0.0 Safari/537.36",
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
            "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
            "Twitterbot/1.0",
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "curl/8.5.0",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "",
        ] {
            assert!(is_automation(bot, false), "{bot}");
        }
    }

    #[test]
    fn percentages_have_two_decimals_and_nothing_over_nothing_is_zero() {
        assert_eq!(percentage(1, 3), 33.33);
        assert_eq!(percentage(2, 3), 66.67);
        assert_eq!(percentage(3, 3), 100.0);
        assert_eq!(percentage(0, 0), 0.0);
        assert_eq!(percentage(5, 0), 0.0);
    }

    #[test]
    fn a_visitor_is_their_cookie_else_a_salted_hash_of_address_and_browser() {
        let mut beacon = Beacon {
            campaign_slug: "c".into(),
            lead_slug: "l".into(),
            kind: BeaconKind::View,
            visitor_id: Some("0123456789abcdef0123456789abcdef".into()),
            ip_address: "203.0.113.9".into(),
            user_agent: "Firefox".into(),
            webdriver: false,
            seconds: 0,
            target: None,
            occurred_at: 0,
            view_id: None,
            interaction: String::new(),
            visible_seconds: 0,
            gpc: false,
        };
        assert_eq!(
            visitor_key(&beacon, "s1"),
            "c:0123456789abcdef0123456789abcdef"
        );
        beacon.visitor_id = Some("x; drop".into());
        let hashed = visitor_key(&beacon, "s1");
        assert!(hashed.starts_with("h:") && hashed.len() == 34, "{hashed}");
        assert_eq!(hashed, visitor_key(&beacon, "s1"), "stable within a day");
        assert_ne!(
            hashed,
            visitor_key(&beacon, "s2"),
            "another day, another hash"
        );
    }
}
