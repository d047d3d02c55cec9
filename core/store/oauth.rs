//! People's passwords and sessions, and OAuth clients, codes, grants and tokens. Secrets are
//! stored as their SHA-256 only.

use sqlx::{Any, Executor, FromRow};

use crate::time::Micros;

/// A person who may log in.
#[derive(Debug, Clone, FromRow)]
pub struct LoginRow {
    pub id: i64,
    pub password_hash: Option<String>,
}

/// Everyone with this email (any case), oldest first.
pub async fn users_by_email<'c>(
    ex: impl Executor<'c, Database = Any>,
    email: &str,
) -> sqlx::Result<Vec<LoginRow>> {
    sqlx::query_as(
        "SELECT id, account_id, name, email, password_hash FROM users
         WHERE lower(email) = lower($1) ORDER BY id",
    )
    .bind(email)
    .fetch_all(ex)
    .await
}

/// Sets a person's password and ends what the old one opened: every session and every setup
/// link still outstanding.
pub async fn set_password(
    conn: &mut sqlx::AnyConnection,
    user_id: i64,
    password_hash: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE users SET password_hash = $2 WHERE id = $1")
        .bind(user_id)
        .bind(password_hash)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM sessions WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM password_setups WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut *conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn insert_session<'c>(
    ex: impl Executor<'c, Database = Any>,
    token_hash: &str,
    user_id: i64,
    csrf_token: &str,
    now: Micros,
    expires_at: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash)
    .bind(user_id)
    .bind(csrf_token)
    .bind(now)
    .bind(expires_at)
    .execute(ex)
    .await?;
    Ok(())
}

/// A live session's person.
#[derive(Debug, Clone, FromRow)]
pub struct SessionRow {
    pub user_id: i64,
    pub account_id: i64,
    pub name: String,
    pub email: String,
    pub csrf_token: String,
    /// `owner` or `member`.
    pub role: String,
    /// Their own time zone, if they chose one.
    pub time_zone: Option<String>,
}

pub async fn session<'c>(
    ex: impl Executor<'c, Database = Any>,
    token_hash: &str,
    now: Micros,
) -> sqlx::Result<Option<SessionRow>> {
    sqlx::query_as(
        "SELECT u.id AS user_id, u.account_id, u.name, u.email, s.csrf_token, u.role, u.time_zone
         FROM sessions s JOIN users u ON u.id = s.user_id
         WHERE s.token_hash = $1 AND s.expires_at > $2 AND u.role <> 'removed'",
    )
    .bind(token_hash)
    .bind(now)
    .fetch_optional(ex)
    .await
}

pub async fn delete_session<'c>(
    ex: impl Executor<'c, Database = Any>,
    token_hash: &str,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
        .bind(token_hash)
        .execute(ex)
        .await?;
    Ok(())
}

#[derive(Debug, Clone, FromRow)]
pub struct ClientRow {
    pub id: String,
    pub name: String,
    /// JSON array.
    pub redirect_uris: String,
    pub created_at: Micros,
}

/// Registers a client, or (for a metadata document fetched again) refreshes it.
pub async fn upsert_client<'c>(
    ex: impl Executor<'c, Database = Any>,
    client: &ClientRow,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris",
    )
    .bind(&client.id)
    .bind(&client.name)
    .bind(&client.redirect_uris)
    .bind(client.created_at)
    .execute(ex)
    .await?;
    Ok(())
}

pub async fn client<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<ClientRow>> {
    sqlx::query_as("SELECT id, name, redirect_uris, created_at FROM oauth_clients WHERE id = $1")
        .bind(id)
        .fetch_optional(ex)
        .await
}

/// Deletes clients registered before `cutoff` that no grant and no pending code names: a
/// registration nobody went on to use. Returns how many.
pub async fn delete_unused_clients<'c>(
    ex: impl Executor<'c, Database = Any>,
    cutoff: Micros,
    now: Micros,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM oauth_clients
         WHERE created_at < $1
           AND id NOT IN (SELECT client_id FROM oauth_grants)
           AND id NOT IN (SELECT client_id FROM oauth_codes WHERE expires_at > $2)",
    )
    .bind(cutoff)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(done.rows_affected())
}

