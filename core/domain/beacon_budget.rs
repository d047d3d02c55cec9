//! How much engagement one visitor address and one visitor's view of a page may report: the
//! tracking script is public, so anyone can send beacons, and without a budget one address
//! could make a page look viewed by thousands for hours.
//!
//! The budgets, per hour (fixed windows), in this core process:
//! - one address: [`BEACONS_PER_ADDRESS`] beacons; past it beacons are dropped (counted as
//!   throttled in the metrics), which bounds what one address can make lps store;
//! - one address: [`VISITORS_PER_ADDRESS`] distinct visitors over all pages, and
//!   [`VISITORS_PER_ADDRESS_PAGE`] distinct visitors of one page (cookie ids are the client's to
//!   choose; an office behind one address has some dozens of people, a few of them on one
//!   lead's page);
//! - one network (the address's IPv4 /24 or IPv6 /64, [`network_of`]): [`BEACONS_PER_NETWORK`]
//!   beacons, [`VISITORS_PER_NETWORK`] visitors, [`VISITORS_PER_NETWORK_PAGE`] visitors of one
//!   page, so a block of rented addresses buys what one address does on a page;
//! - one visitor on one page: [`VIEWS_PER_VISITOR`] views, [`CLICKS_PER_VISITOR`] clicks, and
//!   engaged time of at most [`MAX_SECONDS`] per view counted (time is capped per view, not per
//!   beacon).
//!
//! Beacons past the visitor and view budgets are kept, as `automated` with the budget as the
//! reason, never counted. (One view per page load is held in `engagement::record`, by the
//! load's view id; what a lead's score and engaged time may gain an hour from all visitors
//! together is held where they are stored, `score::LeadBudget`.)
//!
//! The budgets' own memory is bounded too: at most [`MAX_ADDRESSES`] addresses and networks
//! (each with at most [`VISITORS_PER_NETWORK`] visitors kept as 8-byte hashes, under a KiB) and
//! [`MAX_VIEWS`] visitor-page and address-page pairs (under 100 bytes each): about 70 MiB at
//! the very most. Past either, that map starts over.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Mutex;

use super::beacon::{BeaconKind, MAX_SECONDS};
use crate::time::Micros;

pub const BEACONS_PER_ADDRESS: u32 = 2_000;
pub const VISITORS_PER_ADDRESS: usize = 50;
pub const VISITORS_PER_ADDRESS_PAGE: usize = 5;
/// The budgets of a network (an IPv4 /24, an IPv6 /64): one party's addresses, so renting
/// more of them buys no more visitors of one page.
pub const BEACONS_PER_NETWORK: u32 = 8_000;
pub const VISITORS_PER_NETWORK: usize = 100;
pub const VISITORS_PER_NETWORK_PAGE: usize = 5;
pub const VIEWS_PER_VISITOR: u32 = 10;
pub const CLICKS_PER_VISITOR: u32 = 100;
const WINDOW_MICROS: Micros = 3_600 * 1_000_000;
/// Addresses and networks whose use is kept at most.
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

/// The visitors of one page seen from one address in the window that starts at `.0`.
type PageVisitors = (Micros, Vec<u64>);

/// What one beacon may count for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowance {
    /// Counted (for a time beacon, these seconds of it).
    Count { seconds: i64 },
    /// Over a visitor or view budget: kept as automated, for this reason.
    Automated(&'static str),
    /// Over the address's (or its network's) beacon budget: dropped.
    Throttled,
}

/// Where beacons come from, each kind with budgets of its own.
struct Source {
    beacons: u32,
    visitors: usize,
    visitors_of_page: usize,
    too_many_visitors: &'static str,
    too_many_of_page: &'static str,
}

const ADDRESS: Source = Source {
    beacons: BEACONS_PER_ADDRESS,
    visitors: VISITORS_PER_ADDRESS,
    visitors_of_page: VISITORS_PER_ADDRESS_PAGE,
    too_many_visitors: "more than 50 visitors from one address in an hour",
    too_many_of_page: "more than 5 visitors of one page from one address in an hour",
};

const NETWORK: Source = Source {
    beacons: BEACONS_PER_NETWORK,
    visitors: VISITORS_PER_NETWORK,
    visitors_of_page: VISITORS_PER_NETWORK_PAGE,
    too_many_visitors: "more than 100 visitors from one network (/24 or /64) in an hour",
    too_many_of_page: "more than 5 visitors of one page from one network (/24 or /64) in an hour",
};

/// The network an address is in, as the budgets key it: its first address, of the /24 for IPv4
/// (an IPv4 address written as IPv6 included), of the /64 for IPv6.
pub fn network_of(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            IpAddr::V4(Ipv4Addr::new(a, b, c, 0))
        }
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX))),
    }
}

