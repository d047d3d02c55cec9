//! `/dashboard/leads/{lead_id}`: one lead, with its values, audiences, every campaign page
//! and its engagement (what the lead did, and why a view was not counted).

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use lps::proto;
use serde::Serialize;

use crate::core_client::Core;
use crate::dashboard::{SignedIn, When, plural, screen, unavailable, when};
use crate::http::html_page::message;

#[derive(Serialize)]
struct LeadView {
    id: i64,
    name: String,
    /// Every campaign page of the lead, oldest first.
    pages: Vec<PageLink>,
    score: f64,
    /// At or past the hot threshold, and since when it first was (`lead.hot`).
    hot: bool,
    hot_since: Option<When>,
    /// The hot threshold in words; `None` when no lead is ever hot.
    hot_threshold: Option<String>,
    last_activity: Option<When>,
    values: Vec<(String, String)>,
    audiences: Vec<String>,
    pending: Vec<String>,
    engagement: Vec<String>,
    last_viewed: Option<When>,
    activity: Vec<ActivityRow>,
    /// The next page of the timeline, when there is more.
    older: Option<String>,
}

/// A lead's page in one campaign.
#[derive(Serialize)]
struct PageLink {
    campaign_id: i64,
    campaign: String,
    url: String,
    since: Option<When>,
}

impl From<proto::LeadPage> for PageLink {
    fn from(page: proto::LeadPage) -> Self {
        Self {
            campaign_id: page.campaign_id,
            campaign: page.campaign_name,
            since: when(page.created_at.as_ref()),
            url: page.url,
        }
    }
}

/// One line of a lead's timeline.
#[derive(Serialize)]
struct ActivityRow {
    when: Option<When>,
    campaign: String,
    what: String,
    /// A form's answers.
    fields: Vec<(String, String)>,
    /// Why a view was not counted (its class and reason in words); empty for a person's.
    not_counted: String,
}

/// A form's answers in the order of their names.
fn sorted(fields: &std::collections::HashMap<String, String>) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = fields
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    fields.sort();
    fields
}

/// Why a view was not counted, in words, or nothing for a person's.
fn not_counted(entry: &proto::ActivityEntry) -> String {
    let class = match entry.class() {
        proto::VisitClass::Unconfirmed => "Not counted: no sign of a person yet",
        proto::VisitClass::Automated => "Not counted: automated",
        proto::VisitClass::ScannerNetwork => "Not counted: a mail scanner's network",
        proto::VisitClass::Person | proto::VisitClass::Unspecified => return String::new(),
    };
    match &entry.reason {
        Some(reason) => format!("{class} ({reason})"),
        None => class.to_owned(),
    }
}

/// What an entry of the timeline says.
fn described(entry: &proto::ActivityEntry) -> String {
    match entry.event.as_str() {
        "page_viewed" if entry.class() != proto::VisitClass::Person => "Opened the page".to_owned(),
        "page_viewed" => "Viewed the page".to_owned(),
        "time_on_page" => format!(
            "Spent {} on the page",
            plural(entry.seconds, "second", "seconds")
        ),
        "scroll_100_percent" => "Scrolled to the end".to_owned(),
        "button_clicked" => match &entry.target {
            Some(target) => format!("Clicked {target}"),
            None => "Clicked".to_owned(),
        },
        "form_submitted" => match &entry.form_id {
            Some(form) => format!("Submitted the form {form}"),
            None => "Submitted a form".to_owned(),
        },
        other => other.to_owned(),
    }
}

/// One lead.
pub async fn lead(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    headers: HeaderMap,
    Path(lead_id): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let not_found = || {
        message(
            StatusCode::NOT_FOUND,
            "Lead not found",
            "No lead of yours has this address.",
            Some(crate::http::html_page::Link {
                href: "/dashboard/leads",
                text: "All leads",
            }),
        )
    };
    let Ok(lead_id) = lead_id.parse::<i64>() else {
        return not_found();
    };
    let reply = core
        .leads()
        .get_lead(session.request(proto::GetLeadRequest {
            lead_id: Some(lead_id),
        }))
        .await;
    let reply = match reply {
        Ok(reply) => reply.into_inner(),
        Err(status) if status.code() == tonic::Code::NotFound => return not_found(),
        Err(status) => return unavailable(&status),
    };
    let before = query
        .get("before")
        .and_then(|micros| micros.parse::<i64>().ok())
        .map(lps::wire::to_proto);
    let activity = core
        .engagement()
        .list_lead_activity(session.request(proto::ListLeadActivityRequest {
            lead_id: Some(lead_id),
            before,
            limit: Some(50),
        }))
        .await;
    let activity = match activity {
        Ok(reply) => reply.into_inner(),
        Err(status) => return unavailable(&status),
    };
    let summary = reply.lead.unwrap_or_default();
    let engagement = reply.engagement.unwrap_or_default();
    let mut said = Vec::new();
    if engagement.views == 0 {
        said.push("Not viewed yet.".to_owned());
    } else {
        said.push(if engagement.views == 1 {
            "Viewed once.".to_owned()
        } else {
            format!("Viewed {} times.", engagement.views)
        });
        said.push(format!(
            "{} on the page in all.",
            plural(engagement.engaged_seconds, "second", "seconds")
        ));
        if engagement.scrolled_to_bottom {
            said.push("Scrolled to the end.".to_owned());
        }
        if engagement.clicks > 0 {
            said.push(format!(
                "Clicked {}.",
                plural(engagement.clicks, "time", "times")
            ));
        }
    }
    if engagement.form_submissions > 0 {
        said.push(format!(
            "Submitted {}.",
            plural(engagement.form_submissions, "form", "forms")
        ));
    }
    let view = LeadView {
        id: summary.lead_id,
        name: summary.name,
        pages: summary.pages.into_iter().map(PageLink::from).collect(),
        score: summary.score,
        hot: crate::dashboard::is_hot(&person, reply.workspace_id, summary.score),
        hot_since: when(engagement.hot_at.as_ref()),
        hot_threshold: crate::dashboard::hot_threshold(&person, reply.workspace_id),
        last_activity: when(summary.last_activity_at.as_ref()),
        values: reply.variables.into_iter().collect(),
        audiences: reply.audiences.into_iter().map(|a| a.name).collect(),
        pending: reply.pending_enrichments,
        engagement: said,
        last_viewed: when(engagement.last_viewed_at.as_ref()),
        activity: activity
            .entries
            .iter()
            .map(|entry| ActivityRow {
                when: when(entry.occurred_at.as_ref()),
                campaign: entry.campaign_name.clone(),
                what: described(entry),
                fields: sorted(&entry.fields),
                not_counted: not_counted(entry),
            })
            .collect(),
        older: activity.next_before.map(|next| {
            let micros = lps::wire::from_proto_micros(&next);
            format!("/dashboard/leads/{lead_id}?before={micros}")
        }),
    };
    let title = if view.name.is_empty() {
        "Lead".to_owned()
    } else {
        view.name.clone()
    };
    screen(&headers, &title, "lead.html", view)
}
