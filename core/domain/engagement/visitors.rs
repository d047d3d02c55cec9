//! Who sent a beacon, and which page load it belongs to: a batch of beacons with each one's
//! visitor and kept target, as classification reads it.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::domain::beacon::Beacon;
use crate::store::engagement::PageIds;

/// Characters kept of a click's target.
const MAX_TARGET_CHARS: usize = 300;

/// A batch of beacons with, for each, who sent it and the target kept.
pub(super) struct Batch {
    pub beacons: Vec<Beacon>,
    /// Each beacon's page (`None`: no page has its address).
    pub pages: Vec<Option<Arc<PageIds>>>,
    /// Each beacon's visitor ([`visitor_key`], or an anonymous one per page load under Global
    /// Privacy Control).
    pub visitors: Vec<String>,
    /// Each beacon's target, cut to [`MAX_TARGET_CHARS`].
    pub targets: Vec<Option<String>>,
}

impl Batch {
    /// The batch of `beacons`, each for its page in `pages`, its visitors keyed under the
    /// day's `salt`; a browser sending `Sec-GPC: 1` is a new anonymous visitor per page load
    /// when `respect_gpc`.
    pub fn new(
        beacons: Vec<Beacon>,
        pages: Vec<Option<Arc<PageIds>>>,
        salt: &str,
        respect_gpc: bool,
    ) -> Self {
        debug_assert_eq!(beacons.len(), pages.len());
        let visitors = beacons
            .iter()
            .map(|b| match (b.gpc && respect_gpc, b.view_id.as_deref()) {
                // Global Privacy Control: each page load is its own anonymous visitor.
                (true, Some(id)) if valid_view_id(id) => format!("a:{id}"),
                (true, _) => format!("a:{}", crate::random::token(16)),
                (false, _) => visitor_key(b, salt),
            })
            .collect();
        let targets = beacons
            .iter()
            .map(|b| {
                let target = b.target.as_deref()?;
                Some(target.chars().take(MAX_TARGET_CHARS).collect())
            })
            .collect();
        Self {
            beacons,
            pages,
            visitors,
            targets,
        }
    }
}

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

/// A page load id as the script makes it (hex, 16 to 64 characters).
pub(super) fn valid_view_id(id: &str) -> bool {
    (16..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::beacon::BeaconKind;

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
            workspace_id: None,
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
