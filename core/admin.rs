//! Operator commands (`lps admin ...`): set up accounts, workspaces and keys directly in the
//! database, outside the API's permission rules. Safe to run beside a live server on the same
//! database.

use chrono::Months;

/// The database the operator commands work on, and what they can write and read there.
pub use crate::backup::{Copy, backup, restore};
pub use crate::store::brandings::BrandingRow;
pub use crate::store::{Db, redact};

use crate::domain::{api_tokens, workspaces as workspace_ops};
use crate::store::{accounts, brandings, users, workspaces};
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
    /// The owner's email: they sign in to the dashboard with it (not in `--json`, which prints
    /// the ids and the key).
    #[serde(skip)]
    pub user_email: String,
    /// On a first start: a one-time token for the owner to choose a password
    /// (`/dashboard/setup?token=...`, a day).
    #[serde(skip)]
    pub password_setup: Option<String>,
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
        user_email: input.user_email.clone(),
        password_setup: None,
    })
}

/// Bootstraps only when the database holds no account yet (the first start of `lps serve`).
pub async fn bootstrap_if_empty(db: &Db) -> Result<Option<Bootstrapped>> {
    if accounts::count(db.pool()).await? > 0 {
        return Ok(None);
    }
    let mut made = bootstrap(db, &BootstrapInput::default()).await?;
    let token = crate::random::token(43);
    let expires_at = time::now() + 24 * 3_600 * 1_000_000;
    crate::store::oauth::insert_password_setup(
        db.pool(),
        &crate::auth::hash_key(&token),
        made.user_id,
        expires_at,
    )
    .await?;
    made.password_setup = Some(token);
    Ok(Some(made))
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

/// Changes the plan; `credits` sets the monthly allowance and refills the pool to it (a
/// `grant` row in the ledger).
pub async fn set_plan(db: &Db, account_id: i64, plan: &str, credits: Option<i64>) -> Result<()> {
    let mut tx = db.begin_write().await?;
    let before = accounts::get(&mut *tx, account_id)
        .await?
        .with_context(|| format!("no account {account_id}"))?
        .credits_remaining;
    if !accounts::set_plan(&mut *tx, account_id, plan, credits).await? {
        bail!("no account {account_id}");
    }
    if let Some(allowance) = credits {
        crate::domain::credits::granted(&mut tx, account_id, before, allowance, time::now())
            .await
            .map_err(crate::Error::into_cause)?;
    }
    tx.commit().await?;
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

pub use crate::domain::brandings::{BrandingChange, LookChange};

/// A branding for a workspace; with `is_default` it becomes the workspace's only default.
/// The API's rules (`domain::brandings`), said with the command's flags.
pub async fn create_branding(
    db: &Db,
    workspace_id: i64,
    name: &str,
    is_default: bool,
    look: LookChange,
) -> Result<i64> {
    workspaces::get(db.pool(), workspace_id)
        .await?
        .with_context(|| format!("no workspace {workspace_id}"))?;
    crate::domain::brandings::insert(db, workspace_id, name, is_default, look)
        .await
        .map_err(as_flags)
}

/// Changes a branding; pages of its campaigns show the change at once. Returns it as stored.
pub async fn update_branding(
    db: &Db,
    branding_id: i64,
    change: BrandingChange,
) -> Result<brandings::BrandingRow> {
    let row = brandings::get(db.pool(), branding_id)
        .await?
        .with_context(|| format!("no branding {branding_id}"))?;
    crate::domain::brandings::apply(db, row, change)
        .await
        .map_err(as_flags)
}

/// A refusal of the API's rules as the command's flags name them (`--logo-url`).
fn as_flags(err: crate::Error) -> anyhow::Error {
    match err {
        crate::Error::Invalid(violations) => anyhow::anyhow!(
            "{}",
            violations
                .iter()
                .map(|v| format!("--{}: {}", v.field.replace('_', "-"), v.message))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        other => other.into_cause(),
    }
}

/// The secret that signs the workspace's callbacks, for the integration to verify them.
pub async fn callback_secret(db: &Db, workspace_id: i64) -> Result<String> {
    workspaces::callback_secret(db.pool(), workspace_id)
        .await?
        .with_context(|| format!("no workspace {workspace_id}"))
}

/// Sets the password of the person with this email (the first such person, if several
/// accounts share it); they can then log in to the dashboard. Returns their id.
pub async fn set_password(db: &Db, email: &str, password: &str) -> Result<i64> {
    let hash = crate::domain::oauth::hash_password(password).map_err(|e| anyhow::anyhow!("{e}"))?;
    let users = crate::store::oauth::users_by_email(db.pool(), email.trim()).await?;
    let Some(user) = users.first() else {
        bail!("no user has the email {email}");
    };
    let mut tx = db.begin_write().await?;
    crate::store::oauth::set_password(&mut tx, user.id, &hash).await?;
    tx.commit().await?;
    crate::credentials::announce_revocation(db).await;
    Ok(user.id)
}
