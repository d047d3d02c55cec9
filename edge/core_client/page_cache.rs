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
//!
//! A hit touches as little memory as it can: kept pages are many megabytes visited at random,
//! so each piece of memory a hit reads apart from the others is a wait on main memory. Pages are
//! found by a digest of their address kept in the cache's own slot ([`AddressKey`]), not by the
//! address's text in an allocation of its own, and a page's entity tag is in the page's record
//! ([`RenderedPage`]), not in a buffer of its own: two such waits were ~4% of a warm page's CPU.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::body::Bytes;
use http::HeaderValue;
use lps::proto::{self, render_page_response::Outcome};
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use siphasher::sip128::SipHasher13;
use tokio::sync::watch;

/// Bytes an entry costs besides its page, key and tag (the cache's slot, the `Arc`s).
const ENTRY_OVERHEAD_BYTES: usize = 160;
/// Leads remembered as changed before it is cheaper to start afresh.
const MAX_LEAD_STAMPS: usize = 200_000;
/// How long a caller waits for the change stream to catch up before the cache is dropped.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(5);

/// A page as core rendered it. Kept pages are most of the cache's memory, so one is as small
/// as it can be: its one header of its own (a page's entity tag, a moved page's location) in
/// one field, a page's tag within the record itself (see [`PageHeader`]).
#[derive(Debug)]
pub struct RenderedPage {
    pub outcome: Outcome,
    pub html: Bytes,
    /// The entity tag of a page, or where a moved page is now; `outcome` says which. Read by
    /// [`RenderedPage::etag`] and [`RenderedPage::location`].
    header: PageHeader,
    /// The workspace the page is of (0 when unknown): a workspace's own domain serves only its
    /// own.
    pub workspace_id: i64,
}

/// The bytes of an entity tag kept within a page's record: core's tags are 22 (a quoted
/// 20-digit hex digest).
const INLINE_TAG_BYTES: usize = 22;

/// A page's one header of its own.
#[derive(Debug)]
enum PageHeader {
    None,
    /// An entity tag of at most [`INLINE_TAG_BYTES`] visible ASCII bytes, within the record:
    /// every visit reads it, and the record is read anyway (a header value's bytes are an
    /// allocation of their own, a wait on main memory of its own on a warm page). The record
    /// keeps its allocator size class with it (the `HeaderValue` it replaces is larger).
    Tag {
        length: u8,
        bytes: [u8; INLINE_TAG_BYTES],
    },
    /// Any other: a moved page's location, or a longer tag.
    Value(HeaderValue),
}

impl PageHeader {
    /// An entity tag, within the record when it is short enough.
    fn tag(text: &str) -> Self {
        let Some(value) = header_value(text) else {
            return Self::None;
        };
        let Ok(length) = u8::try_from(text.len()) else {
            return Self::Value(value);
        };
        if text.len() > INLINE_TAG_BYTES {
            return Self::Value(value);
        }
        let mut bytes = [0; INLINE_TAG_BYTES];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Self::Tag { length, bytes }
    }

    /// Any other header.
    fn other(text: &str) -> Self {
        header_value(text).map_or(Self::None, Self::Value)
    }

    fn text(&self) -> Option<&str> {
        match self {
            Self::None => None,
            // Only visible ASCII was kept (checked as a header value in `tag`).
            Self::Tag { length, bytes } => std::str::from_utf8(&bytes[..usize::from(*length)]).ok(),
            Self::Value(value) => value.to_str().ok(),
        }
    }

    fn value(&self) -> Option<HeaderValue> {
        match self {
            Self::None => None,
            Self::Tag { length, bytes } => {
                HeaderValue::from_bytes(&bytes[..usize::from(*length)]).ok()
            }
            Self::Value(value) => Some(value.clone()),
        }
    }
}

/// `text` as a header's value, unless it is empty or not one.
fn header_value(text: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(text)
        .ok()
        .filter(|value| !value.is_empty())
}

