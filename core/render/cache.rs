//! Compiled designs by campaign, each for the published version it was compiled from, and the
//! pages that failed to render (neither retried hot nor logged per visit).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::design::{CompiledDesign, RenderError};

/// Compiled designs by campaign, each for the one published version it was compiled from, and
/// the pages that failed to render, so a failure is neither retried hot nor logged per visit.
pub struct DesignCache {
    designs: Mutex<HashMap<i64, (i64, Compiled)>>,
    /// Pages whose render ran out of budget, by entity tag (which changes with the published
    /// version and the lead): answered 'unavailable' without rendering again.
    failed_pages: quick_cache::sync::Cache<String, ()>,
    /// Published versions (campaign, version) whose failure was logged.
    logged: quick_cache::sync::Cache<(i64, i64), ()>,
}

impl Default for DesignCache {
    fn default() -> Self {
        Self {
            designs: Mutex::default(),
            failed_pages: quick_cache::sync::Cache::new(10_000),
            logged: quick_cache::sync::Cache::new(1_000),
        }
    }
}

/// A published version as the cache keeps it.
#[derive(Clone)]
pub enum Compiled {
    Ready(Arc<CompiledDesign>),
    /// The audit refused it: every page of the version is unavailable.
    Refused,
}

impl DesignCache {
    /// The campaign's design at `version`, if compiled already.
    pub fn get(&self, campaign_id: i64, version: i64) -> Option<Compiled> {
        let designs = self.designs.lock().unwrap_or_else(|p| p.into_inner());
        designs
            .get(&campaign_id)
            .filter(|(cached, _)| *cached == version)
            .map(|(_, design)| design.clone())
    }

    pub fn put(&self, campaign_id: i64, version: i64, design: Compiled) {
        let mut designs = self.designs.lock().unwrap_or_else(|p| p.into_inner());
        designs.insert(campaign_id, (version, design));
    }

    /// Whether the page with this entity tag failed to render.
    pub fn failed(&self, etag: &str) -> bool {
        self.failed_pages.get(etag).is_some()
    }

    pub fn fail(&self, etag: String) {
        self.failed_pages.insert(etag, ());
    }

    /// Logs a failed render once per published version.
    pub fn note_failure(&self, campaign_id: i64, version: i64, err: &RenderError) {
        if self.logged.get(&(campaign_id, version)).is_none() {
            self.logged.insert((campaign_id, version), ());
            tracing::warn!(
                campaign_id,
                version,
                error = %err,
                "pages of this published design cannot be rendered; visitors see 'unavailable'"
            );
        }
    }
}
