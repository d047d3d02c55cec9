//! The dashboard at `/dashboard`, where people log in: their workspaces, each workspace's API
//! keys (create: shown once; delete: effective at once) and campaigns (design state, a preview
//! of a lead's page, publish/unpublish, engagement figures), and the apps connected through
//! OAuth (revoke: their access and refresh tokens fail from the next request). Server-rendered:
//! every screen works without a script (one first-party script, `assets/dashboard.js`, shows
//! times in the reader's zone, reloads a screen watching a run and inserts a variable at the
//! cursor in the words editor); sessions live in core, the
//! cookie is HttpOnly and SameSite=Lax (Secure over https), every form carries the session's
//! CSRF token (the login and setup forms a cookie-bound one), and forms from another site are
//! refused (`same_origin`).
//!
//! Here the router and the helpers every screen shares; signing in, setting a password and
//! logging out in `sign_in.rs`; the signed notice an action leaves in `notices.rs`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Form, FromRequest, FromRequestParts, Path, Query};
use axum::handler::Handler as _;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lps::proto;
use serde::Serialize;

use crate::core_client::Core;
use crate::http::html_page::{Link, Screens, message};
use crate::http::same_origin::{self, OwnOrigin};

mod callbacks;
mod campaigns;
mod charts;
mod home;
mod imports;
mod leads;
mod notices;
mod settings;
mod sign_in;
mod teammates;
mod unsubscribe;

use notices::{Notice, after_action, notice_of, redirect_with};
use sign_in::{forgot, forgot_form, log_in, log_out, login_form, set_up, setup_form};

static SCREENS: LazyLock<Screens> = LazyLock::new(|| {
    Screens::new(&[
        ("login.html", include_str!("templates/login.html")),
        ("setup.html", include_str!("templates/setup.html")),
        (
            "unsubscribe.html",
            include_str!("templates/unsubscribe.html"),
        ),
        ("forgot.html", include_str!("templates/forgot.html")),
        ("home.html", include_str!("templates/home.html")),
        ("leads.html", include_str!("templates/leads.html")),
        ("lead.html", include_str!("templates/lead.html")),
        ("confirm.html", include_str!("templates/confirm.html")),
        ("range.html", include_str!("templates/range.html")),
        ("changes.html", include_str!("templates/changes.html")),
        ("campaign.html", include_str!("templates/campaign.html")),
        ("gallery.html", include_str!("templates/gallery.html")),
        ("design.html", include_str!("templates/design.html")),
        ("run.html", include_str!("templates/run.html")),
        ("settings.html", include_str!("templates/settings.html")),
        ("domains.html", include_str!("templates/domains.html")),
        ("branding.html", include_str!("templates/branding.html")),
        ("callbacks.html", include_str!("templates/callbacks.html")),
        ("import.html", include_str!("templates/import.html")),
        (
            "import_mapping.html",
            include_str!("templates/import_mapping.html"),
        ),
        (
            "import_progress.html",
            include_str!("templates/import_progress.html"),
        ),
    ])
    .with_nav(&[
        ("/dashboard", "Home"),
        ("/dashboard/leads", "Leads"),
        ("/dashboard/callbacks", "Callbacks"),
        ("/dashboard/settings", "Settings"),
    ])
    .signed_out(&[
        "login.html",
        "setup.html",
        "forgot.html",
        "unsubscribe.html",
    ])
    .with_script("/dashboard/assets/dashboard.js")
});

use crate::http::session_cookie::{self, Session};

#[derive(Clone)]
pub struct DashboardSettings {
    /// Cookies are `Secure` when pages are served over https.
    pub secure_cookies: bool,
    /// Forms posted from anywhere else are refused (`same_origin`).
    pub own_origin: OwnOrigin,
    /// Signs the notice cookie (`lps::keys`), so only this deployment can write a notice.
    pub notice_key: [u8; 32],
}

