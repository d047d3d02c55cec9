//! `/dashboard/leads`: a workspace's leads, searched and filtered, a page at a time; and
//! `/dashboard/leads/{lead_id}`: one lead, with its values, audiences, page and engagement.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lps::proto;
use serde::Serialize;

use super::{SignedIn, When, plural, screen, unavailable, when};
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
    audiences: Vec<Choice>,
    audience_id: Option<i64>,
    engagements: Vec<Choice<&'static str>>,
    engagement: String,
    leads: Vec<LeadRow>,
    total: String,
    page: i64,
    previous: Option<String>,
    next: Option<String>,
    /// The CSV of every lead the filter matches.
    export: String,
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
    added: Option<When>,
}

/// What the list and its CSV export are filtered by, from the query string.
#[derive(Clone)]
struct Filter {
    workspace_id: i64,
    search: String,
    campaign_id: Option<i64>,
    audience_id: Option<i64>,
    engagement: String,
}

impl Filter {
    /// The filter asked for; the person's first workspace unless they name one of theirs.
    fn read(query: &BTreeMap<String, String>, person: &proto::GetSessionResponse) -> Option<Self> {
        let workspace_id = super::chosen_workspace(query, person)?.id;
        Some(Self {
            workspace_id,
            search: query
                .get("q")
                .map(|q| q.trim().to_owned())
                .unwrap_or_default(),
            campaign_id: super::number(query, "campaign_id"),
            audience_id: super::number(query, "audience_id"),
            engagement: query
                .get("engagement")
                .filter(|e| ENGAGEMENT.iter().any(|(value, _)| value == e))
                .cloned()
                .unwrap_or_default(),
        })
    }

    /// The query string that asks for this filter (and `page`, if given).
    fn query(&self, page: Option<i64>) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("workspace_id", &self.workspace_id.to_string());
        if !self.search.is_empty() {
            query.append_pair("q", &self.search);
        }
        if let Some(id) = self.campaign_id {
            query.append_pair("campaign_id", &id.to_string());
        }
        if let Some(id) = self.audience_id {
            query.append_pair("audience_id", &id.to_string());
        }
        if !self.engagement.is_empty() {
            query.append_pair("engagement", &self.engagement);
        }
        if let Some(page) = page {
            query.append_pair("page", &page.to_string());
        }
        query.finish()
    }

    /// The search core runs for this filter (without a page).
    fn request(&self) -> proto::SearchLeadsRequest {
        proto::SearchLeadsRequest {
            workspace_id: Some(self.workspace_id),
            search: (!self.search.is_empty()).then(|| self.search.clone()),
            campaign_ids: self.campaign_id.into_iter().collect(),
            audience_ids: self.audience_id.into_iter().collect(),
            engagement: (!self.engagement.is_empty())
                .then(|| self.engagement.clone())
                .into_iter()
                .collect(),
            ..Default::default()
        }
    }

    /// One page of the matching leads, newest first.
    async fn search(
        &self,
        core: &Core,
        token: &str,
        limit: i64,
        offset: i64,
    ) -> Result<proto::SearchLeadsResponse, tonic::Status> {
        let request = proto::SearchLeadsRequest {
            limit: Some(limit),
            offset: Some(offset),
            ..self.request()
        };
        Ok(core
            .leads()
            .search_leads(as_credential(token, request))
            .await?
            .into_inner())
    }
}

fn no_workspace() -> Response {
    message(
        StatusCode::OK,
        "Leads",
        "You are not in any workspace yet.",
        None,
    )
}

