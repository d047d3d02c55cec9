//! The pages beacons are for, by their address's two slugs, as recording remembers them
//! between batches (a page's ids never change).

use std::collections::HashMap;
use std::sync::Arc;

use crate::store::engagement::PageIds;

/// Pages by campaign slug, then lead slug: looked up with the beacon's two `&str`s, nothing
/// allocated or copied. Keyed by a `(String, String)` pair, every lookup built the pair (two
/// copies) and every batch copied each page it found (two more); with a page on nearly every
/// beacon of a batch, that was four allocations a beacon. The pages are shared (`Arc`), so a
/// batch holds the ones it needs while the memory may start over.
#[derive(Default)]
pub struct KnownPages {
    by_campaign: HashMap<String, HashMap<String, Arc<PageIds>>>,
    len: usize,
}

impl KnownPages {
    pub fn get(&self, campaign_slug: &str, lead_slug: &str) -> Option<&Arc<PageIds>> {
        self.by_campaign.get(campaign_slug)?.get(lead_slug)
    }

    pub fn insert(&mut self, page: Arc<PageIds>) {
        let leads = match self.by_campaign.get_mut(page.campaign_slug.as_str()) {
            Some(leads) => leads,
            None => self
                .by_campaign
                .entry(page.campaign_slug.clone())
                .or_default(),
        };
        if leads.insert(page.lead_slug.clone(), page).is_none() {
            self.len += 1;
        }
    }

    /// The pages known.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn clear(&mut self) {
        self.by_campaign.clear();
        self.len = 0;
    }

    /// Every page known.
    pub fn pages(&self) -> impl Iterator<Item = &Arc<PageIds>> {
        self.by_campaign.values().flat_map(HashMap::values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(campaign: &str, lead: &str, lead_id: i64) -> Arc<PageIds> {
        Arc::new(PageIds {
            campaign_slug: campaign.into(),
            lead_slug: lead.into(),
            campaign_id: 1,
            lead_id,
            workspace_id: 1,
        })
    }

    #[test]
    fn pages_are_found_by_both_slugs_and_counted_once() {
        let mut known = KnownPages::default();
        known.insert(page("spring", "ada", 1));
        known.insert(page("spring", "grace", 2));
        known.insert(page("autumn", "ada", 3));
        known.insert(page("spring", "ada", 1));
        assert_eq!(known.len(), 3);
        assert_eq!(known.get("spring", "grace").map(|p| p.lead_id), Some(2));
        assert_eq!(known.get("autumn", "ada").map(|p| p.lead_id), Some(3));
        assert!(known.get("autumn", "grace").is_none());
        assert!(known.get("spri", "ngada").is_none());
        assert_eq!(known.pages().count(), 3);
        known.clear();
        assert_eq!(known.len(), 0);
        assert!(known.get("spring", "ada").is_none());
    }
}
