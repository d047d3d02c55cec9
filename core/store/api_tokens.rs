//! API keys, stored only as the SHA-256 of their plaintext.

use sqlx::{Any, Executor, FromRow};

use crate::time::Micros;

/// A key as the authenticator needs it: the key, its owner, and the owner's account.
#[derive(Debug, Clone, FromRow)]
pub struct CredentialRow {
    pub token_id: String,
    pub workspace_id: Option<i64>,
    pub account_id: i64,
    pub user_id: i64,
    pub user_name: String,
    pub user_email: String,
}

/// A key as listed to people: no hash.
#[derive(Debug, Clone, FromRow)]
pub struct TokenRow {
    pub id: String,
    pub name: String,
    pub workspace_id: Option<i64>,
    pub created_at: Micros,
    pub last_used_at: Option<Micros>,
    pub created_by: String,
}

/// What a new key is made of.
pub struct NewToken<'a> {
    pub id: &'a str,
    pub account_id: i64,
    pub workspace_id: Option<i64>,
    pub created_by: i64,
    pub name: &'a str,
    pub token_hash: &'a str,
}

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    token: NewToken<'_>,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO api_tokens
             (id, account_id, workspace_id, created_by, name, token_hash, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(token.id)
    .bind(token.account_id)
    .bind(token.workspace_id)
    .bind(token.created_by)
    .bind(token.name)
    .bind(token.token_hash)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(())
}

pub async fn find_credential<'c>(
    ex: impl Executor<'c, Database = Any>,
    token_hash: &str,
) -> sqlx::Result<Option<CredentialRow>> {
    sqlx::query_as(
        "SELECT t.id AS token_id, t.workspace_id, t.last_used_at, t.account_id,
                u.id AS user_id, u.name AS user_name, u.email AS user_email
         FROM api_tokens t
         JOIN users u ON u.id = t.created_by
         WHERE t.token_hash = $1",
    )
    .bind(token_hash)
    .fetch_optional(ex)
    .await
}

pub async fn touch<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: &str,
    now: Micros,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE api_tokens SET last_used_at = $2 WHERE id = $1")
        .bind(id)
        .bind(now)
        .execute(ex)
        .await?;
    Ok(())
}

const TOKEN_COLUMNS: &str = "t.id, t.name, t.workspace_id, t.created_at, t.last_used_at,
                             u.name AS created_by";

/// The workspace's keys and the account's legacy (unbound) keys, oldest first.
pub async fn list_for_workspace<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
    workspace_id: i64,
) -> sqlx::Result<Vec<TokenRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {TOKEN_COLUMNS}
         FROM api_tokens t JOIN users u ON u.id = t.created_by
         WHERE t.account_id = $1 AND (t.workspace_id = $2 OR t.workspace_id IS NULL)
         ORDER BY t.created_at, t.id"
    )))
    .bind(account_id)
    .bind(workspace_id)
    .fetch_all(ex)
    .await
}

/// One key of the account, bound or legacy.
pub async fn find_in_account<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
    id: &str,
) -> sqlx::Result<Option<TokenRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {TOKEN_COLUMNS}
         FROM api_tokens t JOIN users u ON u.id = t.created_by
         WHERE t.account_id = $1 AND t.id = $2"
    )))
    .bind(account_id)
    .bind(id)
    .fetch_optional(ex)
    .await
}

pub async fn delete<'c>(ex: impl Executor<'c, Database = Any>, id: &str) -> sqlx::Result<bool> {
    let result = sqlx::query("DELETE FROM api_tokens WHERE id = $1")
        .bind(id)
        .execute(ex)
        .await?;
    Ok(result.rows_affected() == 1)
}
