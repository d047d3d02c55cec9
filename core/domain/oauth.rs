//! People and apps: passwords (argon2id), server-side sessions, and OAuth 2.1 for apps acting
//! on one workspace (authorization code with PKCE S256, refresh tokens rotated on use,
//! revocation). Every decision is made here; the edge only serves the HTTP faces.

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier, phc::PasswordHash};
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::auth::{self, Principal, hash_key};
use crate::domain::teammates;
use crate::store::oauth::{self, ClientRow, CodeRow, NewGrant, SessionRow};
use crate::store::{accounts, users, workspaces};
use crate::time::Micros;
use crate::wire::is_loopback;
use crate::{App, Error, Result, time};

pub use crate::auth::{ACCESS_PREFIX, SESSION_PREFIX, is_own_resource};
pub const REFRESH_PREFIX: &str = "lps_rt_";
const CLIENT_PREFIX: &str = "lps_client_";

/// How long things live (access tokens: `--oauth-access-token-seconds`).
const REFRESH_TOKEN_SECONDS: i64 = 30 * 24 * 3_600;
const CODE_SECONDS: i64 = 600;
const SESSION_SECONDS: i64 = 7 * 24 * 3_600;
const SECOND: Micros = 1_000_000;

/// Shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 8;

fn oauth_error(code: &'static str, description: impl Into<String>) -> Error {
    Error::OAuth(code, description.into())
}

pub fn hash_password(password: &str) -> Result<String> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(Error::invalid(crate::error::FieldViolation::new(
            "password",
            format!("The password must be at least {MIN_PASSWORD_CHARS} characters."),
        )));
    }
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|e| Error::Internal(anyhow::anyhow!("argon2: {e}")))
}

fn password_matches(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored)
        .map(|hash| {
            Argon2::default()
                .verify_password(password.as_bytes(), &hash)
                .is_ok()
        })
        .unwrap_or(false)
}

/// A hash no password matches, verified against when no person has the email: an unknown
/// email takes as long to refuse as a wrong password.
static DUMMY_HASH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    Argon2::default()
        .hash_password(crate::random::token(32).as_bytes())
        .map(|hash| hash.to_string())
        .unwrap_or_default()
});

/// Passwords checked by every login, the dummy hash standing in for those the email lacks: an
/// unknown email, a person of one account and a person of two (a teammate invited into a
/// second account) take the same time to refuse. (Only an email with passwords in three or
/// more accounts takes longer.)
const LOGIN_VERIFICATIONS: usize = 2;

/// The hashes a login checks, each with its person's index in `users` (`None` for the dummy):
/// every person's with a password, then the dummy until there are [`LOGIN_VERIFICATIONS`].
fn hashes_to_check(users: &[oauth::LoginRow]) -> Vec<(Option<usize>, &str)> {
    let mut hashes: Vec<(Option<usize>, &str)> = users
        .iter()
        .enumerate()
        .filter_map(|(index, user)| Some((Some(index), user.password_hash.as_deref()?)))
        .collect();
    while hashes.len() < LOGIN_VERIFICATIONS {
        hashes.push((None, DUMMY_HASH.as_str()));
    }
    hashes
}

/// Failed logins for one email (from anywhere) past which every further failure for it is
/// answered a second later: slowed, never refused, so nobody can lock the owner out.
const SLOW_AFTER_FAILURES_PER_EMAIL: std::time::Duration = std::time::Duration::from_secs(1);

/// A person logs in. Every attempt counts against the client address (ten a minute; more are
/// refused with [`Error::RateLimited`]), so one address cannot guess for long and another
/// address is never stopped by it; failures also count against the email, and past ten a
/// minute each further failure for it is answered a second late. The password is checked on
/// a blocking thread, always [`LOGIN_VERIFICATIONS`] times (a dummy hash standing in), so the
/// time taken says nothing of the email.
pub async fn login(app: &App, email: &str, password: &str, client: &str) -> Result<String> {
    // The buckets are this database's: deployments sharing a Redis do not share them.
    let deployment = &hash_key(app.db.url())[..12];
    app.login_limiter
        .check(&format!("login-ip:{deployment}:{client}"))
        .await
        .into_result()?;
    let users = oauth::users_by_email(app.db.pool(), email.trim()).await?;
    let password = password.to_owned();
    let found = tokio::task::spawn_blocking(move || {
        let mut found = None;
        for (index, stored) in hashes_to_check(&users) {
            // Every hash is checked, even after a match: the same work whatever the email.
            if password_matches(&password, stored) && found.is_none() {
                found = index;
            }
        }
        found.map(|index| users[index].clone())
    })
    .await
    .map_err(|e| Error::Internal(e.into()))?;
    let Some(user) = found else {
        let email_bucket = format!("login:{deployment}:{}", email.trim().to_lowercase());
        if app
            .login_limiter
            .check(&email_bucket)
            .await
            .retry_after
            .is_some()
        {
            tokio::time::sleep(SLOW_AFTER_FAILURES_PER_EMAIL).await;
        }
        return Err(Error::Unauthenticated);
    };
    start_session(app.db.pool(), user.id, time::now()).await
}

