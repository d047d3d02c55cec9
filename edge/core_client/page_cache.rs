//! Visitors' pages from memory: the core client keeps what core rendered and answers a repeat
//! visit without asking core again, until core says the page changed.
//!
//! Core stays the owner of what a page is; this is a cache of its answers, fed by its change
//! stream (`VisitorService.WatchPageChanges`, see core's `domain::page_changes`):
//! - a kept page carries the generation core had reached before reading it; a change of its
//!   campaign or lead at a higher generation makes it stale (checked on every hit, so a change
//!   applied while a render was in flight still wins);
//! - every answer of core names the generation it had reached; the core client waits until the
//!   cache has applied it before passing the answer on ([`PageCache::caught_up`]), so whoever
//!   was told "published" or "job completed" by this edge sees the change on the very next
//!   visit;
//! - until the stream's first message, and whenever it breaks, nothing is kept or served from
//!   memory (every visit asks core).
//!
//! Memory is bounded by `--page-cache-mb` (`quick_cache`: CLOCK-PRO-style eviction that resists
//! scans, with no bookkeeping on reads beyond a flag, which matters on the hottest path; `moka`,
//! used before, spent ~9% of a page hit recording reads), counted in bytes of page, key and
//! entity tag plus a fixed overhead per entry.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::body::Bytes;
use http::HeaderValue;
use lps::proto::{self, render_page_response::Outcome};
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use tokio::sync::watch;

/// Bytes an entry costs besides its page, key and tag (the cache's slot, the `Arc`s).
const ENTRY_OVERHEAD_BYTES: usize = 160;
/// Leads remembered as changed before it is cheaper to start afresh.
const MAX_LEAD_STAMPS: usize = 200_000;
/// How long a caller waits for the change stream to catch up before the cache is dropped.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(5);

/// A page as core rendered it. Kept pages are most of the cache's memory, so one is as small
/// as it can be: its one header of its own (a page's entity tag, a moved page's location) in
/// one field, and a page's entity tag stored in the page's own buffer (see [`RenderedPage::new`]).
#[derive(Debug)]
pub struct RenderedPage {
    pub outcome: Outcome,
    pub html: Bytes,
    /// The entity tag of a page, or where a moved page is now, as the header carries it (made
    /// once, not on every visit); `outcome` says which. Read by [`RenderedPage::etag`] and
    /// [`RenderedPage::location`].
    header: Option<HeaderValue>,
    /// The workspace the page is of (0 when unknown): a workspace's own domain serves only its
    /// own.
    pub workspace_id: i64,
}

impl RenderedPage {
    /// What core answered: `html` (empty for a moved page), the page's `etag` and a moved
    /// page's `location` (each ignored for other outcomes, or when not a header's value).
    ///
    /// A page's tag is written at the end of its HTML's buffer and both are views of it: the
    /// allocator hands out blocks in size classes, so the few bytes of a tag mostly fit in
    /// what the class leaves over, where they would cost two allocations of their own (the
    /// tag's bytes, and the count shared between its copies in answers).
    pub fn new(outcome: Outcome, html: String, etag: &str, location: &str) -> Self {
        let header_text = match outcome {
            Outcome::Page => etag,
            Outcome::Moved => location,
            _ => "",
        };
        let mut buffer = html.into_bytes();
        let html_len = buffer.len();
        // Exactly: `Vec`'s growth would double the buffer.
        buffer.reserve_exact(header_text.len());
        buffer.extend_from_slice(header_text.as_bytes());
        let buffer = Bytes::from(buffer);
        let header = (!header_text.is_empty())
            .then(|| HeaderValue::from_maybe_shared(buffer.slice(html_len..)).ok())
            .flatten();
        Self {
            outcome,
            html: buffer.slice(..html_len),
            header,
            workspace_id: 0,
        }
    }

    /// The page, of `workspace_id`.
    pub fn of_workspace(mut self, workspace_id: i64) -> Self {
        self.workspace_id = workspace_id;
        self
    }

    /// A page's entity tag.
    pub fn etag(&self) -> Option<&HeaderValue> {
        self.header
            .as_ref()
            .filter(|_| self.outcome == Outcome::Page)
    }

    /// Where a moved page is now.
    pub fn location(&self) -> Option<&HeaderValue> {
        self.header
            .as_ref()
            .filter(|_| self.outcome == Outcome::Moved)
    }
}

/// Held by the cache itself (not behind an `Arc` of its own): one allocation less a page.
#[derive(Clone)]
struct Kept {
    page: Arc<RenderedPage>,
    campaign_id: i64,
    lead_id: i64,
    generation: u64,
}

