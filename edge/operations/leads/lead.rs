//! `/leads/get`: one lead read whole, with its variables, audiences, engagement and pages.

use std::collections::BTreeMap;

use lps::{proto, wire};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::summary::{LeadPageBody, LeadSummary};
use crate::operations::caller::{Caller, Reply};
use crate::operations::error::{ApiError, ErrorBody};
use crate::operations::input::{Input, Lenient};

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LeadQuery {
    #[param(value_type = i64)]
    pub lead_id: Lenient<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct AudienceRefBody {
    pub id: i64,
    pub name: String,
}

#[derive(Serialize, ToSchema)]
pub struct LeadBody {
    pub lead_id: i64,
    pub service_page_url: Option<String>,
    pub name: String,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub company_domain: Option<String>,
    /// Every variable the lead has a value for.
    pub variables: BTreeMap<String, String>,
    pub audiences: Vec<AudienceRefBody>,
    pub pending_enrichments: Vec<String>,
    pub created_at: String,
    /// Beyond the specification: what visitors did on the lead's pages (every campaign),
    /// counted visits only (no bots, no plain fetches of the page).
    pub engagement: LeadEngagementBody,
    /// Extension: ISO 8601 (UTC), when a person was last active on its pages (a counted view,
    /// click, scroll, time on the page or form submission); null if never.
    pub last_activity_at: Option<String>,
    /// Extension: every campaign page of the lead, oldest first (`service_page_url` is the
    /// oldest's address).
    pub pages: Vec<LeadPageBody>,
}

/// A lead's counted engagement over all its pages.
#[derive(Serialize, ToSchema)]
pub struct LeadEngagementBody {
    /// Counted page views.
    pub views: i64,
    /// ISO 8601 (UTC); null before the first counted view.
    pub first_viewed_at: Option<String>,
    pub last_viewed_at: Option<String>,
    /// Clicks on links and buttons.
    pub clicks: i64,
    /// Whether a visitor reached the bottom of a page (or it fit on screen).
    pub scrolled_to_bottom: bool,
    /// Seconds the pages were visible, summed.
    pub engaged_seconds: i64,
    pub form_submissions: i64,
    /// Extension: the engagement score now, two decimals: a person's views (1, a return
    /// visit 2 more), reaching the end (1), clicks (3) and form submissions (5), each halving
    /// every 14 days.
    #[schema(example = 9.5)]
    pub score: f64,
    /// Extension: ISO 8601 (UTC), when the score first reached the hot threshold (`lead.hot`
    /// was sent then); null if it never did.
    pub hot_at: Option<String>,
}

fn lead_engagement(sums: proto::LeadEngagement) -> LeadEngagementBody {
    LeadEngagementBody {
        views: sums.views,
        first_viewed_at: sums.first_viewed_at.as_ref().map(wire::iso8601),
        last_viewed_at: sums.last_viewed_at.as_ref().map(wire::iso8601),
        clicks: sums.clicks,
        scrolled_to_bottom: sums.scrolled_to_bottom,
        engaged_seconds: sums.engaged_seconds,
        form_submissions: sums.form_submissions,
        score: sums.score,
        hot_at: sums.hot_at.as_ref().map(wire::iso8601),
    }
}

/// One lead with its variables, audiences and engagement. Unknown (or another workspace's): 404
/// `Lead not found`.
#[utoipa::path(get, path = "/leads/get", tag = "Leads", params(LeadQuery),
    responses((status = 200, body = LeadBody),
        (status = 404, body = ErrorBody, description = "Lead not found"),
        (status = 422, body = ErrorBody)))]
pub(crate) async fn get(
    caller: Caller,
    Input(query, mut check): Input<LeadQuery>,
) -> Result<Reply<LeadBody>, ApiError> {
    let request = proto::GetLeadRequest {
        lead_id: check.field("lead_id", query.lead_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.leads().get_lead(request).await },
            |r| {
                let LeadSummary {
                    lead_id,
                    service_page_url,
                    name,
                    email,
                    company_name,
                    company_domain,
                    created_at,
                    last_activity_at,
                    pages,
                } = r.lead.unwrap_or_default().into();
                LeadBody {
                    lead_id,
                    service_page_url,
                    name,
                    email,
                    company_name,
                    company_domain,
                    variables: r.variables.into_iter().collect(),
                    audiences: r
                        .audiences
                        .into_iter()
                        .map(|a| AudienceRefBody {
                            id: a.id,
                            name: a.name,
                        })
                        .collect(),
                    pending_enrichments: r.pending_enrichments,
                    created_at,
                    engagement: lead_engagement(r.engagement.unwrap_or_default()),
                    last_activity_at,
                    pages,
                }
            },
        )
        .await
}