/// Where beacons come from, as the budgets key it: an address, a network ([`network_of`]), or
/// text that is no address (the edge always sends one; a caller over gRPC might not). Parsed
/// once a beacon, and hashed as 17 bytes: the address's text was parsed, formatted into its
/// network's, copied and hashed twice on every beacon.
#[derive(Clone, PartialEq, Eq, Hash)]
enum SourceKey {
    Address(IpAddr),
    Network(IpAddr),
    NoAddress(Box<str>),
}

/// The budgets' use so far.
#[derive(Default)]
pub struct BeaconBudget {
    /// By address and by network.
    addresses: Mutex<HashMap<SourceKey, AddressUse>>,
    views: Mutex<HashMap<(i64, i64, u64), ViewUse>>,
    /// The visitors of one page seen from one address or network (it, campaign, lead).
    page_visitors: Mutex<HashMap<(SourceKey, i64, i64), PageVisitors>>,
    /// The key visitors are hashed under ([`BeaconBudget::visitor_hash`]).
    visitor_key: RandomState,
}

impl BeaconBudget {
    /// Takes one beacon of a person's browser (bots are never counted anyway) from its budgets:
    /// its address's, its network's, then its visitor's on the page.
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
        let visitor = self.visitor_hash(visitor);
        let ip = address.parse::<IpAddr>().ok();
        let source = match ip {
            Some(ip) => SourceKey::Address(ip),
            None => SourceKey::NoAddress(address.into()),
        };
        if let Some(refused) = self.take_source(source, &ADDRESS, page, visitor, window) {
            return refused;
        }
        if let Some(ip) = ip {
            let network = SourceKey::Network(network_of(ip));
            if let Some(refused) = self.take_source(network, &NETWORK, page, visitor, window) {
                return refused;
            }
        }
        self.take_view(page, visitor, kind, seconds, window)
    }

    /// A visitor as the budgets keep it: an 8-byte hash of its cookie id, under this process's
    /// own random key. Cookie ids are the sender's to choose; under a key everyone knows
    /// (`DefaultHasher::new()`'s), a sender could search out pairs of ids with one hash, which
    /// the budgets would take for one visitor while the stored beacons count two.
    fn visitor_hash(&self, visitor: &str) -> u64 {
        self.visitor_key.hash_one(visitor)
    }

    /// One beacon from `source` (an address or a network): `None` when within its budgets.
    fn take_source(
        &self,
        source: SourceKey,
        limits: &Source,
        page: (i64, i64),
        visitor: u64,
        window: Micros,
    ) -> Option<Allowance> {
        let mut addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        if addresses.len() >= MAX_ADDRESSES {
            addresses.clear();
        }
        let used = addresses.entry(source.clone()).or_default();
        if used.window != window {
            *used = AddressUse {
                window,
                ..AddressUse::default()
            };
        }
        if used.beacons >= limits.beacons {
            return Some(Allowance::Throttled);
        }
        used.beacons += 1;
        // One page's visitors first (the tighter budget, and the clearer reason).
        let mut pages = self.page_visitors.lock().unwrap_or_else(|p| p.into_inner());
        if pages.len() >= MAX_VIEWS {
            pages.clear();
        }
        let (used_window, visitors) = pages.entry((source, page.0, page.1)).or_default();
        if *used_window != window {
            *used_window = window;
            visitors.clear();
        }
        if !visitors.contains(&visitor) {
            if visitors.len() >= limits.visitors_of_page {
                return Some(Allowance::Automated(limits.too_many_of_page));
            }
            if !used.visitors.contains(&visitor) {
                if used.visitors.len() >= limits.visitors {
                    return Some(Allowance::Automated(limits.too_many_visitors));
                }
                used.visitors.push(visitor);
            }
            visitors.push(visitor);
        }
        None
    }

    /// One beacon of a visitor on a page, within its views', clicks' and time's budgets.
    fn take_view(
        &self,
        page: (i64, i64),
        visitor: u64,
        kind: BeaconKind,
        seconds: i64,
        window: Micros,
    ) -> Allowance {
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
            BeaconKind::View if used.views >= VIEWS_PER_VISITOR => {
                Allowance::Automated("more than 10 views of one page by one visitor in an hour")
            }
            BeaconKind::View => {
                used.views += 1;
                Allowance::Count { seconds: 0 }
            }
            BeaconKind::Click if used.clicks >= CLICKS_PER_VISITOR => {
                Allowance::Automated("more than 100 clicks on one page by one visitor in an hour")
            }
            BeaconKind::Click => {
                used.clicks += 1;
                Allowance::Count { seconds: 0 }
            }
            BeaconKind::Scroll | BeaconKind::Confirm => Allowance::Count { seconds: 0 },
            BeaconKind::Time => {
                // A view reported in an earlier window still earns its own time.
                let allowed = i64::from(used.views.max(1)) * MAX_SECONDS - used.seconds;
                let seconds = seconds.clamp(0, allowed.max(0));
                if seconds == 0 {
                    return Allowance::Automated("more than 30 minutes of time for one view");
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
        assert!(matches!(
            take(BeaconKind::Time, 60),
            Allowance::Automated(_)
        ));
        // A second view earns time of its own.
        take(BeaconKind::View, 0);
        assert_eq!(take(BeaconKind::Time, 60), Allowance::Count { seconds: 60 });
    }

    #[test]
    fn one_address_cannot_be_thousands_of_visitors_or_views() {
        let budget = BeaconBudget::default();
        let counted = |budget: &BeaconBudget, address: &str, pages: i64| {
            (0..4_000)
                .filter(|n| {
                    let visitor = format!("visitor-{n}");
                    let page = (1, n % pages);
                    matches!(
                        budget.take(address, page, &visitor, BeaconKind::View, 0, 0),
                        Allowance::Count { .. }
                    )
                })
                .count()
        };
        assert_eq!(
            counted(&budget, "203.0.113.7", 1),
            VISITORS_PER_ADDRESS_PAGE
        );
        assert_eq!(counted(&budget, "203.0.113.8", 1_000), VISITORS_PER_ADDRESS);
        let views = (0..100)
            .filter(|_| {
                matches!(
                    budget.take("198.51.100.1", (1, 1), "one", BeaconKind::View, 0, 0),
                    Allowance::Count { .. }
                )
            })
            .count();
        assert_eq!(views, VIEWS_PER_VISITOR as usize);
        // Past the address's beacon budget, beacons are dropped.
        let dropped = (0..BEACONS_PER_ADDRESS + 10)
            .filter(|_| {
                budget.take("198.51.100.2", (1, 1), "one", BeaconKind::Scroll, 0, 0)
                    == Allowance::Throttled
            })
            .count();
        assert_eq!(dropped, 10);
        // The next hour starts afresh.
        assert!(matches!(
            budget.take(
                "198.51.100.1",
                (1, 1),
                "one",
                BeaconKind::View,
                0,
                WINDOW_MICROS
            ),
            Allowance::Count { .. }
        ));
    }

    #[test]
    fn a_network_buys_no_more_visitors_of_a_page_than_one_address() {
        let budget = BeaconBudget::default();
        // 20 addresses of one /24, each a new visitor of one page: five count in all.
        let counted = (1..=20)
            .filter(|n| {
                let address = format!("198.51.100.{n}");
                matches!(
                    budget.take(&address, (1, 1), &address, BeaconKind::View, 0, 0),
                    Allowance::Count { .. }
                )
            })
            .count();
        assert_eq!(counted, VISITORS_PER_NETWORK_PAGE);
        // The same in an IPv6 /64, and an IPv4 address written as IPv6 is in its /24.
        let counted = (1..=20)
            .filter(|n| {
                let address = format!("2001:db8:1:2::{n:x}");
                matches!(
                    budget.take(&address, (1, 1), &address, BeaconKind::View, 0, 0),
                    Allowance::Count { .. }
                )
            })
            .count();
        assert_eq!(counted, VISITORS_PER_NETWORK_PAGE);
        assert_eq!(
            network_of("::ffff:198.51.100.7".parse().unwrap()),
            "198.51.100.0".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            network_of("2001:db8:1:2:3:4:5:6".parse().unwrap()),
            "2001:db8:1:2::".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            budget.take("::ffff:198.51.100.77", (1, 1), "x", BeaconKind::View, 0, 0),
            Allowance::Automated(NETWORK.too_many_of_page)
        );
        // Another network is budgeted apart.
        assert!(matches!(
            budget.take("203.0.113.9", (1, 1), "y", BeaconKind::View, 0, 0),
            Allowance::Count { .. }
        ));
    }

    #[test]
    fn visitors_are_hashed_under_a_key_of_each_process() {
        // Two processes' budgets (two `BeaconBudget`s) hash one cookie id apart: the key is
        // not one a sender could search collisions under (equal by chance once in 2^64).
        let (one, other) = (BeaconBudget::default(), BeaconBudget::default());
        assert_ne!(
            one.visitor_hash("lps_vid-1"),
            other.visitor_hash("lps_vid-1")
        );
        assert_eq!(one.visitor_hash("lps_vid-1"), one.visitor_hash("lps_vid-1"));
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
        assert!(budget.page_visitors.lock().unwrap().len() <= MAX_VIEWS);
    }
}
