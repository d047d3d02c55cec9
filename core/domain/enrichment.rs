//! Enrichment of leads, asked for through `POST /leads/enrich` or by the flags of upserts and
//! imports. Either way the work is a durable job: one `enrichments` row per lead naming the
//! types it gets, paid for when it is queued (in the same transaction), carried out by the
//! enrichment worker (`jobs/enrichment.rs`), and ended here: results into the lead's
//! variables, what failed given back, the job moved on.
//!
//! Job statuses: `pending` -> `step_social` (leads being fetched and analysed) ->
//! `step_import` (the last results being written onto the leads) -> `completed`, or `failed`
//! when no lead could be enriched. An import with enrichment flags goes `processing` ->
//! `step_social` -> `step_import` -> `completed`.

use std::collections::BTreeMap;

use sqlx::AnyConnection;

use crate::auth::Principal;
use crate::domain::credits::{self, Payer};
use crate::domain::jobs::JobOptions;
use crate::domain::page_changes::{self, Changed};
use crate::enricher::{Enriched, Kind, LeadFacts};
use crate::error::FieldViolation;
use crate::store::enrichments::{self, EnrichmentRow, NewEnrichment};
use crate::store::jobs::{self, NewJob};
use crate::store::leads::LeadRow;
use crate::store::{self, variables};
use crate::time::Micros;
use crate::{App, Error, Result, time};

/// Most lead ids in one `POST /leads/enrich`.
pub const MAX_LEADS_PER_REQUEST: usize = 1_000;

pub const STEP_SOCIAL: &str = "step_social";
pub const STEP_IMPORT: &str = "step_import";

/// What `POST /leads/enrich` asks for, validated field by field.
pub struct Request {
    pub workspace_id: i64,
    pub lead_ids: Vec<i64>,
    pub types: Vec<String>,
}

/// A queued enrichment: its job, how many leads it enriches, and the leads skipped, why.
pub struct Accepted {
    pub job_id: String,
    pub leads_to_enrich: i64,
    pub skipped: Vec<(i64, String)>,
}

/// The requested types, or a violation naming the unknown ones.
pub fn parse_types(types: &[String]) -> Result<Vec<Kind>> {
    let mut kinds = Vec::new();
    let mut unknown = Vec::new();
    for text in types {
        match Kind::parse(text.trim()).filter(|kind| Kind::PUBLIC.contains(&kind.as_str())) {
            Some(kind) if !kinds.contains(&kind) => kinds.push(kind),
            Some(_) => {}
            None => unknown.push(text.clone()),
        }
    }
    if !unknown.is_empty() {
        return Err(Error::invalid(FieldViolation::new(
            "enrichment_types",
            format!(
                "Unknown enrichment types: {}. Allowed: {}.",
                unknown.join(", "),
                Kind::PUBLIC.join(", ")
            ),
        )));
    }
    if kinds.is_empty() {
        return Err(Error::invalid(FieldViolation::required("enrichment_types")));
    }
    Ok(kinds)
}

