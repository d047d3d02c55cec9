//! A lead's engagement, read back: its timeline (every view whatever its class, counted
//! beacons, form submissions), the leads engaged with lately, and a lead's sums.

use std::collections::BTreeMap;

use crate::auth::Principal;
use crate::domain::beacon::BeaconKind;
use crate::domain::visit_class::VisitClass;
use crate::store::engagement_reports::{self, LeadSums};
use crate::store::{form_submissions, leads};
use crate::time::{self, Micros};
use crate::{App, Error, Result};

/// One entry of a lead's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    /// `page_viewed`, `time_on_page`, `scroll_100_percent`, `button_clicked`,
    /// `form_submitted`.
    pub event: &'static str,
    pub occurred_at: Micros,
    pub campaign_id: i64,
    pub campaign_name: String,
    pub seconds: i64,
    pub target: Option<String>,
    pub form_id: Option<String>,
    /// A form's every answered field, its email among them.
    pub fields: BTreeMap<String, String>,
    /// What the visit was taken for (`person`, `unconfirmed`, `automated`, `scanner_network`);
    /// only views are listed when not a person's.
    pub class: VisitClass,
    /// Why.
    pub reason: Option<String>,
}

/// What a visitor did on a lead's pages, newest first: counted beacons, every view whatever
/// its class (with the reason), and form submissions,
/// the `limit` before `before`, and where the next page starts when there is more.
pub async fn lead_activity(
    app: &App,
    principal: &Principal,
    lead_id: i64,
    before: Option<Micros>,
    limit: i64,
) -> Result<(Vec<Activity>, Option<Micros>)> {
    let not_found = || Error::NotFound("Lead not found");
    let row = leads::get(app.db.pool(), lead_id)
        .await?
        .ok_or_else(not_found)?;
    principal
        .reach(&app.db, row.lead.workspace_id)
        .await
        .map_err(|err| err.unreachable_as(not_found()))?;
    // One more than asked from each: whether there is more is known without another query.
    let events = engagement_reports::lead_events(app.db.pool(), lead_id, before, limit + 1).await?;
    let forms = form_submissions::of_lead(app.db.pool(), lead_id, before, limit + 1).await?;
    let mut all: Vec<Activity> = events
        .into_iter()
        .filter_map(|event| {
            let kind = BeaconKind::from_stored(&event.kind)?;
            Some(VisitClass::from_stored(&event.class).map(|class| Activity {
                event: kind.event(),
                occurred_at: event.created_at,
                campaign_id: event.campaign_id,
                campaign_name: event.campaign_name,
                seconds: event.seconds,
                target: event.target,
                form_id: None,
                fields: BTreeMap::new(),
                class,
                reason: event.reason,
            }))
        })
        .chain(forms.into_iter().map(|form| {
            let mut fields: BTreeMap<String, String> =
                serde_json::from_str(&form.fields).unwrap_or_default();
            if let Some(email) = form.email {
                fields.insert("email".to_owned(), email);
            }
            Ok(Activity {
                event: "form_submitted",
                occurred_at: form.created_at,
                campaign_id: form.campaign_id,
                campaign_name: form.campaign_name,
                seconds: 0,
                target: None,
                form_id: Some(form.form_id),
                fields,
                class: VisitClass::from_stored(&form.class)?,
                reason: Some(
                    form.reason
                        .unwrap_or_else(|| "a form was submitted".to_owned()),
                ),
            })
        }))
        .collect::<Result<_>>()?;
    all.sort_by_key(|entry| std::cmp::Reverse(entry.occurred_at));
    let more = all.len() > limit as usize;
    all.truncate(limit as usize);
    let next_before = if more {
        all.last().map(|entry| entry.occurred_at)
    } else {
        None
    };
    Ok((all, next_before))
}

/// Leads people engaged with in the last `days` days in a workspace, most recently active first.
pub async fn engaged_leads(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    days: i64,
    limit: i64,
) -> Result<Vec<engagement_reports::EngagedRow>> {
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let since = time::now() - days * time::MICROS_PER_DAY;
    Ok(engagement_reports::engaged(app.db.pool(), workspace.id, since, limit).await?)
}

/// A lead's counted engagement over all its pages.
pub async fn of_lead(app: &App, lead_id: i64) -> Result<LeadSums> {
    Ok(engagement_reports::lead_sums(app.db.pool(), lead_id).await?)
}
