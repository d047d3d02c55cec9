//! API keys through the API: generate (plan permitting), list, revoke.

use uuid::Uuid;

use crate::auth::{NewKey, Principal, plan_allows_api};
use crate::store::api_tokens::{self, NewToken, TokenRow};
use crate::store::{Db, accounts};
use crate::{Error, Result, time};

/// A key just made: its id and its plaintext, which is never shown again.
#[derive(Debug, Clone)]
pub struct IssuedKey {
    pub id: String,
    pub plaintext: String,
}

/// Makes a key bound to `workspace_id` for the principal's person, if the account's plan
/// includes API access.
pub async fn generate(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    name: &str,
) -> Result<IssuedKey> {
    principal.may_manage_keys()?;
    let workspace = principal.reach(db, workspace_id).await?;
    let account = accounts::get(db.pool(), workspace.account_id)
        .await?
        .ok_or(Error::WorkspaceForbidden)?;
    if !plan_allows_api(&account.plan) {
        return Err(Error::PlanRequired);
    }
    issue(db, account.id, Some(workspace.id), principal.user.id, name).await
}

/// Stores a new key (bound to a workspace, or legacy when `workspace_id` is `None`); no checks.
pub async fn issue(
    db: &Db,
    account_id: i64,
    workspace_id: Option<i64>,
    created_by: i64,
    name: &str,
) -> Result<IssuedKey> {
    let key = NewKey::generate();
    let id = Uuid::new_v4().to_string();
    api_tokens::insert(
        db.pool(),
        NewToken {
            id: &id,
            account_id,
            workspace_id,
            created_by,
            name,
            token_hash: &key.hash,
        },
        time::now(),
    )
    .await?;
    Ok(IssuedKey {
        id,
        plaintext: key.plaintext,
    })
}

/// The workspace's keys plus the account's legacy keys.
pub async fn list(db: &Db, principal: &Principal, workspace_id: i64) -> Result<Vec<TokenRow>> {
    // Keys are the owners': a member does not even see their names.
    principal.is_owner()?;
    let workspace = principal.reach(db, workspace_id).await?;
    Ok(api_tokens::list_for_workspace(db.pool(), workspace.account_id, workspace.id).await?)
}

/// Revokes a key the principal can see (its workspace's keys and the account's legacy keys);
/// any other id is "API token not found".
pub async fn delete(app: &crate::App, principal: &Principal, token_id: &str) -> Result<()> {
    principal.may_manage_keys()?;
    let db = &app.db;
    let token = api_tokens::find_in_account(db.pool(), principal.account_id, token_id)
        .await?
        .ok_or(Error::NotFound("API token not found"))?;
    let visible = match (principal.workspace_id, token.workspace_id) {
        (Some(bound), Some(owner)) => bound == owner,
        _ => true,
    };
    if !visible || !api_tokens::delete(db.pool(), &token.id).await? {
        return Err(Error::NotFound("API token not found"));
    }
    crate::credentials::revoked(app).await;
    Ok(())
}
