//! The credit ledger and the balances kept equal to it: `accounts.credits_remaining` (the
//! pool) and `workspaces.credits_used` (each workspace's use this period, capped by
//! `credit_limit`). Every change of a balance writes a ledger row in the same transaction.

use sqlx::{AnyConnection, FromRow};

use crate::time::Micros;

/// One ledger row to write.
pub struct Entry<'a> {
    pub account_id: i64,
    pub workspace_id: Option<i64>,
    /// Negative: spent; positive: given back, granted or renewed.
    pub amount: i64,
    pub reason: &'a str,
    pub reference: Option<&'a str>,
}

pub async fn record(conn: &mut AnyConnection, entry: &Entry<'_>, now: Micros) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO credit_ledger (account_id, workspace_id, amount, reason, reference,
                                    created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(entry.account_id)
    .bind(entry.workspace_id)
    .bind(entry.amount)
    .bind(entry.reason)
    .bind(entry.reference)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Takes `amount` from the pool and adds it to the workspace's use, only if the pool holds it
/// and the workspace's cap allows it. Each is one conditional update, so concurrent spenders
/// can never overspend either (the row lock serialises them; the condition is re-checked).
/// False, with nothing changed by this call, when either refuses.
pub async fn take(
    conn: &mut AnyConnection,
    account_id: i64,
    workspace_id: i64,
    amount: i64,
) -> sqlx::Result<bool> {
    let pool = sqlx::query(
        "UPDATE accounts SET credits_remaining = credits_remaining - $2
         WHERE id = $1 AND credits_remaining >= $2",
    )
    .bind(account_id)
    .bind(amount)
    .execute(&mut *conn)
    .await?;
    if pool.rows_affected() != 1 {
        return Ok(false);
    }
    let workspace = sqlx::query(
        "UPDATE workspaces SET credits_used = credits_used + $2
         WHERE id = $1 AND (credit_limit IS NULL OR credits_used + $2 <= credit_limit)",
    )
    .bind(workspace_id)
    .bind(amount)
    .execute(&mut *conn)
    .await?;
    if workspace.rows_affected() != 1 {
        // The workspace's cap refused it: the pool gets its credits back, so a refused spend
        // leaves nothing behind and the caller's transaction can go on.
        sqlx::query("UPDATE accounts SET credits_remaining = credits_remaining + $2 WHERE id = $1")
            .bind(account_id)
            .bind(amount)
            .execute(&mut *conn)
            .await?;
        return Ok(false);
    }
    Ok(true)
}

/// Gives `amount` back to the pool and off the workspace's use.
pub async fn give_back(
    conn: &mut AnyConnection,
    account_id: i64,
    workspace_id: i64,
    amount: i64,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE accounts SET credits_remaining = credits_remaining + $2 WHERE id = $1")
        .bind(account_id)
        .bind(amount)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "UPDATE workspaces SET credits_used = CASE WHEN credits_used >= $2
                                                  THEN credits_used - $2 ELSE 0 END
         WHERE id = $1",
    )
    .bind(workspace_id)
    .bind(amount)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

#[derive(Debug, Clone, FromRow)]
pub struct Period {
    pub credits_remaining: i64,
    pub credit_allowance: i64,
    pub renews_at: Micros,
}

pub async fn period(conn: &mut AnyConnection, account_id: i64) -> sqlx::Result<Option<Period>> {
    sqlx::query_as(
        "SELECT credits_remaining, credit_allowance, renews_at FROM accounts WHERE id = $1",
    )
    .bind(account_id)
    .fetch_optional(&mut *conn)
    .await
}

/// Starts a new period: the pool back to the allowance, every workspace's use back to 0.
pub async fn renew(
    conn: &mut AnyConnection,
    account_id: i64,
    next_renews_at: Micros,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE accounts SET credits_remaining = credit_allowance, renews_at = $2 WHERE id = $1",
    )
    .bind(account_id)
    .bind(next_renews_at)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE workspaces SET credits_used = 0 WHERE account_id = $1")
        .bind(account_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// A ledger row as the credits page lists it.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct LedgerRow {
    pub amount: i64,
    pub reason: String,
    pub reference: Option<String>,
    pub created_at: Micros,
}

/// The latest `limit` entries that concern a workspace: its own, and the pool's (grants and
/// renewals, which have no workspace), newest first.
pub async fn recent<'c>(
    ex: impl sqlx::Executor<'c, Database = sqlx::Any>,
    account_id: i64,
    workspace_id: i64,
    limit: i64,
) -> sqlx::Result<Vec<LedgerRow>> {
    sqlx::query_as(
        "SELECT amount, reason, reference, created_at FROM credit_ledger
         WHERE account_id = $1 AND (workspace_id = $2 OR workspace_id IS NULL)
         ORDER BY id DESC LIMIT $3",
    )
    .bind(account_id)
    .bind(workspace_id)
    .bind(limit)
    .fetch_all(ex)
    .await
}
