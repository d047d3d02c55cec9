//! The workflow-automation group: `GET /automation/test`, `POST /automation/upsert-lead`,
//! `POST /automation/upsert-lead-basic`, `GET /automation/get-leads`,
//! `GET /automation/get-leads-from-job`.

use lps::{proto, wire};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody, JobNotFoundBody, NoLeadsBody};
use super::identity::UserBody;
use super::input::{Check, Input, Lenient, parse_timestamp, proto_struct};
use super::leads::jobs::{JobLeadBody, JobQuery, job_leads};
use lps::wire::FieldViolation;

#[derive(Serialize, ToSchema)]
pub struct AutomationTestBody {
    pub message: String,
    pub user: UserBody,
}

/// The lead fields both automation upserts take.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct AutomationLead {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    /// Nothing is imported; a sample page address comes back.
    #[schema(value_type = Option<bool>)]
    pub is_test: Lenient<bool>,
    #[schema(value_type = Option<String>)]
    pub social_profile_url: Lenient<String>,
    #[schema(value_type = Option<String>)]
    pub company_domain: Lenient<String>,
    #[schema(value_type = Option<String>, format = Email)]
    pub email: Lenient<String>,
    /// More variables of the lead (`first_name`, `company_name`, custom keys).
    #[schema(value_type = Option<Object>)]
    pub custom_data: Lenient<Map<String, Value>>,
}

/// `POST /automation/upsert-lead`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct AutomationLeadRequest {
    #[serde(flatten)]
    pub lead: AutomationLead,
    /// Called once the lead's page exists (signed; see docs/api-guide.md). Not needed with `is_test`.
    #[schema(value_type = String)]
    pub callback_url: Lenient<String>,
}

/// `POST /automation/upsert-lead-basic`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct AutomationLeadBasicRequest {
    #[serde(flatten)]
    pub lead: AutomationLead,
    #[schema(value_type = Option<String>)]
    pub callback_url: Lenient<String>,
    /// Have the AI write personalised variables for the lead.
    #[schema(value_type = Option<bool>)]
    pub generate_ai_variables: Lenient<bool>,
}

/// `{message, job_id}`, or for a test `{message, service_page_url}`.
#[derive(Serialize, ToSchema)]
pub struct AutomationLeadBody {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_page_url: Option<String>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PollQuery {
    #[param(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[param(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    /// Leads created at or after this timestamp (ISO 8601, or `YYYY-MM-DD HH:MM:SS` UTC).
    #[param(value_type = Option<String>, format = DateTime)]
    pub created_after: Lenient<String>,
    /// Only leads with a greater id.
    #[param(value_type = Option<i64>)]
    pub last_lead_id: Lenient<i64>,
    /// 1 to 100, default 50.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, default = 50)]
    pub limit: Lenient<i64>,
    /// When the filters match nothing, return the most recent lead.
    #[param(value_type = Option<bool>)]
    pub is_test: Lenient<bool>,
}

#[derive(Serialize, ToSchema)]
pub struct PolledLeadBody {
    pub id: i64,
    pub created_at: String,
    pub service_page_url: String,
    pub name: String,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub domain: Option<String>,
    pub company_name_slug: Option<String>,
}

/// Connection test of the workflow-automation integration.
#[utoipa::path(get, path = "/automation/test", tag = "Workflow automation",
    responses((status = 200, body = AutomationTestBody)))]
pub(super) async fn test(caller: Caller) -> Result<Reply<AutomationTestBody>, ApiError> {
    caller
        .call(
            Check::default(),
            proto::TestAutomationRequest {},
            |core, request| async move { core.identity().test_automation(request).await },
            |r| AutomationTestBody {
                message: r.message,
                user: r.user.into(),
            },
        )
        .await
}

/// What the two automation upserts send core: `callback_url` and, for the basic one,
/// `generate_ai_variables` beside the lead.
struct AutomationExtras {
    callback_url: Lenient<String>,
    generate_ai_variables: Lenient<bool>,
    basic: bool,
}

