//! `/leads/...`: upserts and imports (queued as durable jobs), job status and results, single
//! reads, activity, export and erasure of a lead (lists of leads: `lead_lists.rs`).

use std::collections::BTreeMap;

use lps::{proto, wire};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody, JobNotFoundBody, NoLeadsBody};
use super::input::{Check, Input, JsonArray, Lenient, proto_struct, proto_value};

/// One lead of a list: its variables, and for an update the lead's id or page address (which
/// may also be given inside `values`).
#[derive(ToSchema)]
#[allow(dead_code)] // documents the shape read by `lead_input`
pub struct LeadItem {
    /// Variable key to value: `first_name`, `email`, `company_name`, `company_domain`,
    /// `social_profile_url`, and custom keys (new keys create variables).
    #[schema(value_type = Object)]
    values: Map<String, Value>,
    lead_id: Option<i64>,
    service_page_url: Option<String>,
}

/// The flags every upsert and import accepts. The enrichment flags queue the matching
/// enrichment (as `POST /leads/enrich` does, paid in credits per lead) of every lead the job
/// stores; the job then goes on to `step_social`, `step_import`, `completed`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct Flags {
    /// Recorded on the job; sends nothing.
    #[schema(value_type = Option<bool>)]
    pub send_email: Lenient<bool>,
    /// Enrichment type `company_domain`: the company's site read and analysed.
    #[schema(value_type = Option<bool>)]
    pub is_generate_ai_analysis: Lenient<bool>,
    /// Enrichment type `person_analysis`.
    #[schema(value_type = Option<bool>)]
    pub is_generate_person_analysis: Lenient<bool>,
    /// Enrichment type `social_posts_person`.
    #[schema(value_type = Option<bool>)]
    pub is_scrape_person_posts: Lenient<bool>,
    /// Enrichment type `social_posts_company`.
    #[schema(value_type = Option<bool>)]
    pub is_scrape_company_posts: Lenient<bool>,
    /// Enrichment types `social_profile_url` and `company_domain`.
    #[schema(value_type = Option<bool>)]
    pub enrich_data: Lenient<bool>,
    /// The model writes `ai_opening_line` and `ai_headline` for each lead.
    #[schema(value_type = Option<bool>)]
    pub generate_ai_variables: Lenient<bool>,
    /// Recorded on the job; does nothing else.
    #[schema(value_type = Option<bool>)]
    pub trigger_audience_summary: Lenient<bool>,
}

impl Flags {
    fn read(self, check: &mut Check) -> proto::LeadFlags {
        let mut flag = |name: &str, value: Lenient<bool>| check.field(name, value).unwrap_or(false);
        proto::LeadFlags {
            send_email: flag("send_email", self.send_email),
            is_generate_ai_analysis: flag("is_generate_ai_analysis", self.is_generate_ai_analysis),
            is_generate_person_analysis: flag(
                "is_generate_person_analysis",
                self.is_generate_person_analysis,
            ),
            is_scrape_person_posts: flag("is_scrape_person_posts", self.is_scrape_person_posts),
            is_scrape_company_posts: flag("is_scrape_company_posts", self.is_scrape_company_posts),
            enrich_data: flag("enrich_data", self.enrich_data),
            generate_ai_variables: flag("generate_ai_variables", self.generate_ai_variables),
            trigger_audience_summary: flag(
                "trigger_audience_summary",
                self.trigger_audience_summary,
            ),
        }
    }
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct UpsertLeadsRequest {
    #[schema(value_type = Option<String>, max_length = 255)]
    pub from: Lenient<String>,
    #[schema(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    #[schema(value_type = Option<i64>)]
    pub audience_id: Lenient<i64>,
    /// Called once each lead's page exists (signed; see docs/api-guide.md).
    #[schema(value_type = Option<String>)]
    pub callback_url: Lenient<String>,
    #[serde(flatten)]
    pub flags: Flags,
    /// At most 25,000 leads.
    #[schema(value_type = Vec<LeadItem>, min_items = 1, max_items = 25000)]
    pub leads: Lenient<JsonArray>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct UpsertLeadRequest {
    #[schema(value_type = Option<String>, max_length = 255)]
    pub from: Lenient<String>,
    #[schema(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    #[schema(value_type = Option<i64>)]
    pub audience_id: Lenient<i64>,
    #[schema(value_type = Option<String>)]
    pub callback_url: Lenient<String>,
    #[serde(flatten)]
    pub flags: Flags,
    #[schema(value_type = Option<i64>)]
    pub lead_id: Lenient<i64>,
    #[schema(value_type = Option<String>)]
    pub service_page_url: Lenient<String>,
    /// Must include at least one of `first_name`, `email`, `company_name`, `company_domain`,
    /// `social_profile_url`.
    #[schema(value_type = Object)]
    pub values: Lenient<Map<String, Value>>,
}

#[derive(Serialize, ToSchema)]
pub struct JobIdBody {
    pub job_id: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct ImportRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = Vec<LeadItem>, min_items = 1, max_items = 25000)]
    pub leads: Lenient<JsonArray>,
    #[schema(value_type = Option<String>, max_length = 255)]
    pub from: Lenient<String>,
    #[serde(flatten)]
    pub flags: Flags,
    #[schema(value_type = Option<i64>)]
    pub audience_id: Lenient<i64>,
    /// Immediate import when no enrichment and no campaign is requested.
    #[schema(value_type = Option<bool>)]
    pub sync: Lenient<bool>,
    #[schema(value_type = Option<Vec<i64>>)]
    pub campaign_ids: Lenient<Vec<i64>>,
}

