//! `/dashboard/leads`: a workspace's leads, searched, filtered (campaign, audience, what they
//! did, last activity, hot only) and sorted (added, score, last activity), a keyset page at a
//! time, and downloaded as CSV. The forms acting on them are in `actions.rs`; one lead's page
//! (`/dashboard/leads/{lead_id}`) in `lead.rs`.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::response::Response;
use chrono::NaiveDate;
use http::HeaderMap;
use lps::proto;
use serde::Serialize;

mod actions;
mod lead;

pub use actions::{add, bulk};
pub use lead::lead;

use super::{SignedIn, When, plural, screen, unavailable, when};
use crate::core_client::Core;
use crate::http::session_cookie::Session;

/// Leads on one page of the list.
const PAGE_SIZE: i64 = 25;

/// What a visitor may have done, as the engagement filter names it.
const ENGAGEMENT: [(&str, &str); 4] = [
    ("page_viewed", "Viewed the page"),
    ("scroll_100_percent", "Scrolled to the end"),
    ("button_clicked", "Clicked"),
    ("form_submitted", "Submitted a form"),
];

/// The orders the list offers, as `sort` names them (the first is the default).
const SORTS: [(&str, &str); 3] = [
    ("created", "Newest first"),
    ("score", "Highest score first"),
    ("last_activity", "Most recently active first"),
];

#[derive(Serialize)]
struct ListView {
    /// The hot threshold in words, for the legend.
    hot_threshold: Option<String>,
    workspaces: Vec<Choice>,
    workspace_id: i64,
    search: String,
    campaigns: Vec<Choice>,
    campaign_id: Option<i64>,
    audiences: Vec<Choice>,
    audience_id: Option<i64>,
    engagements: Vec<Choice<&'static str>>,
    engagement: String,
    sorts: Vec<Choice<&'static str>>,
    sort: &'static str,
    active_from: String,
    active_until: String,
    hot: bool,
    leads: Vec<LeadRow>,
    total: String,
    /// Whether more than this page match (the bulk form offers them all).
    several_pages: bool,
    first: Option<String>,
    next: Option<String>,
    /// The CSV of every lead the filter matches.
    export: String,
    /// The filter, as the bulk form carries it.
    filter_fields: Vec<(&'static str, String)>,
    /// Audiences leads can be added to (not the Default Audience).
    targets: Vec<Choice>,
    csrf: String,
}

#[derive(Serialize)]
pub(super) struct Choice<T = i64> {
    pub(super) value: T,
    pub(super) label: String,
}

impl Choice {
    /// The person's workspaces, to pick the one a screen shows.
    pub(super) fn workspaces(person: &proto::GetSessionResponse) -> Vec<Self> {
        let workspaces = person.workspaces.iter();
        workspaces.map(|w| Self::of(w.id, &w.name)).collect()
    }

    pub(super) fn campaigns<'a>(
        campaigns: impl IntoIterator<Item = &'a proto::Campaign>,
    ) -> Vec<Self> {
        campaigns
            .into_iter()
            .map(|c| Self::of(c.id, &c.name))
            .collect()
    }

    pub(super) fn audiences<'a>(
        audiences: impl IntoIterator<Item = &'a proto::Audience>,
    ) -> Vec<Self> {
        audiences
            .into_iter()
            .map(|a| Self::of(a.id, &a.name))
            .collect()
    }

    fn of(value: i64, label: &str) -> Self {
        Self {
            value,
            label: label.to_owned(),
        }
    }
}

#[derive(Serialize)]
struct LeadRow {
    id: i64,
    name: String,
    email: String,
    company: String,
    score: f64,
    /// At or past the hot threshold.
    hot: bool,
    last_activity: Option<When>,
    /// The campaigns the lead has a page in, oldest first.
    campaigns: String,
    /// Its page (in the filtered campaign, else its oldest).
    page_url: Option<String>,
    added: Option<When>,
}

/// What the list, its CSV export and the bulk actions are filtered by, from the query string
/// (or the bulk form, which carries the same fields).
#[derive(Clone)]
pub(super) struct Filter {
    pub(super) workspace_id: i64,
    search: String,
    campaign_id: Option<i64>,
    audience_id: Option<i64>,
    engagement: String,
    sort: &'static str,
    /// Active on or after this day (UTC).
    active_from: Option<NaiveDate>,
    /// Active on or before this day (UTC).
    active_until: Option<NaiveDate>,
    hot: bool,
}

