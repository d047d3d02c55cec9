//! What visitors did on a lead's pages (`/leads/activity`) and the leads people engaged with
//! recently (`/leads/engaged`).

use std::collections::BTreeMap;

use lps::{proto, wire};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::operations::caller::{Caller, Reply};
use crate::operations::error::{ApiError, ErrorBody};
use crate::operations::input::{Input, Lenient};

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActivityQuery {
    #[param(value_type = i64)]
    pub lead_id: Lenient<i64>,
    /// Only what happened before this instant (RFC 3339): the previous answer's
    /// `next_before`.
    #[param(value_type = Option<String>, format = DateTime)]
    pub before: Lenient<String>,
    /// 1 to 100, default 50.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, default = 50)]
    pub limit: Lenient<i64>,
}

/// One thing a visitor did on a lead's page.
#[derive(Serialize, ToSchema)]
pub struct ActivityEntryBody {
    /// `page_viewed`, `time_on_page`, `scroll_100_percent`, `button_clicked`,
    /// `form_submitted`.
    #[schema(example = "page_viewed")]
    pub event: String,
    /// ISO 8601, UTC.
    pub occurred_at: String,
    pub campaign_id: i64,
    pub campaign_name: String,
    /// `time_on_page`: the visible seconds it added.
    pub seconds: i64,
    /// `button_clicked`: the link or button.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `form_submitted`: the form's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form_id: Option<String>,
    /// `form_submitted`: every field answered, by name (the email among them).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, String>,
    /// What the visit was taken for: `person` (counted), `unconfirmed` (shown, no evidence of
    /// a person), `automated`, `scanner_network`. Only `page_viewed` entries are listed when
    /// not a person's.
    #[schema(example = "person")]
    pub class: String,
    /// Why, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "confirmed by an interaction (pointer)")]
    pub reason: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ActivityBody {
    pub entries: Vec<ActivityEntryBody>,
    /// Set when there is more: pass it as `before` for the next page.
    pub next_before: Option<String>,
}

/// Extension: what a visitor did on the lead's pages, newest first: every view with its class
/// and the reason (`person` views are the counted ones; `unconfirmed`, `automated` and
/// `scanner_network` ones are listed so every decision can be inspected), and a person's time
/// on the page, reaching the end, clicks and form submissions (with every field), a page at a
/// time. Unknown (or another workspace's) lead: 404.
#[utoipa::path(get, path = "/leads/activity", tag = "Leads", params(ActivityQuery),
    responses((status = 200, body = ActivityBody),
        (status = 404, body = ErrorBody, description = "Lead not found"),
        (status = 422, body = ErrorBody)))]
pub(crate) async fn activity(
    caller: Caller,
    Input(query, mut check): Input<ActivityQuery>,
) -> Result<Reply<ActivityBody>, ApiError> {
    let before = check.field("before", query.before).and_then(|text| {
        let parsed = crate::operations::input::parse_timestamp(&text);
        if parsed.is_none() {
            check.violation(lps::wire::FieldViolation::must_be(
                "before",
                "a date and time",
            ));
        }
        parsed
    });
    let request = proto::ListLeadActivityRequest {
        lead_id: check.field("lead_id", query.lead_id),
        before,
        limit: check.field("limit", query.limit),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.engagement().list_lead_activity(request).await },
            |r| ActivityBody {
                entries: r
                    .entries
                    .into_iter()
                    .map(|entry| ActivityEntryBody {
                        class: wire::visit_class_name(entry.class()).to_owned(),
                        event: entry.event,
                        occurred_at: entry
                            .occurred_at
                            .as_ref()
                            .map(wire::iso8601)
                            .unwrap_or_default(),
                        campaign_id: entry.campaign_id,
                        campaign_name: entry.campaign_name,
                        seconds: entry.seconds,
                        target: entry.target,
                        form_id: entry.form_id,
                        fields: entry.fields.into_iter().collect(),
                        reason: entry.reason,
                    })
                    .collect(),
                next_before: r.next_before.as_ref().map(wire::iso8601),
            },
        )
        .await
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EngagedQuery {
    #[param(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// How far back, 1 to 90 days; default 7.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 90, default = 7)]
    pub days: Lenient<i64>,
    /// 1 to 100, default 20.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, default = 20)]
    pub limit: Lenient<i64>,
}

/// What a lead did on one campaign's page in the period.
#[derive(Serialize, ToSchema)]
pub struct EngagedLeadBody {
    pub lead_id: i64,
    /// First name, and a custom `last_name` when there is one.
    pub name: String,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub campaign_id: i64,
    pub campaign_name: String,
    /// ISO 8601, UTC: their latest counted activity.
    pub last_activity_at: String,
    /// Counted views.
    pub views: i64,
    pub scrolled_to_end: bool,
    pub clicks: i64,
    pub form_submissions: i64,
    /// The lead's engagement score now (see `engagement.score` on `/leads/get`).
    pub score: f64,
}

/// Extension: the leads people engaged with recently (counted activity only: bots never),
/// most recently active first, per lead and campaign.
#[utoipa::path(get, path = "/leads/engaged", tag = "Leads", params(EngagedQuery),
    responses((status = 200, body = Vec<EngagedLeadBody>),
        (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(crate) async fn engaged(
    caller: Caller,
    Input(query, mut check): Input<EngagedQuery>,
) -> Result<Reply<Vec<EngagedLeadBody>>, ApiError> {
    let request = proto::ListEngagedLeadsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        days: check.field("days", query.days),
        limit: check.field("limit", query.limit),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.engagement().list_engaged_leads(request).await },
            |r| {
                r.leads
                    .into_iter()
                    .map(|lead| EngagedLeadBody {
                        lead_id: lead.lead_id,
                        name: lead.name,
                        email: lead.email,
                        company_name: lead.company_name,
                        campaign_id: lead.campaign_id,
                        campaign_name: lead.campaign_name,
                        last_activity_at: lead
                            .last_activity_at
                            .as_ref()
                            .map(wire::iso8601)
                            .unwrap_or_default(),
                        views: lead.views,
                        scrolled_to_end: lead.scrolled_to_end,
                        clicks: lead.clicks,
                        form_submissions: lead.form_submissions,
                        score: lead.score,
                    })
                    .collect()
            },
        )
        .await
}