/// A queued import answers `{job_id}`; an immediate one the counts, with `job_id` null.
#[derive(Serialize, ToSchema)]
pub struct ImportBody {
    pub job_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead_ids: Option<Vec<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<RowErrorBody>>,
}

#[derive(Serialize, ToSchema)]
pub struct RowErrorBody {
    /// Position of the lead in the request, from 0.
    pub index: i64,
    pub message: String,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobQuery {
    /// The `job_id` an upsert or import returned.
    #[param(value_type = String, max_length = 64)]
    pub job_id: Lenient<String>,
}

#[derive(Serialize, ToSchema)]
pub struct JobStatusBody {
    /// `pending`, `processing`, `step_social` (enrichment: leads being fetched and analysed),
    /// `step_import` (enrichment: the last results being written), `completed` or `failed`.
    pub status: String,
    /// Rows stored so far (an enrichment job: leads handled).
    pub processed_rows: i64,
    pub total_rows: i64,
    /// Rows that could not be stored (an enrichment job: leads none of whose types worked).
    pub failed_rows: i64,
    /// Why each failed row failed (the first 1,000).
    pub errors: Vec<RowErrorBody>,
    /// Why the job failed, when it did.
    pub error: Option<String>,
    /// Leads whose enrichment failed, wholly or for some types, with why (the first 1,000);
    /// what a failed type cost is given back.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub enrichment_errors: Vec<EnrichmentErrorBody>,
}

#[derive(Serialize, ToSchema)]
pub struct EnrichmentErrorBody {
    pub lead_id: i64,
    pub message: String,
}

#[derive(Serialize, ToSchema)]
pub struct JobLeadBody {
    pub lead_id: i64,
    pub service_page_url: Option<String>,
    pub name: String,
    pub email: Option<String>,
    pub company_name: Option<String>,
}

impl From<LeadSummary> for JobLeadBody {
    fn from(lead: LeadSummary) -> Self {
        let LeadSummary {
            lead_id,
            service_page_url,
            name,
            email,
            company_name,
            ..
        } = lead;
        Self {
            lead_id,
            service_page_url,
            name,
            email,
            company_name,
        }
    }
}

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

/// One element of a `leads` list, passed to core as sent (core reads it).
fn lead_input(item: Value) -> proto::LeadInput {
    proto::LeadInput {
        lead: Some(proto_value(item)),
    }
}

/// Queues leads into a campaign; poll `GET /leads/get-status` with the `job_id`.
#[utoipa::path(post, path = "/leads/upsert-leads", tag = "Leads",
    request_body = UpsertLeadsRequest,
    responses((status = 200, body = JobIdBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn upsert_leads(
    caller: Caller,
    Input(body, mut check): Input<UpsertLeadsRequest>,
) -> Result<Reply<JobIdBody>, ApiError> {
    let request = proto::UpsertLeadsRequest {
        campaign_id: check.field("campaign_id", body.campaign_id),
        audience_id: check.field("audience_id", body.audience_id),
        callback_url: check.field("callback_url", body.callback_url),
        from: check.field("from", body.from),
        flags: Some(body.flags.read(&mut check)),
        leads: check
            .field("leads", body.leads)
            .map(|JsonArray(items)| items.into_iter().map(lead_input).collect())
            .unwrap_or_default(),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.leads().upsert_leads(request).await },
            |r| JobIdBody { job_id: r.job_id },
        )
        .await
}

/// Queues one lead; an existing one is found by `lead_id` or `service_page_url`.
#[utoipa::path(post, path = "/leads/upsert-lead", tag = "Leads",
    request_body = UpsertLeadRequest,
    responses((status = 200, body = JobIdBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody, description = "Invalid input; values name none of the five fields")))]