impl Filter {
    /// The filter asked for; the person's first workspace unless they name one of theirs.
    /// Values the form cannot have sent are ignored.
    pub(super) fn read(
        query: &BTreeMap<String, String>,
        person: &proto::GetSessionResponse,
    ) -> Option<Self> {
        let workspace_id = super::chosen_workspace(query, person)?.id;
        let date = |key: &str| {
            query
                .get(key)
                .and_then(|d| NaiveDate::parse_from_str(d.trim(), "%Y-%m-%d").ok())
        };
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
            sort: query
                .get("sort")
                .and_then(|sort| SORTS.iter().find(|(value, _)| value == sort))
                .map_or(SORTS[0].0, |(value, _)| value),
            active_from: date("active_from"),
            active_until: date("active_until"),
            hot: query.get("hot").is_some_and(|hot| hot == "1"),
        })
    }

    /// The fields that ask for this filter, as a query string or a form's hidden fields
    /// carry them.
    pub(super) fn fields(&self) -> Vec<(&'static str, String)> {
        let mut fields = vec![("workspace_id", self.workspace_id.to_string())];
        if !self.search.is_empty() {
            fields.push(("q", self.search.clone()));
        }
        if let Some(id) = self.campaign_id {
            fields.push(("campaign_id", id.to_string()));
        }
        if let Some(id) = self.audience_id {
            fields.push(("audience_id", id.to_string()));
        }
        if !self.engagement.is_empty() {
            fields.push(("engagement", self.engagement.clone()));
        }
        if self.sort != SORTS[0].0 {
            fields.push(("sort", self.sort.to_owned()));
        }
        if let Some(day) = self.active_from {
            fields.push(("active_from", day.to_string()));
        }
        if let Some(day) = self.active_until {
            fields.push(("active_until", day.to_string()));
        }
        if self.hot {
            fields.push(("hot", "1".to_owned()));
        }
        fields
    }

    /// The query string that asks for this filter (and the page after `after`, if given).
    pub(super) fn query(&self, after: Option<&str>) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (key, value) in self.fields() {
            query.append_pair(key, &value);
        }
        if let Some(after) = after {
            query.append_pair("after", after);
        }
        query.finish()
    }

    /// The search core runs for this filter (in its order, without a page).
    pub(super) fn request(&self) -> proto::SearchLeadsRequest {
        let midnight = |day: NaiveDate| {
            lps::wire::to_proto(
                day.and_hms_opt(0, 0, 0)
                    .unwrap_or_default()
                    .and_utc()
                    .timestamp_micros(),
            )
        };
        proto::SearchLeadsRequest {
            workspace_id: Some(self.workspace_id),
            search: (!self.search.is_empty()).then(|| self.search.clone()),
            campaign_ids: self.campaign_id.into_iter().collect(),
            audience_ids: self.audience_id.into_iter().collect(),
            engagement: (!self.engagement.is_empty())
                .then(|| self.engagement.clone())
                .into_iter()
                .collect(),
            sort: Some(self.sort.to_owned()),
            last_activity_from: self.active_from.map(midnight),
            // The whole of the last day: before the next one's midnight.
            last_activity_to: self
                .active_until
                .and_then(|day| day.succ_opt())
                .map(midnight),
            hot_only: self.hot,
            ..Default::default()
        }
    }

    /// One page of the matching leads in the filter's order: the first, or the one after
    /// `after`.
    pub(super) async fn search(
        &self,
        core: &Core,
        session: &Session,
        limit: i64,
        after: Option<String>,
    ) -> Result<proto::SearchLeadsResponse, tonic::Status> {
        let request = proto::SearchLeadsRequest {
            limit: Some(limit),
            after,
            ..self.request()
        };
        Ok(core
            .leads()
            .search_leads(session.request(request))
            .await?
            .into_inner())
    }
}

/// A workspace's campaigns and audiences, which the leads list filters by and the import
/// offers.
pub(super) async fn campaigns_and_audiences(
    core: &Core,
    session: &Session,
    workspace_id: i64,
) -> Result<(Vec<proto::Campaign>, Vec<proto::Audience>), tonic::Status> {
    let campaigns = super::campaigns_in(core, session, workspace_id).await?;
    let audiences = core
        .audiences()
        .list_audiences(session.request(proto::ListAudiencesRequest {
            workspace_id: Some(workspace_id),
        }))
        .await?
        .into_inner()
        .audiences;
    Ok((campaigns, audiences))
}

