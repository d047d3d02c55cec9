//! `/dashboard/leads`: a workspace's leads, searched and filtered, a page at a time; and
//! `/dashboard/leads/{lead_id}`: one lead, with its values, audiences, page and engagement.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use lps::proto;
use serde::Serialize;

use super::{SCREENS, plural, signed_in, unavailable};
use crate::core_client::Core;
use crate::http::html_page::message;
use crate::http::session_cookie::as_credential;

/// Leads on one page of the list.
const PAGE_SIZE: i64 = 25;

/// What a visitor may have done, as the engagement filter names it.
const ENGAGEMENT: [(&str, &str); 4] = [
    ("page_viewed", "Viewed the page"),
    ("scroll_100_percent", "Scrolled to the end"),
    ("button_clicked", "Clicked"),
    ("form_submitted", "Submitted a form"),
];

#[derive(Serialize)]
struct ListView {
    workspaces: Vec<Choice>,
    workspace_id: i64,
    search: String,
    campaigns: Vec<Choice>,
    campaign_id: Option<i64>,
    engagements: Vec<Choice<&'static str>>,
    engagement: String,
    leads: Vec<LeadRow>,
    total: String,
    page: i64,
    previous: Option<String>,
    next: Option<String>,
}

#[derive(Serialize)]
struct Choice<T = i64> {
    value: T,
    label: String,
}

#[derive(Serialize)]
struct LeadRow {
    id: i64,
    name: String,
    email: String,
    company: String,
    added: String,
}

/// The leads list; the first workspace unless one is asked for.
pub async fn list(
    State(core): State<Core>,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let (token, person) = match signed_in(&core, &headers).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let number = |key: &str| query.get(key).and_then(|v| v.trim().parse::<i64>().ok());
    let Some(workspace_id) = number("workspace_id")
        .filter(|id| person.workspaces.iter().any(|w| w.id == *id))
        .or_else(|| person.workspaces.first().map(|w| w.id))
    else {
        return message(
            StatusCode::OK,
            "Leads",
            "You are not in any workspace yet.",
            None,
        );
    };
    let search = query
        .get("q")
        .map(|q| q.trim().to_owned())
        .unwrap_or_default();
    let campaign_id = number("campaign_id");
    let engagement = query
        .get("engagement")
        .filter(|e| ENGAGEMENT.iter().any(|(value, _)| value == e))
        .cloned()
        .unwrap_or_default();
    let page = number("page").unwrap_or(1).clamp(1, 40_000);
    let campaigns = match core
        .campaigns()
        .list_campaigns(as_credential(
            &token,
            proto::ListCampaignsRequest {
                workspace_id: Some(workspace_id),
            },
        ))
        .await
    {
        Ok(reply) => reply.into_inner().campaigns,
        Err(status) => return unavailable(&status),
    };
    let found = core
        .leads()
        .search_leads(as_credential(
            &token,
            proto::SearchLeadsRequest {
                workspace_id: Some(workspace_id),
                search: (!search.is_empty()).then(|| search.clone()),
                campaign_ids: campaign_id.into_iter().collect(),
                audience_ids: Vec::new(),
                engagement: (!engagement.is_empty())
                    .then(|| engagement.clone())
                    .into_iter()
                    .collect(),
                limit: Some(PAGE_SIZE),
                offset: Some((page - 1) * PAGE_SIZE),
            },
        ))
        .await;
    let found = match found {
        Ok(reply) => reply.into_inner(),
        Err(status) => return unavailable(&status),
    };
    let address = |page: i64| {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("workspace_id", &workspace_id.to_string());
        if !search.is_empty() {
            query.append_pair("q", &search);
        }
        if let Some(id) = campaign_id {
            query.append_pair("campaign_id", &id.to_string());
        }
        if !engagement.is_empty() {
            query.append_pair("engagement", &engagement);
        }
        query.append_pair("page", &page.to_string());
        format!("/dashboard/leads?{}", query.finish())
    };
    let pages = (found.total + PAGE_SIZE - 1) / PAGE_SIZE;
    let view = ListView {
        workspaces: person
            .workspaces
            .iter()
            .map(|w| Choice {
                value: w.id,
                label: w.name.clone(),
            })
            .collect(),
        workspace_id,
        campaigns: campaigns
            .into_iter()
            .map(|c| Choice {
                value: c.id,
                label: c.name,
            })
            .collect(),
        campaign_id,
        engagements: ENGAGEMENT
            .iter()
            .map(|(value, label)| Choice {
                value: *value,
                label: (*label).to_owned(),
            })
            .collect(),
        engagement: engagement.clone(),
        leads: found
            .leads
            .into_iter()
            .map(|lead| LeadRow {
                id: lead.lead_id,
                name: lead.name,
                email: lead.email.unwrap_or_default(),
                company: lead.company_name.unwrap_or_default(),
                added: lead
                    .created_at
                    .as_ref()
                    .map(lps::wire::plain_datetime)
                    .unwrap_or_default(),
            })
            .collect(),
        total: plural(found.total, "lead", "leads"),
        page,
        previous: (page > 1).then(|| address(page - 1)),
        next: (page < pages).then(|| address(page + 1)),
        search,
    };
    SCREENS.page(StatusCode::OK, "Leads", "leads.html", view)
}