/// Queues the enrichment of the workspace's leads, paying for it in the same transaction: no
/// known lead, [`Error::NotFound`]; no lead with the inputs, [`Error::NothingToEnrich`];
/// not enough credits, [`Error::NoCredits`] and nothing queued.
pub async fn request(app: &App, principal: &Principal, request: Request) -> Result<Accepted> {
    let workspace = principal.reach(&app.db, request.workspace_id).await?;
    let kinds = parse_types(&request.types)?;
    let mut ids = request.lead_ids;
    ids.sort_unstable();
    ids.dedup();
    if ids.len() > MAX_LEADS_PER_REQUEST {
        return Err(Error::invalid(FieldViolation::new(
            "lead_ids",
            format!("The lead ids field must not have more than {MAX_LEADS_PER_REQUEST} items."),
        )));
    }
    let mut found = {
        let mut conn = app.db.pool().acquire().await?;
        store::leads::find_matches(&mut conn, workspace.id, &ids, &[], &[], &[]).await?
    };
    // Queued (and so run and reported) in lead id order: the look-up's order is the
    // database's choice, and PostgreSQL's differs from SQLite's.
    found.sort_unstable_by_key(|lead| lead.id);
    if found.is_empty() {
        return Err(Error::NotFound(
            "No valid leads were found for the given lead ids.",
        ));
    }
    let mut skipped: Vec<(i64, String)> = ids
        .iter()
        .filter(|id| !found.iter().any(|lead| lead.id == **id))
        .map(|id| (*id, "Lead not found in this workspace.".to_owned()))
        .collect();
    let mut planned = Vec::new();
    for lead in &found {
        match plan(app, lead, &kinds) {
            Ok(row) => planned.push(row),
            Err(reason) => skipped.push((lead.id, reason)),
        }
    }
    skipped.sort_by_key(|(id, _)| *id);
    if planned.is_empty() {
        return Err(Error::NothingToEnrich(skipped));
    }

    let job_id = uuid::Uuid::new_v4().to_string();
    let cost: i64 = planned.iter().map(|row| row.credits).sum();
    let payer = Payer::of(&workspace);
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    credits::spend(&mut tx, payer, cost, "enrichment", &job_id, now).await?;
    let options = serde_json::to_string(&JobOptions::default()).unwrap_or_default();
    jobs::insert(
        &mut *tx,
        &NewJob {
            id: &job_id,
            workspace_id: workspace.id,
            kind: "enrich",
            campaign_id: None,
            audience_id: None,
            callback_url: None,
            options: &options,
            total_rows: planned.len() as i64,
        },
        now,
    )
    .await?;
    enrichments::insert_many(&mut tx, &job_id, workspace.id, &planned, now).await?;
    tx.commit().await?;
    app.enrichments_due.notify_one();
    Ok(Accepted {
        job_id,
        leads_to_enrich: planned.len() as i64,
        skipped,
    })
}

/// The kinds the upsert and import flags ask for (documented in docs/api-guide.md):
/// `enrich_data` the profile and the company; `is_generate_ai_analysis` the company's analysis;
/// `is_generate_person_analysis` the person's; `is_scrape_person_posts` and
/// `is_scrape_company_posts` the posts; `generate_ai_variables` the AI variables.
pub fn kinds_of_flags(options: &JobOptions) -> Vec<Kind> {
    let mut kinds = Vec::new();
    let mut want = |on: bool, wanted: &[Kind]| {
        if on {
            for kind in wanted {
                if !kinds.contains(kind) {
                    kinds.push(*kind);
                }
            }
        }
    };
    want(
        options.enrich_data,
        &[Kind::SocialProfileUrl, Kind::CompanyDomain],
    );
    want(options.is_generate_ai_analysis, &[Kind::CompanyDomain]);
    want(options.is_generate_person_analysis, &[Kind::PersonAnalysis]);
    want(options.is_scrape_person_posts, &[Kind::SocialPostsPerson]);
    want(options.is_scrape_company_posts, &[Kind::SocialPostsCompany]);
    want(options.generate_ai_variables, &[Kind::AiVariables]);
    kinds
}

/// Queues what the import's flags ask for the leads it just stored, inside the import's
/// transaction. Each lead gets the kinds it has inputs for; credits are taken for the batch,
/// or lead by lead when the batch cannot be paid in full, and a lead that cannot be paid is
/// recorded as failed ("No credits remaining"), so the job's errors say so. Returns whether
/// anything was queued.
pub async fn queue_after_import(
    app: &App,
    conn: &mut AnyConnection,
    job: &jobs::JobRow,
    kinds: &[Kind],
    leads: &[LeadRow],
    now: Micros,
) -> Result<bool> {
    let planned: Vec<NewEnrichment> = leads
        .iter()
        .filter_map(|lead| plan(app, lead, kinds).ok())
        .collect();
    if planned.is_empty() {
        return Ok(false);
    }
    let payer = Payer::of_workspace(&mut *conn, job.workspace_id).await?;
    let total: i64 = planned.iter().map(|row| row.credits).sum();
    match credits::spend(conn, payer, total, "enrichment", &job.id, now).await {
        Ok(()) => {
            enrichments::insert_many(conn, &job.id, job.workspace_id, &planned, now).await?;
            return Ok(true);
        }
        Err(Error::NoCredits) => {}
        Err(other) => return Err(other),
    }
    let mut paid = Vec::new();
    let mut unpaid = Vec::new();
    for row in planned {
        match credits::spend(conn, payer, row.credits, "enrichment", &job.id, now).await {
            Ok(()) => paid.push(row),
            Err(Error::NoCredits) => unpaid.push(row),
            Err(other) => return Err(other),
        }
    }
    enrichments::insert_many(conn, &job.id, job.workspace_id, &paid, now).await?;
    let unpaid: Vec<NewEnrichment> = unpaid
        .into_iter()
        .map(|row| NewEnrichment { credits: 0, ..row })
        .collect();
    enrichments::insert_failed(
        conn,
        &job.id,
        job.workspace_id,
        &unpaid,
        &Error::NoCredits.to_string(),
        now,
    )
    .await?;
    Ok(!paid.is_empty())
}

