//! What changes visitors' pages, announced as it happens, so a cache of rendered pages (the
//! edge's) can drop exactly what went stale and otherwise never ask core again.
//!
//! Every change has a generation, increasing. A rendered page is stamped with the generation
//! core had reached before it read the page's rows; a change concerning a page makes every copy
//! stamped below its generation stale. Three rules keep the very next request after a change
//! correct:
//! - a change is announced *before* its transaction commits and counted as committing until
//!   the commit ends; pages rendered while anything commits are not to be kept (they may have
//!   read the rows just before the commit);
//! - every response of core carries the generation reached (`x-lps-page-generation`), so a
//!   cache waits until it has applied that generation before its caller hears the answer: a
//!   caller who was told "published" or "job completed" finds the cache already updated;
//! - other processes on PostgreSQL hear of changes through `NOTIFY lps_pages` (sent at commit)
//!   and announce them as their own; a dropped listener announces `everything` when it
//!   reconnects. On SQLite the one other writer is `lps admin` (branding), seen by a check of
//!   the campaigns' published versions once a second.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use crate::store::{self, Dialect, WriteTransaction};
use crate::{App, Result};

/// The NOTIFY channel of page changes.
pub const CHANNEL: &str = "lps_pages";
/// Ids per notification (PostgreSQL's payloads are at most 8,000 bytes).
const IDS_PER_NOTIFICATION: usize = 400;

/// What changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changed {
    Everything,
    Campaigns(Vec<i64>),
    Leads(Vec<i64>),
    /// The verified domains (what is served on which host): `domain/domains.rs`.
    Domains,
    /// The TLS certificates kept (one issued, renewed or forgotten):
    /// `domain/certificates.rs`. No page changes with them.
    Certificates,
}

impl Changed {
    /// The payloads of its notifications: `*`, `c:1,2`, `l:3,4`, `d:` or `t:`.
    fn payloads(&self) -> Vec<String> {
        let (prefix, ids) = match self {
            Changed::Everything => return vec!["*".to_owned()],
            Changed::Domains => return vec!["d:".to_owned()],
            Changed::Certificates => return vec!["t:".to_owned()],
            Changed::Campaigns(ids) => ("c", ids),
            Changed::Leads(ids) => ("l", ids),
        };
        ids.chunks(IDS_PER_NOTIFICATION)
            .map(|chunk| {
                let ids: Vec<String> = chunk.iter().map(i64::to_string).collect();
                format!("{prefix}:{}", ids.join(","))
            })
            .collect()
    }

    /// A change's part of a notification's payload read back; anything unreadable means
    /// everything.
    fn from_payload(payload: &str) -> Self {
        let parse =
            |ids: &str| -> Option<Vec<i64>> { ids.split(',').map(|id| id.parse().ok()).collect() };
        match payload.split_once(':') {
            Some(("c", ids)) => parse(ids).map_or(Changed::Everything, Changed::Campaigns),
            Some(("l", ids)) => parse(ids).map_or(Changed::Everything, Changed::Leads),
            Some(("d", _)) => Changed::Domains,
            Some(("t", _)) => Changed::Certificates,
            _ => Changed::Everything,
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Changed::Everything | Changed::Domains | Changed::Certificates => false,
            Changed::Campaigns(ids) | Changed::Leads(ids) => ids.is_empty(),
        }
    }
}

/// A change and its generation.
#[derive(Debug, Clone)]
pub struct Change {
    pub generation: u64,
    pub what: Changed,
}

/// The generation a page was read at, and whether the reading may be kept.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    pub generation: u64,
    pub cacheable: bool,
}

/// This process's changes to pages, in order.
pub struct PageChanges {
    generation: AtomicU64,
    /// Counts the changes that may change pages' addresses (campaigns, domains, everything):
    /// `domains::page_addresses` reads them again when it moved.
    addresses: AtomicU64,
    /// Changes whose transaction is committing.
    committing: AtomicUsize,
    /// Held while a generation is taken and sent, so subscribers get them in order.
    order: Mutex<()>,
    sender: broadcast::Sender<Change>,
    /// This process among those notifying on PostgreSQL, and its notifications' numbers: a
    /// commit waits until its own notification comes back (so every listener has been sent it
    /// before the caller hears of the change), and its own changes are not announced twice.
    origin: u64,
    notified: AtomicU64,
    echoed: watch::Sender<u64>,
    listening: AtomicBool,
}