pub fn router(settings: DashboardSettings) -> Router<Core> {
    let _ = notices::NOTICE_KEY.set(settings.notice_key);
    let login_post = {
        let settings = settings.clone();
        move |core, forwarded, headers, form| {
            log_in(core, forwarded, headers, form, settings.clone())
        }
    };
    Router::new()
        .route("/dashboard", get(home::home))
        .route("/dashboard/live", get(home::live))
        .route(
            "/dashboard/login",
            get({
                let settings = settings.clone();
                move |query| login_form(query, settings.clone())
            })
            .post(login_post.layer(DefaultBodyLimit::max(SIGN_IN_LIMIT_BYTES))),
        )
        .route(
            "/dashboard/setup",
            get({
                let settings = settings.clone();
                move |query| setup_form(query, settings.clone())
            })
            .post(
                {
                    let settings = settings.clone();
                    move |core, forwarded, headers, form| {
                        set_up(core, forwarded, headers, form, settings.clone())
                    }
                }
                .layer(DefaultBodyLimit::max(SIGN_IN_LIMIT_BYTES)),
            ),
        )
        .route(
            "/dashboard/forgot",
            get(forgot_form).post(forgot.layer(DefaultBodyLimit::max(SIGN_IN_LIMIT_BYTES))),
        )
        .route("/dashboard/logout", post(log_out))
        .route("/dashboard/assets/dashboard.js", get(script))
        .route("/dashboard/leads", get(leads::list))
        .route("/dashboard/leads.csv", get(leads::export))
        .route("/dashboard/leads/bulk", post(leads::bulk))
        .route("/dashboard/leads/add", post(leads::add))
        .route(
            "/dashboard/leads/import",
            get(imports::upload_form).post(imports::upload),
        )
        .route(
            "/dashboard/leads/import/{job_id}",
            get(imports::import_page).post(imports::start),
        )
        .route(
            "/dashboard/leads/import/{job_id}/events",
            get(imports::events),
        )
        .route(
            "/dashboard/leads/import/{job_id}/rejected.csv",
            get(imports::rejected),
        )
        .route("/dashboard/assets/import.js", get(imports::script))
        .route("/dashboard/leads/{lead_id}", get(leads::lead))
        .route("/dashboard/campaigns/create", post(campaigns::create))
        .route("/dashboard/campaigns/{campaign_id}", get(campaigns::page))
        .route(
            "/dashboard/campaigns/{campaign_id}/preview",
            get(campaigns::preview),
        )
        .route(
            "/dashboard/campaigns/{campaign_id}/templates",
            get(campaigns::gallery).post(campaigns::apply_template),
        )
        .route(
            "/dashboard/campaigns/{campaign_id}/design",
            get(campaigns::design_form).post(campaigns::save_design),
        )
        .route(
            "/dashboard/campaigns/{campaign_id}/settings",
            post(campaigns::save_settings),
        )
        .route(
            "/dashboard/campaigns/{campaign_id}/copy",
            post(campaigns::save_copy),
        )
        .route(
            "/dashboard/campaigns/{campaign_id}/generate",
            post(campaigns::generate),
        )
        .route(
            "/dashboard/campaigns/{campaign_id}/runs/{run_id}",
            get(campaigns::run).post(campaigns::cancel_run),
        )
        .route(
            "/dashboard/campaigns/{campaign_id}/submissions.csv",
            get(campaigns::submissions_csv),
        )
        .route(
            "/dashboard/campaigns/{campaign_id}/changes",
            get(campaigns::changes),
        )
        .route(
            "/dashboard/campaigns/{campaign_id}/unpublish",
            get(campaigns::confirm_unpublish),
        )
        .route("/dashboard/campaigns/publish", post(campaigns::publish))
        .route("/dashboard/campaigns/unpublish", post(campaigns::unpublish))
        .route("/dashboard/callbacks", get(callbacks::page))
        .route("/dashboard/callbacks/redeliver", post(callbacks::redeliver))
        .route(
            "/dashboard/callbacks/rotate-secret",
            post(callbacks::rotate_secret),
        )
        .route("/dashboard/settings", get(settings::page))
        .route("/dashboard/keys/create", post(settings::create_key))
        .route(
            "/dashboard/workspace/settings",
            post(settings::update_workspace),
        )
        .route(
            "/dashboard/me/time-zone",
            post(settings::update_my_time_zone),
        )
        .route(
            "/dashboard/notifications/create",
            post(settings::create_channel),
        )
        .route(
            "/dashboard/notifications/test",
            post(settings::test_channel),
        )
        .route(
            "/dashboard/notifications/delete",
            get(settings::confirm_delete_channel).post(settings::delete_channel),
        )
        .route("/dashboard/domains", get(settings::domains_page))
        .route("/dashboard/domains/create", post(settings::create_domain))
        .route("/dashboard/domains/verify", post(settings::verify_domain))
        .route(
            "/dashboard/domains/delete",
            get(settings::confirm_delete_domain).post(settings::delete_domain),
        )
        .route(
            "/dashboard/keys/delete",
            get(settings::confirm_delete_key).post(settings::delete_key),
        )
        .route(
            "/dashboard/apps/revoke",
            get(settings::confirm_revoke_app).post(settings::revoke_app),
        )
        .route(
            "/dashboard/brandings/create",
            post(settings::create_branding),
        )
        .route(
            "/dashboard/brandings/{branding_id}",
            get(settings::branding_form).post(settings::update_branding),
        )
        .route("/dashboard/teammates/invite", post(teammates::invite))
        .route("/dashboard/teammates/role", post(teammates::change_role))
        .route(
            "/dashboard/teammates/remove",
            get(teammates::confirm_remove).post(teammates::remove),
        )
        .route(
            "/dashboard/teammates/revoke",
            get(teammates::confirm_revoke).post(teammates::revoke),
        )
        .layer(axum::middleware::from_fn({
            let own = settings.own_origin.clone();
            move |request, next| same_origin::refuse_foreign(own.clone(), request, next)
        }))
        // Posted by mail providers (one-click), so after the same-origin check.
        .route(
            "/dashboard/unsubscribe",
            get(unsubscribe::ask)
                .post(unsubscribe::confirm.layer(DefaultBodyLimit::max(SIGN_IN_LIMIT_BYTES))),
        )
        .layer(DefaultBodyLimit::max(FORM_LIMIT_BYTES))
        .layer(axum::Extension(settings))
}

