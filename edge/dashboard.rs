//! The dashboard at `/dashboard`, where people log in: their workspaces, each workspace's API
//! keys (create: shown once; delete: effective at once) and campaigns (design state, a preview
//! of a lead's page, publish/unpublish, engagement figures), and the apps connected through
//! OAuth (revoke: their access and refresh tokens fail from the next request). Server-rendered, no
//! scripts; sessions live in core, the cookie is HttpOnly and SameSite=Lax (Secure over
//! https), and every form carries the session's CSRF token (the login form a cookie-bound
//! one).

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lps::proto;

use crate::client_address::ClientAddress;
use crate::core_client::Core;
use crate::html_page::{escape, page};
use crate::session_cookie;

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
        .route("/dashboard/keys/create", post(create_key))
        .route("/dashboard/keys/delete", post(delete_key))
        .route("/dashboard/apps/revoke", post(revoke_app))
        .route("/dashboard/campaigns/publish", post(publish))
        .route("/dashboard/campaigns/unpublish", post(unpublish))
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
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e)))
        .unwrap_or_default();
    let body = format!(
        "{error}<form method=\"post\" action=\"/dashboard/login\">\
         <input type=\"hidden\" name=\"csrf_token\" value=\"{csrf}\">\
         <input type=\"hidden\" name=\"next\" value=\"{next}\">\
         <label for=\"email\">Email</label><input type=\"email\" id=\"email\" name=\"email\" autocomplete=\"username\" required>\
         <label for=\"password\">Password</label><input type=\"password\" id=\"password\" name=\"password\" autocomplete=\"current-password\" required>\
         <p><button>Sign in</button></p></form>\
         <p>No password yet? An operator sets one with <code>lps admin user set-password</code>.</p>",
        next = escape(next),
    );
    let mut response = page(status, "Sign in", &body);
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
    let request = crate::client_address::with_client_address(
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
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e)))
        .unwrap_or_default();
    let body = format!(
        "{error}<form method=\"post\" action=\"/dashboard/setup\">\
         <input type=\"hidden\" name=\"token\" value=\"{token}\">\
         <label for=\"password\">New password (at least 8 characters)</label>\
         <input type=\"password\" id=\"password\" name=\"password\" autocomplete=\"new-password\" minlength=\"8\" required>\
         <p><button>Save and sign in</button></p></form>",
        token = escape(token),
    );
    page(status, "Choose your password", &body)
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

/// A signed-in person's form, its CSRF token checked: the session and the person, or the
/// answer to give instead (the login page, or a refusal).
async fn signed_form(
    core: &Core,
    headers: &HeaderMap,
    form: &BTreeMap<String, String>,
) -> Result<(String, proto::GetSessionResponse), Response> {
    let (token, person) = signed_in(core, headers).await?;
    match forged(&person, form) {
        Some(refusal) => Err(refusal),
        None => Ok((token, person)),
    }
}

/// The dashboard again after an action: back to it when it worked, else with the reason.
async fn after_action<T>(
    core: &Core,
    token: &str,
    person: &proto::GetSessionResponse,
    outcome: Result<T, tonic::Status>,
) -> Response {
    match outcome {
        Ok(_) => Redirect::to("/dashboard").into_response(),
        Err(status) => render_home(core, token, person, Some(alert(status.message()))).await,
    }
}

fn alert(message: &str) -> String {
    format!("<p class=\"error\" role=\"alert\">{}</p>", escape(message))
}

/// A form must carry the session's CSRF token: the refusal when it does not.
fn forged(person: &proto::GetSessionResponse, form: &BTreeMap<String, String>) -> Option<Response> {
    (form.get("csrf_token") != Some(&person.csrf_token)).then(|| {
        page(
            StatusCode::FORBIDDEN,
            "Refused",
            "<p>The form expired. <a href=\"/dashboard\">Back to the dashboard</a>.</p>",
        )
    })
}

