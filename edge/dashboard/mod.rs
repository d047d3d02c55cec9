//! The dashboard at `/dashboard`, where people log in: their workspaces, each workspace's API
//! keys (create: shown once; delete: effective at once) and campaigns (design state, a preview
//! of a lead's page, publish/unpublish, engagement figures), and the apps connected through
//! OAuth (revoke: their access and refresh tokens fail from the next request). Server-rendered, no
//! scripts; sessions live in core, the cookie is HttpOnly and SameSite=Lax (Secure over
//! https), and every form carries the session's CSRF token (the login form a cookie-bound
//! one).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::Router;
use axum::extract::{Form, Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lps::proto;
use minijinja::context;
use serde::Serialize;

use crate::core_client::Core;
use crate::http::client_address::ClientAddress;
use crate::http::html_page::{self, Link, Screens, message};

mod leads;

static SCREENS: LazyLock<Screens> = LazyLock::new(|| {
    Screens::new(&[
        ("login.html", include_str!("templates/login.html")),
        ("setup.html", include_str!("templates/setup.html")),
        ("home.html", include_str!("templates/home.html")),
        ("leads.html", include_str!("templates/leads.html")),
        ("lead.html", include_str!("templates/lead.html")),
        ("confirm.html", include_str!("templates/confirm.html")),
    ])
    .with_nav(&[("/dashboard", "Home"), ("/dashboard/leads", "Leads")])
});

/// The short-lived cookie that carries what an action did to the page it redirects to
/// (post/redirect/get: a reload shows the page again and repeats nothing).
const NOTICE_COOKIE: &str = "lps_notice";
use crate::http::session_cookie;

/// The login form's own CSRF cookie (double submit: there is no session yet).
const LOGIN_CSRF: &str = "lps_login_csrf";
const SESSION_SECONDS: i64 = 7 * 24 * 3_600;

#[derive(Clone)]
pub struct DashboardSettings {
    /// Cookies are `Secure` when pages are served over https.
    pub secure_cookies: bool,
}

pub fn router(settings: DashboardSettings) -> Router<Core> {
    let login_post = {
        let settings = settings.clone();
        move |core, address, headers, form| log_in(core, address, headers, form, settings.clone())
    };
    Router::new()
        .route("/dashboard", get(home))
        .route(
            "/dashboard/login",
            get({
                let settings = settings.clone();
                move |query| login_form(query, settings.clone())
            })
            .post(login_post),
        )
        .route(
            "/dashboard/setup",
            get(setup_form).post({
                let settings = settings.clone();
                move |core, form| set_up(core, form, settings.clone())
            }),
        )
        .route("/dashboard/logout", post(log_out))
        .route("/dashboard/leads", get(leads::list))
        .route("/dashboard/leads.csv", get(leads::export))
        .route("/dashboard/leads/{lead_id}", get(leads::lead))
        .route("/dashboard/keys/create", post(create_key))
        .route(
            "/dashboard/keys/delete",
            get(confirm_delete_key).post(delete_key),
        )
        .route(
            "/dashboard/apps/revoke",
            get(confirm_revoke_app).post(revoke_app),
        )
        .route("/dashboard/campaigns/create", post(create_campaign))
        .route("/dashboard/campaigns/{campaign_id}/preview", get(preview))
        .route("/dashboard/campaigns/publish", post(publish))
        .route("/dashboard/campaigns/unpublish", post(unpublish))
        .layer(axum::Extension(settings))
}

/// Only a path on this site is followed after login: one that starts with a single `/`, has
/// no backslash, no control character or space (browsers drop tabs and newlines, so
/// `/\t/evil.example` would become `//evil.example`), and is still on this origin once parsed.
fn safe_next(next: Option<&String>) -> String {
    let fallback = || "/dashboard".to_owned();
    let Some(next) = next else {
        return fallback();
    };
    let plain = next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && !next.chars().any(|c| c.is_control() || c.is_whitespace());
    let base = url::Url::parse("http://lps.invalid/").expect("a valid base");
    match base.join(next) {
        Ok(url) if plain && url.origin() == base.origin() => next.clone(),
        _ => fallback(),
    }
}

async fn login_form(
    Query(query): Query<BTreeMap<String, String>>,
    settings: DashboardSettings,
) -> Response {
    login_page(
        StatusCode::OK,
        &safe_next(query.get("next")),
        None,
        &settings,
    )
}

fn login_page(
    status: StatusCode,
    next: &str,
    error: Option<&str>,
    settings: &DashboardSettings,
) -> Response {
    let csrf = lps::wire::random_token(32);
    let mut response = SCREENS.page(
        status,
        "Sign in",
        "login.html",
        context! { csrf => csrf.clone(), next, error },
    );
    if let Ok(cookie) = HeaderValue::from_str(&session_cookie::set(
        LOGIN_CSRF,
        &csrf,
        settings.secure_cookies,
        3_600,
    )) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

async fn log_in(
    State(core): State<Core>,
    address: Option<axum::Extension<ClientAddress>>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
    settings: DashboardSettings,
) -> Response {
    let next = safe_next(form.get("next"));
    let cookie = session_cookie::read(&headers, LOGIN_CSRF);
    if cookie.is_none() || cookie.as_ref() != form.get("csrf_token") {
        return login_page(
            StatusCode::FORBIDDEN,
            &next,
            Some("The form expired; please try again."),
            &settings,
        );
    }
    let request = proto::LoginRequest {
        email: form.get("email").cloned(),
        password: form.get("password").cloned(),
    };
    let request = crate::http::client_address::with_client_address(
        tonic::Request::new(request),
        address.as_deref(),
    );
    match core.oauth().login(request).await {
        Ok(reply) => {
            let token = reply.into_inner().session_token;
            let mut response = Redirect::to(&next).into_response();
            if let Ok(cookie) = HeaderValue::from_str(&session_cookie::set(
                session_cookie::NAME,
                &token,
                settings.secure_cookies,
                SESSION_SECONDS,
            )) {
                response.headers_mut().append(header::SET_COOKIE, cookie);
            }
            response
        }
        Err(status) if status.code() == tonic::Code::ResourceExhausted => login_page(
            StatusCode::TOO_MANY_REQUESTS,
            &next,
            Some("Too many attempts. Wait a minute and try again."),
            &settings,
        ),
        Err(_) => login_page(
            StatusCode::UNAUTHORIZED,
            &next,
            Some("Wrong email or password."),
            &settings,
        ),
    }
}

/// The first start's one-time link: choose a password.
async fn setup_form(Query(query): Query<BTreeMap<String, String>>) -> Response {
    let token = query.get("token").cloned().unwrap_or_default();
    setup_page(StatusCode::OK, &token, None)
}

fn setup_page(status: StatusCode, token: &str, error: Option<&str>) -> Response {
    SCREENS.page(
        status,
        "Choose your password",
        "setup.html",
        context! { token, error },
    )
}

/// The link's token is the proof (unguessable, used once), so the form needs no other.
async fn set_up(
    State(core): State<Core>,
    Form(form): Form<BTreeMap<String, String>>,
    settings: DashboardSettings,
) -> Response {
    let token = form.get("token").cloned().unwrap_or_default();
    let request = proto::SetPasswordWithLinkRequest {
        token: Some(token.clone()),
        password: form.get("password").cloned(),
    };
    match core.oauth().set_password_with_link(request).await {
        Ok(reply) => {
            let mut response = Redirect::to("/dashboard").into_response();
            if let Ok(cookie) = HeaderValue::from_str(&session_cookie::set(
                session_cookie::NAME,
                &reply.into_inner().session_token,
                settings.secure_cookies,
                SESSION_SECONDS,
            )) {
                response.headers_mut().append(header::SET_COOKIE, cookie);
            }
            response
        }
        Err(status) if status.code() == tonic::Code::NotFound => setup_page(
            StatusCode::GONE,
            "",
            Some(
                "This link was already used or has expired. Ask an operator for `lps admin user set-password`.",
            ),
        ),
        Err(status) => setup_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            &token,
            Some(status.message()),
        ),
    }
}

/// The session of the request and its person, or the login page's address.
async fn signed_in(
    core: &Core,
    headers: &HeaderMap,
) -> Result<(String, proto::GetSessionResponse), Response> {
    session_cookie::signed_in(core, headers)
        .await
        .ok_or_else(|| Redirect::to("/dashboard/login").into_response())
}

/// A signed-in person's form, its CSRF token checked: the session's token, or the answer to
/// give instead (the login page, or a refusal).
async fn signed_form(
    core: &Core,
    headers: &HeaderMap,
    form: &BTreeMap<String, String>,
) -> Result<String, Response> {
    let (token, person) = signed_in(core, headers).await?;
    match forged(&person, form) {
        Some(refusal) => Err(refusal),
        None => Ok(token),
    }
}

/// Back to the dashboard after an action, saying what happened (post/redirect/get).
fn after_action<T>(
    settings: &DashboardSettings,
    outcome: Result<T, tonic::Status>,
    done: &str,
) -> Response {
    let notice = match outcome {
        Ok(_) => Notice::news(done),
        Err(status) => Notice::alert(status.message()),
    };
    redirect_with(settings, &notice)
}

/// A redirect to the dashboard carrying `notice` for the page it lands on.
fn redirect_with(settings: &DashboardSettings, notice: &Notice) -> Response {
    use base64::Engine;
    let mut response = Redirect::to("/dashboard").into_response();
    let value = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(notice).unwrap_or_default());
    if let Ok(cookie) = HeaderValue::from_str(&session_cookie::set(
        NOTICE_COOKIE,
        &value,
        settings.secure_cookies,
        60,
    )) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The notice an action left for this page, if any.
fn notice_of(headers: &HeaderMap) -> Option<Notice> {
    use base64::Engine;
    let value = session_cookie::read(headers, NOTICE_COOKIE)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(value)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
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

/// What the home page says first after an action.
#[derive(Serialize, serde::Deserialize)]
struct Notice {
    /// A failure (shown as an alert) or news.
    alert: bool,
    text: String,
    /// A value shown once to copy (a new key).
    secret: Option<String>,
}

impl Notice {
    fn alert(text: &str) -> Self {
        Self {
            alert: true,
            text: text.to_owned(),
            secret: None,
        }
    }

    fn news(text: &str) -> Self {
        Self {
            alert: false,
            text: text.to_owned(),
            secret: None,
        }
    }
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

async fn log_out(
    State(core): State<Core>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let token = match signed_form(&core, &headers, &form).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let _ = core
        .oauth()
        .logout(session_cookie::as_credential(
            &token,
            proto::LogoutRequest {},
        ))
        .await;
    let mut response = Redirect::to("/dashboard/login").into_response();
    if let Ok(cookie) =
        HeaderValue::from_str(&session_cookie::set(session_cookie::NAME, "", false, 0))
    {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

async fn home(State(core): State<Core>, headers: HeaderMap) -> Response {
    let (token, person) = match signed_in(&core, &headers).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let notice = notice_of(&headers);
    let shown = notice.is_some();
    let mut response = render_home(&core, &token, &person, notice).await;
    // Shown once: a reload shows the page without it.
    if shown
        && let Ok(cookie) = HeaderValue::from_str(&session_cookie::set(NOTICE_COOKIE, "", false, 0))
    {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The dashboard's home page; an error page when core cannot answer (never an outage shown as
/// an empty workspace).
async fn render_home(
    core: &Core,
    token: &str,
    person: &proto::GetSessionResponse,
    notice: Option<Notice>,
) -> Response {
    match home_view(core, token, person, notice).await {
        Ok(view) => SCREENS.page(StatusCode::OK, "Dashboard", "home.html", view),
        Err(status) => unavailable(&status),
    }
}

/// What the home page shows.
#[derive(Serialize)]
struct HomeView {
    notice: Option<Notice>,
    email: String,
    plan: String,
    csrf: String,
    workspaces: Vec<WorkspaceView>,
    grants: Vec<GrantView>,
}

#[derive(Serialize)]
struct WorkspaceView {
    id: i64,
    name: String,
    keys: Vec<KeyView>,
    campaigns: Vec<CampaignView>,
}

#[derive(Serialize)]
struct KeyView {
    id: String,
    name: String,
    created_by: String,
    last_used: String,
}

#[derive(Serialize)]
struct CampaignView {
    id: i64,
    name: String,
    slug: String,
    state: &'static str,
    figures: String,
    has_design: bool,
    live: bool,
    /// Views per day over the last 30 days, once there are pages.
    chart: Option<Chart>,
}

/// A small bar chart of views per day, drawn as inline SVG.
#[derive(Serialize)]
struct Chart {
    /// What the chart shows, in words (for screen readers and as its caption).
    summary: String,
    bars: Vec<Bar>,
}

#[derive(Serialize)]
struct Bar {
    x: i64,
    y: i64,
    height: i64,
    label: String,
}

/// Height of the chart's drawing area.
const CHART_HEIGHT: i64 = 48;

/// Views per day as bars, the highest day filling the height.
fn chart(days: &[proto::DailyAnalytics]) -> Chart {
    let most = days.iter().map(|d| d.views).max().unwrap_or(0).max(1);
    let total: i64 = days.iter().map(|d| d.views).sum();
    let bars = days
        .iter()
        .enumerate()
        .map(|(i, day)| {
            // A day with views shows at least a sliver.
            let height = if day.views == 0 {
                0
            } else {
                (day.views * CHART_HEIGHT / most).max(2)
            };
            Bar {
                x: i as i64 * 10,
                y: CHART_HEIGHT - height,
                height,
                label: format!("{}: {}", day.date, plural(day.views, "view", "views")),
            }
        })
        .collect();
    Chart {
        summary: format!(
            "{} in the last {} days",
            plural(total, "view", "views"),
            days.len()
        ),
        bars,
    }
}

#[derive(Serialize)]
struct GrantView {
    id: String,
    app: String,
    workspace: String,
    created: String,
    last_used: String,
}

async fn home_view(
    core: &Core,
    token: &str,
    person: &proto::GetSessionResponse,
    notice: Option<Notice>,
) -> Result<HomeView, tonic::Status> {
    let mut workspaces = Vec::new();
    for workspace in &person.workspaces {
        let keys = core
            .api_tokens()
            .list_api_tokens(session_cookie::as_credential(
                token,
                proto::ListApiTokensRequest {
                    workspace_id: Some(workspace.id),
                },
            ))
            .await?
            .into_inner()
            .tokens
            .into_iter()
            .filter(|key| key.workspace_id == Some(workspace.id))
            .map(|key| KeyView {
                last_used: key
                    .last_used_at
                    .as_ref()
                    .map(lps::wire::plain_datetime)
                    .unwrap_or_else(|| "never".into()),
                id: key.id,
                name: key.name,
                created_by: key.created_by,
            })
            .collect();
        workspaces.push(WorkspaceView {
            id: workspace.id,
            name: workspace.name.clone(),
            keys,
            campaigns: campaigns(core, token, workspace.id).await?,
        });
    }
    let when = |micros: i64| lps::wire::plain_datetime(&lps::wire::to_proto(micros));
    let grants = core
        .oauth()
        .list_grants(session_cookie::as_credential(
            token,
            proto::ListGrantsRequest {},
        ))
        .await?
        .into_inner()
        .grants
        .into_iter()
        .map(|grant| GrantView {
            created: when(grant.created_at_micros),
            last_used: grant
                .last_used_at_micros
                .map(when)
                .unwrap_or_else(|| "never".into()),
            id: grant.id,
            app: grant.client_name,
            workspace: grant.workspace_name,
        })
        .collect();
    Ok(HomeView {
        notice,
        email: person.email.clone(),
        plan: person.plan.clone(),
        csrf: person.csrf_token.clone(),
        workspaces,
        grants,
    })
}

/// A workspace's campaigns: design state, publish or unpublish, and the engagement figures
/// once there are pages.
async fn campaigns(
    core: &Core,
    token: &str,
    workspace_id: i64,
) -> Result<Vec<CampaignView>, tonic::Status> {
    let campaigns = core
        .campaigns()
        .list_campaigns(session_cookie::as_credential(
            token,
            proto::ListCampaignsRequest {
                workspace_id: Some(workspace_id),
            },
        ))
        .await?
        .into_inner()
        .campaigns;
    if campaigns.is_empty() {
        return Ok(Vec::new());
    }
    let analytics = core
        .engagement()
        .get_campaign_analytics(session_cookie::as_credential(
            token,
            proto::GetCampaignAnalyticsRequest {
                workspace_id: Some(workspace_id),
                campaign_ids: Vec::new(),
            },
        ))
        .await?
        .into_inner()
        .campaigns;
    let mut views = Vec::new();
    for campaign in campaigns {
        let design = core
            .pages()
            .get_design(session_cookie::as_credential(
                token,
                proto::GetDesignRequest {
                    workspace_id: Some(workspace_id),
                    campaign_id: Some(campaign.id),
                },
            ))
            .await?
            .into_inner();
        let state = match (
            design.has_design,
            design.is_live,
            design.has_unpublished_changes,
        ) {
            (false, _, _) => "no design yet",
            (true, false, _) => "draft, not live",
            (true, true, true) => "live; the draft has unpublished changes",
            (true, true, false) => "live",
        };
        let figures = analytics
            .iter()
            .find(|a| a.campaign_id == campaign.id)
            .filter(|a| a.pages_generated > 0)
            .map(|a| {
                format!(
                    "{}, {} visited ({}%), {}, {} ({}% clicked), {} on average",
                    plural(a.pages_generated, "page", "pages"),
                    a.pages_visited,
                    a.visit_percentage,
                    plural(a.unique_visitors, "visitor", "visitors"),
                    plural(a.total_button_clicks, "click", "clicks"),
                    a.click_percentage,
                    plural(a.average_time_on_page_seconds, "second", "seconds")
                )
            })
            .unwrap_or_else(|| "no pages yet".to_owned());
        let has_pages = analytics
            .iter()
            .any(|a| a.campaign_id == campaign.id && a.pages_generated > 0);
        let chart_of = if has_pages {
            let daily = core
                .engagement()
                .get_daily_analytics(session_cookie::as_credential(
                    token,
                    proto::GetDailyAnalyticsRequest {
                        workspace_id: Some(workspace_id),
                        campaign_id: Some(campaign.id),
                        ..Default::default()
                    },
                ))
                .await?
                .into_inner();
            Some(chart(&daily.days))
        } else {
            None
        };
        views.push(CampaignView {
            chart: chart_of,
            id: campaign.id,
            name: campaign.name,
            slug: campaign.slug,
            state,
            figures,
            has_design: design.has_design,
            live: design.is_live,
        });
    }
    Ok(views)
}

type Settings = axum::Extension<DashboardSettings>;

async fn publish(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    set_live(core, settings, headers, form, true).await
}

async fn unpublish(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    set_live(core, settings, headers, form, false).await
}

async fn set_live(
    core: Core,
    settings: DashboardSettings,
    headers: HeaderMap,
    form: BTreeMap<String, String>,
    live: bool,
) -> Response {
    let token = match signed_form(&core, &headers, &form).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let request = proto::CampaignDesignRequest {
        workspace_id: form.get("workspace_id").and_then(|id| id.parse().ok()),
        campaign_id: form.get("campaign_id").and_then(|id| id.parse().ok()),
    };
    let request = session_cookie::as_credential(&token, request);
    let done = if live {
        core.pages().publish(request).await
    } else {
        core.pages().unpublish(request).await
    };
    let notice = match done {
        Ok(reply) => Notice::news(&reply.into_inner().message),
        Err(status) => Notice::alert(status.message()),
    };
    redirect_with(&settings, &notice)
}

async fn create_key(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let token = match signed_form(&core, &headers, &form).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let request = proto::GenerateApiTokenRequest {
        name: form.get("name").cloned(),
        workspace_id: form.get("workspace_id").and_then(|id| id.parse().ok()),
    };
    let notice = match core
        .api_tokens()
        .generate_api_token(session_cookie::as_credential(&token, request))
        .await
    {
        Ok(reply) => Notice {
            alert: false,
            text: "Your new key (copy it now: it is shown only once):".to_owned(),
            secret: Some(reply.into_inner().token),
        },
        Err(status) => Notice::alert(status.message()),
    };
    redirect_with(&settings, &notice)
}

async fn delete_key(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let token = match signed_form(&core, &headers, &form).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let request = proto::DeleteApiTokenRequest {
        token_id: form.get("token_id").cloned(),
    };
    let outcome = core
        .api_tokens()
        .delete_api_token(session_cookie::as_credential(&token, request))
        .await;
    after_action(&settings, outcome, "The key was deleted.")
}

async fn revoke_app(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let token = match signed_form(&core, &headers, &form).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let request = proto::RevokeGrantRequest {
        grant_id: form.get("grant_id").cloned(),
    };
    let outcome = core
        .oauth()
        .revoke_grant(session_cookie::as_credential(&token, request))
        .await;
    after_action(&settings, outcome, "The app's access was revoked.")
}

/// What a confirmation page asks.
#[derive(Serialize)]
struct Confirmation {
    question: String,
    consequence: &'static str,
    action: &'static str,
    csrf: String,
    field: &'static str,
    value: String,
    button: &'static str,
}

/// A step before deleting a key: what it is and what deleting does, then the form.
async fn confirm_delete_key(
    State(core): State<Core>,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let (token, person) = match signed_in(&core, &headers).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let wanted = query.get("token_id").cloned().unwrap_or_default();
    let mut found = None;
    for workspace in &person.workspaces {
        let keys = core
            .api_tokens()
            .list_api_tokens(session_cookie::as_credential(
                &token,
                proto::ListApiTokensRequest {
                    workspace_id: Some(workspace.id),
                },
            ))
            .await;
        match keys {
            Ok(keys) => {
                if let Some(key) = keys
                    .into_inner()
                    .tokens
                    .into_iter()
                    .find(|k| k.id == wanted)
                {
                    found = Some(key);
                    break;
                }
            }
            Err(status) => return unavailable(&status),
        }
    }
    let Some(key) = found else {
        return gone("This key does not exist any more.");
    };
    SCREENS.page(
        StatusCode::OK,
        "Delete a key",
        "confirm.html",
        Confirmation {
            question: format!("Delete the key \u{201c}{}\u{201d}?", key.name),
            consequence: "Every integration using it is refused from its next request. This cannot be undone.",
            action: "/dashboard/keys/delete",
            csrf: person.csrf_token,
            field: "token_id",
            value: key.id,
            button: "Delete the key",
        },
    )
}

/// A step before revoking an app's access.
async fn confirm_revoke_app(
    State(core): State<Core>,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let (token, person) = match signed_in(&core, &headers).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let wanted = query.get("grant_id").cloned().unwrap_or_default();
    let grants = core
        .oauth()
        .list_grants(session_cookie::as_credential(
            &token,
            proto::ListGrantsRequest {},
        ))
        .await;
    let grant = match grants {
        Ok(grants) => grants
            .into_inner()
            .grants
            .into_iter()
            .find(|g| g.id == wanted),
        Err(status) => return unavailable(&status),
    };
    let Some(grant) = grant else {
        return gone("This app is not connected any more.");
    };
    SCREENS.page(
        StatusCode::OK,
        "Disconnect an app",
        "confirm.html",
        Confirmation {
            question: format!(
                "Revoke \u{201c}{}\u{201d}\u{2019}s access to {}?",
                grant.client_name, grant.workspace_name
            ),
            consequence: "Its access and refresh tokens stop working from its next request; to connect again, someone must approve it again.",
            action: "/dashboard/apps/revoke",
            csrf: person.csrf_token,
            field: "grant_id",
            value: grant.id,
            button: "Revoke access",
        },
    )
}

/// A thing to confirm that is already gone.
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

/// A new campaign in a workspace: its name, and where its call to action leads.
async fn create_campaign(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let token = match signed_form(&core, &headers, &form).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let text = |key: &str| {
        form.get(key)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let request = proto::CreateCampaignRequest {
        workspace_id: form.get("workspace_id").and_then(|id| id.parse().ok()),
        name: text("name"),
        branding_id: None,
        prompt: None,
        cta_url: text("cta_url"),
    };
    let outcome = core
        .campaigns()
        .create_campaign(session_cookie::as_credential(&token, request))
        .await;
    let done = format!(
        "The campaign \u{201c}{}\u{201d} was created: apply a template to give it pages.",
        text("name").unwrap_or_default()
    );
    after_action(&settings, outcome, &done)
}

/// A campaign's draft as one of its workspace's leads would see it (sample values without
/// `lead_id`), before it is published: never tracked or counted.
async fn preview(
    State(core): State<Core>,
    headers: HeaderMap,
    Path(campaign_id): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let (token, person) = match signed_in(&core, &headers).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let number = |key: &str| query.get(key).and_then(|v| v.trim().parse::<i64>().ok());
    let not_found = || gone("No campaign of yours has this address.");
    let Ok(campaign_id) = campaign_id.parse::<i64>() else {
        return not_found();
    };
    // The workspace asked for, else whichever of the person's has the campaign.
    let candidates: Vec<i64> = match number("workspace_id") {
        Some(id) => vec![id],
        None => person.workspaces.iter().map(|w| w.id).collect(),
    };
    let mut workspace_id = None;
    for candidate in candidates {
        let listed = core
            .campaigns()
            .list_campaigns(session_cookie::as_credential(
                &token,
                proto::ListCampaignsRequest {
                    workspace_id: Some(candidate),
                },
            ))
            .await;
        match listed {
            Ok(reply)
                if reply
                    .get_ref()
                    .campaigns
                    .iter()
                    .any(|c| c.id == campaign_id) =>
            {
                workspace_id = Some(candidate);
                break;
            }
            Ok(_) => {}
            Err(status) if status.code() == tonic::Code::PermissionDenied => {}
            Err(status) => return unavailable(&status),
        }
    }
    let Some(workspace_id) = workspace_id else {
        return not_found();
    };
    let request = proto::PreviewDraftRequest {
        workspace_id: Some(workspace_id),
        campaign_id: Some(campaign_id),
        lead_id: number("lead_id"),
    };
    match core
        .pages()
        .preview_draft(session_cookie::as_credential(&token, request))
        .await
    {
        Ok(reply) => html_page::preview(reply.into_inner().html),
        // No design yet, another workspace's lead, a design over its budget: said as core says it.
        Err(status)
            if matches!(
                status.code(),
                tonic::Code::NotFound
                    | tonic::Code::FailedPrecondition
                    | tonic::Code::InvalidArgument
            ) =>
        {
            message(
                StatusCode::UNPROCESSABLE_ENTITY,
                "No preview",
                status.message(),
                Some(Link {
                    href: "/dashboard",
                    text: "Back to the dashboard",
                }),
            )
        }
        Err(status) => unavailable(&status),
    }
}