/// A new session for the person: its token (stored as its hash) with a CSRF secret of its own.
async fn start_session<'c>(
    ex: impl sqlx::Executor<'c, Database = sqlx::Any>,
    user_id: i64,
    now: Micros,
) -> Result<String> {
    let token = format!("{SESSION_PREFIX}{}", crate::random::token(43));
    let csrf = crate::random::token(32);
    let expires_at = now + SESSION_SECONDS * SECOND;
    oauth::insert_session(ex, &hash_key(&token), user_id, &csrf, now, expires_at).await?;
    Ok(token)
}

/// A one-time setup link chooses the person's password and signs them in (a session token).
pub async fn set_password_with_link(app: &App, link_token: &str, password: &str) -> Result<String> {
    let hash = hash_password(password)?;
    let mut tx = app.db.begin_write().await?;
    let token = take_setup_link(&mut tx, link_token, &hash, time::now()).await?;
    tx.commit().await?;
    crate::credentials::revoked(app).await;
    Ok(token)
}

/// Takes a setup link within a transaction: sets the person's password (already hashed) and
/// starts their session, if the link is unused, unexpired and the invitation behind it still
/// stands ([`teammates::invitation_stands`]); otherwise the link is gone, and nothing it wrote
/// outlives the transaction.
pub(crate) async fn take_setup_link(
    conn: &mut sqlx::AnyConnection,
    link_token: &str,
    password_hash: &str,
    now: Micros,
) -> Result<String> {
    let gone = || Error::NotFound("This link was already used, has expired or was revoked.");
    let user_id = oauth::take_password_setup(&mut *conn, &hash_key(link_token), now)
        .await?
        .ok_or_else(gone)?;
    let invitee = users::invitee(&mut *conn, user_id).await?;
    if !invitee.as_ref().is_some_and(teammates::invitation_stands) {
        return Err(gone());
    }
    oauth::set_password(conn, user_id, password_hash).await?;
    start_session(&mut *conn, user_id, now).await
}

pub async fn session(app: &App, token: &str) -> Result<Option<SessionRow>> {
    Ok(oauth::session(app.db.pool(), &hash_key(token), time::now()).await?)
}

pub async fn logout(app: &App, token: &str) -> Result<()> {
    oauth::delete_session(app.db.pool(), &hash_key(token)).await?;
    crate::credentials::revoked(app).await;
    Ok(())
}

/// Bounds of one registration (anyone may register: RFC 7591 open registration).
pub const MAX_REDIRECT_URIS: usize = 10;
pub const MAX_REDIRECT_URI_CHARS: usize = 2_000;
pub const MAX_CLIENT_NAME_CHARS: usize = 100;
/// How long a registered client that nobody used (no grant, no pending code) is kept.
pub const UNUSED_CLIENT_SECONDS: i64 = 24 * 3_600;

