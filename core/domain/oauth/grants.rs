//! What an approved app holds: the one-time authorization code (PKCE S256), the tokens it is
//! exchanged for (refresh tokens rotated on use), revocation, and the person's grants.

use base64::Engine;
use sha2::{Digest, Sha256};

use super::clients::{client, client_for_redirect};
use super::{
    ACCESS_PREFIX, CODE_SECONDS, REFRESH_PREFIX, REFRESH_TOKEN_SECONDS, SECOND, is_own_resource,
    oauth_error,
};
use crate::auth::{self, Principal, hash_key};
use crate::store::oauth::{self, CodeRow, NewGrant};
use crate::store::{accounts, users, workspaces};
use crate::time::Micros;
use crate::{App, Error, Result, time};

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
    if !principal.is_person() {
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
