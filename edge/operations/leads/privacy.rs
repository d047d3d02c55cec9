//! A data subject's requests: everything lps holds about a lead (`/leads/export`) and its
//! erasure (`/leads/delete`).

use lps::proto;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::lead::LeadQuery;
use crate::operations::caller::{Caller, Reply};
use crate::operations::error::{ApiError, ErrorBody};
use crate::operations::input::{Input, Lenient};

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
pub(crate) async fn export(
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
pub(crate) async fn delete(
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
