//! The OAuth 2.1 authorization server's HTTP face: metadata (RFC 8414, and the
//! `openid-configuration` path clients probe), dynamic client registration (RFC 7591),
//! `/oauth/authorize` (the consent screen: log in if needed, pick one workspace, approve or
//! deny), `/oauth/token` (authorization code with PKCE S256, refresh tokens rotated) and
//! `/oauth/revoke` (RFC 7009). Every decision is core's (`OAuthService`).

use axum::extract::{Form, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use lps::proto;
use minijinja::context;
use minijinja::value::Serde;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use crate::core_client::Core;
use crate::http::client_address::{ClientAddress, with_client_address};
use crate::http::html_page::{self, Screens, message};

static SCREENS: LazyLock<Screens> =
    LazyLock::new(|| Screens::new(&[("consent.html", include_str!("templates/consent.html"))]));
use crate::http::session_cookie;

/// Where the face is, for metadata and `iss`.
#[derive(Clone)]
pub struct Issuer {
    /// e.g. `https://lps.example`: the issuer identifier.
    pub url: String,
}

pub fn router(issuer: Issuer) -> Router<Core> {
    let metadata = move |issuer: Issuer| {
        let document = metadata(&issuer.url);
        move || std::future::ready(Json(document.clone()))
    };
    Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(metadata(issuer.clone())),
        )
        .route(
            "/.well-known/oauth-authorization-server/mcp",
            get(metadata(issuer.clone())),
        )
        .route(
            "/.well-known/openid-configuration",
            get(metadata(issuer.clone())),
        )
        .route(
            "/oauth/register",
            post(register)
                .options(preflight)
                .layer(axum::extract::DefaultBodyLimit::max(
                    REGISTRATION_LIMIT_BYTES,
                )),
        )
        .route(
            "/oauth/authorize",
            get({
                let issuer = issuer.clone();
                move |core, query, headers| consent(core, query, headers, issuer.clone())
            })
            .post({
                let issuer = issuer.clone();
                move |core, headers, form| decide(core, headers, form, issuer.clone())
            }),
        )
        .route("/oauth/token", post(token).options(preflight))
        .route("/oauth/revoke", post(revoke).options(preflight))
        // Anonymous forms of a few fields: a stranger's body is read no further (registration
        // has its own, larger, limit).
        .layer(axum::extract::DefaultBodyLimit::max(FORM_LIMIT_BYTES))
}

/// The largest body of the authorization server's forms (`/oauth/authorize`, `/token`,
/// `/revoke`).
pub const FORM_LIMIT_BYTES: usize = 16 * 1024;

/// CORS preflights are answered by the CORS layer around these routes; one from an origin it
/// does not allow gets this empty answer, without `Access-Control-Allow-Origin`.
async fn preflight() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// RFC 8414 metadata.
fn metadata(issuer: &str) -> serde_json::Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth/authorize"),
        "token_endpoint": format!("{issuer}/oauth/token"),
        "registration_endpoint": format!("{issuer}/oauth/register"),
        "revocation_endpoint": format!("{issuer}/oauth/revoke"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["workspace"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
    })
}

/// An RFC 6749 error body.
fn oauth_error(status: StatusCode, code: &str, description: &str) -> Response {
    let mut response = (
        status,
        Json(json!({"error": code, "error_description": description})),
    )
        .into_response();
    no_store(response.headers_mut());
    response
}

