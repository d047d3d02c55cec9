//! Accounts: the plan and the credit pool shared by their workspaces.

use sqlx::{Any, Executor, FromRow};

use crate::time::Micros;

#[derive(Debug, Clone, FromRow)]
pub struct AccountRow {
    pub id: i64,
    pub plan: String,
    pub credits_remaining: i64,
    pub renews_at: Micros,
}

pub async fn insert<'c>(
    ex: impl Executor<'c, Database = Any>,
    name: &str,
    plan: &str,
    credits: i64,
    renews_at: Micros,
    now: Micros,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO accounts (name, plan, credits_remaining, credit_allowance, renews_at,
                               created_at)
         VALUES ($1, $2, $3, $3, $4, $5)
         RETURNING id",
    )
    .bind(name)
    .bind(plan)
    .bind(credits)
    .bind(renews_at)
    .bind(now)
    .fetch_one(ex)
    .await
}

pub async fn get<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
) -> sqlx::Result<Option<AccountRow>> {
    sqlx::query_as(
        "SELECT id, name, plan, credits_remaining, renews_at, created_at
         FROM accounts WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(ex)
    .await
}

pub async fn count<'c>(ex: impl Executor<'c, Database = Any>) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM accounts")
        .fetch_one(ex)
        .await
}

/// Changes the plan and, when given, sets the monthly allowance and refills the pool to it.
/// False when no such account.
pub async fn set_plan<'c>(
    ex: impl Executor<'c, Database = Any>,
    id: i64,
    plan: &str,
    credits: Option<i64>,
) -> sqlx::Result<bool> {
    let result = sqlx::query(
        "UPDATE accounts
         SET plan = $2, credits_remaining = COALESCE($3, credits_remaining),
             credit_allowance = COALESCE($3, credit_allowance)
         WHERE id = $1",
    )
    .bind(id)
    .bind(plan)
    .bind(credits)
    .execute(ex)
    .await?;
    Ok(result.rows_affected() == 1)
}
