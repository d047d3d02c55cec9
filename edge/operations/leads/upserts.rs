//! `/leads/upsert-leads`, `/leads/upsert-lead` and `/leads/import-to-workspace`: leads
//! written into a campaign or a workspace, queued as durable jobs (an import may be immediate).

use lps::proto;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::{JobIdBody, RowErrorBody, row_error};
use crate::operations::bulk::on_bulk_thread;
use crate::operations::caller::{Caller, Reply};
use crate::operations::error::{ApiError, ErrorBody};
use crate::operations::input::{Check, Input, JsonArray, Lenient, proto_struct};

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

/// One element of a `leads` list, passed to core as sent (core reads it).
fn lead_input(item: prost_types::Value) -> proto::LeadInput {
    proto::LeadInput { lead: Some(item) }
}

/// Queues leads into a campaign; poll `GET /leads/get-status` with the `job_id`.
#[utoipa::path(post, path = "/leads/upsert-leads", tag = "Leads",
    request_body = UpsertLeadsRequest,
    responses((status = 200, body = JobIdBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(crate) async fn upsert_leads(
    caller: Caller,
    Input(body, mut check): Input<UpsertLeadsRequest>,
) -> Result<Reply<JobIdBody>, ApiError> {
    // Thousands of leads: turned into core's request and staged off the visitors' runtime.
    on_bulk_thread(async move {
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
    })
    .await
}

/// Queues one lead; an existing one is found by `lead_id` or `service_page_url`.
#[utoipa::path(post, path = "/leads/upsert-lead", tag = "Leads",
    request_body = UpsertLeadRequest,
    responses((status = 200, body = JobIdBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody, description = "Invalid input; values name none of the five fields")))]
pub(crate) async fn upsert_lead(
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
pub(crate) async fn import_to_workspace(
    caller: Caller,
    Input(body, mut check): Input<ImportRequest>,
) -> Result<Reply<ImportBody>, ApiError> {
    // As `upsert_leads`: thousands of leads, off the visitors' runtime.
    on_bulk_thread(async move {
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
    })
    .await
}