async fn automation_lead(
    caller: Caller,
    body: AutomationLead,
    extras: AutomationExtras,
    mut check: Check,
) -> Result<Reply<AutomationLeadBody>, ApiError> {
    let request = proto::UpsertAutomationLeadRequest {
        email: check.field("email", body.email),
        social_profile_url: check.field("social_profile_url", body.social_profile_url),
        company_domain: check.field("company_domain", body.company_domain),
        custom_data: check
            .field("custom_data", body.custom_data)
            .map(proto_struct),
        workspace_id: check.field("workspace_id", body.workspace_id),
        campaign_id: check.field("campaign_id", body.campaign_id),
        is_test: check.field("is_test", body.is_test).unwrap_or(false),
        callback_url: check.field("callback_url", extras.callback_url),
        basic: extras.basic,
        generate_ai_variables: check
            .field("generate_ai_variables", extras.generate_ai_variables)
            .unwrap_or(false),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.leads().upsert_automation_lead(request).await },
            |r| AutomationLeadBody {
                message: r.message,
                job_id: r.job_id,
                service_page_url: r.service_page_url,
            },
        )
        .await
}

/// One lead into a campaign (callback required), or with `is_test` a sample page address.
#[utoipa::path(post, path = "/automation/upsert-lead", tag = "Workflow automation",
    request_body = AutomationLeadRequest,
    responses((status = 200, body = AutomationLeadBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn upsert_lead(
    caller: Caller,
    Input(body, check): Input<AutomationLeadRequest>,
) -> Result<Reply<AutomationLeadBody>, ApiError> {
    let extras = AutomationExtras {
        callback_url: body.callback_url,
        generate_ai_variables: Lenient::Absent,
        basic: false,
    };
    automation_lead(caller, body.lead, extras, check).await
}

/// As `/automation/upsert-lead`, with `callback_url` optional and `generate_ai_variables`.
#[utoipa::path(post, path = "/automation/upsert-lead-basic", tag = "Workflow automation",
    request_body = AutomationLeadBasicRequest,
    responses((status = 200, body = AutomationLeadBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn upsert_lead_basic(
    caller: Caller,
    Input(body, check): Input<AutomationLeadBasicRequest>,
) -> Result<Reply<AutomationLeadBody>, ApiError> {
    let extras = AutomationExtras {
        callback_url: body.callback_url,
        generate_ai_variables: body.generate_ai_variables,
        basic: true,
    };
    automation_lead(caller, body.lead, extras, check).await
}

/// A campaign's leads for polling, newest first.
#[utoipa::path(get, path = "/automation/get-leads", tag = "Workflow automation",
    params(PollQuery),
    responses((status = 200, body = Vec<PolledLeadBody>), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn get_leads(
    caller: Caller,
    Input(query, mut check): Input<PollQuery>,
) -> Result<Reply<Vec<PolledLeadBody>>, ApiError> {
    let created_after = check
        .field("created_after", query.created_after)
        .and_then(|text| {
            let parsed = parse_timestamp(&text);
            if parsed.is_none() {
                check.violation(FieldViolation::must_be("created_after", "a valid date"));
            }
            parsed
        });
    let request = proto::ListCampaignLeadsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        campaign_id: check.field("campaign_id", query.campaign_id),
        created_after,
        last_lead_id: check.field("last_lead_id", query.last_lead_id),
        limit: check.field("limit", query.limit),
        is_test: check.field("is_test", query.is_test).unwrap_or(false),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.leads().list_campaign_leads(request).await },
            |r| {
                r.leads
                    .into_iter()
                    .map(|lead| PolledLeadBody {
                        id: lead.id,
                        created_at: lead
                            .created_at
                            .as_ref()
                            .map(wire::iso8601)
                            .unwrap_or_default(),
                        service_page_url: lead.service_page_url,
                        name: lead.name,
                        email: lead.email,
                        company_name: lead.company_name,
                        domain: lead.domain,
                        company_name_slug: lead.company_name_slug,
                    })
                    .collect()
            },
        )
        .await
}

/// Same as `GET /leads/get-leads`, including the `NOT_FOUND` and `NO_LEADS` bodies.
#[utoipa::path(get, path = "/automation/get-leads-from-job", tag = "Workflow automation",
    params(JobQuery),
    responses((status = 200, body = Vec<JobLeadBody>),
        (status = 404, body = JobNotFoundBody, description = "Unknown job: `{\"status\": \"NOT_FOUND\"}`"),
        (status = 422, body = ErrorBody),
        (status = 503, body = NoLeadsBody, description = "No leads yet: `{\"status\": \"NO_LEADS\", \"message\": ...}`")))]
pub(super) async fn get_leads_from_job(
    caller: Caller,
    Input(query, check): Input<JobQuery>,
) -> Result<Reply<Vec<JobLeadBody>>, ApiError> {
    job_leads(caller, query, check).await
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FormSubmissionsQuery {
    /// Every workspace the key reaches when left out.
    #[param(value_type = Option<i64>)]
    pub workspace_id: Lenient<i64>,
    #[param(value_type = Option<i64>)]
    pub campaign_id: Lenient<i64>,
    /// 1 to 100, default 50.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, default = 50)]
    pub limit: Lenient<i64>,
    /// Extension: only submissions with a lower `id` (the next page after one whose last
    /// entry had this id).
    #[param(value_type = Option<i64>)]
    pub before_id: Lenient<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct FormSubmissionBody {
    pub id: i64,
    /// The form's `id`, else its `name`, else its position on the page (`form-1`, ...).
    pub form_id: String,
    pub page_url: String,
    pub ip_address: String,
    /// ISO 8601 with a `+00:00` offset.
    pub created_at: String,
    /// The field named `email`; empty when the form had none.
    pub email: String,
    /// Extension: the lead whose page the form was on.
    pub lead_id: i64,
    /// Extension: every other field the visitor answered, by name.
    pub fields: std::collections::BTreeMap<String, String>,
    /// Extension: what the submission is taken for, as a page view is: `person` (counted),
    /// `automated` or `scanner_network` (kept and listed here, never counted in the score, as
    /// engagement or for `lead.hot`).
    #[schema(example = "person")]
    pub class: String,
    /// Extension: why a submission is not counted; null for a person's.
    pub reason: Option<String>,
}

/// Forms visitors submitted on lead pages, newest first.
#[utoipa::path(get, path = "/automation/get-form-submissions", tag = "Workflow automation",
    params(FormSubmissionsQuery),
    responses((status = 200, body = Vec<FormSubmissionBody>), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Campaign not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn get_form_submissions(
    caller: Caller,
    Input(query, mut check): Input<FormSubmissionsQuery>,
) -> Result<Reply<Vec<FormSubmissionBody>>, ApiError> {
    let request = proto::ListFormSubmissionsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        campaign_id: check.field("campaign_id", query.campaign_id),
        limit: check.field("limit", query.limit),
        before_id: check.field("before_id", query.before_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.engagement().list_form_submissions(request).await },
            |r| {
                r.submissions
                    .into_iter()
                    .map(|submission| FormSubmissionBody {
                        class: wire::visit_class_name(submission.class()).to_owned(),
                        id: submission.id,
                        form_id: submission.form_id,
                        page_url: submission.page_url,
                        ip_address: submission.ip_address,
                        created_at: submission
                            .created_at
                            .as_ref()
                            .map(wire::iso8601_offset)
                            .unwrap_or_default(),
                        email: submission.email.unwrap_or_default(),
                        lead_id: submission.lead_id,
                        fields: submission.fields.into_iter().collect(),
                        reason: submission.reason,
                    })
                    .collect()
            },
        )
        .await
}
