//! `lps.v1.LeadsService`: upserts and imports (queued as durable jobs), search, single reads
//! and automation polling.

use std::collections::BTreeMap;

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::engagement;
use crate::domain::enrichment;
use crate::domain::jobs::JobOptions;
use crate::domain::lead::{LeadPayload, text_values};
use crate::domain::lead_lists::{self, LeadFilter, LeadOrder, Search};
use crate::domain::leads::{
    self, AutomationOutcome, AutomationUpsert, CampaignPoll, ENGAGEMENT_VALUES, Import,
    ImportOutcome, LeadView, Upsert,
};
use crate::error::FieldViolation;
use crate::proto::{self, leads_service_server};
use crate::services::csv_imports;
use crate::services::{json_object, json_of};
use crate::time;
use crate::validate::{
    EarlierViolations, Field, Validated, limit, optional_text, optional_url, required,
    required_list,
};

pub struct LeadsService {
    app: App,
}

impl LeadsService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl leads_service_server::LeadsService for LeadsService {
    async fn upsert_leads(
        &self,
        request: Request<proto::UpsertLeadsRequest>,
    ) -> Result<Response<proto::UpsertLeadsResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let proto::UpsertLeadsRequest {
            campaign_id,
            audience_id,
            callback_url,
            from,
            flags,
            leads,
        } = request.into_inner();
        let (campaign_id, callback_url, from, leads) = (
            required("campaign_id", campaign_id),
            optional_url("callback_url", callback_url),
            optional_text("from", from, 255),
            required_list("leads", leads),
        )
            .validated(&earlier)?;
        let upsert = Upsert {
            campaign_id,
            audience_id,
            callback_url,
            options: options(flags, from),
            leads: leads.into_iter().map(payload).collect(),
        };
        let job_id = leads::upsert(&self.app, principal, upsert).await?;
        Ok(Response::new(proto::UpsertLeadsResponse { job_id }))
    }

    async fn upsert_lead(
        &self,
        request: Request<proto::UpsertLeadRequest>,
    ) -> Result<Response<proto::UpsertLeadResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let proto::UpsertLeadRequest {
            campaign_id,
            audience_id,
            callback_url,
            from,
            flags,
            lead_id,
            service_page_url,
            values,
        } = request.into_inner();
        // The lead's identity may also come inside `values`; the top-level fields win.
        let lead = LeadPayload::from_values(json_object(values.unwrap_or_default()))
            .map_err(|message| FieldViolation::new("values", message))
            .and_then(|mut lead| {
                leads::check_single_values(&lead.values)?;
                lead.lead_id = lead_id.or(lead.lead_id);
                lead.service_page_url = service_page_url.or(lead.service_page_url);
                Ok(lead)
            });
        let (campaign_id, callback_url, from, lead) = (
            required("campaign_id", campaign_id),
            optional_url("callback_url", callback_url),
            optional_text("from", from, 255),
            lead,
        )
            .validated(&earlier)?;
        let upsert = Upsert {
            campaign_id,
            audience_id,
            callback_url,
            options: options(flags, from),
            leads: vec![lead],
        };
        let job_id = leads::upsert(&self.app, principal, upsert).await?;
        Ok(Response::new(proto::UpsertLeadResponse { job_id }))
    }

    async fn upsert_automation_lead(
        &self,
        request: Request<proto::UpsertAutomationLeadRequest>,
    ) -> Result<Response<proto::UpsertAutomationLeadResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let proto::UpsertAutomationLeadRequest {
            workspace_id,
            campaign_id,
            is_test,
            callback_url,
            basic,
            generate_ai_variables,
            email,
            social_profile_url,
            company_domain,
            custom_data,
        } = request.into_inner();
        let callback_required = !basic && !is_test;
        // The lead: the variables in `custom_data`, with the three named fields over them.
        let lead = text_values(json_object(custom_data.unwrap_or_default()))
            .map_err(|message| FieldViolation::new("custom_data", message))
            .and_then(|custom| {
                let mut values: BTreeMap<String, String> = custom.into_iter().collect();
                for (key, value) in [
                    ("email", email),
                    ("social_profile_url", social_profile_url),
                    ("company_domain", company_domain),
                ] {
                    values.extend(value.map(|value| (key.to_owned(), value)));
                }
                if !is_test {
                    leads::check_single_values(&values)?;
                }
                Ok(values)
            });
        let (workspace_id, campaign_id, callback_url, values) = (
            required("workspace_id", workspace_id),
            required("campaign_id", campaign_id),
            optional_url("callback_url", callback_url).and_then(|url| match url {
                None if callback_required => Err(FieldViolation::required("callback_url")),
                url => Ok(url),
            }),
            lead,
        )
            .validated(&earlier)?;
        let options = JobOptions {
            generate_ai_variables,
            ..JobOptions::default()
        };
        let upsert = AutomationUpsert {
            workspace_id,
            campaign_id,
            is_test,
            callback_url,
            options,
            values,
        };
        let outcome = leads::upsert_automation(&self.app, principal, upsert).await?;
        Ok(Response::new(match outcome {
            AutomationOutcome::Queued { job_id } => proto::UpsertAutomationLeadResponse {
                message: "Lead queued. Its page address arrives on the callback URL, or poll \
                          GET /leads/get-status with the job id."
                    .into(),
                job_id: Some(job_id),
                service_page_url: None,
            },
            AutomationOutcome::Test { service_page_url } => proto::UpsertAutomationLeadResponse {
                message: "Test successful: nothing was imported. This is what a lead's page \
                          address looks like."
                    .into(),
                job_id: None,
                service_page_url: Some(service_page_url),
            },
        }))
    }

    async fn import_leads(
        &self,
        request: Request<proto::ImportLeadsRequest>,
    ) -> Result<Response<proto::ImportLeadsResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let proto::ImportLeadsRequest {
            workspace_id,
            leads,
            from,
            flags,
            audience_id,
            sync,
            campaign_ids,
        } = request.into_inner();
        let (workspace_id, from, leads) = (
            required("workspace_id", workspace_id),
            optional_text("from", from, 255),
            required_list("leads", leads),
        )
            .validated(&earlier)?;
        let import = Import {
            workspace_id,
            audience_id,
            campaign_ids,
            sync,
            options: options(flags, from),
            leads: leads.into_iter().map(payload).collect(),
        };
        Ok(Response::new(
            match leads::import(&self.app, principal, import).await? {
                ImportOutcome::Queued { job_id } => proto::ImportLeadsResponse {
                    job_id: Some(job_id),
                    ..Default::default()
                },
                ImportOutcome::Done(report) => proto::ImportLeadsResponse {
                    job_id: None,
                    success: report.errors.is_empty(),
                    imported_count: report.imported,
                    duplicate_count: report.duplicates,
                    lead_ids: report.lead_ids,
                    errors: report
                        .errors
                        .into_iter()
                        .map(|(index, message)| proto::RowError { index, message })
                        .collect(),
                },
            },
        ))
    }

    async fn search_leads(
        &self,
        request: Request<proto::SearchLeadsRequest>,
    ) -> Result<Response<proto::SearchLeadsResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let search = search_of(request.into_inner(), &earlier)?;
        let found = lead_lists::search(&self.app, principal, search).await?;
        Ok(Response::new(proto::SearchLeadsResponse {
            total: found.total,
            leads: found.leads.into_iter().map(summary).collect(),
            next_cursor: found.next.as_ref().map(lead_lists::cursor),
        }))
    }

    type ExportLeadsStream = ExportStream;

    async fn export_leads(
        &self,
        request: Request<proto::ExportLeadsRequest>,
    ) -> Result<Response<Self::ExportLeadsStream>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let proto::ExportLeadsRequest {
            filter,
            campaign_id,
        } = request.into_inner();
        let search = search_of(filter.unwrap_or_default(), &earlier)?;
        let mut exporter = lead_lists::export(&self.app, principal, search, campaign_id).await?;
        let (sender, receiver) = tokio::sync::mpsc::channel(1);
        tokio::spawn(async move {
            let mut custom_keys = std::mem::take(&mut exporter.custom_keys);
            loop {
                let batch = tokio::select! {
                    batch = exporter.next_batch() => batch,
                    _ = sender.closed() => return,
                };
                let message = batch.map_err(Status::from).map(|leads| {
                    let done = leads.is_empty();
                    let message = proto::ExportLeadsResponse {
                        custom_keys: std::mem::take(&mut custom_keys),
                        leads: leads.into_iter().map(exported).collect(),
                    };
                    (message, done)
                });
                match message {
                    Ok((message, done)) => {
                        if sender.send(Ok(message)).await.is_err() || done {
                            return;
                        }
                    }
                    Err(status) => {
                        let _ = sender.send(Err(status)).await;
                        return;
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(receiver),
        )))
    }

    async fn map_csv_columns(
        &self,
        request: Request<proto::MapCsvColumnsRequest>,
    ) -> Result<Response<proto::MapCsvColumnsResponse>, Status> {
        csv_imports::map_columns(&self.app, request).await
    }

    async fn start_csv_import(
        &self,
        request: Request<proto::StartCsvImportRequest>,
    ) -> Result<Response<proto::StartCsvImportResponse>, Status> {
        csv_imports::start(&self.app, request).await
    }

    async fn add_csv_import_rows(
        &self,
        request: Request<proto::AddCsvImportRowsRequest>,
    ) -> Result<Response<proto::AddCsvImportRowsResponse>, Status> {
        csv_imports::add_rows(&self.app, request).await
    }

    async fn finish_csv_import(
        &self,
        request: Request<proto::FinishCsvImportRequest>,
    ) -> Result<Response<proto::FinishCsvImportResponse>, Status> {
        csv_imports::finish(&self.app, request).await
    }

    async fn get_csv_import(
        &self,
        request: Request<proto::GetCsvImportRequest>,
    ) -> Result<Response<proto::GetCsvImportResponse>, Status> {
        csv_imports::staged(&self.app, request).await
    }

    type ExportCsvImportRejectsStream = csv_imports::RejectsStream;

    async fn export_csv_import_rejects(
        &self,
        request: Request<proto::ExportCsvImportRejectsRequest>,
    ) -> Result<Response<Self::ExportCsvImportRejectsStream>, Status> {
        csv_imports::rejects(&self.app, request).await
    }

    async fn get_lead(
        &self,
        request: Request<proto::GetLeadRequest>,
    ) -> Result<Response<proto::GetLeadResponse>, Status> {
        let principal = &Principal::of(&request)?.clone();
        let (lead_id,) = (required("lead_id", request.get_ref().lead_id),).validated(&request)?;
        let (lead, audiences) = leads::get(&self.app, principal, lead_id).await?;
        let sums = engagement::of_lead(&self.app, lead_id).await?;
        let variables = lead.variables().into_iter().collect();
        Ok(Response::new(proto::GetLeadResponse {
            lead: Some(summary(lead)),
            variables,
            audiences: audiences
                .into_iter()
                .map(|(id, name)| proto::AudienceRef { id, name })
                .collect(),
            pending_enrichments: enrichment::pending_of(&self.app, lead_id).await?,
            engagement: Some(proto::LeadEngagement {
                views: sums.views,
                first_viewed_at: sums.first_viewed_at.map(time::to_proto),
                last_viewed_at: sums.last_viewed_at.map(time::to_proto),
                clicks: sums.clicks,
                scrolled_to_bottom: sums.scrolled_to_bottom != 0,
                engaged_seconds: sums.engaged_seconds,
                form_submissions: sums.form_submissions,
                score: crate::domain::score::at(sums.score_base, time::now()),
                hot_at: sums.hot_at.map(time::to_proto),
            }),
        }))
    }

    async fn enrich_leads(
        &self,
        request: Request<proto::EnrichLeadsRequest>,
    ) -> Result<Response<proto::EnrichLeadsResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let proto::EnrichLeadsRequest {
            workspace_id,
            lead_ids,
            enrichment_types,
        } = request.into_inner();
        let (workspace_id, lead_ids, types) = (
            required("workspace_id", workspace_id),
            required_list("lead_ids", lead_ids),
            required_list("enrichment_types", enrichment_types),
        )
            .validated(&earlier)?;
        let request = enrichment::Request {
            workspace_id,
            lead_ids,
            types,
        };
        let accepted = enrichment::request(&self.app, principal, request).await?;
        let message = match accepted.skipped.len() {
            0 => format!("Enrichment started for {} leads.", accepted.leads_to_enrich),
            skipped => format!(
                "Enrichment started for {} leads; {skipped} skipped (see skipped).",
                accepted.leads_to_enrich
            ),
        };
        Ok(Response::new(proto::EnrichLeadsResponse {
            job_id: accepted.job_id,
            message,
            leads_to_enrich: accepted.leads_to_enrich,
            skipped: accepted
                .skipped
                .into_iter()
                .map(|(lead_id, reason)| proto::SkippedLead { lead_id, reason })
                .collect(),
        }))
    }

    async fn export_lead(
        &self,
        request: Request<proto::GetLeadRequest>,
    ) -> Result<Response<proto::ExportLeadResponse>, Status> {
        let principal = &Principal::of(&request)?.clone();
        let (lead_id,) = (required("lead_id", request.get_ref().lead_id),).validated(&request)?;
        let document = crate::domain::erasure::export(&self.app, principal, lead_id).await?;
        Ok(Response::new(proto::ExportLeadResponse {
            json: document.to_string(),
        }))
    }

    async fn delete_leads(
        &self,
        request: Request<proto::DeleteLeadsRequest>,
    ) -> Result<Response<proto::DeleteLeadsResponse>, Status> {
        let principal = &Principal::of(&request)?.clone();
        let max = crate::domain::erasure::MAX_LEADS;
        let (workspace_id, lead_ids) = (
            required("workspace_id", request.get_ref().workspace_id),
            lead_id_list(&request.get_ref().lead_ids, max),
        )
            .validated(&request)?;
        let deleted =
            crate::domain::erasure::erase(&self.app, principal, workspace_id, &lead_ids).await?;
        Ok(Response::new(proto::DeleteLeadsResponse {
            deleted: deleted as i64,
        }))
    }

    async fn list_campaign_leads(
        &self,
        request: Request<proto::ListCampaignLeadsRequest>,
    ) -> Result<Response<proto::ListCampaignLeadsResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = &Principal::of(&request)?.clone();
        let proto::ListCampaignLeadsRequest {
            workspace_id,
            campaign_id,
            created_after,
            last_lead_id,
            limit: page_size,
            is_test,
        } = request.into_inner();
        let (workspace_id, campaign_id, page_size) = (
            required("workspace_id", workspace_id),
            required("campaign_id", campaign_id),
            limit("limit", page_size, 1, 100, 50),
        )
            .validated(&earlier)?;
        let poll = CampaignPoll {
            workspace_id,
            campaign_id,
            created_after: created_after.map(|ts| time::from_proto(&ts).timestamp_micros()),
            last_lead_id,
            limit: page_size,
            is_test,
        };
        let found = leads::in_campaign(&self.app, principal, poll).await?;
        Ok(Response::new(proto::ListCampaignLeadsResponse {
            leads: found
                .into_iter()
                .map(|lead| proto::CampaignLead {
                    id: lead.id,
                    created_at: Some(time::to_proto(lead.created_at)),
                    service_page_url: lead.service_page_url.unwrap_or_default(),
                    name: lead.name,
                    email: lead.email,
                    company_name_slug: lead
                        .company_name
                        .as_deref()
                        .map(crate::domain::workspaces::slugify),
                    company_name: lead.company_name,
                    domain: lead.company_domain,
                })
                .collect(),
        }))
    }
}

