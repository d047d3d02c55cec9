//! Signing in and out of the dashboard: the login form (`/dashboard/login`), the first
//! start's and an invitation's one-time link to choose a password (`/dashboard/setup`), each
//! with a CSRF token of its own bound to a cookie (there is no session yet), "Forgot your
//! password?" (`/dashboard/forgot`), and logging out (`/dashboard/logout`). The session itself lives in core; its cookie is HttpOnly.

use std::collections::BTreeMap;

use axum::extract::{Form, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lps::proto;
use minijinja::context;

use super::{DashboardSettings, SCREENS, SignedForm};
use crate::core_client::Core;
use crate::http::forwarded::Forwarded;
use crate::http::session_cookie;

/// The login form's own CSRF cookie (double submit: there is no session yet).
const LOGIN_CSRF: &str = "lps_login_csrf";
/// The setup form's own CSRF cookie (double submit, likewise).
const SETUP_CSRF: &str = "lps_setup_csrf";
const SESSION_SECONDS: i64 = 7 * 24 * 3_600;

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

pub(super) async fn login_form(
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

pub(super) async fn log_in(
    State(core): State<Core>,
    forwarded: Forwarded,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
    settings: DashboardSettings,
) -> Response {
    let next = safe_next(form.get("next"));
    if form_expired(&headers, LOGIN_CSRF, &form) {
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
    match core.oauth().login(forwarded.request(request)).await {
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
            // A person who chose their own time zone sees it in this browser too from the
            // first screen on.
            let own_zone = core
                .oauth()
                .get_session(session_cookie::as_credential(
                    &token,
                    proto::GetSessionRequest {},
                ))
                .await
                .map(|person| person.into_inner().time_zone)
                .unwrap_or_default();
            if !own_zone.is_empty() {
                for cookie in session_cookie::own_time_zone(&own_zone, settings.secure_cookies) {
                    if let Ok(value) = HeaderValue::from_str(&cookie) {
                        response.headers_mut().append(header::SET_COOKIE, value);
                    }
                }
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

/// The first start's one-time link (and an invitation's): choose a password.
pub(super) async fn setup_form(
    Query(query): Query<BTreeMap<String, String>>,
    settings: DashboardSettings,
) -> Response {
    let token = query.get("token").cloned().unwrap_or_default();
    setup_page(StatusCode::OK, &token, None, &settings)
}

/// The setup form, with a CSRF token of its own bound to a cookie (double submit, as the
/// login form's): the link's token alone would let a foreign page sign a browser into an
/// account of the foreign page's choosing (login CSRF).
fn setup_page(
    status: StatusCode,
    token: &str,
    error: Option<&str>,
    settings: &DashboardSettings,
) -> Response {
    let csrf = lps::wire::random_token(32);
    let mut response = setup_screen(status, token, error, &csrf);
    if let Ok(cookie) = HeaderValue::from_str(&session_cookie::set(
        SETUP_CSRF,
        &csrf,
        settings.secure_cookies,
        3_600,
    )) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The setup form with the CSRF token its browser already holds (shown again after an error).
fn setup_screen(status: StatusCode, token: &str, error: Option<&str>, csrf: &str) -> Response {
    SCREENS.page(
        status,
        "Choose your password",
        "setup.html",
        context! { token, error, csrf },
    )
}

/// Sets the password the link allows and signs the person in: only from the form this site
/// showed this browser (its cookie-bound CSRF token, and this origin, which the router checks).
pub(super) async fn set_up(
    State(core): State<Core>,
    forwarded: Forwarded,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
    settings: DashboardSettings,
) -> Response {
    let token = form.get("token").cloned().unwrap_or_default();
    if form_expired(&headers, SETUP_CSRF, &form) {
        return setup_page(
            StatusCode::FORBIDDEN,
            &token,
            Some("The form expired; please try again."),
            &settings,
        );
    }
    let request = proto::SetPasswordWithLinkRequest {
        token: Some(token.clone()),
        password: form.get("password").cloned(),
    };
    match core
        .oauth()
        .set_password_with_link(forwarded.request(request))
        .await
    {
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
                "This link was already used, has expired or was revoked. Ask for a new one with “Forgot your password?” on the sign-in page, ask an owner for a new invitation, or an operator for `lps admin user set-password`.",
            ),
            &settings,
        ),
        Err(status) => setup_screen(
            StatusCode::UNPROCESSABLE_ENTITY,
            &token,
            Some(status.message()),
            session_cookie::read(&headers, SETUP_CSRF)
                .as_deref()
                .unwrap_or_default(),
        ),
    }
}

/// "Forgot your password?": the address to email a link to.
pub(super) async fn forgot_form() -> Response {
    forgot_page(StatusCode::OK, None, None)
}

fn forgot_page(status: StatusCode, done: Option<&str>, error: Option<&str>) -> Response {
    SCREENS.page(
        status,
        "Forgot your password?",
        "forgot.html",
        context! { done, error },
    )
}

/// Asks core to email a reset link. The same answer whether or not the address is anyone's.
/// No CSRF token of its own: a form posted from elsewhere is refused by the router's origin
/// check, and anyone may ask for a link to be sent to an address (only its owner reads it).
pub(super) async fn forgot(
    State(core): State<Core>,
    forwarded: Forwarded,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let request = proto::RequestPasswordResetRequest {
        email: form.get("email").cloned(),
    };
    match core
        .oauth()
        .request_password_reset(forwarded.request(request))
        .await
    {
        Ok(_) => forgot_page(
            StatusCode::OK,
            Some(
                "If an account uses this address, a link to choose a new password is on its way to it. It works once, for an hour.",
            ),
            None,
        ),
        Err(status) => {
            let code = match status.code() {
                tonic::Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
                tonic::Code::InvalidArgument => StatusCode::UNPROCESSABLE_ENTITY,
                tonic::Code::FailedPrecondition => StatusCode::CONFLICT,
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            forgot_page(code, None, Some(status.message()))
        }
    }
}

pub(super) async fn log_out(
    State(core): State<Core>,
    SignedForm(session, _): SignedForm,
) -> Response {
    let _ = core
        .oauth()
        .logout(session.request(proto::LogoutRequest {}))
        .await;
    let mut response = Redirect::to("/dashboard/login").into_response();
    if let Ok(cookie) =
        HeaderValue::from_str(&session_cookie::set(session_cookie::NAME, "", false, 0))
    {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// Whether a sign-in or set-up form lacks the token its page set in this browser's cookie
/// (an old tab, or a form posted from elsewhere).
fn form_expired(headers: &HeaderMap, cookie: &str, form: &BTreeMap<String, String>) -> bool {
    let set = session_cookie::read(headers, cookie);
    set.is_none() || set.as_ref() != form.get("csrf_token")
}