/// Dynamic client registration: a name and redirect URIs (https, or http on a loopback
/// address, or a native app's private-use scheme in reverse-domain form), within bounds; at
/// most ten are stored a minute from one client address.
pub async fn register_client(
    app: &App,
    name: Option<&str>,
    redirect_uris: &[String],
    client_address: &str,
) -> Result<ClientRow> {
    if redirect_uris.is_empty() {
        return Err(oauth_error(
            "invalid_redirect_uri",
            "redirect_uris is required.",
        ));
    }
    if redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(oauth_error(
            "invalid_redirect_uri",
            format!("At most {MAX_REDIRECT_URIS} redirect_uris may be registered."),
        ));
    }
    for uri in redirect_uris {
        check_redirect_uri(uri)?;
    }
    let name = name.map(str::trim).filter(|n| !n.is_empty());
    if name.is_some_and(|n| {
        n.chars().count() > MAX_CLIENT_NAME_CHARS || n.chars().any(char::is_control)
    }) {
        return Err(oauth_error(
            "invalid_client_metadata",
            format!("client_name must be at most {MAX_CLIENT_NAME_CHARS} printable characters."),
        ));
    }
    // Counted once valid: what is stored is what fills a disk.
    let deployment = &hash_key(app.db.url())[..12];
    app.login_limiter
        .check(&format!("register-ip:{deployment}:{client_address}"))
        .await
        .into_result()?;
    let client = ClientRow {
        id: format!("{CLIENT_PREFIX}{}", crate::random::token(24)),
        name: name.unwrap_or("Unnamed app").to_owned(),
        redirect_uris: serde_json::to_string(redirect_uris).unwrap_or_default(),
        created_at: time::now(),
    };
    oauth::upsert_client(app.db.pool(), &client).await?;
    Ok(client)
}

/// A redirect URI lps may send a code to: `https`, `http` on a loopback address, or a native
/// app's private-use scheme in reverse-domain form (RFC 8252 7.1: `com.example.app:/cb`);
/// never longer than [`MAX_REDIRECT_URI_CHARS`], never with a fragment.
fn check_redirect_uri(uri: &str) -> Result<()> {
    let shown: String = uri.chars().take(100).collect();
    let bad = || {
        oauth_error(
            "invalid_redirect_uri",
            format!(
                "{shown} is not an acceptable redirect URI: https, http on a loopback address, or a private-use scheme in reverse-domain form (com.example.app:/callback)."
            ),
        )
    };
    if uri.chars().count() > MAX_REDIRECT_URI_CHARS {
        return Err(oauth_error(
            "invalid_redirect_uri",
            format!("A redirect URI may be at most {MAX_REDIRECT_URI_CHARS} characters."),
        ));
    }
    let url = url::Url::parse(uri).map_err(|_| bad())?;
    if url.fragment().is_some() {
        return Err(bad());
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        scheme if is_private_use_scheme(scheme) => Ok(()),
        _ => Err(bad()),
    }
}

