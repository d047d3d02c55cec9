//! Recording a batch of beacons: what the batch needs from storage (its pages, the day's salt,
//! the views it continues), classification (`classify.rs`, pure), then one transaction that
//! keeps every beacon and adds what counts.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::classify::{Classified, Confirmed, Judges, PageLoad, ViewState, classify};
use super::known_pages::KnownPages;
use super::tally::Tally;
use super::visitors::Batch;
use super::{MAX_REMEMBERED_PAGES, Recorded};
use crate::domain::announcements::{self, Receiver};
use crate::domain::beacon::{Beacon, BeaconKind};
use crate::domain::callback_events::{CallbackEvent, PageViewed};
use crate::domain::engagement_feed::FeedEvent;
use crate::domain::score;
use crate::domain::visit_class::VisitClass;
use crate::store::engagement::{self, NewEvent, PageChange, PageDelta, PageIds, VisitorSeen};
use crate::time::{self, Micros};
use crate::{App, Result};

/// Stores a batch of beacons in one transaction, each with its class and reason, and adds what
/// counts (a person's views and their page loads' other beacons) to their pages' and
/// campaigns' sums and their leads' scores. A view is recorded `unconfirmed` until a beacon of
/// its page load brings the evidence of a person; then it and everything its load sent before
/// are counted. The first counted view of a page queues a `lead.page_viewed` callback when the
/// lead has a callback address; counted events go to `WatchEngagement`.
///
/// The batch is recorded on a thread of its own ([`RECORDING`]).
pub async fn record(app: &App, beacons: Vec<Beacon>) -> Result<Recorded> {
    if beacons.is_empty() {
        return Ok(Recorded::default());
    }
    let app = app.clone();
    RECORDING
        .spawn(async move { record_here(&app, beacons).await })
        .await
        .map_err(|err| crate::Error::Internal(anyhow::anyhow!("recording beacons: {err}")))?
}

/// The runtime batches of beacons are recorded on: one thread of its own, so that each of a
/// batch's few dozen statements resumes as soon as its connection answers. On the process's
/// runtime, each resumption waited behind every HTTP connection's task, and under load a
/// batch spent most of its time waiting: the writer was busy a fifth of the time while
/// acknowledged beacons piled up in the queue. Never dropped (a runtime must not be dropped
/// inside another), it lives as long as the process.
static RECORDING: std::sync::LazyLock<tokio::runtime::Runtime> = std::sync::LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("lps-beacons")
        .enable_all()
        .build()
        .expect("a runtime for recording beacons")
});

async fn record_here(app: &App, beacons: Vec<Beacon>) -> Result<Recorded> {
    let pages = resolve_pages(app, &beacons).await?;
    let salt = day_salt(app).await?;
    let views = known_views(app, &beacons).await?;
    let batch = Batch::new(beacons, pages, &salt, app.config.respect_gpc);
    let judges = Judges {
        scanner_networks: &app.scanner_networks,
        budget: &app.recorder.budget,
        page_loads: &app.page_loads,
    };
    let Classified {
        events,
        tally,
        confirmed,
        recorded,
    } = classify(&batch, views, &judges);
    store(app, &events, &confirmed, tally).await?;
    Ok(recorded)
}