/// The largest form a signed-in person posts (a design of 500,000 characters and its CSS,
/// encoded): read only once the session is known (`SignedForm`).
const FORM_LIMIT_BYTES: usize = 4 * 1024 * 1024;
/// The largest sign-in or setup form, which anyone may post: a few fields.
const SIGN_IN_LIMIT_BYTES: usize = 16 * 1024;

/// The dashboard's one script (first-party): times in the reader's own time zone, a screen
/// watching a run reloading itself, a variable inserted at the cursor in the words editor.
/// Every screen works without it.
async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("assets/dashboard.js"),
    )
        .into_response()
}

/// The signed-in person of a request: their session (forwarded on every call to core with the
/// request's id and the client's address) and what core says of them. Without a live session
/// the request is answered with the login page's address.
struct SignedIn(Session, proto::GetSessionResponse);

impl FromRequestParts<Core> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, core: &Core) -> Result<Self, Response> {
        session_cookie::session_of(core, parts)
            .await
            .map(|(session, person)| Self(session, person))
            .ok_or_else(|| Redirect::to("/dashboard/login").into_response())
    }
}

/// The campaign a screen's address names (`/dashboard/campaigns/{campaign_id}...`), found in
/// the signed-in person's workspaces (the one `?workspace_id=` names first), with the person.
/// Otherwise the answer is the page to show instead: the login page's address, "not found", or
/// "unavailable" when core cannot say.
struct CampaignScreen {
    session: Session,
    person: proto::GetSessionResponse,
    workspace_id: i64,
    campaign: proto::Campaign,
}

impl FromRequestParts<Core> for CampaignScreen {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, core: &Core) -> Result<Self, Response> {
        let SignedIn(session, person) = SignedIn::from_request_parts(parts, core).await?;
        let Path(params) = Path::<BTreeMap<String, String>>::from_request_parts(parts, core)
            .await
            .map_err(IntoResponse::into_response)?;
        let Query(query) = Query::<BTreeMap<String, String>>::from_request_parts(parts, core)
            .await
            .map_err(IntoResponse::into_response)?;
        let campaign_id = params.get("campaign_id").map_or("", String::as_str);
        let named = number(&query, "workspace_id");
        let (workspace_id, campaign) =
            campaign_of(core, &session, &person, campaign_id, named).await?;
        Ok(Self {
            session,
            person,
            workspace_id,
            campaign,
        })
    }
}

