//! `lps.v1.IdentityService`: who is calling.

use tonic::{Request, Response, Status};

use crate::auth::Principal;
use crate::proto::{self, identity_service_server};
use crate::store::users::UserRow;

/// Answers from the principal alone: the gatekeeper has already looked the credential up.
pub struct IdentityService;

#[tonic::async_trait]
impl identity_service_server::IdentityService for IdentityService {
    async fn hello_world(
        &self,
        request: Request<proto::HelloWorldRequest>,
    ) -> Result<Response<proto::HelloWorldResponse>, Status> {
        Principal::of(&request)?;
        Ok(Response::new(proto::HelloWorldResponse {
            message: "Hello World".into(),
        }))
    }

    async fn check_credential(
        &self,
        request: Request<proto::CheckCredentialRequest>,
    ) -> Result<Response<proto::CheckCredentialResponse>, Status> {
        let principal = Principal::of(&request)?;
        Ok(Response::new(proto::CheckCredentialResponse {
            app: principal.is_app(),
            member: principal.member,
        }))
    }

    async fn who_am_i(
        &self,
        request: Request<proto::WhoAmIRequest>,
    ) -> Result<Response<proto::WhoAmIResponse>, Status> {
        let principal = Principal::of(&request)?;
        Ok(Response::new(proto::WhoAmIResponse {
            message: format!("Hello {}", principal.user.name),
            user: Some(user(&principal.user)),
            workspace_id: principal.workspace_id,
        }))
    }

    async fn test_automation(
        &self,
        request: Request<proto::TestAutomationRequest>,
    ) -> Result<Response<proto::TestAutomationResponse>, Status> {
        let principal = Principal::of(&request)?;
        Ok(Response::new(proto::TestAutomationResponse {
            message: "Connection successful".into(),
            user: Some(user(&principal.user)),
        }))
    }
}

fn user(row: &UserRow) -> proto::User {
    proto::User {
        id: row.id,
        name: row.name.clone(),
        email: row.email.clone(),
    }
}
