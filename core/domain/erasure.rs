//! A prospect's data, exported and erased: the people on lead pages are data subjects.
//!
//! Export gathers everything lps holds about one lead as one JSON document. Erasure removes
//! leads and every trace of them in one transaction per batch of [`ERASE_BATCH`] (see
//! `store::erasure`), tells every process's page cache (the pages' addresses answer 404 at
//! once), and keeps an audit entry with no personal data.

use serde_json::{Value, json};

use crate::auth::{CredentialKind, Principal};
use crate::domain::page_changes::Changed;
use crate::domain::{engagement, leads as lead_domain, page_changes, score};
use crate::store::{engagement as engagement_store, erasure, form_submissions, leads};
use crate::time::{self, Micros};
use crate::{App, Error, Result};

/// Leads one call may erase.
pub const MAX_LEADS: usize = 1_000;
/// Leads erased per transaction.
const ERASE_BATCH: usize = 200;

fn iso(at: Micros) -> String {
    time::iso8601(&time::to_proto(at))
}

/// Everything lps holds about a lead, as JSON ("Lead not found" beyond the principal's reach).
pub async fn export(app: &App, principal: &Principal, lead_id: i64) -> Result<Value> {
    let lead_domain::FoundLead {
        lead: view,
        audiences,
        ..
    } = lead_domain::get(app, principal, lead_id).await?;
    let pool = app.db.pool();
    let row = leads::get(pool, lead_id)
        .await?
        .ok_or(Error::NotFound("Lead not found"))?;
    let addresses = crate::domain::domains::page_addresses(app).await?;
    let pages: Vec<Value> = engagement_store::pages_of_leads(pool, &[row.lead.slug.as_str()])
        .await?
        .into_iter()
        .filter(|page| page.lead_id == lead_id)
        .map(|page| {
            json!({
                "campaign_id": page.campaign_id,
                "url": addresses.page_url(page.workspace_id, &page.campaign_slug, &page.lead_slug),
            })
        })
        .collect();
    let sums = engagement::of_lead(app, lead_id).await?;
    let events: Vec<Value> = erasure::events_of(pool, lead_id)
        .await?
        .into_iter()
        .map(|e| {
            json!({
                "type": e.kind, "campaign_id": e.campaign_id, "class": e.class,
                "reason": e.reason, "seconds": e.seconds, "target": e.target,
                "occurred_at": iso(e.created_at),
            })
        })
        .collect();
    let submissions: Vec<Value> = form_submissions::of_lead(pool, lead_id, None, i64::MAX)
        .await?
        .into_iter()
        .map(|f| {
            let fields: Value = serde_json::from_str(&f.fields).unwrap_or_else(|_| json!({}));
            json!({
                "campaign_id": f.campaign_id, "form_id": f.form_id, "email": f.email,
                "fields": fields, "submitted_at": iso(f.created_at),
            })
        })
        .collect();
    let callbacks: Vec<Value> = erasure::callbacks_of(pool, lead_id)
        .await?
        .into_iter()
        .map(|c| {
            let payload: Value = serde_json::from_str(&c.payload).unwrap_or(Value::Null);
            json!({
                "url": c.url, "status": c.status, "attempts": c.attempts,
                "payload": payload, "created_at": iso(c.created_at),
            })
        })
        .collect();
    let enrichments: Vec<Value> = erasure::enrichments_of(pool, lead_id)
        .await?
        .into_iter()
        .map(|e| {
            json!({
                "types": e.types.split(',').collect::<Vec<_>>(), "status": e.status,
                "error": e.error, "queued_at": iso(e.created_at),
            })
        })
        .collect();
    Ok(json!({
        "lead": {
            "lead_id": view.id,
            "name": view.name,
            "email": view.email,
            "company_name": view.company_name,
            "company_domain": view.company_domain,
            "created_at": iso(view.created_at),
            "variables": view.variables(),
            "audiences": audiences.into_iter().map(|(id, name)| json!({"id": id, "name": name})).collect::<Vec<_>>(),
            "callback_url": leads::callback_url(pool, lead_id).await?,
        },
        "pages": pages,
        "engagement": {
            "views": sums.views,
            "clicks": sums.clicks,
            "scrolled_to_bottom": sums.scrolled_to_bottom != 0,
            "engaged_seconds": sums.engaged_seconds,
            "form_submissions": sums.form_submissions,
            "score": score::at(sums.score_base, time::now()),
        },
        "events": events,
        "form_submissions": submissions,
        "enrichments": enrichments,
        "callbacks": callbacks,
        "exported_at": iso(time::now()),
    }))
}