/// A signed-in person's form, its CSRF token checked: the session and the fields. The answer
/// instead is the login page's address, or a refusal of a forged form.
struct SignedForm(Session, BTreeMap<String, String>);

impl FromRequest<Core> for SignedForm {
    type Rejection = Response;

    async fn from_request(request: axum::extract::Request, core: &Core) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let SignedIn(session, person) = SignedIn::from_request_parts(&mut parts, core).await?;
        let Form(form) = Form::<BTreeMap<String, String>>::from_request(
            axum::extract::Request::from_parts(parts, body),
            core,
        )
        .await
        .map_err(IntoResponse::into_response)?;
        match forged(&person, &form) {
            Some(refusal) => Err(refusal),
            None => Ok(Self(session, form)),
        }
    }
}

/// The Settings page of a workspace (the person's first without one).
fn settings_address(workspace_id: Option<i64>) -> String {
    match workspace_id {
        Some(id) => format!("/dashboard/settings?workspace_id={id}"),
        None => "/dashboard/settings".to_owned(),
    }
}

/// A dashboard screen, saying first what the last action did (once: the notice's cookie is
/// cleared, so a reload shows the page without it).
fn screen(headers: &HeaderMap, title: &str, template: &str, view: impl Serialize) -> Response {
    screen_saying(notice_of(headers), title, template, view)
}