#[derive(Serialize)]
struct LeadView {
    id: i64,
    name: String,
    page_url: Option<String>,
    values: Vec<(String, String)>,
    audiences: Vec<String>,
    pending: Vec<String>,
    engagement: Vec<String>,
    activity: Vec<ActivityRow>,
    /// The next page of the timeline, when there is more.
    older: Option<String>,
}

/// One line of a lead's timeline.
#[derive(Serialize)]
struct ActivityRow {
    when: String,
    campaign: String,
    what: String,
    /// A form's answers.
    fields: Vec<(String, String)>,
}

/// What an entry of the timeline says.
fn described(entry: &proto::ActivityEntry) -> String {
    match entry.event.as_str() {
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
    headers: HeaderMap,
    Path(lead_id): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let (token, _) = match signed_in(&core, &headers).await {
        Ok(found) => found,
        Err(response) => return response,
    };
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
        .get_lead(as_credential(
            &token,
            proto::GetLeadRequest {
                lead_id: Some(lead_id),
            },
        ))
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
        .list_lead_activity(as_credential(
            &token,
            proto::ListLeadActivityRequest {
                lead_id: Some(lead_id),
                before,
                limit: Some(50),
            },
        ))
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
        said.push(format!(
            "Viewed {}, last on {}.",
            plural(engagement.views, "time", "times"),
            engagement
                .last_viewed_at
                .as_ref()
                .map(lps::wire::plain_datetime)
                .unwrap_or_default()
        ));
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
        page_url: summary.service_page_url,
        values: reply.variables.into_iter().collect(),
        audiences: reply.audiences.into_iter().map(|a| a.name).collect(),
        pending: reply.pending_enrichments,
        engagement: said,
        activity: activity
            .entries
            .iter()
            .map(|entry| ActivityRow {
                when: entry
                    .occurred_at
                    .as_ref()
                    .map(lps::wire::plain_datetime)
                    .unwrap_or_default(),
                campaign: entry.campaign_name.clone(),
                what: described(entry),
                fields: entry
                    .fields
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<BTreeMap<_, _>>()
                    .into_iter()
                    .collect(),
            })
            .collect(),
        older: activity.next_before.map(|next| {
            let micros = next.seconds * 1_000_000 + i64::from(next.nanos / 1_000);
            format!("/dashboard/leads/{lead_id}?before={micros}")
        }),
    };
    let title = if view.name.is_empty() {
        "Lead".to_owned()
    } else {
        view.name.clone()
    };
    SCREENS.page(StatusCode::OK, &title, "lead.html", view)
}
