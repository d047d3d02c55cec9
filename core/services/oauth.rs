//! `lps.v1.OAuthService`: logging in, sessions, and OAuth 2.1 for apps.

use tonic::{Request, Response, Status};

use crate::App;
use crate::Error;
use crate::auth::{CredentialKind, Principal};
use crate::domain::oauth::{self, Approval, Exchange};
use crate::proto::{self, o_auth_service_server};
use crate::validate::{EarlierViolations, Validated, required, required_text};

pub struct OAuthService {
    app: App,
}

impl OAuthService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

/// The session token the call carries (`Authorization: Bearer lps_sess_...`).
fn session_token<T>(request: &Request<T>) -> Option<String> {
    request
        .metadata()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(crate::auth::bearer_key)
        .filter(|token| CredentialKind::of(token) == Some(CredentialKind::Session))
        .map(str::to_owned)
}

#[tonic::async_trait]
impl o_auth_service_server::OAuthService for OAuthService {
    async fn login(
        &self,
        request: Request<proto::LoginRequest>,
    ) -> Result<Response<proto::LoginResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let client = super::client_address_of(&request);
        let proto::LoginRequest { email, password } = request.into_inner();
        let (email, password) = (
            required_text("email", email, 254),
            required_text("password", password, 1_000),
        )
            .validated(&earlier)?;
        let session_token = oauth::login(&self.app, &email, &password, &client).await?;
        Ok(Response::new(proto::LoginResponse { session_token }))
    }

    async fn set_password_with_link(
        &self,
        request: Request<proto::SetPasswordWithLinkRequest>,
    ) -> Result<Response<proto::LoginResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let proto::SetPasswordWithLinkRequest { token, password } = request.into_inner();
        let (token, password) = (
            required_text("token", token, 200),
            required_text("password", password, 1_000),
        )
            .validated(&earlier)?;
        let session_token = oauth::set_password_with_link(&self.app, &token, &password).await?;
        Ok(Response::new(proto::LoginResponse { session_token }))
    }

    async fn request_password_reset(
        &self,
        request: Request<proto::RequestPasswordResetRequest>,
    ) -> Result<Response<proto::RequestPasswordResetResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let client = super::client_address_of(&request);
        let proto::RequestPasswordResetRequest { email } = request.into_inner();
        let (email,) = (required_text("email", email, 254),).validated(&earlier)?;
        oauth::request_reset(&self.app, &email, &client).await?;
        Ok(Response::new(proto::RequestPasswordResetResponse {}))
    }

    async fn logout(
        &self,
        request: Request<proto::LogoutRequest>,
    ) -> Result<Response<proto::LogoutResponse>, Status> {
        if let Some(token) = session_token(&request) {
            oauth::logout(&self.app, &token).await?;
        }
        Ok(Response::new(proto::LogoutResponse {}))
    }

    async fn get_session(
        &self,
        request: Request<proto::GetSessionRequest>,
    ) -> Result<Response<proto::GetSessionResponse>, Status> {
        let principal = Principal::of(&request)?.clone();
        let token = session_token(&request).ok_or(Error::Unauthenticated)?;
        let session = oauth::session(&self.app, &token)
            .await?
            .ok_or(Error::Unauthenticated)?;
        let workspaces = principal.workspaces(&self.app.db).await?;
        let plan = crate::store::accounts::get(self.app.db.pool(), principal.account_id)
            .await
            .map_err(Error::from)?
            .map(|account| account.plan)
            .unwrap_or_default();
        Ok(Response::new(proto::GetSessionResponse {
            user_id: session.user_id,
            email: session.email,
            name: session.name,
            csrf_token: session.csrf_token,
            workspaces: workspaces
                .into_iter()
                .map(|w| proto::SessionWorkspace {
                    id: w.id,
                    hot_score: crate::domain::workspaces::hot_threshold_of(&self.app, w.hot_score),
                    name: w.name,
                })
                .collect(),
            plan,
            role: session.role,
            hot_score: self.app.config.hot_score.max(0.0),
            sends_email: self.app.mailer.is_some(),
            time_zone: session.time_zone.unwrap_or_default(),
        }))
    }

    async fn set_time_zone(
        &self,
        request: Request<proto::SetTimeZoneRequest>,
    ) -> Result<Response<proto::SetTimeZoneResponse>, Status> {
        let principal = Principal::of(&request)?;
        let time_zone = oauth::set_time_zone(
            &self.app,
            principal.user.id,
            request.get_ref().time_zone.clone(),
        )
        .await?;
        Ok(Response::new(proto::SetTimeZoneResponse { time_zone }))
    }

    async fn register_client(
        &self,
        request: Request<proto::RegisterClientRequest>,
    ) -> Result<Response<proto::RegisterClientResponse>, Status> {
        let address = super::client_address_of(&request);
        let proto::RegisterClientRequest {
            client_name,
            redirect_uris,
        } = request.into_inner();
        let client =
            oauth::register_client(&self.app, client_name.as_deref(), &redirect_uris, &address)
                .await?;
        Ok(Response::new(proto::RegisterClientResponse {
            client_id: client.id,
            client_name: client.name,
            redirect_uris: serde_json::from_str(&client.redirect_uris).unwrap_or_default(),
            client_id_issued_at: client.created_at / 1_000_000,
        }))
    }

    async fn describe_client(
        &self,
        request: Request<proto::DescribeClientRequest>,
    ) -> Result<Response<proto::DescribeClientResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let proto::DescribeClientRequest {
            client_id,
            redirect_uri,
        } = request.into_inner();
        let (client_id, redirect_uri) = (
            required_text("client_id", client_id, 2_000),
            required_text("redirect_uri", redirect_uri, 2_000),
        )
            .validated(&earlier)?;
        let client = oauth::client_for_redirect(&self.app, &client_id, &redirect_uri).await?;
        Ok(Response::new(proto::DescribeClientResponse {
            client_id: client.id,
            client_name: client.name,
            redirect_uris: serde_json::from_str(&client.redirect_uris).unwrap_or_default(),
        }))
    }

    async fn authorize(
        &self,
        request: Request<proto::AuthorizeRequest>,
    ) -> Result<Response<proto::AuthorizeResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = Principal::of(&request)?.clone();
        let proto::AuthorizeRequest {
            client_id,
            redirect_uri,
            code_challenge,
            resource,
            workspace_id,
            scope: _,
        } = request.into_inner();
        let (client_id, redirect_uri, code_challenge, workspace_id) = (
            required_text("client_id", client_id, 2_000),
            required_text("redirect_uri", redirect_uri, 2_000),
            required_text("code_challenge", code_challenge, 200),
            required("workspace_id", workspace_id),
        )
            .validated(&earlier)?;
        let approval = Approval {
            client_id: &client_id,
            redirect_uri: &redirect_uri,
            code_challenge: &code_challenge,
            resource: resource.as_deref(),
            workspace_id,
        };
        let code = oauth::authorize(&self.app, &principal, approval).await?;
        Ok(Response::new(proto::AuthorizeResponse { code }))
    }

    async fn exchange_token(
        &self,
        request: Request<proto::ExchangeTokenRequest>,
    ) -> Result<Response<proto::ExchangeTokenResponse>, Status> {
        let r = request.into_inner();
        let exchange = Exchange {
            grant_type: r.grant_type.as_deref().unwrap_or_default(),
            client_id: r.client_id.as_deref(),
            code: r.code.as_deref(),
            redirect_uri: r.redirect_uri.as_deref(),
            code_verifier: r.code_verifier.as_deref(),
            refresh_token: r.refresh_token.as_deref(),
            resource: r.resource.as_deref(),
        };
        let tokens = oauth::exchange(&self.app, exchange).await?;
        Ok(Response::new(proto::ExchangeTokenResponse {
            access_token: tokens.access_token,
            expires_in: tokens.expires_in,
            refresh_token: tokens.refresh_token,
            scope: format!("workspace:{}", tokens.workspace_id),
            workspace_id: tokens.workspace_id,
        }))
    }

    async fn revoke_token(
        &self,
        request: Request<proto::RevokeTokenRequest>,
    ) -> Result<Response<proto::RevokeTokenResponse>, Status> {
        if let Some(token) = request.into_inner().token {
            oauth::revoke_token(&self.app, token.trim()).await?;
        }
        Ok(Response::new(proto::RevokeTokenResponse {}))
    }

    async fn list_grants(
        &self,
        request: Request<proto::ListGrantsRequest>,
    ) -> Result<Response<proto::ListGrantsResponse>, Status> {
        let principal = Principal::of(&request)?.clone();
        let grants = oauth::grants(&self.app, &principal).await?;
        Ok(Response::new(proto::ListGrantsResponse {
            grants: grants
                .into_iter()
                .map(|g| proto::Grant {
                    id: g.id,
                    client_name: g.client_name,
                    workspace_id: g.workspace_id,
                    workspace_name: g.workspace_name,
                    created_at_micros: g.created_at,
                    last_used_at_micros: g.last_used_at,
                })
                .collect(),
        }))
    }

    async fn revoke_grant(
        &self,
        request: Request<proto::RevokeGrantRequest>,
    ) -> Result<Response<proto::RevokeGrantResponse>, Status> {
        let earlier = EarlierViolations::of(&request);
        let principal = Principal::of(&request)?.clone();
        let (grant_id,) = (required_text(
            "grant_id",
            request.into_inner().grant_id,
            100,
        ),)
            .validated(&earlier)?;
        oauth::revoke_grant(&self.app, &principal, &grant_id).await?;
        Ok(Response::new(proto::RevokeGrantResponse {}))
    }
}
