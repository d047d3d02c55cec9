//! Operator commands (`lps admin ...`): set up accounts, workspaces and keys directly in the
//! database, outside the API's permission rules. Safe to run beside a live server on the same
//! database.

use chrono::Months;

use crate::domain::{api_tokens, workspaces as workspace_ops};
use crate::store::{Db, accounts, brandings, users, workspaces};
use anyhow::{Context, Result, bail};

use crate::time;

/// The plan a first start gives its account: it includes API access.
pub const DEFAULT_PLAN: &str = "pro_monthly";
/// Credits a first start puts in the pool.
pub const DEFAULT_CREDITS: i64 = 1_000;

/// What `lps admin bootstrap` creates.
#[derive(Debug, Clone)]
pub struct BootstrapInput {
    pub account_name: String,
    pub workspace_name: String,
    pub user_name: String,
    pub user_email: String,
    pub plan: String,
    pub credits: i64,
}

impl Default for BootstrapInput {
    fn default() -> Self {
        Self {
            account_name: "My Account".into(),
            workspace_name: "My Workspace".into(),
            user_name: "Owner".into(),
            user_email: "owner@example.com".into(),
            plan: DEFAULT_PLAN.into(),
            credits: DEFAULT_CREDITS,
        }
    }
}

/// What bootstrap made, including the one time the key's plaintext is known.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Bootstrapped {
    pub account_id: i64,
    pub user_id: i64,
    pub workspace_id: i64,
    pub api_key: String,
}

/// An account (credits renewing a month from now), its owner, a workspace and a key bound to it.
pub async fn bootstrap(db: &Db, input: &BootstrapInput) -> Result<Bootstrapped> {
    let now = time::now();
    let renews_at = chrono::Utc::now()
        .checked_add_months(Months::new(1))
        .map_or(now, |at| at.timestamp_micros());
    let account_id = accounts::insert(
        db.pool(),
        &input.account_name,
        &input.plan,
        input.credits,
        renews_at,
        now,
    )
    .await?;
    let user_id = users::insert(
        db.pool(),
        account_id,
        &input.user_name,
        &input.user_email,
        now,
    )
    .await?;
    let workspace_id = workspace_ops::create(db, account_id, &input.workspace_name).await?;
    let key = api_tokens::issue(db, account_id, Some(workspace_id), user_id, "Default key").await?;
    Ok(Bootstrapped {
        account_id,
        user_id,
        workspace_id,
        api_key: key.plaintext,
    })
}

/// Bootstraps only when the database holds no account yet (the first start of `lps serve`).
pub async fn bootstrap_if_empty(db: &Db) -> Result<Option<Bootstrapped>> {
    if accounts::count(db.pool()).await? > 0 {
        return Ok(None);
    }
    Ok(Some(bootstrap(db, &BootstrapInput::default()).await?))
}

/// A new workspace in an existing account.
pub async fn create_workspace(db: &Db, account_id: i64, name: &str) -> Result<i64> {
    accounts::get(db.pool(), account_id)
        .await?
        .with_context(|| format!("no account {account_id}"))?;
    Ok(workspace_ops::create(db, account_id, name).await?)
}

/// A key bound to a workspace, owned by the account's first person.
pub async fn create_workspace_key(
    db: &Db,
    workspace_id: i64,
    name: &str,
) -> Result<api_tokens::IssuedKey> {
    let workspace = workspaces::get(db.pool(), workspace_id)
        .await?
        .with_context(|| format!("no workspace {workspace_id}"))?;
    let owner = account_owner(db, workspace.account_id).await?;
    Ok(api_tokens::issue(db, workspace.account_id, Some(workspace.id), owner, name).await?)
}

/// A legacy key: bound to no workspace, it reaches every workspace of the account.
pub async fn create_legacy_key(
    db: &Db,
    account_id: i64,
    name: &str,
) -> Result<api_tokens::IssuedKey> {
    let owner = account_owner(db, account_id).await?;
    Ok(api_tokens::issue(db, account_id, None, owner, name).await?)
}

pub async fn set_plan(db: &Db, account_id: i64, plan: &str, credits: Option<i64>) -> Result<()> {
    if !accounts::set_plan(db.pool(), account_id, plan, credits).await? {
        bail!("no account {account_id}");
    }
    Ok(())
}

/// Caps a workspace's credit use, or uncaps it with `None`.
pub async fn set_workspace_limit(db: &Db, workspace_id: i64, limit: Option<i64>) -> Result<()> {
    if !workspaces::set_credit_limit(db.pool(), workspace_id, limit).await? {
        bail!("no workspace {workspace_id}");
    }
    Ok(())
}

async fn account_owner(db: &Db, account_id: i64) -> Result<i64> {
    users::owner_of(db.pool(), account_id)
        .await?
        .map(|user| user.id)
        .with_context(|| format!("no account {account_id} with a person in it"))
}

/// A branding for a workspace; with `is_default` it becomes the workspace's only default.
pub async fn create_branding(
    db: &Db,
    workspace_id: i64,
    name: &str,
    is_default: bool,
) -> Result<i64> {
    workspaces::get(db.pool(), workspace_id)
        .await?
        .with_context(|| format!("no workspace {workspace_id}"))?;
    let mut tx = db.begin_write().await?;
    let id = brandings::insert(&mut *tx, workspace_id, name, is_default, time::now()).await?;
    if is_default {
        brandings::make_default(&mut *tx, workspace_id, id).await?;
    }
    tx.commit().await?;
    Ok(id)
}

/// The secret that signs the workspace's callbacks, for the integration to verify them.
pub async fn callback_secret(db: &Db, workspace_id: i64) -> Result<String> {
    workspaces::callback_secret(db.pool(), workspace_id)
        .await?
        .with_context(|| format!("no workspace {workspace_id}"))
}
