//! `/dashboard`: who engaged recently (the last 7 days, newest first), then the campaigns'
//! views side by side and a tile per campaign with its state, figures and a chart, over the
//! days picked (the last 30 by default), and a form for a new campaign.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use http::HeaderMap;
use lps::proto;
use serde::Serialize;

use super::charts::{self, Chart, Range, Series};
use super::{SignedIn, When, plural, screen, unavailable, when};
use crate::core_client::Core;
use crate::http::session_cookie::Session;

/// How far back "recently" reaches, and how many engaged leads the home page lists.
const HOT_DAYS: i64 = 7;
const HOT_LEADS: i64 = 20;

#[derive(Serialize)]
struct HomeView {
    name: String,
    email: String,
    csrf: String,
    workspaces: Vec<WorkspaceView>,
    /// The days the charts show, and its picker.
    range: Range,
    range_picker: minijinja::Value,
}

#[derive(Serialize)]
struct WorkspaceView {
    id: i64,
    name: String,
    /// Its hot threshold in words, for the legend.
    hot_threshold: Option<String>,
    hot: Vec<HotLead>,
    campaigns: Vec<Tile>,
    /// The campaigns' views side by side, when there are two or more with pages.
    series: Option<Series>,
    brandings: Vec<(i64, String)>,
}

/// A lead who engaged recently, and what they did.
#[derive(Serialize)]
struct HotLead {
    lead_id: i64,
    name: String,
    company: String,
    campaign_id: i64,
    campaign: String,
    did: String,
    /// The engagement score, one decimal.
    score: String,
    /// At or past the hot threshold.
    hot: bool,
    when: Option<When>,
}

/// A campaign's tile.
#[derive(Serialize)]
struct Tile {
    id: i64,
    name: String,
    state: &'static str,
    figures: String,
    chart: Option<Chart>,
    /// Its days, for the campaigns side by side.
    #[serde(skip)]
    days: Vec<proto::DailyAnalytics>,
}

pub async fn home(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let range = Range::of(&query, session.time_zone().as_deref());
    let mut workspaces = Vec::new();
    for workspace in &person.workspaces {
        match workspace_view(&core, &session, &person, workspace, &range).await {
            Ok(view) => workspaces.push(view),
            Err(status) => return unavailable(&status),
        }
    }
    let view = HomeView {
        email: person.email.clone(),
        name: if person.name.is_empty() {
            person.email.clone()
        } else {
            person.name.clone()
        },
        csrf: person.csrf_token.clone(),
        workspaces,
        range_picker: range.picker(),
        range,
    };
    screen(&headers, "Dashboard", "home.html", view)
}

async fn workspace_view(
    core: &Core,
    session: &Session,
    person: &proto::GetSessionResponse,
    workspace: &proto::SessionWorkspace,
    range: &Range,
) -> Result<WorkspaceView, tonic::Status> {
    let hot = core
        .engagement()
        .list_engaged_leads(session.request(proto::ListEngagedLeadsRequest {
            workspace_id: Some(workspace.id),
            days: Some(HOT_DAYS),
            limit: Some(HOT_LEADS),
        }))
        .await?
        .into_inner()
        .leads
        .into_iter()
        .map(|lead| HotLead {
            did: what_they_did(&lead),
            score: format!("{:.1}", lead.score),
            hot: super::is_hot(person, workspace.id, lead.score),
            when: when(lead.last_activity_at.as_ref()),
            lead_id: lead.lead_id,
            name: if lead.name.is_empty() {
                lead.email.clone().unwrap_or_default()
            } else {
                lead.name
            },
            company: lead.company_name.unwrap_or_default(),
            campaign_id: lead.campaign_id,
            campaign: lead.campaign_name,
        })
        .collect();
    let brandings = core
        .campaigns()
        .list_brandings(session.request(proto::ListBrandingsRequest {
            workspace_id: Some(workspace.id),
        }))
        .await?
        .into_inner()
        .brandings
        .into_iter()
        .map(|b| (b.branding_id, b.name))
        .collect();
    let campaigns = tiles(core, session, workspace.id, range).await?;
    let drawn: Vec<(String, Vec<proto::DailyAnalytics>)> = campaigns
        .iter()
        .filter(|tile| tile.chart.is_some())
        .map(|tile| (tile.name.clone(), tile.days.clone()))
        .collect();
    Ok(WorkspaceView {
        id: workspace.id,
        name: workspace.name.clone(),
        hot_threshold: super::hot_threshold(person, workspace.id),
        hot,
        series: charts::series(&drawn, &charts::VIEWS, range),
        campaigns,
        brandings,
    })
}

/// `Viewed, scrolled to the end, clicked twice, submitted a form`.
fn what_they_did(lead: &proto::EngagedLead) -> String {
    let mut did = Vec::new();
    if lead.views > 0 {
        did.push(if lead.views == 1 {
            "viewed".to_owned()
        } else {
            format!("viewed {} times", lead.views)
        });
    }
    if lead.scrolled_to_end {
        did.push("scrolled to the end".to_owned());
    }
    if lead.clicks > 0 {
        did.push(if lead.clicks == 1 {
            "clicked".to_owned()
        } else {
            format!("clicked {} times", lead.clicks)
        });
    }
    if lead.form_submissions > 0 {
        did.push(format!(
            "submitted {}",
            plural(lead.form_submissions, "form", "forms")
        ));
    }
    let mut said = did.join(", ");
    if let Some(first) = said.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    said
}