fn no_store(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// The RFC 6749 / 8707 error code (`invalid_grant`, `invalid_target`, ...) core refused with,
/// if it named one.
fn oauth_code(status: &tonic::Status) -> Option<String> {
    let details = tonic_types::StatusExt::get_error_details(status);
    let reason = details.error_info().map(|info| info.reason.clone())?;
    (status.code() == tonic::Code::InvalidArgument
        && reason.contains('_')
        && reason == reason.to_lowercase())
    .then_some(reason)
}

/// Core's refusal as an RFC 6749 error.
fn from_status(status: tonic::Status) -> Response {
    let details = tonic_types::StatusExt::get_error_details(&status);
    match (status.code(), oauth_code(&status).as_deref()) {
        (_, Some(code)) => {
            let http = if code == "invalid_client" {
                StatusCode::UNAUTHORIZED
            } else {
                StatusCode::BAD_REQUEST
            };
            oauth_error(http, code, status.message())
        }
        (tonic::Code::InvalidArgument, _) => {
            oauth_error(StatusCode::BAD_REQUEST, "invalid_request", status.message())
        }
        (tonic::Code::Unauthenticated, _) => {
            oauth_error(StatusCode::UNAUTHORIZED, "invalid_token", status.message())
        }
        (tonic::Code::PermissionDenied, _) => {
            oauth_error(StatusCode::FORBIDDEN, "access_denied", status.message())
        }
        (tonic::Code::ResourceExhausted, _) => {
            let mut response =
                oauth_error(StatusCode::TOO_MANY_REQUESTS, "slow_down", status.message());
            if let Some(delay) = details.retry_info().and_then(|info| info.retry_delay) {
                let seconds = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
            }
            response
        }
        _ => oauth_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            "The authorization server is temporarily unavailable.",
        ),
    }
}

#[derive(Deserialize)]
struct Registration {
    client_name: Option<String>,
    #[serde(default)]
    redirect_uris: Vec<String>,
}

/// The largest registration body: ten redirect URIs of 2,000 characters and a name fit.
const REGISTRATION_LIMIT_BYTES: usize = 32 * 1024;

/// RFC 7591: public clients (no secret, `token_endpoint_auth_method: none`).
async fn register(
    State(core): State<Core>,
    address: Option<axum::Extension<ClientAddress>>,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let Ok(body) = body else {
        return oauth_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_client_metadata",
            "The registration is larger than 32 KiB.",
        );
    };
    let Ok(registration) = serde_json::from_slice::<Registration>(&body) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "The body must be a JSON object with redirect_uris.",
        );
    };
    let request = proto::RegisterClientRequest {
        client_name: registration.client_name,
        redirect_uris: registration.redirect_uris,
    };
    let request = with_client_address(tonic::Request::new(request), address.as_deref());
    match core.oauth().register_client(request).await {
        Ok(reply) => {
            let r = reply.into_inner();
            let mut response = (
                StatusCode::CREATED,
                Json(json!({
                    "client_id": r.client_id,
                    "client_name": r.client_name,
                    "redirect_uris": r.redirect_uris,
                    "client_id_issued_at": r.client_id_issued_at,
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                })),
            )
                .into_response();
            no_store(response.headers_mut());
            response
        }
        Err(status) => from_status(status),
    }
}

/// The authorization request's parameters, carried through the consent form.
#[derive(Debug, Default, Deserialize, Clone)]
struct AuthorizeParams {
    #[serde(default)]
    response_type: String,
    #[serde(default)]
    client_id: String,
    #[serde(default)]
    redirect_uri: String,
    #[serde(default)]
    code_challenge: String,
    #[serde(default)]
    code_challenge_method: String,
    state: Option<String>,
    resource: Option<String>,
    scope: Option<String>,
}

impl AuthorizeParams {
    fn query(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (key, value) in [
            ("response_type", Some(&self.response_type)),
            ("client_id", Some(&self.client_id)),
            ("redirect_uri", Some(&self.redirect_uri)),
            ("code_challenge", Some(&self.code_challenge)),
            ("code_challenge_method", Some(&self.code_challenge_method)),
            ("state", self.state.as_ref()),
            ("resource", self.resource.as_ref()),
            ("scope", self.scope.as_ref()),
        ] {
            if let Some(value) = value {
                query.append_pair(key, value);
            }
        }
        query.finish()
    }
}