/// An authorization code as issued.
#[derive(Debug, Clone, FromRow)]
pub struct CodeRow {
    pub client_id: String,
    pub user_id: i64,
    pub workspace_id: i64,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub resource: Option<String>,
    pub expires_at: Micros,
}

pub async fn insert_code<'c>(
    ex: impl Executor<'c, Database = Any>,
    code_hash: &str,
    code: &CodeRow,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO oauth_codes (code_hash, client_id, user_id, workspace_id, redirect_uri,
                                  code_challenge, resource, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(code_hash)
    .bind(&code.client_id)
    .bind(code.user_id)
    .bind(code.workspace_id)
    .bind(&code.redirect_uri)
    .bind(&code.code_challenge)
    .bind(code.resource.as_deref())
    .bind(code.expires_at)
    .execute(ex)
    .await?;
    Ok(())
}

/// Takes a code once: the row if it was unused (now marked used), else `None`.
pub async fn take_code<'c>(
    ex: impl Executor<'c, Database = Any>,
    code_hash: &str,
    now: Micros,
) -> sqlx::Result<Option<CodeRow>> {
    sqlx::query_as(
        "UPDATE oauth_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL
         RETURNING client_id, user_id, workspace_id, redirect_uri, code_challenge, resource,
                   expires_at",
    )
    .bind(code_hash)
    .bind(now)
    .fetch_optional(ex)
    .await
}

/// Notes the grant a code was exchanged for.
pub async fn set_code_grant<'c>(
    ex: impl Executor<'c, Database = Any>,
    code_hash: &str,
    grant_id: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE oauth_codes SET grant_id = $2 WHERE code_hash = $1")
        .bind(code_hash)
        .bind(grant_id)
        .execute(ex)
        .await?;
    Ok(())
}

/// The grant a used code was exchanged for, if any.
pub async fn grant_of_used_code<'c>(
    ex: impl Executor<'c, Database = Any>,
    code_hash: &str,
) -> sqlx::Result<Option<String>> {
    let grant: Option<Option<String>> = sqlx::query_scalar(
        "SELECT grant_id FROM oauth_codes WHERE code_hash = $1 AND used_at IS NOT NULL",
    )
    .bind(code_hash)
    .fetch_optional(ex)
    .await?;
    Ok(grant.flatten())
}

pub struct NewGrant<'a> {
    pub id: &'a str,
    pub client_id: &'a str,
    pub client_name: &'a str,
    pub user_id: i64,
    pub account_id: i64,
    pub workspace_id: i64,
    pub resource: Option<&'a str>,
}

pub async fn insert_grant<'c>(
    ex: impl Executor<'c, Database = Any>,
    grant: &NewGrant<'_>,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO oauth_grants (id, client_id, client_name, user_id, account_id, workspace_id,
                                   resource, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(grant.id)
    .bind(grant.client_id)
    .bind(grant.client_name)
    .bind(grant.user_id)
    .bind(grant.account_id)
    .bind(grant.workspace_id)
    .bind(grant.resource)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

pub async fn insert_token<'c>(
    ex: impl Executor<'c, Database = Any>,
    token_hash: &str,
    grant_id: &str,
    kind: &str,
    expires_at: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(token_hash)
    .bind(grant_id)
    .bind(kind)
    .bind(expires_at)
    .execute(ex)
    .await?;
    Ok(())
}

/// A live token with its grant, person and workspace.
#[derive(Debug, Clone, FromRow)]
pub struct TokenGrantRow {
    pub grant_id: String,
    pub kind: String,
    pub expires_at: Micros,
    pub client_id: String,
    pub workspace_id: i64,
    pub account_id: i64,
    pub resource: Option<String>,
    pub user_id: i64,
    pub user_name: String,
    pub user_email: String,
    /// The person's role now: an owner's grant acting after a demotion is a member's.
    pub user_role: String,
}

/// The token and its grant, unless the grant was revoked or its person removed.
pub async fn token<'c>(
    ex: impl Executor<'c, Database = Any>,
    token_hash: &str,
) -> sqlx::Result<Option<TokenGrantRow>> {
    sqlx::query_as(
        "SELECT t.grant_id, t.kind, t.expires_at, t.used_at, g.client_id, g.client_name,
                g.workspace_id, g.account_id, g.resource, g.last_used_at, u.id AS user_id,
                u.name AS user_name, u.email AS user_email, u.role AS user_role
         FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
         JOIN users u ON u.id = g.user_id
         WHERE t.token_hash = $1 AND g.revoked_at IS NULL AND u.role <> 'removed'",
    )
    .bind(token_hash)
    .fetch_optional(ex)
    .await
}