fn engagement_values(values: Vec<String>) -> Field<Vec<String>> {
    match values
        .iter()
        .find(|v| !ENGAGEMENT_VALUES.contains(&v.as_str()))
    {
        Some(bad) => Err(FieldViolation::new(
            "engagement",
            format!(
                "The selected engagement {bad:?} is invalid; allowed: {}.",
                ENGAGEMENT_VALUES.join(", ")
            ),
        )),
        None => Ok(values),
    }
}

fn options(flags: Option<proto::LeadFlags>, from: Option<String>) -> JobOptions {
    let proto::LeadFlags {
        send_email,
        is_generate_ai_analysis,
        is_generate_person_analysis,
        is_scrape_person_posts,
        is_scrape_company_posts,
        enrich_data,
        generate_ai_variables,
        trigger_audience_summary,
    } = flags.unwrap_or_default();
    JobOptions {
        from,
        campaign_ids: Vec::new(),
        send_email,
        is_generate_ai_analysis,
        is_generate_person_analysis,
        is_scrape_person_posts,
        is_scrape_company_posts,
        enrich_data,
        generate_ai_variables,
        trigger_audience_summary,
        csv: None,
    }
}

fn payload(input: proto::LeadInput) -> LeadPayload {
    let proto::LeadInput { lead } = input;
    LeadPayload::read(lead.map(json_of).unwrap_or_default())
}