/// [`screen`] saying `notice`: the one the last action left, as the screen's handler read it
/// (a value shown once may have moved from it into the view, where it belongs).
fn screen_saying(
    notice: Option<Notice>,
    title: &str,
    template: &str,
    view: impl Serialize,
) -> Response {
    let shown = notice.is_some();
    let mut response = SCREENS.page_with_notice(StatusCode::OK, title, template, view, notice);
    if shown
        && let Ok(cookie) =
            HeaderValue::from_str(&session_cookie::set(notices::NOTICE_COOKIE, "", false, 0))
    {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// A time as a person reads it: UTC in the page, shown in their own time zone by the
/// dashboard's script (`<time datetime>`).
#[derive(Serialize, Clone)]
struct When {
    iso: String,
    text: String,
}

fn when(timestamp: Option<&prost_types::Timestamp>) -> Option<When> {
    timestamp.map(|t| When {
        iso: lps::wire::iso8601(t),
        text: format!("{} UTC", lps::wire::plain_datetime(t)),
    })
}

fn when_micros(micros: i64) -> When {
    let t = lps::wire::to_proto(micros);
    When {
        iso: lps::wire::iso8601(&t),
        text: format!("{} UTC", lps::wire::plain_datetime(&t)),
    }
}

/// The score at which a workspace's leads are hot: its own setting, else the deployment's; 0
/// never.
fn hot_score_of(person: &proto::GetSessionResponse, workspace_id: i64) -> f64 {
    person
        .workspaces
        .iter()
        .find(|w| w.id == workspace_id)
        .map_or(person.hot_score, |w| w.hot_score)
}

/// Whether a lead of `score` in the workspace is hot: at or past its threshold (none when it
/// is 0), the same rule as `lead.hot` and the leads list's "Hot leads only".
fn is_hot(person: &proto::GetSessionResponse, workspace_id: i64, score: f64) -> bool {
    let threshold = hot_score_of(person, workspace_id);
    threshold > 0.0 && score >= threshold
}

/// The workspace's hot threshold in words (`8.0`), for the legend beside a list; `None` when
/// no lead is ever hot.
fn hot_threshold(person: &proto::GetSessionResponse, workspace_id: i64) -> Option<String> {
    let threshold = hot_score_of(person, workspace_id);
    (threshold > 0.0).then(|| format!("{threshold:.1}"))
}

/// `1 lead`, `2 leads`.
fn plural(count: i64, one: &str, many: &str) -> String {
    if count == 1 {
        format!("1 {one}")
    } else {
        format!("{count} {many}")
    }
}

/// The page for a core that cannot answer just now (never an outage shown as emptiness).
fn unavailable(status: &tonic::Status) -> Response {
    tracing::warn!(%status, "the dashboard could not read from core");
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        "Temporarily unavailable",
        "The dashboard could not load your workspace just now. Please reload in a moment.",
        None,
    )
}

/// A form must carry the session's CSRF token: the refusal when it does not.
fn forged(person: &proto::GetSessionResponse, form: &BTreeMap<String, String>) -> Option<Response> {
    (form.get("csrf_token") != Some(&person.csrf_token)).then(|| {
        message(
            StatusCode::FORBIDDEN,
            "Refused",
            "The form expired.",
            Some(Link {
                href: "/dashboard",
                text: "Back to the dashboard",
            }),
        )
    })
}

/// A thing to act on that is not (or no longer) there.
/// What a confirmation page asks: a step before deleting, revoking or removing.
#[derive(Serialize)]
struct Confirmation {
    question: String,
    consequence: &'static str,
    action: &'static str,
    csrf: String,
    /// The form's fields, posted again with the answer.
    fields: Vec<(&'static str, String)>,
    button: &'static str,
    /// Where "Cancel" leads.
    back: String,
}

fn confirm(title: &str, confirmation: Confirmation) -> Response {
    SCREENS.page(StatusCode::OK, title, "confirm.html", confirmation)
}

fn gone(sentence: &str) -> Response {
    message(
        StatusCode::NOT_FOUND,
        "Not found",
        sentence,
        Some(Link {
            href: "/dashboard",
            text: "Back to the dashboard",
        }),
    )
}

/// Which of the person's workspaces holds the campaign (the one named first, if it does):
/// the campaign with its workspace, or the page to show instead.
async fn campaign_of(
    core: &Core,
    session: &Session,
    person: &proto::GetSessionResponse,
    campaign_id: &str,
    named: Option<i64>,
) -> Result<(i64, proto::Campaign), Response> {
    let not_found = || gone("No campaign of yours has this address.");
    let campaign_id: i64 = campaign_id.parse().map_err(|_| not_found())?;
    let mut candidates: Vec<i64> = person.workspaces.iter().map(|w| w.id).collect();
    if let Some(named) = named.filter(|id| candidates.contains(id)) {
        candidates.retain(|id| *id != named);
        candidates.insert(0, named);
    }
    for candidate in candidates {
        match campaigns_in(core, session, candidate).await {
            Ok(campaigns) => {
                if let Some(found) = campaigns.into_iter().find(|c| c.id == campaign_id) {
                    return Ok((candidate, found));
                }
            }
            Err(status) if status.code() == tonic::Code::PermissionDenied => {}
            Err(status) => return Err(unavailable(&status)),
        }
    }
    Err(not_found())
}

/// A workspace's campaigns, as the person may see them.
async fn campaigns_in(
    core: &Core,
    session: &Session,
    workspace_id: i64,
) -> Result<Vec<proto::Campaign>, tonic::Status> {
    let request = session.request(proto::ListCampaignsRequest {
        workspace_id: Some(workspace_id),
    });
    Ok(core
        .campaigns()
        .list_campaigns(request)
        .await?
        .into_inner()
        .campaigns)
}

/// What a screen about one workspace shows a person who is in none yet.
fn no_workspace(title: &str) -> Response {
    message(
        StatusCode::OK,
        title,
        "You are not in any workspace yet.",
        None,
    )
}

/// The workspace a screen shows: the one `workspace_id` names if it is the person's, else
/// their first; `None` for a person in no workspace.
fn chosen_workspace<'a>(
    query: &BTreeMap<String, String>,
    person: &'a proto::GetSessionResponse,
) -> Option<&'a proto::SessionWorkspace> {
    number(query, "workspace_id")
        .and_then(|id| person.workspaces.iter().find(|w| w.id == id))
        .or_else(|| person.workspaces.first())
}

/// A number from a form or query.
fn number(values: &BTreeMap<String, String>, key: &str) -> Option<i64> {
    values.get(key).and_then(|v| v.trim().parse().ok())
}

/// A text from a form: trimmed, absent when blank.
fn text(values: &BTreeMap<String, String>, key: &str) -> Option<String> {
    values
        .get(key)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

type Settings = axum::Extension<DashboardSettings>;