/// Marks a refresh token used; false if it already was (a replay).
pub async fn use_refresh_token<'c>(
    ex: impl Executor<'c, Database = Any>,
    token_hash: &str,
    now: Micros,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE oauth_tokens SET used_at = $2
         WHERE token_hash = $1 AND kind = 'refresh' AND used_at IS NULL",
    )
    .bind(token_hash)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Revokes a grant (optionally only one of `user_id`'s); true when it was live.
pub async fn revoke_grant<'c>(
    ex: impl Executor<'c, Database = Any>,
    grant_id: &str,
    user_id: Option<i64>,
    now: Micros,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE oauth_grants SET revoked_at = $2
         WHERE id = $1 AND revoked_at IS NULL AND ($3 IS NULL OR user_id = $3)",
    )
    .bind(grant_id)
    .bind(now)
    .bind(user_id)
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Ends every app of a person (removed, or no longer an owner: members connect no apps): their
/// grants are revoked, and codes they approved that no app has exchanged yet are dropped.
pub async fn revoke_apps_of(
    conn: &mut sqlx::AnyConnection,
    user_id: i64,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE oauth_grants SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL",
    )
    .bind(user_id)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    sqlx::query("DELETE FROM oauth_codes WHERE user_id = $1 AND used_at IS NULL")
        .bind(user_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

pub async fn touch_grant<'c>(
    ex: impl Executor<'c, Database = Any>,
    grant_id: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE oauth_grants SET last_used_at = $2 WHERE id = $1")
        .bind(grant_id)
        .bind(now)
        .execute(ex)
        .await?;
    Ok(())
}

/// A person's live grants, newest first.
#[derive(Debug, Clone, FromRow)]
pub struct GrantRow {
    pub id: String,
    pub client_name: String,
    pub workspace_id: i64,
    pub workspace_name: String,
    pub created_at: Micros,
    pub last_used_at: Option<Micros>,
}

pub async fn grants_of<'c>(
    ex: impl Executor<'c, Database = Any>,
    user_id: i64,
) -> sqlx::Result<Vec<GrantRow>> {
    sqlx::query_as(
        "SELECT g.id, g.client_name, g.workspace_id, w.name AS workspace_name, g.created_at,
                g.last_used_at
         FROM oauth_grants g JOIN workspaces w ON w.id = g.workspace_id
         WHERE g.user_id = $1 AND g.revoked_at IS NULL ORDER BY g.created_at DESC",
    )
    .bind(user_id)
    .fetch_all(ex)
    .await
}

pub async fn insert_password_setup<'c>(
    ex: impl Executor<'c, Database = Any>,
    token_hash: &str,
    user_id: i64,
    expires_at: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO password_setups (token_hash, user_id, expires_at) VALUES ($1, $2, $3)",
    )
    .bind(token_hash)
    .bind(user_id)
    .bind(expires_at)
    .execute(ex)
    .await?;
    Ok(())
}

/// Whether the person has an unused link that expires after `after` (a reset link made
/// recently, when `after` is that long before a new one's expiry).
pub async fn has_link_expiring_after<'c>(
    ex: impl Executor<'c, Database = Any>,
    user_id: i64,
    after: Micros,
) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT user_id FROM password_setups
         WHERE user_id = $1 AND used_at IS NULL AND expires_at > $2 LIMIT 1",
    )
    .bind(user_id)
    .bind(after)
    .fetch_optional(ex)
    .await?;
    Ok(found.is_some())
}

/// Takes a setup link once: its person, if it was unused and unexpired (now marked used).
pub async fn take_password_setup<'c>(
    ex: impl Executor<'c, Database = Any>,
    token_hash: &str,
    now: Micros,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar(
        "UPDATE password_setups SET used_at = $2
         WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2
         RETURNING user_id",
    )
    .bind(token_hash)
    .bind(now)
    .fetch_optional(ex)
    .await
}