impl Default for PageChanges {
    fn default() -> Self {
        Self::new()
    }
}

impl PageChanges {
    pub fn new() -> Self {
        Self {
            generation: AtomicU64::new(0),
            addresses: AtomicU64::new(0),
            committing: AtomicUsize::new(0),
            order: Mutex::new(()),
            sender: broadcast::channel(4096).0,
            origin: rand::random::<u64>() >> 1,
            notified: AtomicU64::new(0),
            echoed: watch::Sender::new(0),
            listening: AtomicBool::new(false),
        }
    }

    /// The generation reached.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Taken before a page's rows are read. The generation is read first: a change that
    /// counts itself as committing after this reading takes a higher generation.
    pub fn reading(&self) -> Reading {
        let generation = self.generation.load(Ordering::SeqCst);
        let cacheable = self.committing.load(Ordering::SeqCst) == 0;
        Reading {
            generation,
            cacheable,
        }
    }

    /// The count of changes that may change pages' addresses, and whether what is read now
    /// may be kept (nothing is committing), read in that order as [`PageChanges::reading`].
    pub fn addresses_reading(&self) -> (u64, bool) {
        let addresses = self.addresses.load(Ordering::SeqCst);
        (addresses, self.committing.load(Ordering::SeqCst) == 0)
    }

    /// Changes from now on, and the generation they start after.
    pub fn subscribe(&self) -> (u64, broadcast::Receiver<Change>) {
        let _order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        (self.generation(), self.sender.subscribe())
    }

    /// Announces a change to this process's subscribers; returns its generation.
    pub fn announce(&self, what: Changed) -> u64 {
        let _order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        if !matches!(what, Changed::Leads(_) | Changed::Certificates) {
            self.addresses.fetch_add(1, Ordering::SeqCst);
        }
        // No subscriber (no edge in this process) is fine.
        let _ = self.sender.send(Change { generation, what });
        generation
    }

    /// Announces a change whose transaction is about to commit; it counts as committing until
    /// the returned guard is dropped.
    fn committing(&self, what: Changed) -> Committing<'_> {
        self.committing.fetch_add(1, Ordering::SeqCst);
        self.announce(what);
        Committing { changes: self }
    }
}

struct Committing<'a> {
    changes: &'a PageChanges,
}

