//! How much engagement one visitor address and one visitor's view of a page may report: the
//! tracking script is public, so anyone can send beacons, and without a budget one address
//! could make a page look viewed by thousands for hours. Beacons past a budget are dropped and
//! counted as throttled (like bots, never as engagement).
//!
//! The budgets, per hour (fixed windows), in this core process:
//! - one address: [`BEACONS_PER_ADDRESS`] beacons and [`VISITORS_PER_ADDRESS`] distinct
//!   visitors (cookie ids are the client's to choose; an office behind one address has some
//!   dozens of people);
//! - one visitor on one page: [`VIEWS_PER_VISITOR`] views, [`CLICKS_PER_VISITOR`] clicks, and
//!   engaged time of at most [`MAX_SECONDS`] per view counted (time is capped per view, not per
//!   beacon).
//!
//! The budgets' own memory is bounded too: at most [`MAX_ADDRESSES`] addresses (each with at
//! most [`VISITORS_PER_ADDRESS`] visitors kept as 8-byte hashes, about half a KiB) and
//! [`MAX_VIEWS`] visitor-page pairs (under 100 bytes each): about 40 MiB at the very most.
//! Past either, that map starts over.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use super::beacon::{BeaconKind, MAX_SECONDS};
use crate::time::Micros;

pub const BEACONS_PER_ADDRESS: u32 = 2_000;
pub const VISITORS_PER_ADDRESS: usize = 50;
pub const VIEWS_PER_VISITOR: u32 = 10;
pub const CLICKS_PER_VISITOR: u32 = 100;
const WINDOW_MICROS: Micros = 3_600 * 1_000_000;
/// Addresses whose use is kept at most.
pub const MAX_ADDRESSES: usize = 50_000;
/// Visitor-page pairs whose use is kept at most.
pub const MAX_VIEWS: usize = 200_000;

#[derive(Default)]
struct AddressUse {
    window: Micros,
    beacons: u32,
    /// The visitors seen from the address (hashes; a few dozen at most).
    visitors: Vec<u64>,
}

#[derive(Default)]
struct ViewUse {
    window: Micros,
    views: u32,
    clicks: u32,
    seconds: i64,
}

/// What one beacon may count for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowance {
    /// Counted (for a time beacon, these seconds of it).
    Count { seconds: i64 },
    /// Over a budget: dropped.
    Throttled,
}

/// The budgets' use so far.
#[derive(Default)]
pub struct BeaconBudget {
    addresses: Mutex<HashMap<String, AddressUse>>,
    views: Mutex<HashMap<(i64, i64, u64), ViewUse>>,
}

/// A visitor key as the budgets keep it.
fn visitor_hash(visitor: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    visitor.hash(&mut hasher);
    hasher.finish()
}

impl BeaconBudget {
    /// Takes one beacon of a person's browser (bots are never counted anyway) from its budgets.
    pub fn take(
        &self,
        address: &str,
        page: (i64, i64),
        visitor: &str,
        kind: BeaconKind,
        seconds: i64,
        now: Micros,
    ) -> Allowance {
        let window = now - now.rem_euclid(WINDOW_MICROS);
        let visitor = visitor_hash(visitor);
        {
            let mut addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
            if addresses.len() >= MAX_ADDRESSES {
                addresses.clear();
            }
            let used = addresses.entry(address.to_owned()).or_default();
            if used.window != window {
                *used = AddressUse {
                    window,
                    ..AddressUse::default()
                };
            }
            let new_visitor = !used.visitors.contains(&visitor);
            if used.beacons >= BEACONS_PER_ADDRESS
                || (new_visitor && used.visitors.len() >= VISITORS_PER_ADDRESS)
            {
                return Allowance::Throttled;
            }
            used.beacons += 1;
            if new_visitor {
                used.visitors.push(visitor);
            }
        }
        let mut views = self.views.lock().unwrap_or_else(|p| p.into_inner());
        if views.len() >= MAX_VIEWS {
            views.clear();
        }
        let used = views.entry((page.0, page.1, visitor)).or_default();
        if used.window != window {
            *used = ViewUse {
                window,
                ..ViewUse::default()
            };
        }
        match kind {
            BeaconKind::View if used.views >= VIEWS_PER_VISITOR => Allowance::Throttled,
            BeaconKind::View => {
                used.views += 1;
                Allowance::Count { seconds: 0 }
            }
            BeaconKind::Click if used.clicks >= CLICKS_PER_VISITOR => Allowance::Throttled,
            BeaconKind::Click => {
                used.clicks += 1;
                Allowance::Count { seconds: 0 }
            }
            BeaconKind::Scroll => Allowance::Count { seconds: 0 },
            BeaconKind::Time => {
                // A view reported in an earlier window still earns its own time.
                let allowed = i64::from(used.views.max(1)) * MAX_SECONDS - used.seconds;
                let seconds = seconds.clamp(0, allowed.max(0));
                if seconds == 0 {
                    return Allowance::Throttled;
                }
                used.seconds += seconds;
                Allowance::Count { seconds }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_is_capped_per_view_not_per_beacon() {
        let budget = BeaconBudget::default();
        let take = |kind, seconds| budget.take("a", (1, 1), "v", kind, seconds, 0);
        assert_eq!(take(BeaconKind::View, 0), Allowance::Count { seconds: 0 });
        assert_eq!(
            take(BeaconKind::Time, MAX_SECONDS - 10),
            Allowance::Count {
                seconds: MAX_SECONDS - 10
            }
        );
        assert_eq!(take(BeaconKind::Time, 60), Allowance::Count { seconds: 10 });
        assert_eq!(take(BeaconKind::Time, 60), Allowance::Throttled);
        // A second view earns time of its own.
        take(BeaconKind::View, 0);
        assert_eq!(take(BeaconKind::Time, 60), Allowance::Count { seconds: 60 });
    }

    #[test]
    fn one_address_cannot_be_thousands_of_visitors_or_views() {
        let budget = BeaconBudget::default();
        let counted = (0..4_000)
            .filter(|n| {
                let visitor = format!("visitor-{n}");
                budget.take("203.0.113.7", (1, 1), &visitor, BeaconKind::View, 0, 0)
                    != Allowance::Throttled
            })
            .count();
        assert_eq!(counted, VISITORS_PER_ADDRESS);
        let views = (0..100)
            .filter(|_| {
                budget.take("198.51.100.1", (1, 1), "one", BeaconKind::View, 0, 0)
                    != Allowance::Throttled
            })
            .count();
        assert_eq!(views, VIEWS_PER_VISITOR as usize);
        // The next hour starts afresh.
        assert_ne!(
            budget.take(
                "198.51.100.1",
                (1, 1),
                "one",
                BeaconKind::View,
                0,
                WINDOW_MICROS
            ),
            Allowance::Throttled
        );
    }

    #[test]
    fn the_budgets_own_memory_stays_bounded() {
        let budget = BeaconBudget::default();
        for n in 0..=MAX_ADDRESSES {
            let address = format!("2001:db8::{n:x}");
            budget.take(&address, (1, n as i64), "v", BeaconKind::View, 0, 0);
        }
        assert!(budget.addresses.lock().unwrap().len() <= MAX_ADDRESSES);
        assert!(budget.views.lock().unwrap().len() <= MAX_VIEWS);
    }
}
