//! `lps.v1.LeadsService`: upserts and imports (queued as durable jobs), search, single reads
//! and automation polling. The conversions between its messages and core's values are in
//! `conversions.rs`; the CSV imports' calls in `services/csv_imports.rs`.

use std::collections::BTreeMap;

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::engagement;
use crate::domain::enrichment;
use crate::domain::jobs::JobOptions;
use crate::domain::lead::{LeadPayload, text_values};
use crate::domain::lead_lists::{self};
use crate::domain::leads::{
    self, AutomationOutcome, AutomationUpsert, CampaignPoll, Import, ImportOutcome, Upsert,
};
use crate::error::FieldViolation;
use crate::proto::{self, leads_service_server};
use crate::services::csv_imports;
use crate::services::json_object;
use crate::time;
use crate::validate::{
    EarlierViolations, Validated, limit, optional_text, optional_url, required, required_list,
};

mod conversions;

pub use conversions::summary;
use conversions::{ExportStream, exported, lead_id_list, options, payload, search_of};

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
        let leads::FoundLead {
            lead,
            audiences,
            workspace_id,
        } = leads::get(&self.app, principal, lead_id).await?;
        let sums = engagement::of_lead(&self.app, lead_id).await?;
        let variables = lead.variables().into_iter().collect();
        Ok(Response::new(proto::GetLeadResponse {
            workspace_id,
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