/// The row for a lead: the kinds it has inputs for and their cost, or why it has none.
fn plan(app: &App, lead: &LeadRow, kinds: &[Kind]) -> std::result::Result<NewEnrichment, String> {
    let facts = facts_of(lead);
    let mut runnable = Vec::new();
    let mut reasons: Vec<&str> = Vec::new();
    for kind in kinds {
        match kind.missing_input(&facts) {
            None => runnable.push(*kind),
            Some(reason) if !reasons.contains(&reason) => reasons.push(reason),
            Some(_) => {}
        }
    }
    if runnable.is_empty() {
        return Err(reasons.join(" "));
    }
    Ok(NewEnrichment {
        lead_id: lead.id,
        credits: runnable
            .iter()
            .map(|kind| app.config.costs.of_enrichment(*kind))
            .sum(),
        types: runnable
            .iter()
            .map(|kind| kind.as_str())
            .collect::<Vec<_>>()
            .join(","),
    })
}

/// What enrichment knows of a stored lead.
pub fn facts_of(lead: &LeadRow) -> LeadFacts {
    // Custom values are stored as a JSON object of text, as every reader takes them.
    let variables = serde_json::from_str(&lead.custom_values).unwrap_or_default();
    LeadFacts {
        first_name: lead.first_name.clone(),
        company_name: lead.company_name.clone(),
        company_domain: lead.company_domain.clone(),
        social_profile_url: lead.social_profile_url.clone(),
        variables,
    }
}

/// The kinds of a row, in run order.
pub fn kinds_of_row(row: &EnrichmentRow) -> Vec<Kind> {
    row.types.split(',').filter_map(Kind::parse).collect()
}

/// Marks the jobs of claimed rows as in their social step (fetching and analysing).
pub async fn started(app: &App, rows: &[EnrichmentRow]) -> Result<()> {
    let mut job_ids: Vec<&str> = rows.iter().map(|row| row.job_id.as_str()).collect();
    job_ids.sort_unstable();
    job_ids.dedup();
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    let mut moved = Vec::new();
    for job_id in &job_ids {
        if jobs::set_status_from(&mut *tx, job_id, &["pending"], STEP_SOCIAL, now).await? {
            moved.push(*job_id);
        }
    }
    commit_announcing(app, tx, &moved, &[]).await?;
    Ok(())
}

