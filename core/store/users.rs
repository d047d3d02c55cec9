//! People of an account: they own API keys and are named as their creators.

use sqlx::{Any, Executor, FromRow};

use crate::time::Micros;

#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct UserRow {
    pub id: i64,
    pub account_id: i64,
    pub name: String,
    pub email: String,
}

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
    name: &str,
    email: &str,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO users (account_id, name, email, created_at)
         VALUES ($1, $2, $3, $4)
         RETURNING id",
    )
    .bind(account_id)
    .bind(name)
    .bind(email)
    .bind(now)
    .fetch_one(ex)
    .await
}

/// The account's first person, who owns keys created from the command line.
pub async fn owner_of<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
) -> sqlx::Result<Option<UserRow>> {
    sqlx::query_as(
        "SELECT id, account_id, name, email FROM users
         WHERE account_id = $1 ORDER BY id LIMIT 1",
    )
    .bind(account_id)
    .fetch_optional(ex)
    .await
}

/// A person of an account as the teammates list shows them.
#[derive(Debug, Clone, FromRow)]
pub struct TeammateRow {
    pub id: i64,
    pub name: String,
    pub email: String,
    /// `owner` or `member`.
    pub role: String,
    /// 0 until they have chosen a password.
    pub has_password: i64,
    pub created_at: Micros,
    /// Who invited them; `None` for the account's first person and people made by `lps admin`.
    pub invited_by: Option<i64>,
    pub invited_by_name: Option<String>,
    /// Until when their setup link works, while one is unused (the latest, if several; past
    /// once it has expired).
    pub link_expires_at: Option<Micros>,
}

/// What a person of an account may do. `removed` people stay in `users` (keys name their
/// creator) with no role: they cannot sign in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Everything: keys, apps, teammates and the plan included.
    Owner,
    /// Campaigns, leads and analytics.
    Member,
}

impl Role {
    /// As stored in `users.role` and sent in `Teammate.role`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Member => "member",
        }
    }

    /// `owner` or `member`, as stored and as people type them.
    pub fn parse(text: &str) -> Option<Self> {
        [Role::Owner, Role::Member]
            .into_iter()
            .find(|role| role.as_str() == text)
    }
}

const REMOVED: &str = "removed";

/// A teammate's columns (`u`), their inviter's name (`m`) and their unused link's expiry.
const TEAMMATE_COLUMNS: &str = "u.id, u.name, u.email, u.role,
    CASE WHEN u.password_hash IS NULL THEN 0 ELSE 1 END AS has_password, u.created_at,
    u.invited_by, m.name AS invited_by_name,
    CASE WHEN u.password_hash IS NULL THEN
        (SELECT MAX(s.expires_at) FROM password_setups s
         WHERE s.user_id = u.id AND s.used_at IS NULL)
    END AS link_expires_at
    FROM users u LEFT JOIN users m ON m.id = u.invited_by";

/// The account's people (not removed ones), oldest first.
pub async fn teammates<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
) -> sqlx::Result<Vec<TeammateRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {TEAMMATE_COLUMNS} WHERE u.account_id = $1 AND u.role <> 'removed' ORDER BY u.id"
    )))
    .bind(account_id)
    .fetch_all(ex)
    .await
}

/// One person of the account, unless removed.
pub async fn teammate<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
    user_id: i64,
) -> sqlx::Result<Option<TeammateRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {TEAMMATE_COLUMNS}
         WHERE u.account_id = $1 AND u.id = $2 AND u.role <> 'removed'"
    )))
    .bind(account_id)
    .bind(user_id)
    .fetch_optional(ex)
    .await
}

/// A person invited into the account with a role, and who invited them.
pub async fn insert_invited<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
    name: &str,
    email: &str,
    role: Role,
    invited_by: i64,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO users (account_id, name, email, role, invited_by, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING id",
    )
    .bind(account_id)
    .bind(name)
    .bind(email)
    .bind(role.as_str())
    .bind(invited_by)
    .bind(now)
    .fetch_one(ex)
    .await
}

/// Whether someone in the account (not removed) has this email, whatever its case.
pub async fn email_taken<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
    email: &str,
) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM users
         WHERE account_id = $1 AND lower(email) = lower($2) AND role <> 'removed' LIMIT 1",
    )
    .bind(account_id)
    .bind(email)
    .fetch_optional(ex)
    .await?;
    Ok(found.is_some())
}

/// Marks a person of the account removed: no password, no sessions, no setup links, their
/// apps' grants revoked and codes dropped. False when the account has no such person.
pub async fn remove(
    conn: &mut sqlx::AnyConnection,
    account_id: i64,
    user_id: i64,
    now: Micros,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE users SET role = $3, password_hash = NULL
         WHERE id = $1 AND account_id = $2 AND role <> $3",
    )
    .bind(user_id)
    .bind(account_id)
    .bind(REMOVED)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    for sql in [
        "DELETE FROM sessions WHERE user_id = $1",
        "DELETE FROM password_setups WHERE user_id = $1",
    ] {
        sqlx::query(sql).bind(user_id).execute(&mut *conn).await?;
    }
    crate::store::oauth::revoke_apps_of(&mut *conn, user_id, now).await?;
    Ok(true)
}

/// The people this person invited who have not chosen a password yet (and are not removed):
/// the invitations they made that are still pending.
pub async fn pending_invitees<'c>(
    ex: impl Executor<'c, Database = Any>,
    inviter: i64,
) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "SELECT id FROM users
         WHERE invited_by = $1 AND password_hash IS NULL AND role <> 'removed' ORDER BY id",
    )
    .bind(inviter)
    .fetch_all(ex)
    .await
}

/// Gives a person of the account (not removed) a role. False when the account has no such
/// person.
pub async fn set_role<'c>(
    ex: impl Executor<'c, Database = Any>,
    account_id: i64,
    user_id: i64,
    role: Role,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE users SET role = $3 WHERE id = $1 AND account_id = $2 AND role <> 'removed'",
    )
    .bind(user_id)
    .bind(account_id)
    .bind(role.as_str())
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A person taking a setup link: their role and their inviter's, to tell whether the
/// invitation still stands.
#[derive(Debug, Clone, FromRow)]
pub struct InviteeRow {
    /// `owner`, `member` or `removed`.
    pub role: String,
    /// 1 once they have chosen a password (their invitation was taken).
    pub has_password: i64,
    pub invited_by: Option<i64>,
    /// The inviter's role now (`None` when nobody invited them).
    pub inviter_role: Option<String>,
}

pub async fn invitee<'c>(
    ex: impl Executor<'c, Database = Any>,
    user_id: i64,
) -> sqlx::Result<Option<InviteeRow>> {
    sqlx::query_as(
        "SELECT u.role, CASE WHEN u.password_hash IS NULL THEN 0 ELSE 1 END AS has_password,
                u.invited_by, m.role AS inviter_role
         FROM users u LEFT JOIN users m ON m.id = u.invited_by
         WHERE u.id = $1",
    )
    .bind(user_id)
    .fetch_optional(ex)
    .await
}

/// Sets (or, with `None`, clears) a person's own time zone.
pub async fn set_time_zone<'c>(
    ex: impl Executor<'c, Database = Any>,
    user_id: i64,
    time_zone: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET time_zone = $2 WHERE id = $1")
        .bind(user_id)
        .bind(time_zone)
        .execute(ex)
        .await?;
    Ok(())
}
