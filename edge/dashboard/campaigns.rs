//! A campaign in the dashboard: `/dashboard/campaigns/{id}` (its state, publish or unpublish,
//! its figures and charts per day, its latest form submissions with every answer), the
//! gallery of templates shown rendered on it (`/templates`), its draft's HTML and CSS
//! (`/design`), an AI design run and its progress (`/generate`, `/runs/{run_id}`), its draft
//! previewed as a lead (`/preview`) and its form submissions as CSV (`/submissions.csv`).

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lps::proto;
use serde::Serialize;

use super::charts::{self, Chart};
use super::home::{design_state, figures};
use super::{
    CampaignScreen, Notice, SCREENS, Settings, SignedForm, When, after_action, number,
    redirect_with, screen, text, unavailable, when,
};
use crate::core_client::Core;
use crate::http::html_page::{self, Framing, Link, message};
use crate::http::session_cookie::Session;

type Form_ = BTreeMap<String, String>;

/// Form submissions listed on the campaign's page; the CSV has them all (up to
/// [`CSV_SUBMISSIONS`]).
const LISTED_SUBMISSIONS: i64 = 20;
/// The most submissions one CSV holds (newest first), read from core 100 at a time.
const CSV_SUBMISSIONS: usize = 10_000;

fn campaign_address(campaign_id: i64) -> String {
    format!("/dashboard/campaigns/{campaign_id}")
}

/// A new campaign in a workspace: its name, branding, and where its call to action leads;
/// then its page, to pick a design.
pub async fn create(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let request = proto::CreateCampaignRequest {
        workspace_id: number(&form, "workspace_id"),
        name: text(&form, "name"),
        branding_id: number(&form, "branding_id"),
        prompt: None,
        cta_url: text(&form, "cta_url"),
    };
    match core
        .campaigns()
        .create_campaign(session.request(request))
        .await
    {
        Ok(reply) => {
            let created = reply.into_inner();
            let done = format!(
                "The campaign \u{201c}{}\u{201d} was created. Pick a template or generate a design to give it pages.",
                created.name
            );
            redirect_with(
                &settings,
                &campaign_address(created.campaign_id),
                &Notice::news(&done),
            )
        }
        Err(status) => redirect_with(&settings, "/dashboard", &Notice::alert(status.message())),
    }
}

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
    submissions: Vec<SubmissionRow>,
    copy: CopyForm,
    cta_url: String,
    branding_id: i64,
    /// The workspace's brandings: (id, name).
    brandings: Vec<(i64, String)>,
    /// The workspace's variables the words can name, to insert.
    variables: Vec<VariableRow>,
    /// Custom variables the words cannot name (other characters than letters, digits, `_`).
    unnamed: Vec<String>,
    /// The variable picked without the script: the text to type, or why there is none.
    picked: Option<Picked>,
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
    match campaign_view(&core, &session, workspace_id, campaign, &person.csrf_token).await {
        Ok(mut view) => {
            view.picked = Picked::of(&query, &view.variables);
            let title = view.name.clone();
            screen(&headers, &title, "campaign.html", view)
        }
        Err(status) => unavailable(&status),
    }
}

/// The campaign's design: its state, draft and words.
async fn design_of(
    core: &Core,
    session: &Session,
    workspace_id: i64,
    campaign_id: i64,
) -> Result<proto::Design, tonic::Status> {
    let request = proto::GetDesignRequest {
        workspace_id: Some(workspace_id),
        campaign_id: Some(campaign_id),
    };
    Ok(core
        .pages()
        .get_design(session.request(request))
        .await?
        .into_inner())
}

async fn campaign_view(
    core: &Core,
    session: &Session,
    workspace_id: i64,
    campaign: proto::Campaign,
    csrf: &str,
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
        .get_daily_analytics(session.request(proto::GetDailyAnalyticsRequest {
            workspace_id: ids.0,
            campaign_id: ids.1,
            ..Default::default()
        }))
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
        .map(|figure| charts::chart(&daily, figure))
        .collect(),
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
                not_counted: (s.class != "person")
                    .then(|| s.reason.clone().unwrap_or_else(|| s.class.clone())),
            })
            .collect(),
    })
}

/// What the changes screen shows: the live page and the draft side by side, and the button
/// that publishes the draft.
#[derive(Serialize)]
struct ChangesView {
    id: i64,
    workspace_id: i64,
    name: String,
    csrf: String,
    changed: bool,
}

