//! Credits: spent when work is accepted, given back when it fails, is cancelled or is skipped,
//! restored to the allowance at `renews_at`. Every change is a ledger row written in the
//! transaction that changes the balances.

use chrono::{Months, TimeZone, Utc};
use sqlx::AnyConnection;

use crate::store::credits::{self, Entry};
use crate::time::Micros;
use crate::{Error, Result};

/// What each operation costs, in credits (`--credits-per-design-run`,
/// `--credits-per-enrichment`, `--credits-per-analysis`).
#[derive(Debug, Clone, Copy)]
pub struct Costs {
    pub design_run: i64,
    /// One fetching enrichment type for one lead.
    pub enrichment: i64,
    /// One written analysis for one lead.
    pub analysis: i64,
}

impl Default for Costs {
    fn default() -> Self {
        Self {
            design_run: 10,
            enrichment: 1,
            analysis: 2,
        }
    }
}

impl Costs {
    /// What running `kind` for one lead costs.
    pub fn of_enrichment(&self, kind: crate::enricher::Kind) -> i64 {
        if kind.is_analysis() {
            self.analysis
        } else {
            self.enrichment
        }
    }
}

/// Who pays: the account's pool, within the workspace's cap.
#[derive(Debug, Clone, Copy)]
pub struct Payer {
    pub account_id: i64,
    pub workspace_id: i64,
}

impl Payer {
    /// The workspace pays, from its account's pool.
    pub fn of(workspace: &crate::store::workspaces::WorkspaceRow) -> Self {
        Self {
            account_id: workspace.account_id,
            workspace_id: workspace.id,
        }
    }

    /// Who pays for work recorded against a workspace (a job, a run), for spends and refunds
    /// made after the request that queued it.
    pub async fn of_workspace<'c>(
        ex: impl sqlx::Executor<'c, Database = sqlx::Any>,
        workspace_id: i64,
    ) -> Result<Self> {
        let workspace = crate::store::workspaces::get(ex, workspace_id)
            .await?
            .ok_or_else(|| Error::Internal(anyhow::anyhow!("work of a missing workspace")))?;
        Ok(Self::of(&workspace))
    }
}

/// Takes `amount` for `reason` (renewing the pool first if its period is over). No credits
/// (in the pool, or under the workspace's cap): `Error::NoCredits`, nothing taken (a renewal
/// that fell due stays), so the caller's transaction may go on without the work.
pub async fn spend(
    conn: &mut AnyConnection,
    payer: Payer,
    amount: i64,
    reason: &str,
    reference: &str,
    now: Micros,
) -> Result<()> {
    renew_if_due(conn, payer.account_id, now).await?;
    if !credits::take(conn, payer.account_id, payer.workspace_id, amount).await? {
        return Err(Error::NoCredits);
    }
    let entry = Entry {
        account_id: payer.account_id,
        workspace_id: Some(payer.workspace_id),
        amount: -amount,
        reason,
        reference: Some(reference),
    };
    credits::record(conn, &entry, now).await?;
    Ok(())
}

/// Gives back what `reference` cost.
pub async fn refund(
    conn: &mut AnyConnection,
    payer: Payer,
    amount: i64,
    reason: &str,
    reference: &str,
    now: Micros,
) -> Result<()> {
    credits::give_back(conn, payer.account_id, payer.workspace_id, amount).await?;
    let entry = Entry {
        account_id: payer.account_id,
        workspace_id: Some(payer.workspace_id),
        amount,
        reason,
        reference: Some(reference),
    };
    credits::record(conn, &entry, now).await?;
    Ok(())
}

/// At `renews_at` the pool is restored to the allowance (a `renewal` row for the difference),
/// every workspace's use starts again at 0, and `renews_at` moves on a month (as many as have
/// passed).
pub async fn renew_if_due(conn: &mut AnyConnection, account_id: i64, now: Micros) -> Result<()> {
    let Some(period) = credits::period(conn, account_id).await? else {
        return Ok(());
    };
    if period.renews_at > now {
        return Ok(());
    }
    let mut next = Utc
        .timestamp_micros(period.renews_at)
        .single()
        .unwrap_or_default();
    while next.timestamp_micros() <= now {
        next = next.checked_add_months(Months::new(1)).unwrap_or(next);
    }
    credits::renew(conn, account_id, next.timestamp_micros()).await?;
    let entry = Entry {
        account_id,
        workspace_id: None,
        amount: period.credit_allowance - period.credits_remaining,
        reason: "renewal",
        reference: None,
    };
    credits::record(conn, &entry, now).await?;
    Ok(())
}

/// The operator set the allowance: the pool is refilled to it (a `grant` row for the change).
pub async fn granted(
    conn: &mut AnyConnection,
    account_id: i64,
    before: i64,
    allowance: i64,
    now: Micros,
) -> Result<()> {
    let entry = Entry {
        account_id,
        workspace_id: None,
        amount: allowance - before,
        reason: "grant",
        reference: None,
    };
    credits::record(conn, &entry, now).await?;
    Ok(())
}
