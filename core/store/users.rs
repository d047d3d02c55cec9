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