/// The leads list.
pub async fn list(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let Some(filter) = Filter::read(&query, &person) else {
        return super::no_workspace("Leads");
    };
    let after = query.get("after").filter(|a| !a.is_empty()).cloned();
    let (campaigns, audiences) =
        match campaigns_and_audiences(&core, &session, filter.workspace_id).await {
            Ok(both) => both,
            Err(status) => return unavailable(&status),
        };
    let found = match filter
        .search(&core, &session, PAGE_SIZE, after.clone())
        .await
    {
        Ok(found) => found,
        // A cursor from another order (or made up): the first page instead.
        Err(status) if status.code() == tonic::Code::InvalidArgument && after.is_some() => {
            match filter.search(&core, &session, PAGE_SIZE, None).await {
                Ok(found) => found,
                Err(status) => return unavailable(&status),
            }
        }
        Err(status) => return unavailable(&status),
    };
    let address = |after: Option<&str>| format!("/dashboard/leads?{}", filter.query(after));
    let view = ListView {
        workspaces: Choice::workspaces(&person),
        workspace_id: filter.workspace_id,
        campaigns: Choice::campaigns(&campaigns),
        campaign_id: filter.campaign_id,
        targets: Choice::audiences(audiences.iter().filter(|a| a.id != 0)),
        audiences: Choice::audiences(&audiences),
        audience_id: filter.audience_id,
        engagements: ENGAGEMENT
            .iter()
            .map(|(value, label)| Choice {
                value: *value,
                label: (*label).to_owned(),
            })
            .collect(),
        engagement: filter.engagement.clone(),
        sorts: SORTS
            .iter()
            .map(|(value, label)| Choice {
                value: *value,
                label: (*label).to_owned(),
            })
            .collect(),
        sort: filter.sort,
        active_from: filter
            .active_from
            .map(|d| d.to_string())
            .unwrap_or_default(),
        active_until: filter
            .active_until
            .map(|d| d.to_string())
            .unwrap_or_default(),
        hot: filter.hot,
        leads: found
            .leads
            .into_iter()
            .map(|lead| lead_row(&person, filter.workspace_id, lead))
            .collect(),
        hot_threshold: super::hot_threshold(&person, filter.workspace_id),
        total: plural(found.total, "lead", "leads"),
        several_pages: found.total > PAGE_SIZE,
        first: after.is_some().then(|| address(None)),
        next: found.next_cursor.as_deref().map(|next| address(Some(next))),
        export: format!("/dashboard/leads.csv?{}", filter.query(None)),
        filter_fields: filter.fields(),
        csrf: person.csrf_token.clone(),
        search: filter.search.clone(),
    };
    screen(&headers, "Leads", "leads.html", view)
}

fn lead_row(
    person: &proto::GetSessionResponse,
    workspace_id: i64,
    lead: proto::LeadSummary,
) -> LeadRow {
    LeadRow {
        hot: super::is_hot(person, workspace_id, lead.score),
        id: lead.lead_id,
        name: lead.name,
        email: lead.email.unwrap_or_default(),
        company: lead.company_name.unwrap_or_default(),
        score: lead.score,
        last_activity: when(lead.last_activity_at.as_ref()),
        campaigns: lead
            .pages
            .iter()
            .map(|page| page.campaign_name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        page_url: lead.service_page_url,
        added: when(lead.created_at.as_ref()),
    }
}

/// `/dashboard/leads.csv`: every lead the filter matches, the file `GET /leads/export-csv`
/// answers (one row per lead and page), streamed as core reads it.
pub async fn export(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let Some(filter) = Filter::read(&query, &person) else {
        return super::no_workspace("Leads");
    };
    let request = proto::ExportLeadsRequest {
        filter: Some(filter.request()),
        campaign_id: None,
    };
    let stream = match core.leads().export_leads(session.request(request)).await {
        Ok(reply) => reply.into_inner(),
        Err(status) => return unavailable(&status),
    };
    csv_download(stream)
}

/// The leads CSV of an export stream, as a download; a failure midway cuts it short (the
/// browser shows a failed download, never a silently short file).
pub(super) fn csv_download(stream: tonic::Streaming<proto::ExportLeadsResponse>) -> Response {
    let mut csv = crate::spreadsheet::LeadsCsv::default();
    let body =
        crate::spreadsheet::csv_stream(stream, "a leads export", move |batch| csv.write(batch));
    crate::spreadsheet::csv_attachment("leads.csv", body)
}
