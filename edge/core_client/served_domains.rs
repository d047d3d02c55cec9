//! The workspaces' own domains this edge serves pages on (hostname -> workspace), as core lists
//! them (`VisitorService.ListServedDomains`): asked again whenever core's change stream says
//! the domains changed, or starts afresh (`everything`), before that change counts as applied,
//! so whoever was told "verified" finds the host served on the very next request.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// A verified domain: whose pages it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    pub workspace_id: i64,
}

#[derive(Default)]
pub struct ServedDomains {
    hosts: RwLock<HashMap<String, Served>>,
    /// Whether any domain is served: most deployments have none, and their every request
    /// skips the map.
    any: AtomicBool,
}

impl ServedDomains {
    /// Whether any domain is served.
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// The domain `host` names (lower case, no port), if it is served.
    pub fn get(&self, host: &str) -> Option<Served> {
        if !self.any() {
            return None;
        }
        self.hosts
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(host)
            .copied()
    }

    /// Replaces what is served with core's list.
    pub fn replace(&self, domains: Vec<lps::proto::ServedDomain>) {
        let hosts: HashMap<String, Served> = domains
            .into_iter()
            .map(|domain| {
                (
                    domain.hostname.to_ascii_lowercase(),
                    Served {
                        workspace_id: domain.workspace_id,
                    },
                )
            })
            .collect();
        let any = !hosts.is_empty();
        *self.hosts.write().unwrap_or_else(|e| e.into_inner()) = hosts;
        self.any.store(any, Ordering::Release);
    }
}
