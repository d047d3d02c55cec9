//! A campaign's page, `/dashboard/campaigns/{id}`: its state, its figures and charts per day,
//! its settings (for owners of a workspace with domains, the domain its pages are handed out
//! on), its design's words with the variables they can name (the picker), and its latest form
//! submissions with every answer.

use axum::extract::{Query, State};
use axum::response::Response;
use http::HeaderMap;
use lps::{proto, wire};
use serde::Serialize;

use super::{Form_, design_of};
use crate::core_client::Core;
use crate::dashboard::charts::{self, Chart, Range};
use crate::dashboard::home::{design_state, figures};
use crate::dashboard::settings::DomainStatus;
use crate::dashboard::{CampaignScreen, When, screen, unavailable, when};
use crate::http::session_cookie::Session;

/// Form submissions listed on the campaign's page; the CSV has them all (up to
/// `CSV_SUBMISSIONS`, in `submissions.rs`).
const LISTED_SUBMISSIONS: i64 = 20;

#[derive(Serialize)]
struct CampaignView {
    id: i64,
    workspace_id: i64,
    name: String,
    slug: String,
    csrf: String,
    state: &'static str,
    has_design: bool,
    live: bool,
    /// Live, with a draft that differs from what visitors see.
    changed: bool,
    figures: String,
    charts: Vec<Chart>,
    /// The days the charts show, and its picker.
    range: Range,
    range_picker: minijinja::Value,
    submissions: Vec<SubmissionRow>,
    copy: CopyForm,
    cta_url: String,
    branding_id: i64,
    /// The workspace's brandings: (id, name).
    brandings: Vec<(i64, String)>,
    /// The workspace's own domains its pages may be handed out on: none for a member (only
    /// owners see them) or a workspace without any, and then no choice is shown.
    domains: Vec<DomainChoice>,
    /// The domain chosen; 0: the server's own address.
    domain_id: i64,
    /// The workspace's variables the words can name, to insert.
    variables: Vec<VariableRow>,
    /// Custom variables the words cannot name (other characters than letters, digits, `_`).
    unnamed: Vec<String>,
    /// The variable picked without the script: the text to type, or why there is none.
    picked: Option<Picked>,
}

/// A domain of the workspace, as the campaign's choice of address offers it.
#[derive(Serialize)]
struct DomainChoice {
    id: i64,
    hostname: String,
    /// Pages are handed out on it only once it is.
    verified: bool,
}

/// The workspace's domains to choose from: none when the person may not list them (a member).
async fn domain_choices(
    core: &Core,
    session: &Session,
    workspace_id: i64,
) -> Result<Vec<DomainChoice>, tonic::Status> {
    let listed = core
        .workspaces()
        .list_domains(session.request(proto::ListDomainsRequest {
            workspace_id: Some(workspace_id),
        }))
        .await;
    let domains = match listed {
        Ok(reply) => reply.into_inner().domains,
        Err(status) if status.code() == tonic::Code::PermissionDenied => Vec::new(),
        Err(status) => return Err(status),
    };
    Ok(domains
        .into_iter()
        .map(|d| DomainChoice {
            id: d.domain_id,
            verified: DomainStatus::of(&d.status) == DomainStatus::Verified,
            hostname: d.hostname,
        })
        .collect())
}

/// A variable the words can name, with the texts that name it.
#[derive(Serialize)]
struct VariableRow {
    key: String,
    /// What it holds (the default variables'); blank for a custom one.
    help: String,
    /// `{{ key }}`.
    text: String,
    /// The text before and after a fallback (`{{ key | default("` and `") }}`): the script
    /// puts the fallback typed between them.
    before: String,
    after: String,
}

/// The variable picker's answer without the script (a `GET` of the campaign's page).
#[derive(Serialize)]
struct Picked {
    key: String,
    fallback: String,
    /// The exact text to type, or `None` with `refusal` saying why.
    text: Option<String>,
    refusal: Option<&'static str>,
}

impl Picked {
    fn of(query: &Form_, variables: &[VariableRow]) -> Option<Self> {
        use lps::wire::copy_placeholder;
        let key = query.get("variable")?.trim().to_owned();
        let fallback = query
            .get("fallback")
            .map(|f| f.trim().to_owned())
            .unwrap_or_default();
        let text = variables
            .iter()
            .any(|v| v.key == key)
            .then(|| copy_placeholder::text(&key, &fallback))
            .flatten();
        let refusal = match text {
            Some(_) => None,
            None if !copy_placeholder::fallback_fits(&fallback) => {
                Some("A fallback cannot hold \u{201c}}}\u{201d} or a control character.")
            }
            None => Some("This workspace has no such variable the words can name."),
        };
        Some(Self {
            key,
            fallback,
            text,
            refusal,
        })
    }
}

/// The workspace's variables as the picker lists them, and the custom ones the words cannot
/// name.
fn variable_rows(variables: Vec<proto::Variable>) -> (Vec<VariableRow>, Vec<String>) {
    use lps::wire::copy_placeholder;
    let mut unnamed = Vec::new();
    let rows = variables
        .into_iter()
        .filter_map(|v| {
            let (Some(text), Some((before, after))) = (
                copy_placeholder::plain(&v.key),
                copy_placeholder::around_fallback(&v.key),
            ) else {
                unnamed.push(v.key);
                return None;
            };
            Some(VariableRow {
                help: v.help_text.unwrap_or_default(),
                key: v.key,
                text,
                before,
                after,
            })
        })
        .collect();
    (rows, unnamed)
}