async fn log_out(
    State(core): State<Core>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let (token, _) = match signed_form(&core, &headers, &form).await {
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
    render_home(&core, &token, &person, None).await
}

/// The dashboard's home page; an error page when core cannot answer (never an outage shown as
/// an empty workspace).
async fn render_home(
    core: &Core,
    token: &str,
    person: &proto::GetSessionResponse,
    notice: Option<String>,
) -> Response {
    match home_body(core, token, person, notice).await {
        Ok(body) => page(StatusCode::OK, "Dashboard", &body),
        Err(status) => {
            tracing::warn!(%status, "the dashboard could not read from core");
            page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Temporarily unavailable",
                "<p>The dashboard could not load your workspace just now. Please reload in a moment.</p>",
            )
        }
    }
}

async fn home_body(
    core: &Core,
    token: &str,
    person: &proto::GetSessionResponse,
    notice: Option<String>,
) -> Result<String, tonic::Status> {
    let csrf = escape(&person.csrf_token);
    let mut body = String::new();
    if let Some(notice) = notice {
        body.push_str(&notice);
    }
    body.push_str(&format!(
        "<p>Signed in as {} · plan <code>{}</code></p>\
         <form method=\"post\" action=\"/dashboard/logout\"><input type=\"hidden\" name=\"csrf_token\" value=\"{csrf}\"><button class=\"secondary\">Sign out</button></form>",
        escape(&person.email),
        escape(&person.plan)
    ));
    for workspace in &person.workspaces {
        body.push_str(&format!(
            "<h2>{} <small>(workspace {})</small></h2>",
            escape(&workspace.name),
            workspace.id
        ));
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
            .tokens;
        body.push_str("<h3>API keys</h3><table><tr><th>Name</th><th>Created by</th><th>Last used</th><th></th></tr>");
        for key in keys.iter().filter(|k| k.workspace_id == Some(workspace.id)) {
            body.push_str(&format!(
                "<tr><td>{name}</td><td>{by}</td><td>{used}</td><td><form method=\"post\" action=\"/dashboard/keys/delete\">\
                 <input type=\"hidden\" name=\"csrf_token\" value=\"{csrf}\"><input type=\"hidden\" name=\"token_id\" value=\"{id}\">\
                 <button class=\"secondary\">Delete</button></form></td></tr>",
                name = escape(&key.name),
                by = escape(&key.created_by),
                used = key.last_used_at.as_ref().map(lps::wire::plain_datetime).unwrap_or_else(|| "never".into()),
                id = escape(&key.id),
            ));
        }
        body.push_str(&format!(
            "</table><form method=\"post\" action=\"/dashboard/keys/create\">\
             <input type=\"hidden\" name=\"csrf_token\" value=\"{csrf}\"><input type=\"hidden\" name=\"workspace_id\" value=\"{id}\">\
             <label for=\"key-name-{id}\">New key's name</label><input type=\"text\" id=\"key-name-{id}\" name=\"name\" required maxlength=\"255\">\
             <p><button>Create key</button></p></form>",
            id = workspace.id
        ));
        body.push_str(&campaigns_section(core, token, &csrf, workspace.id).await?);
    }
    let grants = core
        .oauth()
        .list_grants(session_cookie::as_credential(
            token,
            proto::ListGrantsRequest {},
        ))
        .await?
        .into_inner()
        .grants;
    body.push_str("<h2>Connected apps</h2>");
    if grants.is_empty() {
        body.push_str("<p>No app is connected.</p>");
    } else {
        body.push_str("<table><tr><th>App</th><th>Workspace</th><th>Connected</th><th>Last used</th><th></th></tr>");
        for grant in grants {
            let when = |micros: i64| lps::wire::plain_datetime(&lps::wire::to_proto(micros));
            body.push_str(&format!(
                "<tr><td>{app}</td><td>{ws}</td><td>{created}</td><td>{used}</td><td><form method=\"post\" action=\"/dashboard/apps/revoke\">\
                 <input type=\"hidden\" name=\"csrf_token\" value=\"{csrf}\"><input type=\"hidden\" name=\"grant_id\" value=\"{id}\">\
                 <button class=\"secondary\">Revoke</button></form></td></tr>",
                app = escape(&grant.client_name),
                ws = escape(&grant.workspace_name),
                created = when(grant.created_at_micros),
                used = grant.last_used_at_micros.map(when).unwrap_or_else(|| "never".into()),
                id = escape(&grant.id),
            ));
        }
        body.push_str("</table>");
    }
    Ok(body)
}