/// A mapping's columns as sent.
pub fn summary(lead: LeadView) -> proto::LeadSummary {
    let LeadView {
        id,
        service_page_url,
        name,
        first_name: _,
        email,
        company_name,
        company_domain,
        social_profile_url: _,
        custom: _,
        created_at,
        score,
        last_activity_at,
        pages,
    } = lead;
    proto::LeadSummary {
        lead_id: id,
        service_page_url,
        name,
        email,
        company_name,
        company_domain,
        created_at: Some(time::to_proto(created_at)),
        score,
        last_activity_at: last_activity_at.map(time::to_proto),
        pages: pages
            .into_iter()
            .map(|page| proto::LeadPage {
                campaign_id: page.campaign_id,
                campaign_name: page.campaign_name,
                url: page.url,
                created_at: Some(time::to_proto(page.created_at)),
            })
            .collect(),
    }
}

/// A lead of an export: as listed, with every variable.
fn exported(lead: LeadView) -> proto::ExportedLead {
    let variables = lead.variables().into_iter().collect();
    proto::ExportedLead {
        lead: Some(summary(lead)),
        variables,
    }
}

/// What an export streams: a batch of leads per message.
pub type ExportStream = std::pin::Pin<
    Box<dyn tokio_stream::Stream<Item = Result<proto::ExportLeadsResponse, Status>> + Send>,
