//! Leads through the API: queued upserts and imports (durable jobs), the immediate import,
//! single reads and the automation polling list (lists of leads: `lead_lists`).

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::auth::Principal;
use crate::domain::campaigns;
use crate::domain::ingest::{self, Outcome, Target};
use crate::domain::jobs::JobOptions;
use crate::domain::lead::LeadPayload;
use crate::domain::lead::{DEFAULT_KEYS, page_url, preview_slug};
use crate::error::FieldViolation;
use crate::store::jobs::NewJob;
use crate::store::leads::{self, LeadWithPage};
use crate::store::retry_conflicts;
use crate::store::{Db, WorkspaceTable, audiences, ids_in_workspace, jobs};
use crate::time::Micros;
use crate::{App, Error, Result, time};

/// Most leads accepted in one request.
pub const MAX_LEADS_PER_REQUEST: usize = 25_000;

pub use crate::wire::ENGAGEMENT_VALUES;

/// A queued upsert or import as the services hand it over, already validated field by field.
pub struct Enqueue {
    pub workspace_id: i64,
    pub kind: &'static str,
    pub campaign_id: Option<i64>,
    pub audience_id: Option<i64>,
    pub callback_url: Option<String>,
    pub options: JobOptions,
    pub leads: Vec<LeadPayload>,
}

/// Writes the job and its leads, staged in chunks, in one transaction and wakes the worker.
/// Returns the job id.
pub async fn enqueue(app: &App, job: Enqueue) -> Result<String> {
    check_batch_size(&job.leads)?;
    let id = Uuid::new_v4().to_string();
    let options = serde_json::to_string(&job.options).map_err(|e| Error::Internal(e.into()))?;
    let chunks: Vec<(usize, String)> = job
        .leads
        .chunks(jobs::CHUNK_LEADS)
        .map(|chunk| serde_json::to_string(chunk).map(|json| (chunk.len(), json)))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::Internal(e.into()))?;
    let mut tx = app.db.begin_write().await?;
    jobs::insert(
        &mut *tx,
        &NewJob {
            id: &id,
            workspace_id: job.workspace_id,
            kind: job.kind,
            campaign_id: job.campaign_id,
            audience_id: job.audience_id,
            callback_url: job.callback_url.as_deref(),
            options: &options,
            total_rows: job.leads.len() as i64,
        },
        time::now(),
    )
    .await?;
    jobs::insert_chunks(&mut tx, &id, &chunks).await?;
    tx.commit().await?;
    app.work.notify_one();
    Ok(id)
}

/// Refuses more than [`MAX_LEADS_PER_REQUEST`] leads in one request.
fn check_batch_size(leads: &[LeadPayload]) -> Result<()> {
    if leads.len() > MAX_LEADS_PER_REQUEST {
        return Err(Error::invalid(FieldViolation::new(
            "leads",
            format!("The leads field must not have more than {MAX_LEADS_PER_REQUEST} items."),
        )));
    }
    Ok(())
}

/// The audience (none for `0`, the Default Audience) if it is in the workspace.
pub async fn audience_in(
    db: &Db,
    workspace_id: i64,
    audience_id: Option<i64>,
) -> Result<Option<i64>> {
    match audience_id {
        None | Some(0) => Ok(None),
        Some(id) => audiences::get(db.pool(), workspace_id, id)
            .await?
            .map(|a| Some(a.id))
            .ok_or(Error::NotFound("Audience not found")),
    }
}

/// What `POST /leads/upsert-leads` and `/leads/upsert-lead` ask for.
pub struct Upsert {
    pub campaign_id: i64,
    pub audience_id: Option<i64>,
    pub callback_url: Option<String>,
    pub options: JobOptions,
    pub leads: Vec<LeadPayload>,
}