/// A workspace's campaigns: design state, a preview of a lead's page, publish or unpublish,
/// and the engagement figures once there are pages.
async fn campaigns_section(
    core: &Core,
    token: &str,
    csrf: &str,
    workspace_id: i64,
) -> Result<String, tonic::Status> {
    let credential = |message| session_cookie::as_credential(token, message);
    let campaigns = core
        .campaigns()
        .list_campaigns(credential(proto::ListCampaignsRequest {
            workspace_id: Some(workspace_id),
        }))
        .await?
        .into_inner()
        .campaigns;
    if campaigns.is_empty() {
        return Ok("<h3>Campaigns</h3><p>No campaign yet.</p>".to_owned());
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
    let mut html = String::from(
        "<h3>Campaigns</h3><table><tr><th>Campaign</th><th>Design</th><th>Engagement</th><th></th></tr>",
    );
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
                    "{} pages, {} visited ({}%), {} visitors, {} clicks ({}% clicked), {} s average",
                    a.pages_generated,
                    a.pages_visited,
                    a.visit_percentage,
                    a.unique_visitors,
                    a.total_button_clicks,
                    a.click_percentage,
                    a.average_time_on_page_seconds
                )
            })
            .unwrap_or_else(|| "no pages yet".to_owned());
        let action = if design.is_live {
            "unpublish"
        } else {
            "publish"
        };
        let button = if design.has_design {
            format!(
                "<form method=\"post\" action=\"/dashboard/campaigns/{action}\">\
                 <input type=\"hidden\" name=\"csrf_token\" value=\"{csrf}\">\
                 <input type=\"hidden\" name=\"workspace_id\" value=\"{workspace_id}\">\
                 <input type=\"hidden\" name=\"campaign_id\" value=\"{id}\">\
                 <button class=\"secondary\">{label}</button></form>",
                id = campaign.id,
                label = if design.is_live {
                    "Unpublish"
                } else {
                    "Publish"
                },
            )
        } else {
            String::new()
        };
        html.push_str(&format!(
            "<tr><td>{name}<br><a href=\"/p/{slug}/preview-{id}\">Preview a lead's page</a></td>\
             <td>{state}</td><td>{figures}</td><td>{button}</td></tr>",
            name = escape(&campaign.name),
            slug = escape(&campaign.slug),
            id = campaign.id,
        ));
    }
    html.push_str("</table>");
    Ok(html)
}

async fn publish(
    State(core): State<Core>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    set_live(core, headers, form, true).await
}

async fn unpublish(
    State(core): State<Core>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    set_live(core, headers, form, false).await
}

async fn set_live(
    core: Core,
    headers: HeaderMap,
    form: BTreeMap<String, String>,
    live: bool,
) -> Response {
    let (token, person) = match signed_form(&core, &headers, &form).await {
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
        Ok(reply) => format!(
            "<p role=\"status\">{}</p>",
            escape(&reply.into_inner().message)
        ),
        Err(status) => alert(status.message()),
    };
    render_home(&core, &token, &person, Some(notice)).await
}

async fn create_key(
    State(core): State<Core>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let (token, person) = match signed_form(&core, &headers, &form).await {
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
        Ok(reply) => format!(
            "<p role=\"status\">Your new key (copy it now: it is shown only once):</p><p><code>{}</code></p>",
            escape(&reply.into_inner().token)
        ),
        Err(status) => alert(status.message()),
    };
    render_home(&core, &token, &person, Some(notice)).await
}

async fn delete_key(
    State(core): State<Core>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let (token, person) = match signed_form(&core, &headers, &form).await {
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
    after_action(&core, &token, &person, outcome).await
}

async fn revoke_app(
    State(core): State<Core>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let (token, person) = match signed_form(&core, &headers, &form).await {
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
    after_action(&core, &token, &person, outcome).await
}