>;

/// The sorts a search may ask for, by name.
const SORTS: [(&str, LeadOrder); 3] = [
    ("created", LeadOrder::Created),
    ("score", LeadOrder::Score),
    ("last_activity", LeadOrder::LastActivity),
];

/// A search request read into what it asks for, every bad field reported at once.
fn search_of(
    request: proto::SearchLeadsRequest,
    earlier: &impl crate::validate::Earlier,
) -> Result<Search, Status> {
    let proto::SearchLeadsRequest {
        workspace_id,
        search,
        campaign_ids,
        audience_ids,
        engagement,
        limit: page_size,
        offset,
        sort,
        last_activity_from,
        last_activity_to,
        hot_only,
        after,
        lead_ids,
    } = request;
    let names: Vec<&str> = SORTS.iter().map(|(name, _)| *name).collect();
    let order = crate::validate::one_of("sort", sort, &names).map(|sort| {
        SORTS
            .iter()
            .find(|(name, _)| Some(*name) == sort.as_deref())
            .map_or(LeadOrder::Created, |(_, order)| *order)
    });
    let after = match after {
        None => Ok(None),
        Some(text) => lead_lists::read_cursor(&text).map(Some).ok_or_else(|| {
            FieldViolation::new(
                "after",
                "The after field must be a next_cursor an earlier page gave.",
            )
        }),
    };
    // A cursor continues the order it was made in, whatever `sort` says.
    let order = match &after {
        Ok(Some(after)) => Ok(after.order()),
        _ => order,
    };
    let lead_ids = if lead_ids.len() > 1_000 {
        Err(FieldViolation::new(
            "lead_ids",
            "The lead ids field must not have more than 1000 items.",
        ))
    } else {
        Ok(lead_ids)
    };
    let (workspace_id, text, engagement, page_size, offset, order, after, lead_ids) = (
        required("workspace_id", workspace_id),
        optional_text("search", search, 255),
        engagement_values(engagement),
        limit("limit", page_size, 1, 100, 25),
        limit("offset", offset, 0, 1_000_000, 0),
        order,
        after,
        lead_ids,
    )
        .validated(earlier)?;
    let micros = |at: Option<prost_types::Timestamp>| at.map(|at| time::from_proto_micros(&at));
    Ok(Search {
        filter: LeadFilter {
            workspace_id,
            text,
            campaign_ids,
            audience_ids,
            engagement,
            min_score_base: None,
            active_from: micros(last_activity_from),
            active_to: micros(last_activity_to),
            lead_ids,
        },
        hot_only,
        order,
        after,
        limit: page_size,
        offset,
    })
}

/// `lead_ids`: 1 to `max` ids.
fn lead_id_list(ids: &[i64], max: usize) -> crate::validate::Field<Vec<i64>> {
    let ids = required_list("lead_ids", ids.to_vec())?;
    if ids.len() > max {
        return Err(FieldViolation::new(
            "lead_ids",
            format!("The lead ids field must not have more than {max} items."),
        ));
    }
    Ok(ids)
}
