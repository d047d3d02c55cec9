//! Core's lead summary as the API shows it, shaped once for every body that shows a lead.

use lps::{proto, wire};
use serde::Serialize;
use utoipa::ToSchema;

/// One campaign page of a lead.
#[derive(Serialize, ToSchema)]
pub struct LeadPageBody {
    pub campaign_id: i64,
    pub campaign_name: String,
    /// The page's address.
    pub url: String,
    /// ISO 8601 (UTC), when the lead got the page.
    pub created_at: String,
}

/// Core's summary of a lead as the API shows it, shaped here once: every body that shows or
/// lists leads (`/leads/get`, `/leads/search`, a job's leads) takes its fields from this.
/// Core's message is taken apart whole, so a field added to it breaks the build here until it
/// is shown or left out on purpose.
pub struct LeadSummary {
    pub lead_id: i64,
    pub service_page_url: Option<String>,
    pub name: String,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub company_domain: Option<String>,
    /// ISO 8601 (UTC).
    pub created_at: String,
    /// ISO 8601 (UTC); null if never (job results: never set).
    pub last_activity_at: Option<String>,
    /// Every campaign page of the lead, oldest first (job results: none).
    pub pages: Vec<LeadPageBody>,
}

impl From<proto::LeadSummary> for LeadSummary {
    fn from(lead: proto::LeadSummary) -> Self {
        let proto::LeadSummary {
            lead_id,
            service_page_url,
            name,
            email,
            company_name,
            company_domain,
            created_at,
            // Shown with the rest of the engagement (`engagement.score` on `/leads/get`).
            score: _,
            last_activity_at,
            pages,
        } = lead;
        Self {
            lead_id,
            service_page_url,
            name,
            email,
            company_name,
            company_domain,
            created_at: created_at.as_ref().map(wire::iso8601).unwrap_or_default(),
            last_activity_at: last_activity_at.as_ref().map(wire::iso8601),
            pages: pages.into_iter().map(LeadPageBody::from).collect(),
        }
    }
}

impl From<proto::LeadPage> for LeadPageBody {
    fn from(page: proto::LeadPage) -> Self {
        let proto::LeadPage {
            campaign_id,
            campaign_name,
            url,
            created_at,
        } = page;
        Self {
            campaign_id,
            campaign_name,
            url,
            created_at: created_at.as_ref().map(wire::iso8601).unwrap_or_default(),
        }
    }
}
