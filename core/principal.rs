//! Who is acting: the principal a credential resolves to, and what it may reach and do.

use crate::store::Db;
use crate::store::users::UserRow;
use crate::store::workspaces::{self, WorkspaceRow};
use crate::{Error, Result};

/// The kinds of credential a caller can hold, told apart by the prefix lps gives each one's
/// plaintext. Decided once, by [`CredentialKind::of`], when a credential is read; the
/// principal carries it, and what a caller may do is a `match` on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    /// An API key (`sk-proj-...`): bound to one workspace, or a legacy key's whole account.
    ApiKey,
    /// An app's OAuth access token (`lps_at_...`): acts for a person in its grant's workspace.
    AppToken,
    /// A person's dashboard session (`lps_sess_...`): acts for them across their workspaces.
    Session,
}

impl CredentialKind {
    const ALL: [Self; 3] = [Self::ApiKey, Self::AppToken, Self::Session];

    /// What every credential of this kind starts with.
    pub const fn prefix(self) -> &'static str {
        match self {
            Self::ApiKey => "sk-proj-",
            Self::AppToken => "lps_at_",
            Self::Session => "lps_sess_",
        }
    }

    /// The kind of `credential` by its prefix; `None` for anything that is none of them (a
    /// prefix alone included).
    pub fn of(credential: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| {
            credential
                .strip_prefix(kind.prefix())
                .is_some_and(|rest| !rest.is_empty())
        })
    }

    /// What [`Principal::token_id`] puts before the credential's own id: a grant's and a
    /// session's ids live beside API keys' in one space (rate-limit buckets, idempotency keys,
    /// logs), so they are marked apart.
    const fn id_mark(self) -> &'static str {
        match self {
            Self::ApiKey => "",
            Self::AppToken => "grant:",
            Self::Session => "session:",
        }
    }
}

/// Who is acting: the key, its owner, its account and the workspace it is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The credential's id among every kind's (see [`Principal::new_token_id`]): an API key's
    /// id, `grant:{id}` for an app's token, `session:{...}` for a session.
    pub token_id: String,
    pub kind: CredentialKind,
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
    /// The person a credential of `kind` (its own id `id`) acts for, in its account, bound to
    /// `workspace_id` where the credential is.
    pub fn of_credential(
        kind: CredentialKind,
        id: &str,
        user: UserRow,
        workspace_id: Option<i64>,
        member: bool,
    ) -> Self {
        Self {
            token_id: Self::new_token_id(kind, id),
            kind,
            account_id: user.account_id,
            user,
            workspace_id,
            member,
        }
    }

    /// The [`Principal::token_id`] of a credential of `kind` whose own id is `id`.
    pub fn new_token_id(kind: CredentialKind, id: &str) -> String {
        format!("{}{id}", kind.id_mark())
    }

    /// The credential's own id: an API key's, or a grant's (what `last_used_at` is written on).
    pub fn credential_id(&self) -> &str {
        let id = &self.token_id;
        id.strip_prefix(self.kind.id_mark()).unwrap_or(id)
    }

    /// An app's OAuth access token.
    pub fn is_app(&self) -> bool {
        self.kind == CredentialKind::AppToken
    }

    /// A person's dashboard session.
    pub fn is_person(&self) -> bool {
        self.kind == CredentialKind::Session
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_is_of_the_kind_its_prefix_says() {
        assert_eq!(
            CredentialKind::of("sk-proj-abc"),
            Some(CredentialKind::ApiKey)
        );
        assert_eq!(
            CredentialKind::of("lps_at_abc"),
            Some(CredentialKind::AppToken)
        );
        assert_eq!(
            CredentialKind::of("lps_sess_abc"),
            Some(CredentialKind::Session)
        );
        for nothing in ["sk-proj-", "lps_sess_", "abc", "", "Bearer sk-proj-abc"] {
            assert_eq!(CredentialKind::of(nothing), None, "{nothing:?}");
        }
    }

    #[test]
    fn a_token_id_gives_back_the_credentials_own_id() {
        for (kind, id) in [
            (CredentialKind::ApiKey, "17"),
            (CredentialKind::AppToken, "4f2a"),
            (CredentialKind::Session, "0123456789abcdef"),
        ] {
            let principal = Principal {
                token_id: Principal::new_token_id(kind, id),
                kind,
                user: UserRow {
                    id: 1,
                    account_id: 1,
                    name: String::new(),
                    email: String::new(),
                },
                account_id: 1,
                workspace_id: None,
                member: false,
            };
            assert_eq!(principal.credential_id(), id);
        }
        assert_eq!(
            Principal::new_token_id(CredentialKind::AppToken, "4f2a"),
            "grant:4f2a"
        );
    }
}