/// Queues leads into a campaign (and its workspace).
pub async fn upsert(app: &App, principal: &Principal, upsert: Upsert) -> Result<String> {
    let campaign = campaigns::reachable(&app.db, principal, upsert.campaign_id).await?;
    let audience_id = audience_in(&app.db, campaign.workspace_id, upsert.audience_id).await?;
    enqueue(
        app,
        Enqueue {
            workspace_id: campaign.workspace_id,
            kind: "upsert",
            campaign_id: Some(campaign.id),
            audience_id,
            callback_url: upsert.callback_url,
            options: upsert.options,
            leads: upsert.leads,
        },
    )
    .await
}

/// `values` of a single upsert must name the lead somehow.
pub fn check_single_values(
    values: &BTreeMap<String, String>,
) -> std::result::Result<(), FieldViolation> {
    let named = DEFAULT_KEYS
        .iter()
        .any(|key| values.get(*key).is_some_and(|v| !v.trim().is_empty()));
    if named {
        Ok(())
    } else {
        Err(FieldViolation::new(
            "values",
            format!(
                "The values must include at least one of: {}.",
                DEFAULT_KEYS.join(", ")
            ),
        ))
    }
}

/// What the automation integration's upsert does: a job, or for a test only a sample address.
pub enum AutomationOutcome {
    Queued { job_id: String },
    Test { service_page_url: String },
}

/// What the automation integration's upsert asks for.
pub struct AutomationUpsert {
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub is_test: bool,
    pub callback_url: Option<String>,
    pub options: JobOptions,
    pub values: BTreeMap<String, String>,
}

pub async fn upsert_automation(
    app: &App,
    principal: &Principal,
    upsert: AutomationUpsert,
) -> Result<AutomationOutcome> {
    let AutomationUpsert {
        workspace_id,
        campaign_id,
        is_test,
        callback_url,
        options,
        values,
    } = upsert;
    let campaign = campaigns::in_workspace(&app.db, principal, workspace_id, campaign_id).await?;
    if is_test {
        return Ok(AutomationOutcome::Test {
            service_page_url: page_url(
                &app.config.public_url,
                campaign.public_slug(),
                &preview_slug(campaign.id),
            ),
        });
    }
    let job_id = enqueue(
        app,
        Enqueue {
            workspace_id: campaign.workspace_id,
            kind: "upsert",
            campaign_id: Some(campaign.id),
            audience_id: None,
            callback_url,
            options,
            leads: vec![LeadPayload {
                values,
                ..LeadPayload::default()
            }],
        },
    )
    .await?;
    Ok(AutomationOutcome::Queued { job_id })
}

/// What `POST /leads/import-to-workspace` asks for.
pub struct Import {
    pub workspace_id: i64,
    pub audience_id: Option<i64>,
    pub campaign_ids: Vec<i64>,
    pub sync: bool,
    pub options: JobOptions,
    pub leads: Vec<LeadPayload>,
}

/// The outcome of an immediate import.
pub struct ImportReport {
    pub imported: i64,
    pub duplicates: i64,
    pub lead_ids: Vec<i64>,
    pub errors: Vec<(i64, String)>,
}

pub enum ImportOutcome {
    Queued { job_id: String },
    Done(ImportReport),
}