/// Erases the workspace's leads `ids` and every trace of them; answers how many of the ids
/// are erased (now, or by an earlier request, finished or interrupted). An id that never was
/// a lead of the workspace is "Lead not found" and nothing is erased.
///
/// The request is kept (`erasure_requests`) until every batch is done, so core finishes one a
/// kill interrupted when it starts again ([`resume_unfinished`]), and a retry erases the rest.
pub async fn erase(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    ids: &[i64],
) -> Result<usize> {
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Ok(0);
    }
    let mut known = crate::store::ids_in_workspace(
        app.db.pool(),
        crate::store::WorkspaceTable::Leads,
        workspace.id,
        &ids,
    )
    .await?;
    if known.len() != ids.len() {
        for chunk in ids.chunks(ERASE_BATCH) {
            known.extend(erasure::erased_before(app.db.pool(), workspace.id, chunk).await?);
        }
        known.sort_unstable();
        known.dedup();
        if known.len() != ids.len() {
            return Err(Error::NotFound("Lead not found"));
        }
    }
    let erased_by = format!(
        "user {} ({})",
        principal.user.id,
        match principal.kind {
            CredentialKind::AppToken => "connected app",
            CredentialKind::Session => "dashboard",
            CredentialKind::ApiKey => "API key",
        }
    );
    let request =
        erasure::insert_request(app.db.pool(), workspace.id, &ids, &erased_by, time::now()).await?;
    erase_batches(app, workspace.id, &ids, &erased_by).await?;
    erasure::finish_request(app.db.pool(), request).await?;
    Ok(ids.len())
}

/// Erases whichever of `ids` are still leads of the workspace, a batch per transaction; answers
/// how many it erased.
async fn erase_batches(
    app: &App,
    workspace_id: i64,
    ids: &[i64],
    erased_by: &str,
) -> Result<usize> {
    let mut erased = 0;
    for batch in ids.chunks(ERASE_BATCH) {
        let mut tx = app.db.begin_write().await?;
        let locked = erasure::lock_leads(&mut tx, app.db.dialect(), workspace_id, batch).await?;
        if locked.is_empty() {
            continue;
        }
        let removed = erasure::erase_leads(&mut tx, &locked).await?;
        let now = time::now();
        erasure::remember_erased(&mut tx, workspace_id, &locked, now).await?;
        erasure::record(&mut tx, workspace_id, &locked, erased_by, &removed, now).await?;
        erased += locked.len();
        // Every process's cached pages of these leads go (their addresses answer 404).
        page_changes::commit(app, tx, Changed::Leads(locked)).await?;
    }
    if erased > 0 {
        // The erased values' old pages leave the write-ahead log now, not at some later
        // checkpoint. A failure here loses nothing: the next checkpoint does it.
        if let Err(err) = app.db.checkpoint_after_erasure().await {
            tracing::warn!(error = %err, "the log could not be emptied after an erasure");
        }
    }
    Ok(erased)
}

/// At start: finishes what erasures a stopped process left, retrying while the database
/// cannot be reached.
pub async fn resume_at_start(app: App) {
    loop {
        match resume_unfinished(&app).await {
            Ok(_) => return,
            Err(err) => {
                tracing::warn!(error = %err, "unfinished erasures could not be resumed yet");
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            }
        }
    }
}

/// Finishes the erasures a killed process left unfinished (at start, and again while any
/// remain): the leads they name that are still there are erased, then the request is done.
pub async fn resume_unfinished(app: &App) -> Result<usize> {
    let mut resumed = 0;
    for request in erasure::unfinished_requests(app.db.pool()).await? {
        let ids: Vec<i64> = serde_json::from_str(&request.lead_ids).unwrap_or_default();
        let erased = erase_batches(app, request.workspace_id, &ids, &request.erased_by).await?;
        erasure::finish_request(app.db.pool(), request.id).await?;
        if erased > 0 {
            tracing::info!(
                erased,
                request = request.id,
                "finished an erasure a stopped process had begun"
            );
        }
        resumed += 1;
    }
    Ok(resumed)
}
