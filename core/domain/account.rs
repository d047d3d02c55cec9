//! The account's plan and credits as one workspace sees them.

use crate::auth::Principal;
use crate::store::{Db, accounts};
use crate::time::Micros;
use crate::{Error, Result};

/// Ledger entries shown with the credits.
const RECENT_ENTRIES: i64 = 20;

/// The account-wide pool and one workspace's use of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credits {
    pub plan: String,
    pub remaining: i64,
    pub workspace_used: i64,
    pub workspace_limit: Option<i64>,
    pub renews_at: Micros,
    /// The ledger's latest entries concerning the workspace, newest first.
    pub recent: Vec<crate::store::credits::LedgerRow>,
}

/// The credits as this workspace sees them (a pool whose period is over is renewed first).
pub async fn credits(db: &Db, principal: &Principal, workspace_id: i64) -> Result<Credits> {
    principal.is_owner()?;
    let workspace = principal.reach(db, workspace_id).await?;
    let mut account = accounts::get(db.pool(), workspace.account_id)
        .await?
        .ok_or(Error::WorkspaceForbidden)?;
    let mut workspace = workspace;
    let now = crate::time::now();
    if account.renews_at <= now {
        let mut tx = db.begin_write().await?;
        crate::domain::credits::renew_if_due(&mut tx, account.id, now).await?;
        tx.commit().await?;
        account = accounts::get(db.pool(), account.id)
            .await?
            .ok_or(Error::WorkspaceForbidden)?;
        workspace = principal.reach(db, workspace_id).await?;
    }
    let recent =
        crate::store::credits::recent(db.pool(), account.id, workspace.id, RECENT_ENTRIES).await?;
    Ok(Credits {
        recent,
        plan: account.plan,
        remaining: account.credits_remaining,
        workspace_used: workspace.credits_used,
        workspace_limit: workspace.credit_limit,
        renews_at: account.renews_at,
    })
}