/// Back to the client with `params` (and `state`, `iss`).
fn back_to_client(
    redirect_uri: &str,
    state: Option<&str>,
    issuer: &str,
    params: &[(&str, &str)],
) -> Response {
    let mut url = match url::Url::parse(redirect_uri) {
        Ok(url) => url,
        Err(_) => {
            return message(
                StatusCode::BAD_REQUEST,
                "Invalid redirect",
                "The redirect address is not valid.",
                None,
            );
        }
    };
    {
        let mut pairs = url.query_pairs_mut();
        for (key, value) in params {
            pairs.append_pair(key, value);
        }
        if let Some(state) = state {
            pairs.append_pair("state", state);
        }
        pairs.append_pair("iss", issuer);
    }
    Redirect::to(url.as_str()).into_response()
}

/// GET /oauth/authorize: checks the request, asks the person to log in if needed, then shows
/// the consent screen.
async fn consent(
    State(core): State<Core>,
    Query(params): Query<AuthorizeParams>,
    headers: HeaderMap,
    issuer: Issuer,
) -> Response {
    // Client and redirect URI first: until both are known good, nothing is redirected.
    let client = match registered(&core, &params.client_id, &params.redirect_uri).await {
        Ok(client) => client,
        Err(refusal) => return refusal,
    };
    let state = params.state.as_deref();
    if params.response_type != "code" {
        return back_to_client(
            &params.redirect_uri,
            state,
            &issuer.url,
            &[("error", "unsupported_response_type")],
        );
    }
    if params.code_challenge_method != "S256" || params.code_challenge.len() < 43 {
        return back_to_client(
            &params.redirect_uri,
            state,
            &issuer.url,
            &[
                ("error", "invalid_request"),
                ("error_description", "PKCE with S256 is required."),
            ],
        );
    }
    let Some((_, person)) = session_cookie::signed_in(&core, &headers).await else {
        let next = format!("/oauth/authorize?{}", params.query());
        let mut login = form_urlencoded::Serializer::new(String::new());
        login.append_pair("next", &next);
        return Redirect::to(&format!("/dashboard/login?{}", login.finish())).into_response();
    };
    let hidden: Vec<(String, String)> = form_urlencoded::parse(params.query().as_bytes())
        .into_owned()
        .collect();
    let workspaces: Vec<_> = person
        .workspaces
        .iter()
        .map(|workspace| context! { id => workspace.id, name => workspace.name.clone() })
        .collect();
    // The answer to the consent redirects to the app: the one place its form may lead.
    let form_target = html_page::form_target_source(&params.redirect_uri).unwrap_or_default();
    SCREENS.page_posting_to(
        StatusCode::OK,
        "Connect an app",
        "consent.html",
        context! {
            client => client.client_name,
            destination => Serde(redirect_destination(&params.redirect_uri)),
            email => person.email,
            csrf => person.csrf_token,
            hidden => Serde(hidden),
            workspaces,
        },
        &form_target,
    )
}

/// Where the code will be sent, for the person to judge: the redirect URI's host or, for a
/// loopback address or a private-use scheme, an app on this device.
#[derive(Serialize)]
struct Destination {
    place: String,
    detail: Option<String>,
}

fn redirect_destination(redirect_uri: &str) -> Option<Destination> {
    let url = url::Url::parse(redirect_uri).ok()?;
    let on_this_device = |detail: String| Destination {
        place: "an app on this device".to_owned(),
        detail: Some(detail),
    };
    Some(match url.scheme() {
        "https" if !lps::wire::is_loopback(&url) => Destination {
            place: url.host_str().unwrap_or_default().to_owned(),
            detail: None,
        },
        "http" | "https" => on_this_device("a local address".to_owned()),
        scheme => on_this_device(format!("{scheme}:")),
    })
}

