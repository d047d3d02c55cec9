//! What a page's tracking script reports: one beacon, its kind, and the most time it may add.

use crate::time::Micros;

/// Engaged seconds one time beacon may add (the script caps a page view at this too).
pub const MAX_SECONDS: i64 = 30 * 60;
/// Seconds a shown page must have been visible, without an interaction, for its view to be a
/// person's.
pub const CONFIRM_SECONDS: i64 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeaconKind {
    View,
    Click,
    Scroll,
    Time,
    /// The evidence of a person on a shown page (an interaction, or visible for a while).
    Confirm,
}

impl BeaconKind {
    /// The kind as `page_events.kind` stores it ([`BeaconKind::as_str`]).
    pub(crate) fn from_stored(kind: &str) -> Option<Self> {
        [
            Self::View,
            Self::Click,
            Self::Scroll,
            Self::Time,
            Self::Confirm,
        ]
        .into_iter()
        .find(|k| k.as_str() == kind)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::View => "view",
            Self::Click => "click",
            Self::Scroll => "scroll",
            Self::Time => "time",
            Self::Confirm => "confirm",
        }
    }

    /// The name of the counted event, as `WatchEngagement` and `/leads/search` call it.
    pub(crate) fn event(self) -> &'static str {
        match self {
            Self::View => "page_viewed",
            Self::Click => "button_clicked",
            Self::Scroll => "scroll_100_percent",
            Self::Time => "time_on_page",
            Self::Confirm => "view_confirmed",
        }
    }
}

/// One report of a page's tracking script.
#[derive(Debug, Clone)]
pub struct Beacon {
    pub campaign_slug: String,
    pub lead_slug: String,
    pub kind: BeaconKind,
    /// The first-party cookie's visitor id, when the browser keeps cookies.
    pub visitor_id: Option<String>,
    pub ip_address: String,
    pub user_agent: String,
    pub webdriver: bool,
    pub seconds: i64,
    pub target: Option<String>,
    pub occurred_at: Micros,
    /// The page load the beacon belongs to (made by the script).
    pub view_id: Option<String>,
    /// The first interaction the script saw (`pointer`, `touch`, `key`, `wheel`, `scroll`,
    /// `focus`), empty when none.
    pub interaction: String,
    /// Seconds the page had been visible, by the script's count.
    pub visible_seconds: i64,
    /// The browser asked not to be tracked (`Sec-GPC: 1`).
    pub gpc: bool,
    /// Sent on this workspace's own domain: for its pages only.
    pub workspace_id: Option<i64>,
}
