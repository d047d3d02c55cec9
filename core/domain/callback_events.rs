//! What callbacks announce: one type per event, whose body is the JSON a receiver gets
//! (`event` first, naming it), and the one way a callback is queued: in the caller's
//! transaction, into the outbox that `jobs/callbacks.rs` delivers from once it commits.
//! Adding an event is adding a variant; the compiler then names every place that must know it.

use serde::Serialize;
use serde_json::Value;
use sqlx::AnyConnection;

use crate::Result;
use crate::store::callbacks::{self, NewCallback};
use crate::time::Micros;

/// A callback's event and body.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event")]
pub enum CallbackEvent {
    /// A lead's page exists (sent per lead of a job with a `callback_url`).
    #[serde(rename = "lead.page_generated")]
    PageGenerated(PageGenerated),
    /// The first counted view of a lead's page.
    #[serde(rename = "lead.page_viewed")]
    PageViewed(PageViewed),
    /// A visitor submitted a form on a lead's page.
    #[serde(rename = "lead.form_submitted")]
    FormSubmitted(FormSubmitted),
    /// A lead's engagement score reached the hot threshold, the first time.
    #[serde(rename = "lead.hot")]
    LeadHot(LeadHot),
}

#[derive(Debug, Clone, Serialize)]
pub struct PageGenerated {
    pub job_id: String,
    pub lead_id: i64,
    pub campaign_id: i64,
    pub service_page_url: String,
    pub name: String,
    pub email: Option<String>,
    pub company_name: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PageViewed {
    pub lead_id: i64,
    pub campaign_id: i64,
    pub page_url: String,
    /// ISO 8601.
    pub viewed_at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct FormSubmitted {
    pub lead_id: i64,
    pub campaign_id: i64,
    pub submission_id: i64,
    pub form_id: String,
    pub page_url: String,
    pub email: Option<String>,
    /// The form's other fields by name.
    pub fields: Value,
    /// ISO 8601.
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct LeadHot {
    pub lead_id: i64,
    pub campaign_id: i64,
    pub score: f64,
    pub threshold: f64,
    pub page_url: Option<String>,
    /// ISO 8601.
    pub hot_at: String,
}

impl CallbackEvent {
    /// Every event's name, as receivers and the delivery log's filter know them.
    pub const NAMES: [&'static str; 4] = [
        "lead.page_generated",
        "lead.page_viewed",
        "lead.form_submitted",
        "lead.hot",
    ];

    /// The event's name (the body's `event`, the `x-lps-event` header, the log's column).
    pub fn name(&self) -> &'static str {
        match self {
            Self::PageGenerated(_) => Self::NAMES[0],
            Self::PageViewed(_) => Self::NAMES[1],
            Self::FormSubmitted(_) => Self::NAMES[2],
            Self::LeadHot(_) => Self::NAMES[3],
        }
    }

    /// The lead it is about.
    pub fn lead_id(&self) -> i64 {
        match self {
            Self::PageGenerated(body) => body.lead_id,
            Self::PageViewed(body) => body.lead_id,
            Self::FormSubmitted(body) => body.lead_id,
            Self::LeadHot(body) => body.lead_id,
        }
    }
}

/// Where callbacks go: the workspace, the receiver's address, and the job that led to them
/// (`None` for events that come from no job).
pub struct Receiver<'a> {
    pub workspace_id: i64,
    pub url: &'a str,
    pub job_id: Option<&'a str>,
}

/// Queues `events` for `to` in `tx`: delivered once the transaction commits, never before and
/// never lost after.
pub async fn enqueue(
    tx: &mut AnyConnection,
    to: &Receiver<'_>,
    events: impl IntoIterator<Item = CallbackEvent>,
    now: Micros,
) -> Result<()> {
    let destination = callbacks::destination_of(to.url);
    let rows: Vec<NewCallback> = events
        .into_iter()
        .map(|event| NewCallback {
            event: event.name(),
            workspace_id: to.workspace_id,
            destination: destination.clone(),
            job_id: to.job_id.unwrap_or_default().to_owned(),
            lead_id: event.lead_id(),
            url: to.url.to_owned(),
            payload: serde_json::to_string(&event).expect("a callback body serialises"),
        })
        .collect();
    callbacks::insert_many(tx, &rows, now).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_names_its_event_first_and_carries_its_fields() {
        let event = CallbackEvent::LeadHot(LeadHot {
            lead_id: 7,
            campaign_id: 3,
            score: 12.5,
            threshold: 8.0,
            page_url: None,
            hot_at: "2026-11-26T12:00:00.000000Z".into(),
        });
        let body = serde_json::to_string(&event).unwrap();
        assert!(
            body.starts_with(r#"{"event":"lead.hot","lead_id":7,"#),
            "{body}"
        );
        assert!(body.contains(r#""page_url":null"#), "{body}");
        assert_eq!(event.name(), "lead.hot");
        assert_eq!(event.lead_id(), 7);
    }
}