/// The live page beside the draft, before publishing the changes.
pub async fn changes(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    CampaignScreen {
        session,
        person,
        workspace_id,
        campaign,
    }: CampaignScreen,
    headers: HeaderMap,
) -> Response {
    let design = match design_of(&core, &session, workspace_id, campaign.id).await {
        Ok(design) => design,
        Err(status) => return unavailable(&status),
    };
    if !design.is_live {
        return redirect_with(
            &settings,
            &campaign_address(campaign.id),
            &Notice::alert("The campaign is not live: publish the draft from its page."),
        );
    }
    let view = ChangesView {
        id: campaign.id,
        workspace_id,
        name: campaign.name,
        csrf: person.csrf_token,
        changed: design.has_unpublished_changes,
    };
    screen(&headers, "Publish changes", "changes.html", view)
}

/// A step before unpublishing: what prospects will see meanwhile.
pub async fn confirm_unpublish(
    CampaignScreen {
        person,
        workspace_id,
        campaign,
        ..
    }: CampaignScreen,
) -> Response {
    super::confirm(
        "Unpublish a campaign",
        super::Confirmation {
            question: format!("Unpublish \u{201c}{}\u{201d}?", campaign.name),
            consequence: "Every prospect who opens a link of this campaign will see a \u{201c}not live yet\u{201d} page instead of their page, until you publish again. Leads, pages and engagement are kept.",
            action: "/dashboard/campaigns/unpublish",
            csrf: person.csrf_token,
            fields: vec![
                ("workspace_id", workspace_id.to_string()),
                ("campaign_id", campaign.id.to_string()),
            ],
            button: "Unpublish",
            back: campaign_address(campaign.id),
        },
    )
}

pub async fn publish(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    set_live(core, settings, session, form, true).await
}

pub async fn unpublish(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    set_live(core, settings, session, form, false).await
}

async fn set_live(
    core: Core,
    settings: super::DashboardSettings,
    session: Session,
    form: Form_,
    live: bool,
) -> Response {
    let request = proto::CampaignDesignRequest {
        workspace_id: number(&form, "workspace_id"),
        campaign_id: number(&form, "campaign_id"),
    };
    let request = session.request(request);
    let done = if live {
        core.pages().publish(request).await
    } else {
        core.pages().unpublish(request).await
    };
    let notice = match done {
        Ok(reply) => Notice::news(&reply.into_inner().message),
        Err(status) => Notice::alert(status.message()),
    };
    let back = number(&form, "campaign_id")
        .map(campaign_address)
        .unwrap_or_else(|| "/dashboard".to_owned());
    redirect_with(&settings, &back, &notice)
}

/// The campaign's draft (or, with `template_id`, a template on it) as one of its workspace's
/// leads would see it (sample values without `lead_id`), before it is published: never
/// tracked or counted. The dashboard's gallery shows it in frames.
pub async fn preview(
    State(core): State<Core>,
    CampaignScreen {
        session,
        workspace_id,
        campaign,
        ..
    }: CampaignScreen,
    Query(query): Query<Form_>,
) -> Response {
    let request = proto::PreviewDraftRequest {
        workspace_id: Some(workspace_id),
        campaign_id: Some(campaign.id),
        lead_id: number(&query, "lead_id"),
        template_id: number(&query, "template_id"),
        published: Some(query.get("published").is_some_and(|v| v == "1")),
    };
    match core.pages().preview_draft(session.request(request)).await {
        Ok(reply) => html_page::preview(reply.into_inner().html, Framing::SameOrigin),
        // No design yet, another workspace's lead, a design over its budget: said as core says it.
        Err(status)
            if matches!(
                status.code(),
                tonic::Code::NotFound
                    | tonic::Code::FailedPrecondition
                    | tonic::Code::InvalidArgument
            ) =>
        {
            let back = campaign_address(campaign.id);
            message(
                StatusCode::UNPROCESSABLE_ENTITY,
                "No preview",
                status.message(),
                Some(Link {
                    href: &back,
                    text: "Back to the campaign",
                }),
            )
        }
        Err(status) => unavailable(&status),
    }
}

#[derive(Serialize)]
struct GalleryView {
    id: i64,
    workspace_id: i64,
    name: String,
    csrf: String,
    templates: Vec<TemplateView>,
}

#[derive(Serialize)]
struct TemplateView {
    id: i64,
    name: String,
    description: String,
    /// Premade, or made in this workspace.
    source: &'static str,
}

