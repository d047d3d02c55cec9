//! Who is acting: the principal a credential resolves to, and what it may reach and do.

use crate::store::Db;
use crate::store::users::UserRow;
use crate::store::workspaces::{self, WorkspaceRow};
use crate::{Error, Result};

/// Who is acting: the key, its owner, its account and the workspace it is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub token_id: String,
    pub user: UserRow,
    pub account_id: i64,
    /// `None` for legacy keys, which reach every workspace of the account.
    pub workspace_id: Option<i64>,
    /// A person invited as a member (a dashboard session): campaigns, leads and analytics,
    /// but not keys, apps, teammates or the plan.
    pub member: bool,
}

/// What a credential may do beyond its workspace's data: an app acting for a person (an OAuth
/// grant) never manages credentials; only the person (a dashboard session) manages apps.
const NOT_FOR_APPS: &str = "An app connected with OAuth cannot manage API keys or connected \
    apps; use the dashboard or an API key.";
const ONLY_FOR_PEOPLE: &str =
    "Connected apps are managed by the person who approved them, in the dashboard.";
const ONLY_FOR_OWNERS: &str = "Only an owner of the workspace can do this: members work with \
    campaigns, leads and analytics, not keys, apps, teammates or the plan.";
const ONLY_OWNERS_INVITE: &str = "Teammates are managed by an owner, in the dashboard.";

impl Principal {
    /// An app's OAuth access token.
    pub fn is_app(&self) -> bool {
        self.token_id.starts_with("grant:")
    }

    /// A person's dashboard session.
    pub fn is_person(&self) -> bool {
        self.token_id.starts_with("session:")
    }

    /// Refuses an app: creating or deleting API keys would outlive the app's grant.
    pub fn may_manage_keys(&self) -> Result<()> {
        if self.is_app() {
            return Err(Error::Forbidden(NOT_FOR_APPS));
        }
        self.is_owner()
    }

    /// Refuses a member: keys, apps, teammates and the plan are the owners'.
    pub fn is_owner(&self) -> Result<()> {
        if self.member {
            return Err(Error::Forbidden(ONLY_FOR_OWNERS));
        }
        Ok(())
    }

    /// Only an owner's dashboard session manages teammates.
    pub fn may_manage_teammates(&self) -> Result<()> {
        if !self.is_person() {
            return Err(Error::Forbidden(ONLY_OWNERS_INVITE));
        }
        self.is_owner()
    }

    /// Refuses anything but the person's session: grants are the person's, not a key's (which
    /// is bound to one workspace) or an app's.
    pub fn may_manage_grants(&self) -> Result<()> {
        if !self.is_person() {
            return Err(Error::Forbidden(ONLY_FOR_PEOPLE));
        }
        self.is_owner()
    }

    /// The workspace if this principal may act on it; otherwise (unknown, another account's,
    /// or not the key's bound workspace) [`Error::WorkspaceForbidden`].
    pub async fn reach(&self, db: &Db, workspace_id: i64) -> Result<WorkspaceRow> {
        if self.workspace_id.is_some_and(|bound| bound != workspace_id) {
            return Err(Error::WorkspaceForbidden);
        }
        match workspaces::get(db.pool(), workspace_id).await? {
            Some(workspace) if workspace.account_id == self.account_id => Ok(workspace),
            _ => Err(Error::WorkspaceForbidden),
        }
    }

    /// Every workspace this principal reaches: its bound one, or all of a legacy key's account.
    pub async fn workspaces(&self, db: &Db) -> Result<Vec<WorkspaceRow>> {
        match self.workspace_id {
            Some(bound) => Ok(vec![self.reach(db, bound).await?]),
            None => Ok(workspaces::list_for_account(db.pool(), self.account_id).await?),
        }
    }

    /// The principal the gatekeeper attached to a gRPC request.
    pub fn of<T>(request: &tonic::Request<T>) -> Result<&Principal> {
        request
            .extensions()
            .get::<Principal>()
            .ok_or(Error::Unauthenticated)
    }
}