/// The leads list.
pub async fn list(
    State(core): State<Core>,
    SignedIn(token, person): SignedIn,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let Some(filter) = Filter::read(&query, &person) else {
        return no_workspace();
    };
    let page = query
        .get("page")
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(1)
        .clamp(1, 40_000);
    let campaigns = match core
        .campaigns()
        .list_campaigns(as_credential(
            &token,
            proto::ListCampaignsRequest {
                workspace_id: Some(filter.workspace_id),
            },
        ))
        .await
    {
        Ok(reply) => reply.into_inner().campaigns,
        Err(status) => return unavailable(&status),
    };
    let audiences = match core
        .audiences()
        .list_audiences(as_credential(
            &token,
            proto::ListAudiencesRequest {
                workspace_id: Some(filter.workspace_id),
            },
        ))
        .await
    {
        Ok(reply) => reply.into_inner().audiences,
        Err(status) => return unavailable(&status),
    };
    let found = match filter
        .search(&core, &token, PAGE_SIZE, (page - 1) * PAGE_SIZE)
        .await
    {
        Ok(found) => found,
        Err(status) => return unavailable(&status),
    };
    let address = |page: i64| format!("/dashboard/leads?{}", filter.query(Some(page)));
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
        workspace_id: filter.workspace_id,
        campaigns: campaigns
            .into_iter()
            .map(|c| Choice {
                value: c.id,
                label: c.name,
            })
            .collect(),
        campaign_id: filter.campaign_id,
        audiences: audiences
            .into_iter()
            .map(|a| Choice {
                value: a.id,
                label: a.name,
            })
            .collect(),
        audience_id: filter.audience_id,
        engagements: ENGAGEMENT
            .iter()
            .map(|(value, label)| Choice {
                value: *value,
                label: (*label).to_owned(),
            })
            .collect(),
        engagement: filter.engagement.clone(),
        leads: found
            .leads
            .into_iter()
            .map(|lead| LeadRow {
                id: lead.lead_id,
                name: lead.name,
                email: lead.email.unwrap_or_default(),
                company: lead.company_name.unwrap_or_default(),
                added: when(lead.created_at.as_ref()),
            })
            .collect(),
        total: plural(found.total, "lead", "leads"),
        page,
        previous: (page > 1).then(|| address(page - 1)),
        next: (page < pages).then(|| address(page + 1)),
        export: format!("/dashboard/leads.csv?{}", filter.query(None)),
        search: filter.search.clone(),
    };
    screen(&headers, "Leads", "leads.html", view)
}

#[derive(Serialize)]
struct LeadView {
    id: i64,
    name: String,
    /// Every campaign page of the lead, oldest first.
    pages: Vec<PageLink>,
    score: f64,
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
    let class = match entry.class.as_str() {
        "unconfirmed" => "Not counted: no sign of a person yet",
        "automated" => "Not counted: automated",
        "scanner_network" => "Not counted: a mail scanner's network",
        _ => return String::new(),
    };
    match &entry.reason {
        Some(reason) => format!("{class} ({reason})"),
        None => class.to_owned(),
    }
}

/// What an entry of the timeline says.
fn described(entry: &proto::ActivityEntry) -> String {
    match entry.event.as_str() {
        "page_viewed" if entry.class != "person" => "Opened the page".to_owned(),
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
    SignedIn(token, _): SignedIn,
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

/// `/dashboard/leads.csv`: every lead the filter matches, the file `GET /leads/export-csv`
/// answers (one row per lead and page), streamed as core reads it.
pub async fn export(
    State(core): State<Core>,
    SignedIn(token, person): SignedIn,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let Some(filter) = Filter::read(&query, &person) else {
        return no_workspace();
    };
    let request = proto::ExportLeadsRequest {
        filter: Some(filter.request()),
        campaign_id: None,
    };
    let stream = match core
        .leads()
        .export_leads(as_credential(&token, request))
        .await
    {
        Ok(reply) => reply.into_inner(),
        Err(status) => return unavailable(&status),
    };
    csv_download(stream)
}

/// The leads CSV of an export stream, as a download; a failure midway cuts it short (the
/// browser shows a failed download, never a silently short file).
fn csv_download(stream: tonic::Streaming<proto::ExportLeadsResponse>) -> Response {
    use tokio_stream::StreamExt;
    let mut csv = crate::spreadsheet::LeadsCsv::default();
    let chunks = stream.map(move |batch| match batch {
        Ok(batch) => Ok(csv.write(batch)),
        Err(status) => {
            tracing::warn!(%status, "a leads export stopped");
            Err(std::io::Error::other("core stopped answering"))
        }
    });
    let mut response = Response::new(axum::body::Body::from_stream(chunks));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"leads.csv\""),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