/// `com.example.app`: at least two labels, each of letters, digits and `-` (RFC 8252 7.1).
fn is_private_use_scheme(scheme: &str) -> bool {
    let labels: Vec<&str> = scheme.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Deletes registered clients nobody used within [`UNUSED_CLIENT_SECONDS`], hourly.
pub async fn forget_unused_clients_forever(app: App) {
    loop {
        let now = time::now();
        let cutoff = now - UNUSED_CLIENT_SECONDS * SECOND;
        match oauth::delete_unused_clients(app.db.pool(), cutoff, now).await {
            Ok(0) => {}
            Ok(deleted) => tracing::info!(deleted, "unused OAuth clients deleted"),
            Err(err) => tracing::warn!(error = %err, "unused OAuth clients could not be deleted"),
        }
        tokio::time::sleep(std::time::Duration::from_secs(60 * 60)).await;
    }
}

/// Whether `given` is one of the client's redirect URIs; loopback ones match on any port.
fn redirect_allowed(client: &ClientRow, given: &str) -> bool {
    let registered: Vec<String> = serde_json::from_str(&client.redirect_uris).unwrap_or_default();
    let Ok(given_url) = url::Url::parse(given) else {
        return false;
    };
    registered.iter().any(|uri| {
        if uri == given {
            return true;
        }
        match url::Url::parse(uri) {
            Ok(mut url) if is_loopback(&url) && is_loopback(&given_url) => {
                let _ = url.set_port(given_url.port());
                url.as_str() == given_url.as_str()
            }
            _ => false,
        }
    })
}

/// The client, if `redirect_uri` is one of its own: nothing is ever sent back to an address
/// not known to be the client's.
pub async fn client_for_redirect(
    app: &App,
    client_id: &str,
    redirect_uri: &str,
) -> Result<ClientRow> {
    let client = client(app, client_id).await?;
    if !redirect_allowed(&client, redirect_uri) {
        return Err(oauth_error(
            "invalid_request",
            "The redirect_uri is not one of the client's.",
        ));
    }
    Ok(client)
}

/// A client by id: registered, or an https client ID metadata document fetched now.
pub async fn client(app: &App, client_id: &str) -> Result<ClientRow> {
    if let Some(client) = oauth::client(app.db.pool(), client_id).await? {
        return Ok(client);
    }
    let is_document = client_id.starts_with("https://")
        || (app.config.allow_private_network && client_id.starts_with("http://"));
    if !is_document {
        return Err(oauth_error("invalid_client", "Unknown client_id."));
    }
    let document = fetch_client_document(app, client_id).await?;
    oauth::upsert_client(app.db.pool(), &document).await?;
    Ok(document)
}

async fn fetch_client_document(app: &App, url: &str) -> Result<ClientRow> {
    let unusable = |why: &str| {
        oauth_error(
            "invalid_client",
            format!("The client metadata document at {url} {why}."),
        )
    };
    let limits = crate::outbound::Limits {
        connect_timeout: std::time::Duration::from_secs(5),
        timeout: std::time::Duration::from_secs(10),
        max_redirects: 0,
    };
    let client = crate::outbound::client(
        app.config.allow_private_network,
        &app.config.resolve,
        limits,
    )
    .map_err(|e| Error::Internal(e.into()))?;
    let response = client
        .get(url)
        .map_err(|refused| unusable(&format!("may not be fetched ({refused})")))?
        .send()
        .await
        .map_err(|_| unusable("could not be fetched"))?;
    if !response.status().is_success() {
        return Err(unusable("could not be fetched"));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|_| unusable("could not be read"))?;
    if bytes.len() > 64 * 1024 {
        return Err(unusable("is too large"));
    }
    let document: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|_| unusable("is not JSON"))?;
    if document["client_id"].as_str() != Some(url) {
        return Err(unusable("names another client_id"));
    }
    let redirect_uris: Vec<String> = document["redirect_uris"]
        .as_array()
        .map(|uris| {
            uris.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if redirect_uris.is_empty() {
        return Err(unusable("has no redirect_uris"));
    }
    for uri in &redirect_uris {
        check_redirect_uri(uri)?;
    }
    Ok(ClientRow {
        id: url.to_owned(),
        name: document["client_name"]
            .as_str()
            .unwrap_or(url)
            .chars()
            .take(100)
            .collect(),
        redirect_uris: serde_json::to_string(&redirect_uris).unwrap_or_default(),
        created_at: time::now(),
    })
}

fn check_resource(app: &App, resource: Option<&str>) -> Result<()> {
    match resource {
        Some(resource) if !is_own_resource(&app.config.public_url, resource) => Err(oauth_error(
            "invalid_target",
            format!(
                "Tokens are issued only for this server: resource must be {0}/mcp or {0}.",
                app.config.public_url.trim_end_matches('/')
            ),
        )),
        _ => Ok(()),
    }
}

/// What the person approved.
pub struct Approval<'a> {
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub code_challenge: &'a str,
    pub resource: Option<&'a str>,
    pub workspace_id: i64,
}

/// The person (a session principal) approves the client for one workspace they reach: a
/// one-time code, valid ten minutes.
pub async fn authorize(app: &App, principal: &Principal, approval: Approval<'_>) -> Result<String> {
    if !principal.token_id.starts_with("session:") {
        return Err(Error::Unauthenticated);
    }
    principal.is_owner()?;
    let client = client_for_redirect(app, approval.client_id, approval.redirect_uri).await?;
    check_resource(app, approval.resource)?;
    let challenge = approval.code_challenge.trim();
    if challenge.len() < 43 || challenge.len() > 128 {
        return Err(oauth_error(
            "invalid_request",
            "A PKCE code_challenge (S256) is required.",
        ));
    }
    let workspace = principal.reach(&app.db, approval.workspace_id).await?;
    let account = accounts::get(app.db.pool(), workspace.account_id)
        .await?
        .ok_or(Error::WorkspaceForbidden)?;
    if !auth::plan_allows_api(&account.plan) {
        return Err(Error::PlanRequired);
    }
    let code = crate::random::token(43);
    let row = CodeRow {
        client_id: client.id,
        user_id: principal.user.id,
        workspace_id: workspace.id,
        redirect_uri: approval.redirect_uri.to_owned(),
        code_challenge: challenge.to_owned(),
        resource: approval.resource.map(str::to_owned),
        expires_at: time::now() + CODE_SECONDS * SECOND,
    };
    oauth::insert_code(app.db.pool(), &hash_key(&code), &row).await?;
    Ok(code)
}

/// Tokens handed out: an access token, its life in seconds, a refresh token, the workspace.
pub struct Tokens {
    pub access_token: String,
    pub expires_in: i64,
    pub refresh_token: String,
    pub workspace_id: i64,
}

/// What the token endpoint was given.
pub struct Exchange<'a> {
    pub grant_type: &'a str,
    pub client_id: Option<&'a str>,
    pub code: Option<&'a str>,
    pub redirect_uri: Option<&'a str>,
    pub code_verifier: Option<&'a str>,
    pub refresh_token: Option<&'a str>,
    pub resource: Option<&'a str>,
}

