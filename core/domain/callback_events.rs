//! What callbacks announce: one type per event, whose body is the JSON a receiver gets
//! (`event` first, naming it), and the one way an event is announced ([`announce`]): in the
//! caller's transaction, into the outbox that `jobs/callbacks.rs` delivers from once it
//! commits, for the lead's callback address and the workspace's notification channels.
//! Adding an event is adding a variant; the compiler then names every place that must know it.

use serde::Serialize;
use serde_json::Value;
use sqlx::AnyConnection;

use crate::domain::notifications;
use crate::store::callbacks::{self, NewCallback};
use crate::time::Micros;
use crate::{App, Result};

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

    /// The campaign whose page it is about.
    pub fn campaign_id(&self) -> i64 {
        match self {
            Self::PageGenerated(body) => body.campaign_id,
            Self::PageViewed(body) => body.campaign_id,
            Self::FormSubmitted(body) => body.campaign_id,
            Self::LeadHot(body) => body.campaign_id,
        }
    }

    /// The job that led to it, for events that come from one.
    pub fn job_id(&self) -> Option<&str> {
        match self {
            Self::PageGenerated(body) => Some(&body.job_id),
            Self::PageViewed(_) | Self::FormSubmitted(_) | Self::LeadHot(_) => None,
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

/// Where events go: the workspace (its notification channels hear them), the lead's own
/// callback address if it has one, and the job that led to them (`None` for events that come
/// from no job).
pub struct Receiver<'a> {
    pub workspace_id: i64,
    pub url: Option<&'a str>,
    pub job_id: Option<&'a str>,
}

/// Announces `events` in `tx`: queued for the lead's callback address, if any, and as messages
/// to each of the workspace's notification channels that receives them; delivered once the
/// transaction commits, never before and never lost after. Answers whether anything was
/// queued (the deliverer is then woken).
pub async fn announce(
    tx: &mut AnyConnection,
    app: &App,
    to: &Receiver<'_>,
    events: Vec<CallbackEvent>,
    now: Micros,
) -> Result<bool> {
    let mut queued = false;
    if let Some(url) = to.url {
        let destination = callbacks::destination_of(url);
        let rows: Vec<NewCallback> = events
            .iter()
            .map(|event| NewCallback {
                event: event.name(),
                workspace_id: to.workspace_id,
                destination: destination.clone(),
                job_id: to.job_id.unwrap_or_default().to_owned(),
                lead_id: event.lead_id(),
                url: url.to_owned(),
                payload: serde_json::to_string(event).expect("a callback body serialises"),
                channel_id: None,
            })
            .collect();
        callbacks::insert_many(&mut *tx, &rows, now).await?;
        queued = !rows.is_empty();
    }
    queued |= notifications::fan_out(tx, app, to.workspace_id, &events, now).await?;
    Ok(queued)
}

/// Whether events of `workspace_id` would be heard by anyone but a lead's own callback: its
/// notification channels (so that emitters make events only when someone listens).
pub async fn heard_in(tx: &mut AnyConnection, workspace_id: i64) -> Result<bool> {
    notifications::any_channel(tx, workspace_id).await
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