/// Every template (premade and the workspace's), each shown rendered on this campaign, to
/// pick one for its draft.
pub async fn gallery(
    State(core): State<Core>,
    CampaignScreen {
        session,
        person,
        workspace_id,
        campaign,
    }: CampaignScreen,
    headers: HeaderMap,
) -> Response {
    let templates = match core
        .pages()
        .list_templates(session.request(proto::ListTemplatesRequest {
            workspace_id: Some(workspace_id),
            search: None,
        }))
        .await
    {
        Ok(reply) => reply.into_inner().templates,
        Err(status) => return unavailable(&status),
    };
    let view = GalleryView {
        id: campaign.id,
        workspace_id,
        name: campaign.name.clone(),
        csrf: person.csrf_token.clone(),
        templates: templates
            .into_iter()
            .map(|t| TemplateView {
                id: t.template_id,
                name: t.name,
                description: t.description.unwrap_or_default(),
                source: if t.source == "premade" {
                    "Premade"
                } else {
                    "Made in this workspace"
                },
            })
            .collect(),
    };
    screen(
        &headers,
        &format!("Pick a template for {}", campaign.name),
        "gallery.html",
        view,
    )
}

/// The template picked becomes the campaign's draft (visitors see it once published).
pub async fn apply_template(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(campaign_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let campaign_id = campaign_id.parse::<i64>().ok();
    let outcome = core
        .pages()
        .apply_template(session.request(proto::ApplyTemplateRequest {
            workspace_id: number(&form, "workspace_id"),
            campaign_id,
            template_id: number(&form, "template_id"),
        }))
        .await;
    let done = "The template is the campaign's draft now: preview it, then publish it.";
    after_action(
        &settings,
        &campaign_address(campaign_id.unwrap_or_default()),
        outcome,
        done,
    )
}

#[derive(Serialize)]
struct DesignView {
    id: i64,
    workspace_id: i64,
    csrf: String,
    html: String,
    css: String,
    error: Option<String>,
}

/// The draft's HTML and CSS to edit.
pub async fn design_form(
    State(core): State<Core>,
    CampaignScreen {
        session,
        person,
        workspace_id,
        campaign,
    }: CampaignScreen,
    headers: HeaderMap,
) -> Response {
    let design = match design_of(&core, &session, workspace_id, campaign.id).await {
        Ok(design) => design,
        Err(status) => return unavailable(&status),
    };
    let view = DesignView {
        id: campaign.id,
        workspace_id,
        csrf: person.csrf_token.clone(),
        html: design.html.unwrap_or_default(),
        css: design.css.unwrap_or_default(),
        error: None,
    };
    screen(
        &headers,
        &format!("Edit the design of {}", campaign.name),
        "design.html",
        view,
    )
}

/// Saves the draft, cleaned and compiled as the API does; a design that does not compile is
/// shown again with what is wrong (the line named) and nothing lost.
pub async fn save_design(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(campaign_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let campaign_id = campaign_id.parse::<i64>().unwrap_or_default();
    let html = form.get("html").cloned().unwrap_or_default();
    let css = form.get("css").cloned().unwrap_or_default();
    let outcome = core
        .pages()
        .update_design(session.request(proto::UpdateDesignRequest {
            workspace_id: number(&form, "workspace_id"),
            campaign_id: Some(campaign_id),
            html: Some(html.clone()),
            css: Some(css.clone()),
        }))
        .await;
    match outcome {
        Ok(_) => redirect_with(
            &settings,
            &campaign_address(campaign_id),
            &Notice::news("The draft was saved: preview it, then publish it."),
        ),
        Err(status) if status.code() == tonic::Code::InvalidArgument => {
            let view = DesignView {
                id: campaign_id,
                workspace_id: number(&form, "workspace_id").unwrap_or_default(),
                csrf: form.get("csrf_token").cloned().unwrap_or_default(),
                html,
                css,
                error: Some(status.message().to_owned()),
            };
            SCREENS.page(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Edit the design",
                "design.html",
                view,
            )
        }
        Err(status) => redirect_with(
            &settings,
            &campaign_address(campaign_id),
            &Notice::alert(status.message()),
        ),
    }
}

/// Saves the draft's words (each field: blank goes back to the default; points one a line).
pub async fn save_copy(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(campaign_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let campaign_id = campaign_id.parse::<i64>().unwrap_or_default();
    let field = |key: &str| Some(form.get(key).cloned().unwrap_or_default());
    let copy = proto::CampaignCopy {
        headline: field("headline"),
        intro: field("intro").map(|t| t.replace("\r\n", "\n")),
        points: Some(proto::CopyPoints {
            items: form
                .get("points")
                .map(|p| p.lines().map(str::to_owned).collect())
                .unwrap_or_default(),
        }),
        cta_label: field("cta_label"),
        signoff: field("signoff").map(|t| t.replace("\r\n", "\n")),
        event_when: field("event_when"),
        event_where: field("event_where"),
    };
    let outcome = core
        .campaigns()
        .update_campaign(session.request(proto::UpdateCampaignRequest {
            workspace_id: number(&form, "workspace_id"),
            campaign_id: Some(campaign_id),
            cta_url: None,
            branding_id: None,
            copy: Some(copy),
            page_slug: None,
            name: None,
        }))
        .await;
    after_action(
        &settings,
        &campaign_address(campaign_id),
        outcome,
        "The words were saved to the draft: preview it, then publish it.",
    )
}

/// Renames the campaign, or changes where its call to action leads or its branding (owners
/// and members alike: core decides who may).
pub async fn save_settings(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(campaign_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let campaign_id = campaign_id.parse::<i64>().unwrap_or_default();
    let outcome = core
        .campaigns()
        .update_campaign(session.request(proto::UpdateCampaignRequest {
            workspace_id: number(&form, "workspace_id"),
            campaign_id: Some(campaign_id),
            name: Some(form.get("name").cloned().unwrap_or_default()),
            cta_url: Some(form.get("cta_url").cloned().unwrap_or_default()),
            branding_id: number(&form, "branding_id"),
            copy: None,
            page_slug: None,
        }))
        .await;
    after_action(
        &settings,
        &campaign_address(campaign_id),
        outcome,
        "The campaign was saved: its pages show the address and branding at once.",
    )
}

/// Starts an AI design run and shows its progress.
pub async fn generate(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(campaign_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let campaign_id = campaign_id.parse::<i64>().unwrap_or_default();
    let workspace_id = number(&form, "workspace_id");
    let outcome = core
        .pages()
        .generate_design(session.request(proto::GenerateDesignRequest {
            workspace_id,
            campaign_id: Some(campaign_id),
            prompt: text(&form, "prompt"),
            replace: Some(form.get("replace").is_some_and(|v| v == "on")),
        }))
        .await;
    match outcome {
        Ok(run) => {
            let run = run.into_inner();
            redirect_with(
                &settings,
                &format!(
                    "/dashboard/campaigns/{campaign_id}/runs/{}?workspace_id={}",
                    run.run_id,
                    workspace_id.unwrap_or_default()
                ),
                &Notice::news("The design run started."),
            )
        }
        Err(status) => redirect_with(
            &settings,
            &campaign_address(campaign_id),
            &Notice::alert(status.message()),
        ),
    }
}

#[derive(Serialize)]
struct RunView {
    campaign_id: i64,
    workspace_id: i64,
    run_id: String,
    csrf: String,
    state: &'static str,
    going: bool,
    succeeded: bool,
    error: Option<String>,
}

/// A design run's progress; the screen reloads itself while it runs (with the script).
pub async fn run(
    State(core): State<Core>,
    CampaignScreen {
        session,
        person,
        workspace_id,
        campaign,
    }: CampaignScreen,
    headers: HeaderMap,
    Path((_, run_id)): Path<(String, String)>,
) -> Response {
    let run = match core
        .pages()
        .get_design_run(session.request(proto::DesignRunRequest {
            workspace_id: Some(workspace_id),
            run_id: Some(run_id.clone()),
        }))
        .await
    {
        Ok(reply) => reply.into_inner(),
        Err(status) if status.code() == tonic::Code::NotFound => {
            return super::gone("This design run does not exist.");
        }
        Err(status) => return unavailable(&status),
    };
    use proto::design_run::State as Run;
    let state = Run::try_from(run.status).unwrap_or(Run::Unspecified);
    let view = RunView {
        campaign_id: campaign.id,
        workspace_id,
        run_id,
        csrf: person.csrf_token.clone(),
        state: match state {
            Run::Queued => "Waiting for its turn",
            Run::Running => "Designing",
            Run::Success => "Done: the draft holds the new design",
            Run::Error => "Failed; its credits were given back",
            Run::Cancelled => "Cancelled; its credits were given back",
            Run::Unspecified => "Unknown",
        },
        going: matches!(state, Run::Queued | Run::Running),
        succeeded: state == Run::Success,
        error: run.error,
    };
    screen(
        &headers,
        &format!("AI design run for {}", campaign.name),
        "run.html",
        view,
    )
}

/// Cancels a design run (its credits are given back).
pub async fn cancel_run(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path((campaign_id, run_id)): Path<(String, String)>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let workspace_id = number(&form, "workspace_id");
    let outcome = core
        .pages()
        .cancel_design_run(session.request(proto::DesignRunRequest {
            workspace_id,
            run_id: Some(run_id.clone()),
        }))
        .await;
    after_action(
        &settings,
        &format!(
            "/dashboard/campaigns/{campaign_id}/runs/{run_id}?workspace_id={}",
            workspace_id.unwrap_or_default()
        ),
        outcome,
        "The run was cancelled.",
    )
}

/// The campaign's form submissions as CSV, newest first (at most [`CSV_SUBMISSIONS`]): a
/// column per field any of them answered, every cell safe to open in a spreadsheet.
pub async fn submissions_csv(
    State(core): State<Core>,
    CampaignScreen {
        session,
        workspace_id,
        campaign,
        ..
    }: CampaignScreen,
) -> Response {
    let mut all = Vec::new();
    let mut before_id = None;
    while all.len() < CSV_SUBMISSIONS {
        let page = match core
            .engagement()
            .list_form_submissions(session.request(proto::ListFormSubmissionsRequest {
                workspace_id: Some(workspace_id),
                campaign_id: Some(campaign.id),
                limit: Some(100),
                before_id,
            }))
            .await
        {
            Ok(reply) => reply.into_inner().submissions,
            Err(status) => return unavailable(&status),
        };
        let full = page.len() == 100;
        before_id = page.last().map(|s| s.id);
        all.extend(page);
        if !full {
            break;
        }
    }
    all.truncate(CSV_SUBMISSIONS);
    let body = submissions_table(&all);
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"form-submissions.csv\""),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The CSV of submissions: fixed columns, then one per field name any of them has.
fn submissions_table(submissions: &[proto::FormSubmission]) -> Vec<u8> {
    let fields: BTreeSet<&String> = submissions.iter().flat_map(|s| s.fields.keys()).collect();
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "submission_id".to_owned(),
        "created_at".to_owned(),
        "lead_id".to_owned(),
        "form_id".to_owned(),
        "email".to_owned(),
        "page_url".to_owned(),
    ];
    header.extend(
        fields
            .iter()
            .map(|f| crate::spreadsheet::spreadsheet_safe(f)),
    );
    let _ = writer.write_record(&header);
    for s in submissions {
        let mut row = vec![
            s.id.to_string(),
            s.created_at
                .as_ref()
                .map(lps::wire::iso8601)
                .unwrap_or_default(),
            s.lead_id.to_string(),
            crate::spreadsheet::spreadsheet_safe(&s.form_id),
            crate::spreadsheet::spreadsheet_safe(s.email.as_deref().unwrap_or_default()),
            crate::spreadsheet::spreadsheet_safe(&s.page_url),
        ];
        row.extend(fields.iter().map(|f| {
            crate::spreadsheet::spreadsheet_safe(s.fields.get(*f).map(String::as_str).unwrap_or(""))
        }));
        let _ = writer.write_record(&row);
    }
    writer.into_inner().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answered_field_gets_a_column_and_formulas_stay_text() {
        let submission = |id: i64, fields: &[(&str, &str)]| proto::FormSubmission {
            id,
            form_id: "meeting".into(),
            lead_id: 3,
            email: Some("ada@example.com".into()),
            fields: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Default::default()
        };
        let csv = submissions_table(&[
            submission(2, &[("preferred_time", "=cmd()")]),
            submission(1, &[("company_size", "50")]),
        ]);
        let text = String::from_utf8(csv).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "submission_id,created_at,lead_id,form_id,email,page_url,company_size,preferred_time"
        );
        assert_eq!(
            lines.next().unwrap(),
            "2,,3,meeting,ada@example.com,,,'=cmd()"
        );
        assert_eq!(lines.next().unwrap(), "1,,3,meeting,ada@example.com,,50,");
    }
}