impl RenderedPage {
    /// What core answered: `html` (empty for a moved page), the page's `etag` and a moved
    /// page's `location` (each ignored for other outcomes, or when not a header's value).
    pub fn new(outcome: Outcome, html: String, etag: &str, location: &str) -> Self {
        let header = match outcome {
            Outcome::Page => PageHeader::tag(etag),
            Outcome::Moved => PageHeader::other(location),
            _ => PageHeader::None,
        };
        Self {
            outcome,
            html: Bytes::from(html),
            header,
            workspace_id: 0,
        }
    }

    /// The page, of `workspace_id`.
    pub fn of_workspace(mut self, workspace_id: i64) -> Self {
        self.workspace_id = workspace_id;
        self
    }

    /// The page's HTML as an answer's body: a view held by the page itself, so an answer
    /// counts its use on the record a visit reads anyway, not on the count `Bytes` keeps in an
    /// allocation of its own (a wait on main memory for each warm page).
    pub fn body(self: &Arc<Self>) -> Bytes {
        Bytes::from_owner(HtmlOf(self.clone()))
    }

    /// A page's entity tag, as its header carries it.
    pub fn etag(&self) -> Option<HeaderValue> {
        (self.outcome == Outcome::Page)
            .then(|| self.header.value())
            .flatten()
    }

    /// A page's entity tag, to compare with what a browser has.
    pub fn etag_text(&self) -> Option<&str> {
        self.header.text().filter(|_| self.outcome == Outcome::Page)
    }

    /// Where a moved page is now.
    pub fn location(&self) -> Option<HeaderValue> {
        (self.outcome == Outcome::Moved)
            .then(|| self.header.value())
            .flatten()
    }
}

/// The HTML of a page, held by the page ([`RenderedPage::body`]).
struct HtmlOf(Arc<RenderedPage>);

impl AsRef<[u8]> for HtmlOf {
    fn as_ref(&self) -> &[u8] {
        &self.0.html
    }
}

/// A kept page's key: a 128-bit SipHash of its address under a key drawn when the cache is
/// made. Two addresses share one with a chance of about n²/2¹²⁹ for n pages kept, and a
/// stranger cannot aim at a collision without the key, which never leaves the process.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct AddressKey(u128);

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

impl Weighter<AddressKey, Kept> for PageBytes {
    fn weight(&self, _key: &AddressKey, kept: &Kept) -> u64 {
        (size_of::<AddressKey>()
            + kept.page.html.len()
            + kept.page.etag_text().map_or(0, str::len)
            + ENTRY_OVERHEAD_BYTES) as u64
    }
}

/// A guess of a page's size, for sizing the cache's table up front.
const TYPICAL_ENTRY_BYTES: u64 = 4 * 1024;

pub struct PageCache {
    pages: Cache<AddressKey, Kept, PageBytes>,
    /// Makes an address's [`AddressKey`].
    addresses: SipHasher13,
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
            addresses: SipHasher13::new_with_keys(rand::random(), rand::random()),
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
        let key = self.key(address);
        let kept = self.pages.get(&key)?;
        if self
            .stamps
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .current(&kept)
        {
            Some(kept.page)
        } else {
            self.pages.remove(&key);
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
            self.key(address),
            Kept {
                page,
                campaign_id: answer.campaign_id,
                lead_id: answer.lead_id,
                generation: answer.generation,
            },
        );
    }

    fn key(&self, address: &str) -> AddressKey {
        AddressKey(self.addresses.hash(address.as_bytes()).as_u128())
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
    fn each_outcome_has_only_its_own_header_and_a_tag_of_any_length_is_kept_whole() {
        let html = "<!doctype html><p>Hi</p>".to_owned();
        let page = RenderedPage::new(Outcome::Page, html.clone(), "\"1-2\"", "/p/x/y");
        assert_eq!(page.html, html.as_bytes());
        assert_eq!(page.etag().unwrap(), "\"1-2\"");
        assert_eq!(page.etag_text(), Some("\"1-2\""));
        assert_eq!(page.location(), None);
        assert_eq!(Arc::new(page).body(), html.as_bytes());
        for tag in [
            "\"0123456789abcdef0123\"",
            "\"0123456789abcdef01234\"",
            "W/\"x\"",
        ] {
            let page = RenderedPage::new(Outcome::Page, html.clone(), tag, "");
            assert_eq!(page.etag().unwrap(), tag);
            assert_eq!(page.etag_text(), Some(tag));
        }

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
