//! What callbacks announce: one type per event, whose body is the JSON a receiver gets
//! (`event` first, naming it). `announcements.rs` is the one way an event is announced.
//! Adding an event is adding a variant; the compiler then names every place that must know it.

use serde::Serialize;
use serde_json::Value;

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