/// Ends claimed rows with what was found: the values merged into each lead's variables (a
/// lead changed meanwhile keeps its other values), failed kinds given back, the rows' jobs
/// moved on (`step_import` while their last rows are written, then `completed`/`failed`).
pub async fn finish(app: &App, done: &[(EnrichmentRow, Enriched)]) -> Result<()> {
    if done.is_empty() {
        return Ok(());
    }
    let now = time::now();

    // Jobs whose last rows these are show `step_import` while those rows are written.
    let mut last_rows_of: Vec<String> = Vec::new();
    for (row, _) in done {
        if last_rows_of.contains(&row.job_id) {
            continue;
        }
        let unfinished = enrichments::unfinished_in_job(app.db.pool(), &row.job_id).await?;
        let in_batch = done.iter().filter(|(r, _)| r.job_id == row.job_id).count() as i64;
        if unfinished <= in_batch {
            last_rows_of.push(row.job_id.clone());
        }
    }
    if !last_rows_of.is_empty() {
        let mut tx = app.db.begin_write().await?;
        for job_id in &last_rows_of {
            jobs::set_status_from(&mut *tx, job_id, &[STEP_SOCIAL], STEP_IMPORT, now).await?;
        }
        commit_announcing(app, tx, &last_rows_of, &[]).await?;
    }

    let mut tx = app.db.begin_write().await?;
    let mut touched_jobs: Vec<String> = Vec::new();
    let mut changed_leads: Vec<i64> = Vec::new();
    for (row, found) in done {
        let kinds = kinds_of_row(row);
        let failed_kinds: Vec<Kind> = found.failures.iter().map(|(kind, _)| *kind).collect();
        let every_kind_failed = kinds.iter().all(|kind| failed_kinds.contains(kind));
        let error = (!found.failures.is_empty()).then(|| {
            found
                .failures
                .iter()
                .map(|(kind, reason)| format!("{}: {reason}", kind.as_str()))
                .collect::<Vec<_>>()
                .join(" ")
        });
        let status = if every_kind_failed { "failed" } else { "done" };
        if !enrichments::finish(
            &mut *tx,
            row.id,
            row.attempts,
            status,
            error.as_deref(),
            now,
        )
        .await?
        {
            // Taken over by another process after this one's lease ran out: it will end it.
            continue;
        }
        if !found.values.is_empty() {
            write_values(&mut tx, row, &found.values, now).await?;
            changed_leads.push(row.lead_id);
        }
        let refund: i64 = failed_kinds
            .iter()
            .map(|kind| app.config.costs.of_enrichment(*kind))
            .sum::<i64>()
            .min(row.credits);
        if refund > 0 {
            let payer = Payer::of_workspace(&mut *tx, row.workspace_id).await?;
            let reference = row.job_id.clone();
            credits::refund(&mut tx, payer, refund, "enrichment_refund", &reference, now).await?;
        }
        jobs::count_enriched(&mut *tx, &row.job_id, i64::from(every_kind_failed), now).await?;
        if !touched_jobs.contains(&row.job_id) {
            touched_jobs.push(row.job_id.clone());
        }
    }
    let ended = enrichments::end_finished_jobs(&mut tx, now).await?;
    touched_jobs.extend(ended);
    commit_announcing(app, tx, &touched_jobs, &changed_leads).await
}

/// Ends jobs whose enrichment is over but which nothing else will end (an import whose last
/// batch queued its rows while the worker finished the earlier ones). Cheap when idle.
pub async fn end_finished_jobs(app: &App) -> Result<()> {
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    let ended = enrichments::end_finished_jobs(&mut tx, now).await?;
    commit_announcing(app, tx, &ended, &[]).await
}

/// Commits `tx` with a status event for each job (to other processes through PostgreSQL
/// NOTIFY, sent at commit), then tells this process's watchers. `changed_leads` are the leads
/// whose values it changed (their pages change).
async fn commit_announcing(
    app: &App,
    mut tx: store::WriteTransaction,
    job_ids: &[impl AsRef<str>],
    changed_leads: &[i64],
) -> Result<()> {
    for job_id in job_ids {
        store::notify(
            &mut tx,
            app.db.dialect(),
            crate::jobs::events::CHANNEL,
            job_id.as_ref(),
        )
        .await?;
    }
    page_changes::commit(app, tx, Changed::Leads(changed_leads.to_vec())).await?;
    for job_id in job_ids {
        app.events.publish(job_id.as_ref());
    }
    Ok(())
}

/// Merges `values` into the lead's custom variables as they are now (read in this
/// transaction, so a concurrent update of other keys is kept), and records new keys.
async fn write_values(
    tx: &mut AnyConnection,
    row: &EnrichmentRow,
    values: &BTreeMap<String, String>,
    now: Micros,
) -> Result<()> {
    let Some(current) = store::leads::get(&mut *tx, row.lead_id).await? else {
        return Ok(());
    };
    let mut custom: BTreeMap<String, String> =
        serde_json::from_str(&current.lead.custom_values).unwrap_or_default();
    custom.extend(
        values
            .iter()
            .map(|(key, value)| (key.clone(), value.clone())),
    );
    let custom = serde_json::to_string(&custom).map_err(|e| Error::Internal(e.into()))?;
    store::leads::set_custom_values(&mut *tx, row.lead_id, &custom, now).await?;
    let keys: Vec<&str> = values.keys().map(String::as_str).collect();
    variables::ensure_keys(tx, row.workspace_id, &keys, now).await?;
    Ok(())
}

/// The types still to run for a lead (`pending_enrichments` of `/leads/get`).
pub async fn pending_of(app: &App, lead_id: i64) -> Result<Vec<String>> {
    Ok(enrichments::pending_types(app.db.pool(), lead_id).await?)
}