pub(super) async fn upsert_lead(
    caller: Caller,
    Input(body, mut check): Input<UpsertLeadRequest>,
) -> Result<Reply<JobIdBody>, ApiError> {
    let request = proto::UpsertLeadRequest {
        campaign_id: check.field("campaign_id", body.campaign_id),
        audience_id: check.field("audience_id", body.audience_id),
        callback_url: check.field("callback_url", body.callback_url),
        from: check.field("from", body.from),
        flags: Some(body.flags.read(&mut check)),
        lead_id: check.field("lead_id", body.lead_id),
        service_page_url: check.field("service_page_url", body.service_page_url),
        values: check.field("values", body.values).map(proto_struct),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.leads().upsert_lead(request).await },
            |r| JobIdBody { job_id: r.job_id },
        )
        .await
}

/// Imports leads without a campaign: queued, or immediate with `sync`.
#[utoipa::path(post, path = "/leads/import-to-workspace", tag = "Leads",
    request_body = ImportRequest,
    responses((status = 200, body = ImportBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign or audience not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn import_to_workspace(
    caller: Caller,
    Input(body, mut check): Input<ImportRequest>,
) -> Result<Reply<ImportBody>, ApiError> {
    let request = proto::ImportLeadsRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        leads: check
            .field("leads", body.leads)
            .map(|JsonArray(items)| items.into_iter().map(lead_input).collect())
            .unwrap_or_default(),
        from: check.field("from", body.from),
        flags: Some(body.flags.read(&mut check)),
        audience_id: check.field("audience_id", body.audience_id),
        sync: check.field("sync", body.sync).unwrap_or(false),
        campaign_ids: check
            .field("campaign_ids", body.campaign_ids)
            .unwrap_or_default(),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.leads().import_leads(request).await },
            |r| match r.job_id {
                Some(job_id) => ImportBody {
                    job_id: Some(job_id),
                    success: None,
                    imported_count: None,
                    duplicate_count: None,
                    lead_ids: None,
                    errors: None,
                },
                None => ImportBody {
                    job_id: None,
                    success: Some(r.success),
                    imported_count: Some(r.imported_count),
                    duplicate_count: Some(r.duplicate_count),
                    lead_ids: Some(r.lead_ids),
                    errors: Some(r.errors.into_iter().map(row_error).collect()),
                },
            },
        )
        .await
}

/// A job's state as the documented word: `pending`, `processing`, `completed`, `failed`, ...
pub fn job_state(state: i32) -> String {
    proto::job_status::State::try_from(state)
        .ok()
        .filter(|state| *state != proto::job_status::State::Unspecified)
        .map_or("pending", |state| state.as_str_name())
        .to_ascii_lowercase()
}

fn row_error(error: proto::RowError) -> RowErrorBody {
    RowErrorBody {
        index: error.index,
        message: error.message,
    }
}

