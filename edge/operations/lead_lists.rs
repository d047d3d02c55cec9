//! Lists of leads: `/leads/search` (the contract's, with extensions: more filters, sorts and
//! keyset pages) and `/leads/export-csv` (extension: every match as CSV, streamed).

use lps::proto;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Check, Input, Lenient};
use super::leads::LeadSummary;
use crate::spreadsheet::LeadsCsv;

/// What a list of leads is filtered by: `/leads/search` and `/leads/export-csv` alike.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FilterQuery {
    #[param(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// Matches name, email or company.
    #[param(value_type = Option<String>, max_length = 255)]
    pub search: Lenient<String>,
    /// `campaign_ids[]=1&campaign_ids[]=2`, `campaign_ids=1&campaign_ids=2` or `campaign_ids=1,2`.
    #[param(value_type = Option<Vec<i64>>)]
    pub campaign_ids: Lenient<Vec<i64>>,
    /// `0` is the Default Audience.
    #[param(value_type = Option<Vec<i64>>)]
    pub audience_ids: Lenient<Vec<i64>>,
    /// `all`, `page_viewed`, `button_clicked`, `scroll_100_percent`, `form_submitted`.
    #[param(schema_with = engagement_schema)]
    pub engagement: Lenient<Vec<String>>,
    /// Extension: leads a person was last active on (a counted view, click, scroll, time on the
    /// page or form submission) at or after this instant (RFC 3339, or a date: its midnight UTC).
    #[param(value_type = Option<String>, format = DateTime)]
    pub last_activity_from: Lenient<String>,
    /// Extension: leads last active before this instant (RFC 3339, or a date: its midnight UTC).
    #[param(value_type = Option<String>, format = DateTime)]
    pub last_activity_to: Lenient<String>,
    /// Extension: only leads whose engagement score now is at or above the hot threshold
    /// (`--hot-score`, 8 by default; none when it is 0).
    #[param(value_type = Option<bool>)]
    pub hot_only: Lenient<bool>,
    /// Extension: only these leads (at most 1,000).
    #[param(value_type = Option<Vec<i64>>, max_items = 1000)]
    pub lead_ids: Lenient<Vec<i64>>,
}

/// `engagement`: a list of the values core accepts.
fn engagement_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(lps::wire::ENGAGEMENT_VALUES.iter().copied())),
        )
        .build()
}

impl FilterQuery {
    /// The search core runs, without its page.
    fn read(self, check: &mut Check) -> proto::SearchLeadsRequest {
        proto::SearchLeadsRequest {
            workspace_id: check.field("workspace_id", self.workspace_id),
            search: check.field("search", self.search),
            campaign_ids: check
                .field("campaign_ids", self.campaign_ids)
                .unwrap_or_default(),
            audience_ids: check
                .field("audience_ids", self.audience_ids)
                .unwrap_or_default(),
            engagement: check
                .field("engagement", self.engagement)
                .unwrap_or_default(),
            last_activity_from: check.timestamp("last_activity_from", self.last_activity_from),
            last_activity_to: check.timestamp("last_activity_to", self.last_activity_to),
            hot_only: check.field("hot_only", self.hot_only).unwrap_or(false),
            lead_ids: check.field("lead_ids", self.lead_ids).unwrap_or_default(),
            ..Default::default()
        }
    }
}

/// Which page of the matches, in which order.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1 to 100, default 25.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, default = 25)]
    pub limit: Lenient<i64>,
    /// Extension: matches skipped before the first returned (a page further on), 0 to
    /// 1,000,000, default 0. Without a ceiling: `after` (with it, skipped after the cursor).
    #[param(value_type = Option<i64>, minimum = 0, maximum = 1000000, default = 0)]
    pub offset: Lenient<i64>,
    /// Extension: `created` (newest first, the default), `score` (highest engagement score
    /// first, see `engagement.score` on `/leads/get`) or `last_activity` (most recently active
    /// first, never active last).
    #[param(value_type = Option<String>, pattern = "^(created|score|last_activity)$", default = "created")]
    pub sort: Lenient<String>,
    /// Extension: the page after this cursor (the previous answer's `next_cursor`, with the
    /// same filters), in the order the cursor was made in (`sort` is then not needed);
    /// `offset` skips that many more.
    #[param(value_type = Option<String>, max_length = 60,
        pattern = r"^(c\.[0-9]{1,18}|s\.[0-9a-f]{16}\.[0-9]{1,18}|a\.(-|[0-9]{1,18})\.[0-9]{1,18})$")]
    pub after: Lenient<String>,
}