/// The client, if it exists and registered this redirect URI (core decides); else the error
/// page, never a redirect to an address not known to be the client's.
async fn registered(
    core: &Core,
    client_id: &str,
    redirect_uri: &str,
) -> Result<proto::DescribeClientResponse, Response> {
    core.oauth()
        .describe_client(proto::DescribeClientRequest {
            client_id: Some(client_id.to_owned()),
            redirect_uri: Some(redirect_uri.to_owned()),
        })
        .await
        .map(tonic::Response::into_inner)
        .map_err(|status| {
            message(
                StatusCode::BAD_REQUEST,
                "Cannot connect this app",
                status.message(),
                None,
            )
        })
}

/// POST /oauth/authorize: the person's decision.
async fn decide(
    State(core): State<Core>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
    issuer: Issuer,
) -> Response {
    let get = |key: &str| form.get(key).cloned().unwrap_or_default();
    let Some((session, person)) = session_cookie::signed_in(&core, &headers).await else {
        return message(
            StatusCode::UNAUTHORIZED,
            "Signed out",
            "Please sign in again and retry from the app.",
            None,
        );
    };
    if crate::http::same_origin::OwnOrigin::of(&issuer.url).is_foreign(&headers) {
        return crate::http::same_origin::refusal();
    }
    if get("csrf_token") != person.csrf_token {
        return message(
            StatusCode::FORBIDDEN,
            "Refused",
            "The form has expired. Go back to the app and start again.",
            None,
        );
    }
    let redirect_uri = get("redirect_uri");
    if let Err(refusal) = registered(&core, &get("client_id"), &redirect_uri).await {
        return refusal;
    }
    let state = form.get("state").map(String::as_str);
    if get("decision") != "approve" {
        return back_to_client(
            &redirect_uri,
            state,
            &issuer.url,
            &[("error", "access_denied")],
        );
    }
    let request = proto::AuthorizeRequest {
        client_id: Some(get("client_id")),
        redirect_uri: Some(redirect_uri.clone()),
        code_challenge: Some(get("code_challenge")),
        resource: form.get("resource").cloned(),
        workspace_id: get("workspace_id").parse().ok(),
        scope: form.get("scope").cloned(),
    };
    match core
        .oauth()
        .authorize(session_cookie::as_credential(&session, request))
        .await
    {
        Ok(reply) => back_to_client(
            &redirect_uri,
            state,
            &issuer.url,
            &[("code", &reply.into_inner().code)],
        ),
        Err(status) => {
            let code = match status.code() {
                tonic::Code::PermissionDenied => "access_denied".to_owned(),
                _ => oauth_code(&status).unwrap_or_else(|| "invalid_request".to_owned()),
            };
            back_to_client(
                &redirect_uri,
                state,
                &issuer.url,
                &[("error", &code), ("error_description", status.message())],
            )
        }
    }
}

/// POST /oauth/token (form-encoded).
async fn token(State(core): State<Core>, Form(form): Form<BTreeMap<String, String>>) -> Response {
    let field = |key: &str| form.get(key).cloned();
    let request = proto::ExchangeTokenRequest {
        grant_type: field("grant_type"),
        client_id: field("client_id"),
        code: field("code"),
        redirect_uri: field("redirect_uri"),
        code_verifier: field("code_verifier"),
        refresh_token: field("refresh_token"),
        resource: field("resource"),
    };
    match core.oauth().exchange_token(request).await {
        Ok(reply) => {
            let r = reply.into_inner();
            let mut response = Json(json!({
                "access_token": r.access_token,
                "token_type": "Bearer",
                "expires_in": r.expires_in,
                "refresh_token": r.refresh_token,
                "scope": r.scope,
            }))
            .into_response();
            no_store(response.headers_mut());
            response
        }
        Err(status) => from_status(status),
    }
}

/// POST /oauth/revoke (RFC 7009): 200 whether or not the token was known.
async fn revoke(State(core): State<Core>, Form(form): Form<BTreeMap<String, String>>) -> Response {
    let request = proto::RevokeTokenRequest {
        token: form.get("token").cloned(),
    };
    match core.oauth().revoke_token(request).await {
        Ok(_) => StatusCode::OK.into_response(),
        Err(status) => from_status(status),
    }
}