/// When campaigns and leads last changed (the generation of the change), and below which
/// generation every kept page is stale.
#[derive(Default)]
struct Stamps {
    floor: u64,
    campaigns: HashMap<i64, u64>,
    leads: HashMap<i64, u64>,
}

impl Stamps {
    fn current(&self, kept: &Kept) -> bool {
        let changed = |stamps: &HashMap<i64, u64>, id| stamps.get(&id).copied().unwrap_or(0);
        kept.generation >= self.floor
            && kept.generation >= changed(&self.campaigns, kept.campaign_id)
            && kept.generation >= changed(&self.leads, kept.lead_id)
    }
}

/// What a kept page weighs against the bound: its bytes.
#[derive(Clone)]
struct PageBytes;

impl Weighter<String, Kept> for PageBytes {
    fn weight(&self, key: &String, kept: &Kept) -> u64 {
        (key.len()
            + kept.page.html.len()
            + kept.page.etag().map_or(0, HeaderValue::len)
            + ENTRY_OVERHEAD_BYTES) as u64
    }
}

/// A guess of a page's size, for sizing the cache's table up front.
const TYPICAL_ENTRY_BYTES: u64 = 4 * 1024;

pub struct PageCache {
    pages: Cache<String, Kept, PageBytes>,
    stamps: RwLock<Stamps>,
    /// The generation of the last change applied.
    applied: watch::Sender<u64>,
    /// Whether the change stream is connected and its first message applied.
    live: AtomicBool,
}

impl PageCache {
    pub fn new(max_bytes: u64) -> Self {
        Self {
            pages: Cache::with_weighter(
                usize::try_from(max_bytes / TYPICAL_ENTRY_BYTES)
                    .unwrap_or(usize::MAX)
                    .max(16),
                max_bytes,
                PageBytes,
            ),
            stamps: RwLock::default(),
            applied: watch::Sender::new(0),
            live: AtomicBool::new(false),
        }
    }

    /// The page kept for this address, if it is still current.
    pub fn get(&self, address: &str) -> Option<Arc<RenderedPage>> {
        if !self.live.load(Ordering::Acquire) {
            return None;
        }
        let kept = self.pages.get(address)?;
        if self
            .stamps
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .current(&kept)
        {
            Some(kept.page)
        } else {
            self.pages.remove(address);
            None
        }
    }

    /// Keeps what core answered for this address, when core says it may be kept (pages and
    /// "not live" pages read while nothing was committing; never unknown addresses).
    pub fn keep(&self, address: &str, answer: &proto::RenderPageResponse, page: Arc<RenderedPage>) {
        if !answer.cacheable || !self.live.load(Ordering::Acquire) {
            return;
        }
        self.pages.insert(
            address.to_owned(),
            Kept {
                page,
                campaign_id: answer.campaign_id,
                lead_id: answer.lead_id,
                generation: answer.generation,
            },
        );
    }

    /// Bytes (as weighed against the bound) and pages kept.
    pub fn size(&self) -> (u64, u64) {
        (self.pages.weight(), self.pages.len() as u64)
    }

    /// Applies one message of core's change stream.
    pub fn apply(&self, change: &proto::PageChange) {
        {
            let mut stamps = self.stamps.write().unwrap_or_else(|e| e.into_inner());
            let generation = change.generation;
            let everything =
                change.everything || stamps.leads.len() + change.lead_ids.len() > MAX_LEAD_STAMPS;
            if everything {
                *stamps = Stamps {
                    floor: generation,
                    ..Stamps::default()
                };
                self.pages.clear();
            } else {
                for id in &change.campaign_ids {
                    stamps.campaigns.insert(*id, generation);
                }
                for id in &change.lead_ids {
                    stamps.leads.insert(*id, generation);
                }
            }
        }
        self.applied.send_replace(change.generation);
        if change.everything {
            self.live.store(true, Ordering::Release);
        }
    }

    /// The change stream broke: nothing is served from memory until it is back.
    pub fn disconnected(&self) {
        self.live.store(false, Ordering::Release);
        self.pages.clear();
    }