/// `/leads/search`'s query: the filter and the page.
#[derive(Debug, Default, Deserialize)]
pub struct SearchQuery {
    #[serde(flatten)]
    filter: FilterQuery,
    #[serde(flatten)]
    page: PageQuery,
}

#[derive(Serialize, ToSchema)]
pub struct SearchEntryBody {
    pub lead_id: i64,
    pub service_page_url: Option<String>,
    pub name: String,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub company_domain: Option<String>,
    pub created_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct SearchBody {
    pub total: i64,
    pub returned: i64,
    pub leads: Vec<SearchEntryBody>,
    /// Extension: set when more leads match: pass it as `after` (with the same filters) for
    /// the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// Searches the workspace's leads, newest first.
#[utoipa::path(get, path = "/leads/search", tag = "Leads", params(FilterQuery, PageQuery),
    responses((status = 200, body = SearchBody), (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub(super) async fn search(
    caller: Caller,
    Input(query, mut check): Input<SearchQuery>,
) -> Result<Reply<SearchBody>, ApiError> {
    let SearchQuery { filter, page } = query;
    let request = proto::SearchLeadsRequest {
        limit: check.field("limit", page.limit),
        offset: check.field("offset", page.offset),
        sort: check.field("sort", page.sort),
        after: check.field("after", page.after),
        ..filter.read(&mut check)
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.leads().search_leads(request).await },
            |r| SearchBody {
                total: r.total,
                returned: r.leads.len() as i64,
                leads: r
                    .leads
                    .into_iter()
                    .map(|lead| SearchEntryBody::from(LeadSummary::from(lead)))
                    .collect(),
                next_cursor: r.next_cursor,
            },
        )
        .await
}

impl From<LeadSummary> for SearchEntryBody {
    fn from(lead: LeadSummary) -> Self {
        let LeadSummary {
            lead_id,
            service_page_url,
            name,
            email,
            company_name,
            company_domain,
            created_at,
            ..
        } = lead;
        Self {
            lead_id,
            service_page_url,
            name,
            email,
            company_name,
            company_domain,
            created_at,
        }
    }
}

/// Which campaign's pages an export lists.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportCampaignQuery {
    /// Only this campaign's pages, of the leads that have one there (404 `Campaign not
    /// found` unless it is the workspace's).
    #[param(value_type = Option<i64>)]
    pub campaign_id: Lenient<i64>,
}

/// `/leads/export-csv`'s query: the filter and the campaign.
#[derive(Debug, Default, Deserialize)]
pub struct ExportQuery {
    #[serde(flatten)]
    filter: FilterQuery,
    #[serde(flatten)]
    campaign: ExportCampaignQuery,
}

/// Extension: every lead `/leads/search`'s filters match, as CSV an email tool or a
/// spreadsheet takes as it is (UTF-8, a header line, RFC 4180 quoting), streamed as it is
/// read: one row per lead and campaign page (a lead without a page: one row, its page's
/// columns empty), newest lead first. Columns: `lead_id, email, first_name, last_name,
/// company_name, company_domain, title, campaign_id, campaign, page_url, score,
/// last_activity_at, created_at`, then one per custom variable of the workspace, oldest
/// first (`last_name` and `title` are the custom variables of those names). A cell that would
/// start a spreadsheet formula (`=`, `+`, `-`, `@`, tab, carriage return) gets a leading `'`.
/// A failure after the first rows cuts the file short (the download fails).
#[utoipa::path(get, path = "/leads/export-csv", tag = "Leads",
    params(FilterQuery, ExportCampaignQuery),
    responses((status = 200, content_type = "text/csv", body = String,
            description = "The CSV file, streamed"),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn export_csv(
    caller: Caller,
    Input(query, mut check): Input<ExportQuery>,
) -> Result<axum::response::Response, ApiError> {
    let ExportQuery { filter, campaign } = query;
    let request = proto::ExportLeadsRequest {
        campaign_id: check.field("campaign_id", campaign.campaign_id),
        filter: Some(filter.read(&mut check)),
    };
    let mut csv = LeadsCsv::default();
    caller
        .download(
            check,
            request,
            |core, request| async move { core.leads().export_leads(request).await },
            "text/csv; charset=utf-8",
            "attachment; filename=\"leads.csv\"",
            move |batch| csv.write(batch),
        )
        .await
}