/// Keeps the events and adds the tally (with what the confirmed stored views bring) to pages,
/// visitors, campaigns' classes, scores and the feed, in one transaction; then announces the
/// feed and wakes the callback sender when a callback was queued.
async fn store<'a>(
    app: &App,
    events: &[NewEvent<'_>],
    confirmed: &[Confirmed<'a>],
    mut tally: Tally<'a>,
) -> Result<()> {
    let mut tx = app.db.begin_write().await?;
    engagement::insert_events(&mut tx, events).await?;
    let merge = app.recorder.unmerged.add(events.len());
    if merge {
        engagement::merge_event_leads(&mut tx).await?;
    }
    count_confirmed(&mut tx, confirmed, &mut tally).await?;
    // Every lead this batch may add to: its pages' (views, time, return visits) and its
    // evidence's.
    let lead_ids: Vec<i64> = tally
        .deltas
        .keys()
        .map(|(_, lead_id)| *lead_id)
        .chain(tally.scores.lead_ids())
        .collect();
    let mut budgets =
        score::HourBudgets::lock(&mut tx, app.db.dialect(), &lead_ids, time::now()).await?;
    cap_engaged_time(&mut budgets, &mut tally.deltas);
    let mut queued_callbacks = add_to_pages(app, &mut tx, &mut tally).await?;
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
        .apply_within(app, &mut tx, budgets)
        .await?;
    note_activity(&mut tx, &tally.feed).await?;
    app.feed
        .announce(&mut tx, app.db.dialect(), &tally.feed)
        .await?;
    tx.commit().await?;
    if merge {
        app.recorder.unmerged.merged();
    }
    app.feed.publish_local(tally.feed);
    if queued_callbacks {
        app.callbacks_due.notify_one();
    }
    Ok(())
}

/// Views recorded unconfirmed before and confirmed now: only what this transaction turns from
/// unconfirmed to person is counted (another process may have done it first).
async fn count_confirmed<'a>(
    tx: &mut sqlx::AnyConnection,
    confirmed: &[Confirmed<'a>],
    tally: &mut Tally<'a>,
) -> Result<()> {
    for Confirmed {
        view_id,
        reason,
        page,
    } in confirmed
    {
        for event in engagement::confirm_view(&mut *tx, view_id, reason).await? {
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
    Ok(())
}

/// Adds the batch's counted engagement to its pages; a page's first counted views queue
/// `lead.page_viewed`, a person coming back adds to the lead's score. Returns whether a
/// callback was queued.
async fn add_to_pages(
    app: &App,
    tx: &mut sqlx::AnyConnection,
    tally: &mut Tally<'_>,
) -> Result<bool> {
    let mut queued_callbacks = false;
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
    for (campaign_id, lead_id, views_after) in engagement::add_to_pages(&mut *tx, &changes).await? {
        let Some((page, delta)) = tally.deltas.get(&(campaign_id, lead_id)) else {
            continue;
        };
        if delta.views > 0 && views_after == delta.views {
            // The page's first counted views are these: announce them.
            queued_callbacks |= first_view(app, &mut *tx, page, delta).await?;
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
    Ok(queued_callbacks)
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

/// Each lead's engaged seconds in this batch, within what its hour still allows
/// (`score::MOST_ENGAGED_SECONDS_PER_HOUR`, from every visitor and page together): time past it
/// is kept in the events but not added to the pages' sums.
fn cap_engaged_time(
    budgets: &mut score::HourBudgets,
    deltas: &mut BTreeMap<(i64, i64), (&PageIds, PageDelta)>,
) {
    let mut wanted: BTreeMap<i64, i64> = BTreeMap::new();
    for ((_, lead_id), (_, delta)) in deltas.iter() {
        if delta.engaged_seconds > 0 {
            *wanted.entry(*lead_id).or_default() += delta.engaged_seconds;
        }
    }
    let mut left: BTreeMap<i64, i64> = wanted
        .into_iter()
        .map(|(lead_id, wanted)| (lead_id, budgets.take_seconds(lead_id, wanted)))
        .collect();
    for ((_, lead_id), (_, delta)) in deltas.iter_mut() {
        let left = left.entry(*lead_id).or_default();
        let counted = delta.engaged_seconds.min(*left).max(0);
        delta.engaged_seconds = counted;
        *left -= counted;
    }
}

/// The views recorded before that this batch's beacons belong to, by page load id: of the
/// loads lps served only (no other is ever stored).
async fn known_views(app: &App, beacons: &[Beacon]) -> Result<HashMap<String, ViewState>> {
    let mut ids: Vec<&str> = beacons
        .iter()
        .filter_map(|b| PageLoad::of(b, &app.page_loads).served())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut views = HashMap::new();
    for chunk in ids.chunks(500) {
        for view in engagement::views_by_id(app.db.pool(), chunk).await? {
            views.insert(
                view.view_id,
                ViewState::stored(
                    VisitClass::from_stored(&view.class)?,
                    (view.campaign_id, view.lead_id),
                    view.created_at,
                ),
            );
        }
    }
    Ok(views)
}

/// Announces `lead.page_viewed` for a page's first counted view, when the lead has a callback
/// address or the workspace a notification channel. Returns whether anything was queued.
async fn first_view(
    app: &App,
    tx: &mut sqlx::AnyConnection,
    page: &PageIds,
    delta: &PageDelta,
) -> Result<bool> {
    let Some(listeners) =
        announcements::listeners_of_lead(tx, page.workspace_id, page.lead_id).await?
    else {
        return Ok(false);
    };
    let viewed_at = delta.first_viewed_at.unwrap_or_else(time::now);
    let event = CallbackEvent::PageViewed(PageViewed {
        lead_id: page.lead_id,
        campaign_id: page.campaign_id,
        page_url: crate::domain::domains::page_addresses(app).await?.page_url(
            page.workspace_id,
            &page.campaign_slug,
            &page.lead_slug,
        ),
        viewed_at: time::iso8601(&time::to_proto(viewed_at)),
    });
    let to = Receiver {
        workspace_id: page.workspace_id,
        url: listeners.callback_url.as_deref(),
        job_id: None,
    };
    announcements::announce(tx, app, &to, vec![event], time::now()).await
}

/// The page each beacon is for (`None`: no page has its address): remembered ones from memory,
/// the rest in one query.
async fn resolve_pages(app: &App, beacons: &[Beacon]) -> Result<Vec<Option<Arc<PageIds>>>> {
    let mut pages: Vec<Option<Arc<PageIds>>> = {
        let remembered = app.recorder.pages.lock().unwrap_or_else(|p| p.into_inner());
        beacons
            .iter()
            .map(|b| remembered.get(&b.campaign_slug, &b.lead_slug).cloned())
            .collect()
    };
    let mut missing: Vec<&str> = beacons
        .iter()
        .zip(&pages)
        .filter(|(_, page)| page.is_none())
        .map(|(beacon, _)| beacon.lead_slug.as_str())
        .collect();
    if missing.is_empty() {
        return Ok(pages);
    }
    missing.sort_unstable();
    missing.dedup();
    let mut fetched = KnownPages::default();
    for chunk in missing.chunks(200) {
        for page in engagement::pages_of_leads(app.db.pool(), chunk).await? {
            fetched.insert(Arc::new(page));
        }
    }
    for (beacon, page) in beacons.iter().zip(&mut pages) {
        if page.is_none() {
            *page = fetched
                .get(&beacon.campaign_slug, &beacon.lead_slug)
                .cloned();
        }
    }
    let mut remembered = app.recorder.pages.lock().unwrap_or_else(|p| p.into_inner());
    if remembered.len() + fetched.len() > MAX_REMEMBERED_PAGES {
        remembered.clear();
    }
    for page in fetched.pages() {
        remembered.insert(page.clone());
    }
    Ok(pages)
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