/// What a campaign's design state is, in words.
pub(super) fn design_state(design: &proto::Design) -> &'static str {
    match (
        design.has_design,
        design.is_live,
        design.has_unpublished_changes,
    ) {
        (false, _, _) => "No design yet",
        (true, false, _) => "Draft, not live",
        (true, true, true) => "Live; the draft has unpublished changes",
        (true, true, false) => "Live",
    }
}

/// A campaign's figures in one line, once it has pages, with the views not counted and why.
pub(super) fn figures(analytics: &proto::CampaignAnalytics) -> String {
    let counted = format!(
        "{}, {} visited ({}%), {}, {} ({}% clicked), {} on average",
        plural(analytics.pages_generated, "page", "pages"),
        analytics.pages_visited,
        analytics.visit_percentage,
        plural(analytics.unique_visitors, "visitor", "visitors"),
        plural(analytics.total_button_clicks, "click", "clicks"),
        analytics.click_percentage,
        plural(analytics.average_time_on_page_seconds, "second", "seconds")
    );
    let not_counted: Vec<String> = analytics
        .filtered_visits
        .iter()
        .filter(|entry| entry.count > 0)
        .filter_map(|entry| {
            let why = not_counted_because(entry.class())?;
            Some(format!("{} {why}", plural(entry.count, "view", "views")))
        })
        .collect();
    if not_counted.is_empty() {
        counted
    } else {
        format!("{counted}. Not counted: {}", not_counted.join(", "))
    }
}

/// Why views of a class were not counted, in words; none for a person's (counted).
fn not_counted_because(class: proto::VisitClass) -> Option<&'static str> {
    match class {
        proto::VisitClass::Unconfirmed => Some("opened without a sign of a person"),
        proto::VisitClass::Automated => Some("automated"),
        proto::VisitClass::ScannerNetwork => Some("from mail scanners' networks"),
        proto::VisitClass::Person | proto::VisitClass::Unspecified => None,
    }
}

/// A tile per campaign of the workspace: state, figures and, once there are pages, the chart
/// of its views over the range.
async fn tiles(
    core: &Core,
    session: &Session,
    workspace_id: i64,
    range: &Range,
) -> Result<Vec<Tile>, tonic::Status> {
    let campaigns = super::campaigns_in(core, session, workspace_id).await?;
    if campaigns.is_empty() {
        return Ok(Vec::new());
    }
    let analytics = core
        .engagement()
        .get_campaign_analytics(session.request(proto::GetCampaignAnalyticsRequest {
            workspace_id: Some(workspace_id),
            campaign_ids: Vec::new(),
        }))
        .await?
        .into_inner()
        .campaigns;
    let mut tiles = Vec::new();
    for campaign in campaigns {
        let design = core
            .pages()
            .get_design(session.request(proto::GetDesignRequest {
                workspace_id: Some(workspace_id),
                campaign_id: Some(campaign.id),
            }))
            .await?
            .into_inner();
        let analytics = analytics
            .iter()
            .find(|a| a.campaign_id == campaign.id && a.pages_generated > 0);
        let (chart, days) = match analytics {
            Some(_) => {
                let daily = core
                    .engagement()
                    .get_daily_analytics(session.request(range.daily_request(
                        workspace_id,
                        campaign.id,
                        session.time_zone(),
                    )))
                    .await?
                    .into_inner();
                (
                    Some(charts::chart(&daily.days, &charts::VIEWS, range)),
                    daily.days,
                )
            }
            None => (None, Vec::new()),
        };
        tiles.push(Tile {
            id: campaign.id,
            name: campaign.name,
            state: design_state(&design),
            figures: analytics
                .map(figures)
                .unwrap_or_else(|| "No pages yet".to_owned()),
            chart,
            days,
        });
    }
    Ok(tiles)
}

/// `/dashboard/live?workspace_id=`: the workspace's counted engagement as it is recorded, as
/// server-sent events (`engagement`, its JSON naming the lead, campaign and what happened),
/// for the home page's script to refresh what it shows without a reload. Kept alive by a
/// comment every 15 seconds; ends when the person's session does or core goes away (the
/// browser's `EventSource` reconnects by itself).
pub async fn live(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let workspace_id =
        super::number(&query, "workspace_id").or_else(|| person.workspaces.first().map(|w| w.id));
    let request = session.request(proto::WatchEngagementRequest {
        workspace_id,
        campaign_id: None,
    });
    let stream = match core.engagement().watch_engagement(request).await {
        Ok(reply) => reply.into_inner(),
        Err(status)
            if matches!(
                status.code(),
                tonic::Code::PermissionDenied | tonic::Code::NotFound
            ) =>
        {
            return super::gone("This workspace is not one of yours.");
        }
        Err(status) => return unavailable(&status),
    };
    let events = stream
        .take_while(|event| std::future::ready(event.is_ok()))
        .filter_map(|event| {
            std::future::ready(event.ok().map(|event| {
                let data = serde_json::json!({
                    "event": event.event,
                    "lead_id": event.lead_id,
                    "campaign_id": event.campaign_id,
                });
                Ok::<_, std::convert::Infallible>(
                    Event::default().event("engagement").data(data.to_string()),
                )
            }))
        });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)))
        .into_response()
}