pub async fn exchange(app: &App, exchange: Exchange<'_>) -> Result<Tokens> {
    let now = time::now();
    check_resource(app, exchange.resource)?;
    if exchange.client_id.is_none_or(str::is_empty) {
        return Err(oauth_error(
            "invalid_request",
            "client_id is required (public clients identify themselves on every token request).",
        ));
    }
    match exchange.grant_type {
        "authorization_code" => {
            let code = exchange
                .code
                .ok_or_else(|| oauth_error("invalid_request", "code is required."))?;
            let code_hash = hash_key(code);
            let mut tx = app.db.begin_write().await?;
            let taken = oauth::take_code(&mut *tx, &code_hash, now).await?;
            let Some(row) = taken else {
                // Used before: whoever holds it may not be the client; what it gave ends.
                if let Some(grant_id) = oauth::grant_of_used_code(&mut *tx, &code_hash).await? {
                    oauth::revoke_grant(&mut *tx, &grant_id, None, now).await?;
                    tx.commit().await?;
                    crate::credentials::revoked(app).await;
                }
                return Err(oauth_error(
                    "invalid_grant",
                    "The code is unknown or was already used.",
                ));
            };
            tx.commit().await?;
            if row.expires_at <= now {
                return Err(oauth_error("invalid_grant", "The code has expired."));
            }
            if exchange.client_id != Some(row.client_id.as_str()) {
                return Err(oauth_error(
                    "invalid_grant",
                    "The code was issued to another client.",
                ));
            }
            if exchange.redirect_uri != Some(row.redirect_uri.as_str()) {
                return Err(oauth_error(
                    "invalid_grant",
                    "The redirect_uri does not match the authorization request.",
                ));
            }
            let verifier = exchange
                .code_verifier
                .ok_or_else(|| oauth_error("invalid_request", "code_verifier is required."))?;
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(Sha256::digest(verifier.as_bytes()));
            if computed != row.code_challenge {
                return Err(oauth_error(
                    "invalid_grant",
                    "The code_verifier does not match the code_challenge.",
                ));
            }
            if let (Some(asked), Some(bound)) = (exchange.resource, row.resource.as_deref())
                && asked != bound
            {
                return Err(oauth_error(
                    "invalid_target",
                    "The resource differs from the authorization request's.",
                ));
            }
            let client = client(app, &row.client_id).await?;
            let workspace = workspaces::get(app.db.pool(), row.workspace_id)
                .await?
                .ok_or_else(|| oauth_error("invalid_grant", "The workspace no longer exists."))?;
            let grant_id = uuid::Uuid::new_v4().to_string();
            let mut tx = app.db.begin_write().await?;
            // Only an owner connects apps: one made a member (or removed) since approving gets
            // none, even if this exchange took the code before their apps were ended.
            let approver = users::teammate(&mut *tx, workspace.account_id, row.user_id).await?;
            if approver.is_none_or(|person| person.role != users::Role::Owner.as_str()) {
                return Err(oauth_error(
                    "invalid_grant",
                    "The person who approved this app can no longer connect apps.",
                ));
            }
            oauth::insert_grant(
                &mut *tx,
                &NewGrant {
                    id: &grant_id,
                    client_id: &client.id,
                    client_name: &client.name,
                    user_id: row.user_id,
                    account_id: workspace.account_id,
                    workspace_id: workspace.id,
                    resource: row.resource.as_deref(),
                },
                now,
            )
            .await?;
            oauth::set_code_grant(&mut *tx, &code_hash, &grant_id).await?;
            let tokens = issue(app, &mut tx, &grant_id, workspace.id, now).await?;
            tx.commit().await?;
            Ok(tokens)
        }
        "refresh_token" => {
            let token = exchange
                .refresh_token
                .ok_or_else(|| oauth_error("invalid_request", "refresh_token is required."))?;
            let hash = hash_key(token);
            let mut tx = app.db.begin_write().await?;
            let row = oauth::token(&mut *tx, &hash)
                .await?
                .filter(|row| row.kind == "refresh")
                .ok_or_else(|| {
                    oauth_error("invalid_grant", "The refresh token is unknown or revoked.")
                })?;
            if row.expires_at <= now {
                return Err(oauth_error(
                    "invalid_grant",
                    "The refresh token has expired.",
                ));
            }
            if exchange.client_id != Some(row.client_id.as_str()) {
                return Err(oauth_error(
                    "invalid_grant",
                    "The refresh token was issued to another client.",
                ));
            }
            if !oauth::use_refresh_token(&mut *tx, &hash, now).await? {
                // A rotated token used again: someone else may hold it; the grant ends.
                oauth::revoke_grant(&mut *tx, &row.grant_id, None, now).await?;
                tx.commit().await?;
                crate::credentials::revoked(app).await;
                return Err(oauth_error(
                    "invalid_grant",
                    "The refresh token was already used; the grant is revoked.",
                ));
            }
            let tokens = issue(app, &mut tx, &row.grant_id, row.workspace_id, now).await?;
            tx.commit().await?;
            Ok(tokens)
        }
        _ => Err(oauth_error(
            "unsupported_grant_type",
            "grant_type must be authorization_code or refresh_token.",
        )),
    }
}

