//! Engagement on lead pages: recording what pages' tracking scripts report (deciding what is a
//! bot and who is the same visitor), and reading it back as campaign analytics and a lead's
//! engagement.
//!
//! What counts: a beacon from the tracking script of a live page, sent by a browser that does
//! not identify as automation (a user agent on the isbot list or with `HeadlessChrome`, or
//! `navigator.webdriver` true). A plain GET of a page never counts: only the script reports.
//!
//! By concern: `classify.rs` decides what each beacon of a batch is and what it adds up to
//! (pure), with the rules on browsers in `automation.rs` and on visitors in `visitors.rs`;
//! `tally.rs` is what a batch adds up to; `record.rs` stores a batch in one transaction, with
//! the pages it is for from `known_pages.rs`;
//! `analytics.rs` and `activity.rs` read engagement back.

mod activity;
mod analytics;
mod automation;
mod classify;
mod known_pages;
mod record;
mod tally;
mod visitors;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use activity::{Activity, engaged_leads, lead_activity, of_lead};
pub use analytics::{CampaignAnalytics, campaign_analytics, daily_analytics};
pub use automation::automation_reason;
pub use record::{note_activity, record};

pub use crate::domain::beacon::{Beacon, BeaconKind, MAX_SECONDS};
use crate::domain::visit_class::VisitCounts;
use crate::store::engagement::MERGE_AT;

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

/// What recording keeps between batches: pages by address (a page's ids never change), the
/// day's visitor-hash salt, and how many beacons were stored since their leads' pairs were
/// last merged.
#[derive(Default)]
pub struct Recorder {
    pages: Mutex<known_pages::KnownPages>,
    salt: Mutex<Option<(String, String)>>,
    budget: super::beacon_budget::BeaconBudget,
    unmerged: Unmerged,
}

/// Beacons stored since the last merge of `page_event_leads_new` (`store::engagement::MERGE_AT`).
/// It starts full: pairs may wait from before this process started, so its first batch merges.
struct Unmerged(AtomicUsize);

impl Default for Unmerged {
    fn default() -> Self {
        Self(AtomicUsize::new(MERGE_AT))
    }
}

impl Unmerged {
    /// Counts a batch of `stored` beacons; answers whether the batch merges its pairs and those
    /// before it: once [`MERGE_AT`] wait. The count goes back to zero only when a merge commits
    /// ([`Unmerged::merged`]), so after a batch that failed the next one merges.
    fn add(&self, stored: usize) -> bool {
        self.0.fetch_add(stored, Ordering::Relaxed) + stored >= MERGE_AT
    }

    /// A merge committed: no pair waits.
    fn merged(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// Pages remembered by address; beyond this the memory starts over.
const MAX_REMEMBERED_PAGES: usize = 200_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_batch_merges_then_one_every_merge_at_beacons_and_a_failed_merge_stays_due() {
        let unmerged = Unmerged::default();
        assert!(unmerged.add(10), "pairs may wait from before the start");
        unmerged.merged();
        assert!(!unmerged.add(MERGE_AT - 1));
        assert!(unmerged.add(1));
        // The merge's transaction failed: nothing was reset, so the next batch merges.
        assert!(unmerged.add(1));
        unmerged.merged();
        assert!(!unmerged.add(1));
    }
}