impl Drop for Committing<'_> {
    fn drop(&mut self) {
        self.changes.committing.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Commits `tx`, which changes what the pages of `what` show: announced here before the commit
/// (see the module's rules) and to other processes at the commit.
pub async fn commit(app: &App, mut tx: WriteTransaction, what: Changed) -> Result<()> {
    if what.is_empty() {
        tx.commit().await?;
        return Ok(());
    }
    let changes = &app.page_changes;
    let number = changes.notified.fetch_add(1, Ordering::SeqCst) + 1;
    for payload in what.payloads() {
        let payload = format!("{}:{number}:{payload}", changes.origin);
        store::notify(&mut tx, app.db.dialect(), CHANNEL, &payload).await?;
    }
    if matches!(what, Changed::Domains | Changed::Certificates) {
        // Heard by edges, which then read what is served (or the certificates): only once it
        // is committed. (No page read meanwhile is kept past a change of domains: the edges
        // start afresh on it.)
        tx.commit().await?;
        changes.announce(what);
    } else {
        let committing = changes.committing(what);
        tx.commit().await?;
        drop(committing);
    }
    if app.db.dialect() == Dialect::Postgres && changes.listening.load(Ordering::Acquire) {
        let mut echoed = changes.echoed.subscribe();
        let echo = echoed.wait_for(|echoed| *echoed >= number);
        if tokio::time::timeout(ECHO_LIMIT, echo).await.is_err() {
            tracing::warn!("a page change took long to reach other processes");
        }
    }
    Ok(())
}

/// The longest a commit waits for its notification to come back. It comes back within a
/// millisecond or two on an idle machine; with 250 ms, a full CI run on two busy CPUs once
/// served a stale page in another process right after an unpublish. Only a late echo waits.
const ECHO_LIMIT: Duration = Duration::from_secs(2);

impl PageChanges {
    /// One notification heard (`{origin}:{number}:{change}`, or a bare change from `lps admin`).
    fn heard(&self, payload: &str) {
        let mut parts = payload.splitn(3, ':');
        if let (Some(origin), Some(number), Some(change)) =
            (parts.next(), parts.next(), parts.next())
            && let (Ok(origin), Ok(number)) = (origin.parse::<u64>(), number.parse::<u64>())
        {
            if origin == self.origin {
                self.echoed.send_if_modified(|echoed| {
                    let newer = number > *echoed;
                    *echoed = (*echoed).max(number);
                    newer
                });
            } else {
                self.announce(Changed::from_payload(change));
            }
            return;
        }
        self.announce(Changed::from_payload(payload));
    }
}

/// Announces the changes other processes make: on PostgreSQL what they notify, on SQLite
/// (where only `lps admin` writes besides this process) any change of the campaigns'
/// published versions. Runs until the process ends.
pub async fn relay(app: App) {
    match app.db.dialect() {
        Dialect::Postgres => {
            let changes = app.page_changes.clone();
            store::listen_forever_resyncing(
                app.db.url(),
                CHANNEL,
                |listening| {
                    // While not listening, commits do not wait for an echo that cannot come.
                    changes.listening.store(listening, Ordering::Release);
                    if listening {
                        changes.announce(Changed::Everything);
                    }
                },
                |payload| changes.heard(payload),
            )
            .await;
        }
        Dialect::Sqlite => {
            let mut seen = None;
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                match store::designs::published_versions(app.db.pool()).await {
                    Ok(now) => {
                        if seen.is_some_and(|seen| seen != now) {
                            app.page_changes.announce(Changed::Everything);
                        }
                        seen = Some(now);
                    }
                    Err(err) => tracing::warn!(error = %err, "cannot check published versions"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_read_back_and_stay_short() {
        let ids: Vec<i64> = (1..=1000).map(|n| n * 1_000_000_007).collect();
        let payloads = Changed::Leads(ids.clone()).payloads();
        assert_eq!(payloads.len(), 3);
        assert!(payloads.iter().all(|p| p.len() < 8000));
        let back: Vec<i64> = payloads
            .iter()
            .flat_map(|p| match Changed::from_payload(p) {
                Changed::Leads(ids) => ids,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(back, ids);
        assert_eq!(Changed::from_payload("c:7"), Changed::Campaigns(vec![7]));
        assert_eq!(Changed::from_payload("*"), Changed::Everything);
        assert_eq!(Changed::from_payload("d:"), Changed::Domains);
        assert_eq!(Changed::Domains.payloads(), ["d:"]);
        assert_eq!(Changed::from_payload("l:x"), Changed::Everything);
    }

    #[test]
    fn a_reading_during_a_commit_is_not_kept_and_later_changes_are_newer() {
        let changes = PageChanges::new();
        let before = changes.reading();
        assert!(before.cacheable);
        let guard = changes.committing(Changed::Leads(vec![1]));
        let during = changes.reading();
        assert!(!during.cacheable);
        assert!(during.generation > before.generation);
        drop(guard);
        assert!(changes.reading().cacheable);
    }

    #[test]
    fn own_notifications_are_echoes_and_others_are_announced() {
        let changes = PageChanges::new();
        let own = format!("{}:3:l:9", changes.origin);
        changes.heard(&own);
        assert_eq!(*changes.echoed.borrow(), 3);
        assert_eq!(changes.generation(), 0);
        changes.heard(&format!("{}:1:c:4", changes.origin + 1));
        changes.heard("*");
        assert_eq!(changes.generation(), 2);
    }

    #[tokio::test]
    async fn subscribers_get_changes_in_order() {
        let changes = PageChanges::new();
        let (start, mut receiver) = changes.subscribe();
        changes.announce(Changed::Campaigns(vec![3]));
        changes.announce(Changed::Leads(vec![4]));
        let first = receiver.recv().await.unwrap();
        let second = receiver.recv().await.unwrap();
        assert_eq!(first.generation, start + 1);
        assert_eq!(first.what, Changed::Campaigns(vec![3]));
        assert_eq!(second.generation, start + 2);
    }
}