    /// Returns once the changes up to `generation` are applied (at once when the stream is not
    /// connected: nothing is served from memory then).
    pub async fn caught_up(&self, generation: u64) {
        if !self.live.load(Ordering::Acquire) || *self.applied.borrow() >= generation {
            return;
        }
        let mut applied = self.applied.subscribe();
        let wait = applied.wait_for(|applied| *applied >= generation);
        if tokio::time::timeout(CATCH_UP_LIMIT, wait).await.is_err() {
            tracing::warn!(generation, "page changes are late; pages are read afresh");
            self.disconnected();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(campaign_id: i64, lead_id: i64, generation: u64) -> proto::RenderPageResponse {
        proto::RenderPageResponse {
            outcome: Outcome::Page as i32,
            campaign_id,
            lead_id,
            generation,
            cacheable: true,
            ..Default::default()
        }
    }

    fn page(html: &'static str) -> Arc<RenderedPage> {
        Arc::new(RenderedPage::new(
            Outcome::Page,
            html.to_owned(),
            "\"t\"",
            "",
        ))
    }

    fn change(generation: u64, campaigns: &[i64], leads: &[i64]) -> proto::PageChange {
        proto::PageChange {
            generation,
            everything: false,
            campaign_ids: campaigns.to_vec(),
            lead_ids: leads.to_vec(),
            domains: false,
            certificates: false,
        }
    }

    fn connected() -> PageCache {
        let cache = PageCache::new(1 << 20);
        cache.apply(&proto::PageChange {
            generation: 5,
            everything: true,
            ..Default::default()
        });
        cache
    }

    #[test]
    fn a_page_and_its_tag_share_one_buffer_and_each_outcome_has_only_its_own_header() {
        let html = "<!doctype html><p>Hi</p>".to_owned();
        let page = RenderedPage::new(Outcome::Page, html.clone(), "\"1-2\"", "/p/x/y");
        assert_eq!(page.html, html.as_bytes());
        assert_eq!(page.etag().unwrap(), "\"1-2\"");
        assert_eq!(page.location(), None);
        let tag = page.etag().unwrap().as_bytes();
        // The tag's bytes follow the page's in the same allocation.
        assert_eq!(tag.as_ptr(), page.html.as_ptr().wrapping_add(html.len()));

        let moved = RenderedPage::new(Outcome::Moved, String::new(), "\"1-2\"", "/p/new/y");
        assert_eq!(moved.html, "");
        assert_eq!(moved.location().unwrap(), "/p/new/y");
        assert_eq!(moved.etag(), None);

        let not_live = RenderedPage::new(Outcome::NotLive, html.clone(), "\"1-2\"", "/p/x/y");
        assert_eq!((not_live.etag(), not_live.location()), (None, None));
        assert_eq!(not_live.html, html.as_bytes());
        // Nothing a header cannot carry, and no empty tag.
        let odd = RenderedPage::new(Outcome::Moved, String::new(), "", "/p/\n");
        assert_eq!(odd.location(), None);
        let untagged = RenderedPage::new(Outcome::Page, html, "", "");
        assert_eq!(untagged.etag(), None);
    }

    #[test]
    fn nothing_is_kept_before_the_stream_starts_or_after_it_breaks() {
        let cache = PageCache::new(1 << 20);
        cache.keep("/p/a/1", &answer(1, 1, 0), page("one"));
        assert!(cache.get("/p/a/1").is_none());
        let cache = connected();
        cache.keep("/p/a/1", &answer(1, 1, 5), page("one"));
        assert!(cache.get("/p/a/1").is_some());
        cache.disconnected();
        assert!(cache.get("/p/a/1").is_none());
    }

    #[test]
    fn a_change_makes_exactly_its_pages_stale_even_if_rendered_before_it_arrived() {
        let cache = connected();
        cache.keep("/p/a/1", &answer(1, 1, 5), page("lead 1"));
        cache.keep("/p/a/2", &answer(1, 2, 5), page("lead 2"));
        cache.keep("/p/b/3", &answer(2, 3, 5), page("lead 3"));
        cache.apply(&change(6, &[], &[1]));
        assert!(cache.get("/p/a/1").is_none());
        assert!(cache.get("/p/a/2").is_some());
        // Rendered before change 7 was read, kept after it was applied: still stale.
        cache.apply(&change(7, &[2], &[]));
        cache.keep("/p/b/3", &answer(2, 3, 6), page("old"));
        assert!(cache.get("/p/b/3").is_none());
        // Rendered after it: current.
        cache.keep("/p/b/3", &answer(2, 3, 7), page("new"));
        assert_eq!(&cache.get("/p/b/3").unwrap().html[..], b"new");
    }

    #[test]
    fn answers_read_while_a_change_committed_are_not_kept() {
        let cache = connected();
        let mut during = answer(1, 1, 5);
        during.cacheable = false;
        cache.keep("/p/a/1", &during, page("maybe old"));
        assert!(cache.get("/p/a/1").is_none());
    }

    #[tokio::test]
    async fn callers_wait_until_the_changes_they_were_told_of_are_applied() {
        let cache = Arc::new(connected());
        let waiting = tokio::spawn({
            let cache = cache.clone();
            async move { cache.caught_up(6).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        cache.apply(&change(6, &[1], &[]));
        waiting.await.unwrap();
    }
}