/// The draft's words as written (blank: the default).
#[derive(Serialize, Default)]
struct CopyForm {
    headline: String,
    intro: String,
    /// One point a line.
    points: String,
    cta_label: String,
    signoff: String,
    event_when: String,
    event_where: String,
}

impl From<proto::CampaignCopy> for CopyForm {
    fn from(c: proto::CampaignCopy) -> Self {
        Self {
            headline: c.headline.unwrap_or_default(),
            intro: c.intro.unwrap_or_default(),
            points: c.points.map(|p| p.items.join("\n")).unwrap_or_default(),
            cta_label: c.cta_label.unwrap_or_default(),
            signoff: c.signoff.unwrap_or_default(),
            event_when: c.event_when.unwrap_or_default(),
            event_where: c.event_where.unwrap_or_default(),
        }
    }
}

#[derive(Serialize)]
struct SubmissionRow {
    lead_id: i64,
    /// The email they gave, else the lead's number.
    who: String,
    when: Option<When>,
    form_id: String,
    answers: Vec<(String, String)>,
    /// Why a submission is not counted (automation, a scanner network); none for a person's.
    not_counted: Option<String>,
}

/// A form submission's answers, the email first, then by name.
fn answers(submission: &proto::FormSubmission) -> Vec<(String, String)> {
    let mut answers: Vec<(String, String)> = submission
        .fields
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    answers.sort();
    if let Some(email) = &submission.email {
        answers.insert(0, ("email".to_owned(), email.clone()));
    }
    answers
}

pub async fn page(
    State(core): State<Core>,
    CampaignScreen {
        session,
        person,
        workspace_id,
        campaign,
    }: CampaignScreen,
    headers: HeaderMap,
    Query(query): Query<Form_>,
) -> Response {
    let range = Range::of(&query, session.time_zone().as_deref());
    match campaign_view(
        &core,
        &session,
        workspace_id,
        campaign,
        &person.csrf_token,
        range,
    )
    .await
    {
        Ok(mut view) => {
            view.picked = Picked::of(&query, &view.variables);
            let title = view.name.clone();
            screen(&headers, &title, "campaign.html", view)
        }
        Err(status) => unavailable(&status),
    }
}

async fn campaign_view(
    core: &Core,
    session: &Session,
    workspace_id: i64,
    campaign: proto::Campaign,
    csrf: &str,
    range: Range,
) -> Result<CampaignView, tonic::Status> {
    let ids = (Some(workspace_id), Some(campaign.id));
    let brandings = core
        .campaigns()
        .list_brandings(session.request(proto::ListBrandingsRequest {
            workspace_id: ids.0,
        }))
        .await?
        .into_inner()
        .brandings
        .into_iter()
        .map(|b| (b.branding_id, b.name))
        .collect();
    let domains = domain_choices(core, session, workspace_id).await?;
    let design = design_of(core, session, workspace_id, campaign.id).await?;
    let (variables, unnamed) = variable_rows(
        core.workspaces()
            .list_variables(session.request(proto::ListVariablesRequest {
                workspace_id: ids.0,
            }))
            .await?
            .into_inner()
            .variables,
    );
    let analytics = core
        .engagement()
        .get_campaign_analytics(session.request(proto::GetCampaignAnalyticsRequest {
            workspace_id: ids.0,
            campaign_ids: vec![campaign.id],
        }))
        .await?
        .into_inner()
        .campaigns
        .into_iter()
        .find(|a| a.pages_generated > 0);
    let daily = core
        .engagement()
        .get_daily_analytics(session.request(range.daily_request(
            workspace_id,
            campaign.id,
            session.time_zone(),
        )))
        .await?
        .into_inner()
        .days;
    let submissions = core
        .engagement()
        .list_form_submissions(session.request(proto::ListFormSubmissionsRequest {
            workspace_id: ids.0,
            campaign_id: ids.1,
            limit: Some(LISTED_SUBMISSIONS),
            before_id: None,
        }))
        .await?
        .into_inner()
        .submissions;
    Ok(CampaignView {
        copy: design.copy.clone().map(CopyForm::from).unwrap_or_default(),
        cta_url: campaign.cta_url.clone().unwrap_or_default(),
        branding_id: campaign.branding_id,
        brandings,
        domains,
        domain_id: campaign.domain_id.unwrap_or_default(),
        variables,
        unnamed,
        picked: None,
        id: campaign.id,
        workspace_id,
        name: campaign.name,
        slug: campaign.slug,
        csrf: csrf.to_owned(),
        state: design_state(&design),
        has_design: design.has_design,
        live: design.is_live,
        changed: design.is_live && design.has_unpublished_changes,
        figures: analytics
            .as_ref()
            .map(figures)
            .unwrap_or_else(|| "No pages yet: add leads to the campaign to give it pages.".into()),
        charts: [
            &charts::VIEWS,
            &charts::VISITORS,
            &charts::CLICKS,
            &charts::FORMS,
        ]
        .into_iter()
        .map(|figure| charts::chart(&daily, figure, &range))
        .collect(),
        range_picker: range.picker(),
        range,
        submissions: submissions
            .iter()
            .map(|s| SubmissionRow {
                lead_id: s.lead_id,
                who: s
                    .email
                    .clone()
                    .unwrap_or_else(|| format!("lead {}", s.lead_id)),
                when: when(s.created_at.as_ref()),
                form_id: s.form_id.clone(),
                answers: answers(s),
                not_counted: (s.class() != proto::VisitClass::Person).then(|| {
                    s.reason
                        .clone()
                        .unwrap_or_else(|| wire::visit_class_name(s.class()).to_owned())
                }),
            })
            .collect(),
    })
}