/// A job's progress. An unknown job answers 404 `{"status": "not_found"}`.
#[utoipa::path(get, path = "/leads/get-status", tag = "Leads", params(JobQuery),
    responses((status = 200, body = JobStatusBody),
        (status = 404, body = JobNotFoundBody, description = "Unknown job: `{\"status\": \"not_found\"}`"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn get_status(
    caller: Caller,
    Input(query, mut check): Input<JobQuery>,
) -> Result<Reply<JobStatusBody>, ApiError> {
    let request = proto::GetJobStatusRequest {
        job_id: check.field("job_id", query.job_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.jobs().get_job_status(request).await },
            job_status_body,
        )
        .await
        .map_err(|error| error.job_not_found_as("not_found"))
}

/// Beyond the specification, for browsers and tools that cannot speak gRPC: the job's
/// progress as Server-Sent Events (`text/event-stream`), one event whenever it moves, each
/// event's data the object `GET /leads/get-status` answers; the stream ends after `completed`
/// or `failed`. Errors before the stream starts are those of `GET /leads/get-status`.
#[utoipa::path(get, path = "/leads/get-status/stream", tag = "Leads", params(JobQuery),
    responses((status = 200, content_type = "text/event-stream", body = JobStatusBody,
            description = "Events whose `data` is the job status object, until the job ends"),
        (status = 404, body = JobNotFoundBody, description = "Unknown job: `{\"status\": \"not_found\"}`"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn get_status_stream(
    caller: Caller,
    Input(query, mut check): Input<JobQuery>,
) -> Result<axum::response::Response, ApiError> {
    let request = proto::WatchJobRequest {
        job_id: check.field("job_id", query.job_id),
    };
    caller
        .stream(
            check,
            request,
            |core, request| async move { core.jobs().watch_job(request).await },
            job_status_body,
        )
        .await
        .map_err(|error| error.job_not_found_as("not_found"))
}

fn job_status_body(r: proto::JobStatus) -> JobStatusBody {
    JobStatusBody {
        status: job_state(r.status),
        processed_rows: r.processed_rows,
        total_rows: r.total_rows,
        failed_rows: r.failed_rows,
        errors: r.errors.into_iter().map(row_error).collect(),
        error: r.error,
        enrichment_errors: r
            .enrichment_errors
            .into_iter()
            .map(|e| EnrichmentErrorBody {
                lead_id: e.lead_id,
                message: e.message,
            })
            .collect(),
    }
}

/// Reads the leads a job produced (`GET /leads/get-leads`, `GET /automation/get-leads-from-job`).
pub async fn job_leads(
    caller: Caller,
    query: JobQuery,
    mut check: Check,
) -> Result<Reply<Vec<JobLeadBody>>, ApiError> {
    let request = proto::GetJobLeadsRequest {
        job_id: check.field("job_id", query.job_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.jobs().get_job_leads(request).await },
            |r| {
                r.leads
                    .into_iter()
                    .map(|lead| JobLeadBody::from(LeadSummary::from(lead)))
                    .collect()
            },
        )
        .await
        .map_err(|error| error.job_not_found_as("NOT_FOUND"))
}

/// The leads a job has stored. Unknown job: 404 `{"status": "NOT_FOUND"}`; none yet: 503
/// `{"status": "NO_LEADS", "message"}`, retry later.
#[utoipa::path(get, path = "/leads/get-leads", tag = "Leads", params(JobQuery),
    responses((status = 200, body = Vec<JobLeadBody>),
        (status = 404, body = JobNotFoundBody, description = "Unknown job: `{\"status\": \"NOT_FOUND\"}`"),
        (status = 422, body = ErrorBody),
        (status = 503, body = NoLeadsBody, description = "No leads yet: `{\"status\": \"NO_LEADS\", \"message\": ...}`")))]
pub(super) async fn get_leads(
    caller: Caller,
    Input(query, check): Input<JobQuery>,
) -> Result<Reply<Vec<JobLeadBody>>, ApiError> {
    job_leads(caller, query, check).await
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
pub(super) async fn get(
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
pub(super) async fn activity(
    caller: Caller,
    Input(query, mut check): Input<ActivityQuery>,
) -> Result<Reply<ActivityBody>, ApiError> {
    let before = check.field("before", query.before).and_then(|text| {
        let parsed = super::input::parse_timestamp(&text);
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
                        class: entry.class,
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
pub(super) async fn engaged(
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

/// Extension: everything lps holds about a lead, as one document (for a data subject's
/// access request).
#[derive(Default, Serialize, Deserialize, ToSchema)]
pub struct LeadExportBody {
    /// `lead_id`, `name`, `email`, `company_name`, `company_domain`, `created_at`, every
    /// variable (`variables`, enrichment results among them), `audiences`, `callback_url`.
    #[schema(value_type = Object)]
    pub lead: Value,
    /// Its pages: `campaign_id`, `url`.
    #[schema(value_type = Vec<Object>)]
    pub pages: Vec<Value>,
    /// Its counted engagement and score.
    #[schema(value_type = Object)]
    pub engagement: Value,
    /// Every beacon of its pages kept (not yet past `--event-retention-days`), whatever its
    /// class: `type`, `campaign_id`, `class`, `reason`, `seconds`, `target`, `occurred_at`.
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<Value>,
    /// Every form submitted on its pages, with every field.
    #[schema(value_type = Vec<Object>)]
    pub form_submissions: Vec<Value>,
    /// Enrichments queued or done: `types`, `status`, `error`, `queued_at`.
    #[schema(value_type = Vec<Object>)]
    pub enrichments: Vec<Value>,
    /// Callbacks about it, pending or sent, with their payloads.
    #[schema(value_type = Vec<Object>)]
    pub callbacks: Vec<Value>,
    /// ISO 8601, UTC.
    pub exported_at: String,
}

/// Extension: everything lps holds about a lead (values, enrichment results, pages, every
/// visit with its class and reason, clicks, form submissions, callbacks sent), as JSON.
/// Unknown (or another workspace's) lead: 404.
#[utoipa::path(get, path = "/leads/export", tag = "Leads", params(LeadQuery),
    responses((status = 200, body = LeadExportBody),
        (status = 404, body = ErrorBody, description = "Lead not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn export(
    caller: Caller,
    Input(query, mut check): Input<LeadQuery>,
) -> Result<Reply<LeadExportBody>, ApiError> {
    let request = proto::GetLeadRequest {
        lead_id: check.field("lead_id", query.lead_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move {
                let (metadata, reply, extensions) =
                    core.leads().export_lead(request).await?.into_parts();
                // Core writes the document; one that does not read back is a bug, never a 200
                // with an empty export.
                let document: LeadExportBody = serde_json::from_str(&reply.json).map_err(|err| {
                    tracing::error!(error = %err, "a lead's export did not read as its document");
                    tonic::Status::internal("Internal server error.")
                })?;
                Ok(tonic::Response::from_parts(metadata, document, extensions))
            },
            |document| document,
        )
        .await
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct DeleteLeadsRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// 1 to 1,000 leads of the workspace.
    #[schema(value_type = Vec<i64>, min_items = 1, max_items = 1000)]
    pub lead_ids: Lenient<Vec<i64>>,
}

#[derive(Serialize, ToSchema)]
pub struct DeletedBody {
    /// Leads erased.
    pub deleted: i64,
}

/// Extension: erases leads and every trace of them: values and enrichment results, their
/// pages (whose addresses then answer 404), every visit, click and form submission, queued
/// callbacks and enrichments, audience memberships, and their values in finished jobs'
/// inputs. Campaign analytics lose exactly what the leads contributed. An audit entry without
/// personal data is kept. All or nothing: an id that is not a lead of the workspace is 404
/// and nothing is erased.
#[utoipa::path(post, path = "/leads/delete", tag = "Leads",
    request_body = DeleteLeadsRequest,
    responses((status = 200, body = DeletedBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Lead not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn delete(
    caller: Caller,
    Input(body, mut check): Input<DeleteLeadsRequest>,
) -> Result<Reply<DeletedBody>, ApiError> {
    let request = proto::DeleteLeadsRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        lead_ids: check.field("lead_ids", body.lead_ids).unwrap_or_default(),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.leads().delete_leads(request).await },
            |r| DeletedBody { deleted: r.deleted },
        )
        .await
}
