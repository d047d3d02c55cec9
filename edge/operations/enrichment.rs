//! `POST /leads/enrich`: enrichment of leads, queued as a job (polled with
//! `/leads/get-status`, results read with `/leads/get`).

use lps::proto;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::caller::{Caller, Reply};
use super::error::{ApiError, EnrichErrorBody, ErrorBody};
use super::input::{Input, Lenient};

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct EnrichRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// The leads to enrich (at most 1,000).
    #[schema(value_type = Vec<i64>, min_items = 1, max_items = 1000)]
    pub lead_ids: Lenient<Vec<i64>>,
    /// Any of `social_profile_url` (the lead's profile page: `profile_*` variables),
    /// `company_domain` (the company's site and an analysis: `company_*` variables),
    /// `person_analysis` (`person_analysis`), `social_posts_person` (`person_*post*`),
    /// `social_posts_company` (`company_*post*`).
    #[schema(value_type = Vec<EnrichmentType>, min_items = 1, example = json!(["company_domain", "person_analysis"]))]
    pub enrichment_types: Lenient<Vec<String>>,
}

/// The enrichment types (documents the values `enrichment_types` accepts).
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)] // a schema only: the values are read as text and checked by core
pub enum EnrichmentType {
    SocialProfileUrl,
    CompanyDomain,
    PersonAnalysis,
    SocialPostsPerson,
    SocialPostsCompany,
}

#[derive(Serialize, ToSchema)]
pub struct EnrichBody {
    /// Poll it with `GET /leads/get-status`.
    pub job_id: String,
    pub message: String,
    pub leads_to_enrich: i64,
    /// How many of the given leads are not enriched.
    pub skipped_leads: i64,
    /// Those leads, with why (an extension of the documented shape).
    pub skipped: Vec<SkippedLeadBody>,
}

#[derive(Serialize, ToSchema)]
pub struct SkippedLeadBody {
    pub lead_id: i64,
    pub reason: String,
}

/// Queues the enrichment of leads. Each type costs credits per lead when queued (see the
/// API guide's cost table, docs/api-guide.md) and is given back if it fails; leads lacking a type's inputs are
/// skipped, not failing the batch. The job goes `pending` -> `step_social` -> `step_import`
/// -> `completed`; `/leads/get` lists `pending_enrichments` until each type is done.
#[utoipa::path(post, path = "/leads/enrich", tag = "Leads",
    request_body = EnrichRequest,
    responses((status = 200, body = EnrichBody),
        (status = 402, body = ErrorBody, description = "No credits remaining"),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No valid leads were found for the given lead ids"),
        (status = 422, body = EnrichErrorBody,
            description = "Validation failed (`errors`), or no lead has the inputs the types need (`skipped_leads`)")))]
pub(super) async fn enrich(
    caller: Caller,
    Input(body, mut check): Input<EnrichRequest>,
) -> Result<Reply<EnrichBody>, ApiError> {
    let request = proto::EnrichLeadsRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        lead_ids: check.field("lead_ids", body.lead_ids).unwrap_or_default(),
        enrichment_types: check
            .field("enrichment_types", body.enrichment_types)
            .unwrap_or_default(),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.leads().enrich_leads(request).await },
            |r| EnrichBody {
                job_id: r.job_id,
                message: r.message,
                leads_to_enrich: r.leads_to_enrich,
                skipped_leads: r.skipped.len() as i64,
                skipped: r
                    .skipped
                    .into_iter()
                    .map(|s| SkippedLeadBody {
                        lead_id: s.lead_id,
                        reason: s.reason,
                    })
                    .collect(),
            },
        )
        .await
}