async fn issue(
    app: &App,
    conn: &mut sqlx::AnyConnection,
    grant_id: &str,
    workspace_id: i64,
    now: Micros,
) -> Result<Tokens> {
    let lifetime = app.config.access_token_lifetime.as_secs() as i64;
    let access = format!("{ACCESS_PREFIX}{}", crate::random::token(43));
    let refresh = format!("{REFRESH_PREFIX}{}", crate::random::token(43));
    oauth::insert_token(
        &mut *conn,
        &hash_key(&access),
        grant_id,
        "access",
        now + lifetime * SECOND,
    )
    .await?;
    oauth::insert_token(
        &mut *conn,
        &hash_key(&refresh),
        grant_id,
        "refresh",
        now + REFRESH_TOKEN_SECONDS * SECOND,
    )
    .await?;
    Ok(Tokens {
        access_token: access,
        expires_in: lifetime,
        refresh_token: refresh,
        workspace_id,
    })
}

/// RFC 7009: the token's grant ends (its access and refresh tokens with it). Unknown tokens
/// are not an error.
pub async fn revoke_token(app: &App, token: &str) -> Result<()> {
    if let Some(row) = oauth::token(app.db.pool(), &hash_key(token)).await? {
        oauth::revoke_grant(app.db.pool(), &row.grant_id, None, time::now()).await?;
        crate::credentials::revoked(app).await;
    }
    Ok(())
}

pub async fn grants(app: &App, principal: &Principal) -> Result<Vec<oauth::GrantRow>> {
    principal.may_manage_grants()?;
    Ok(oauth::grants_of(app.db.pool(), principal.user.id).await?)
}

pub async fn revoke_grant(app: &App, principal: &Principal, grant_id: &str) -> Result<()> {
    principal.may_manage_grants()?;
    if oauth::revoke_grant(
        app.db.pool(),
        grant_id,
        Some(principal.user.id),
        time::now(),
    )
    .await?
    {
        crate::credentials::revoked(app).await;
        Ok(())
    } else {
        Err(Error::NotFound("Connected app not found"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_login_checks_as_many_hashes_whatever_the_email() {
        let person = |id, hash: Option<&str>| oauth::LoginRow {
            id,
            password_hash: hash.map(str::to_owned),
        };
        let unknown: Vec<oauth::LoginRow> = Vec::new();
        let invited_only = [person(1, None)];
        let one = [person(1, None), person(2, Some("h2"))];
        let two = [person(1, Some("h1")), person(2, Some("h2"))];
        for users in [&unknown[..], &invited_only, &one, &two] {
            assert_eq!(hashes_to_check(users).len(), LOGIN_VERIFICATIONS);
        }
        assert_eq!(
            hashes_to_check(&one),
            [(Some(1), "h2"), (None, DUMMY_HASH.as_str())]
        );
    }
}