/// Queued by default and whenever enrichment or campaigns are requested; immediate when `sync`
/// is set without them.
pub async fn import(app: &App, principal: &Principal, import: Import) -> Result<ImportOutcome> {
    let workspace = principal.reach(&app.db, import.workspace_id).await?;
    let audience_id = audience_in(&app.db, workspace.id, import.audience_id).await?;
    let found = ids_in_workspace(
        app.db.pool(),
        WorkspaceTable::Campaigns,
        workspace.id,
        &import.campaign_ids,
    )
    .await?;
    if import.campaign_ids.iter().any(|id| !found.contains(id)) {
        return Err(Error::NotFound("Campaign not found"));
    }
    let mut options = import.options;
    options.campaign_ids = found;
    if import.sync && !options.wants_enrichment() && options.campaign_ids.is_empty() {
        check_batch_size(&import.leads)?;
        let target = Target {
            workspace_id: workspace.id,
            campaign_ids: Vec::new(),
            audience_id,
            source: options.from.clone(),
        };
        let outcomes = retry_conflicts(|| async {
            let mut tx = app.db.begin_write().await?;
            let outcomes = ingest::store(&mut tx, &target, &import.leads, time::now()).await?;
            tx.commit().await?;
            Ok(outcomes)
        })
        .await?;
        let mut report = ImportReport {
            imported: 0,
            duplicates: 0,
            lead_ids: Vec::new(),
            errors: Vec::new(),
        };
        if import.leads.len() >= 5_000 {
            crate::memory::release_freed();
        }
        let mut listed = std::collections::HashSet::new();
        for (index, outcome) in outcomes.into_iter().enumerate() {
            match outcome {
                Outcome::Stored(lead) => {
                    if lead.created {
                        report.imported += 1;
                    } else {
                        report.duplicates += 1;
                    }
                    if listed.insert(lead.id) {
                        report.lead_ids.push(lead.id);
                    }
                }
                Outcome::Failed(reason) => report.errors.push((index as i64, reason)),
            }
        }
        return Ok(ImportOutcome::Done(report));
    }
    let campaign_id = options.campaign_ids.first().copied();
    let job_id = enqueue(
        app,
        Enqueue {
            workspace_id: workspace.id,
            kind: "import",
            campaign_id,
            audience_id,
            callback_url: None,
            options,
            leads: import.leads,
        },
    )
    .await?;
    Ok(ImportOutcome::Queued { job_id })
}

pub use crate::domain::lead::LeadView;

/// One lead with its audiences, score, last activity and pages; "Lead not found" outside the
/// principal's workspaces.
pub async fn get(app: &App, principal: &Principal, lead_id: i64) -> Result<FoundLead> {
    let not_found = || Error::NotFound("Lead not found");
    let row = leads::get(app.db.pool(), lead_id)
        .await?
        .ok_or_else(not_found)?;
    principal
        .reach(&app.db, row.lead.workspace_id)
        .await
        .map_err(|err| err.unreachable_as(not_found()))?;
    let audiences = leads::audiences_of(app.db.pool(), lead_id).await?;
    let workspace_id = row.lead.workspace_id;
    let addresses = crate::domain::domains::page_addresses(app).await?;
    let mut lead = LeadView::new(&addresses, row);
    crate::domain::lead_lists::complete(app, &mut lead).await?;
    Ok(FoundLead {
        lead,
        audiences,
        workspace_id,
    })
}

/// A lead as `GetLead` answers it: the lead, its audiences and its workspace.
pub struct FoundLead {
    pub lead: LeadView,
    pub audiences: Vec<(i64, String)>,
    pub workspace_id: i64,
}

/// What `GET /automation/get-leads` asks for.
pub struct CampaignPoll {
    pub workspace_id: i64,
    pub campaign_id: i64,
    /// Leads created at or after this instant.
    pub created_after: Option<Micros>,
    /// Only leads with a greater id.
    pub last_lead_id: Option<i64>,
    pub limit: i64,
    /// When nothing matches, the most recent lead instead.
    pub is_test: bool,
}

/// A campaign's leads for automation polling, newest first.
pub async fn in_campaign(
    app: &App,
    principal: &Principal,
    poll: CampaignPoll,
) -> Result<Vec<LeadView>> {
    let CampaignPoll {
        workspace_id,
        campaign_id,
        created_after,
        last_lead_id,
        limit,
        is_test,
    } = poll;
    let campaign = campaigns::in_workspace(&app.db, principal, workspace_id, campaign_id).await?;
    let mut rows = leads::in_campaign(
        app.db.pool(),
        campaign.id,
        created_after,
        last_lead_id,
        limit,
    )
    .await?;
    if rows.is_empty() && is_test {
        rows = leads::in_campaign(app.db.pool(), campaign.id, None, None, 1).await?;
    }
    let addresses = crate::domain::domains::page_addresses(app).await?;
    Ok(rows
        .into_iter()
        .map(|lead| {
            LeadView::new(
                &addresses,
                LeadWithPage {
                    lead,
                    campaign_slug: Some(campaign.public_slug().to_owned()),
                },
            )
        })
        .collect())
}
