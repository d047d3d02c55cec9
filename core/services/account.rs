//! `lps.v1.AccountService`: plan, credits and the account's people.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::account::{self, Credits};
use crate::domain::teammates::{self, Invitation};
use crate::error::FieldViolation;
use crate::proto::{self, account_service_server};
use crate::store::users::{Role, TeammateRow};
use crate::time;
use crate::validate::{Field, Validated, optional_text, required, required_text};

pub struct AccountService {
    app: App,
}

impl AccountService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl account_service_server::AccountService for AccountService {
    async fn get_credits(
        &self,
        request: Request<proto::GetCreditsRequest>,
    ) -> Result<Response<proto::GetCreditsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::GetCreditsRequest { workspace_id } = request.get_ref();
        let (workspace_id,) = (required("workspace_id", *workspace_id),).validated(&request)?;
        let credits = account::credits(&self.app.db, principal, workspace_id).await?;
        Ok(Response::new(credits_reply(credits)))
    }

    async fn list_teammates(
        &self,
        request: Request<proto::ListTeammatesRequest>,
    ) -> Result<Response<proto::ListTeammatesResponse>, Status> {
        let principal = Principal::of(&request)?;
        let rows = teammates::list(&self.app.db, principal).await?;
        Ok(Response::new(proto::ListTeammatesResponse {
            teammates: rows.into_iter().map(teammate).collect(),
        }))
    }

    async fn invite_teammate(
        &self,
        request: Request<proto::InviteTeammateRequest>,
    ) -> Result<Response<proto::InviteTeammateResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::InviteTeammateRequest { email, name, role } = request.get_ref().clone();
        let (email, name) = (
            required_text("email", email, 254),
            optional_text("name", name, 255),
        )
            .validated(&request)?;
        let invited =
            teammates::invite(&self.app, principal, Invitation { email, name, role }).await?;
        Ok(Response::new(proto::InviteTeammateResponse {
            teammate: Some(teammate(invited.teammate)),
            setup_url: if invited.emailed {
                String::new()
            } else {
                invited.link
            },
            emailed: invited.emailed,
        }))
    }

    async fn remove_teammate(
        &self,
        request: Request<proto::RemoveTeammateRequest>,
    ) -> Result<Response<proto::RemoveTeammateResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (user_id,) = (required("user_id", request.get_ref().user_id),).validated(&request)?;
        teammates::remove(&self.app, principal, user_id).await?;
        Ok(Response::new(proto::RemoveTeammateResponse {}))
    }

    async fn change_teammate_role(
        &self,
        request: Request<proto::ChangeTeammateRoleRequest>,
    ) -> Result<Response<proto::ChangeTeammateRoleResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ChangeTeammateRoleRequest { user_id, role } = request.get_ref().clone();
        let (user_id, role) = (required("user_id", user_id), role_of(role)).validated(&request)?;
        let row = teammates::change_role(&self.app, principal, user_id, role).await?;
        Ok(Response::new(proto::ChangeTeammateRoleResponse {
            teammate: Some(teammate(row)),
        }))
    }
}

/// A required `role`: `owner` or `member`.
fn role_of(role: Option<String>) -> Field<Role> {
    let text = required_text("role", role, 16)?;
    Role::parse(&text).ok_or_else(|| FieldViolation::new("role", teammates::ROLE_RULE))
}

fn teammate(row: TeammateRow) -> proto::Teammate {
    let TeammateRow {
        id,
        name,
        email,
        role,
        has_password,
        created_at,
        invited_by,
        invited_by_name,
        link_expires_at,
    } = row;
    proto::Teammate {
        user_id: id,
        name,
        email,
        role,
        has_password: has_password != 0,
        created_at: Some(time::to_proto(created_at)),
        invited_by_user_id: invited_by,
        invited_by_name,
        link_expires_at: link_expires_at.map(time::to_proto),
    }
}

fn credits_reply(credits: Credits) -> proto::GetCreditsResponse {
    let Credits {
        plan,
        remaining,
        workspace_used,
        workspace_limit,
        renews_at,
        recent,
    } = credits;
    proto::GetCreditsResponse {
        plan,
        remaining,
        workspace_used,
        workspace_limit,
        renews_at: Some(time::to_proto(renews_at)),
        recent_entries: recent
            .into_iter()
            .map(|entry| proto::CreditEntry {
                amount: entry.amount,
                reason: entry.reason,
                reference: entry.reference,
                created_at: Some(time::to_proto(entry.created_at)),
            })
            .collect(),
    }
}
