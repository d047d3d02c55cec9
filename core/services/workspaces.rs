//! `lps.v1.WorkspacesService`: reachable workspaces and their variables.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::domains::{self, Domain};
use crate::domain::workspaces::{self, Variable};
use crate::proto::{self, workspaces_service_server};
use crate::store::workspaces::WorkspaceRow;
use crate::time;
use crate::validate::{Validated, required, required_text};

pub struct WorkspacesService {
    app: App,
}

impl WorkspacesService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl workspaces_service_server::WorkspacesService for WorkspacesService {
    async fn list_workspaces(
        &self,
        request: Request<proto::ListWorkspacesRequest>,
    ) -> Result<Response<proto::ListWorkspacesResponse>, Status> {
        let principal = Principal::of(&request)?;
        let workspaces = principal.workspaces(&self.app.db).await?;
        Ok(Response::new(proto::ListWorkspacesResponse {
            workspaces: workspaces.into_iter().map(workspace).collect(),
        }))
    }

    async fn get_workspace_settings(
        &self,
        request: Request<proto::GetWorkspaceSettingsRequest>,
    ) -> Result<Response<proto::WorkspaceSettings>, Status> {
        let principal = Principal::of(&request)?;
        let proto::GetWorkspaceSettingsRequest { workspace_id } = *request.get_ref();
        let (workspace_id,) = (required("workspace_id", workspace_id),).validated(&request)?;
        let settings = workspaces::settings(&self.app, principal, workspace_id).await?;
        Ok(Response::new(settings_of(settings)))
    }

    async fn update_workspace_settings(
        &self,
        request: Request<proto::UpdateWorkspaceSettingsRequest>,
    ) -> Result<Response<proto::WorkspaceSettings>, Status> {
        let principal = Principal::of(&request)?;
        let proto::UpdateWorkspaceSettingsRequest {
            workspace_id,
            hot_score,
            time_zone,
        } = request.get_ref().clone();
        let (workspace_id,) = (required("workspace_id", workspace_id),).validated(&request)?;
        let settings =
            workspaces::update_settings(&self.app, principal, workspace_id, hot_score, time_zone)
                .await?;
        Ok(Response::new(settings_of(settings)))
    }

    async fn create_domain(
        &self,
        request: Request<proto::CreateDomainRequest>,
    ) -> Result<Response<proto::Domain>, Status> {
        let principal = Principal::of(&request)?;
        let proto::CreateDomainRequest {
            workspace_id,
            hostname,
        } = request.get_ref().clone();
        let (workspace_id, hostname) = (
            required("workspace_id", workspace_id),
            required_text("hostname", hostname, 253),
        )
            .validated(&request)?;
        let domain = domains::create(&self.app, principal, workspace_id, &hostname).await?;
        Ok(Response::new(domain_of(domain)))
    }

    async fn verify_domain(
        &self,
        request: Request<proto::DomainRequest>,
    ) -> Result<Response<proto::Domain>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id, domain_id) = domain_request(&request)?;
        let domain = domains::verify(&self.app, principal, workspace_id, domain_id).await?;
        Ok(Response::new(domain_of(domain)))
    }

    async fn list_domains(
        &self,
        request: Request<proto::ListDomainsRequest>,
    ) -> Result<Response<proto::ListDomainsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ListDomainsRequest { workspace_id } = *request.get_ref();
        let (workspace_id,) = (required("workspace_id", workspace_id),).validated(&request)?;
        let domains = domains::list(&self.app, principal, workspace_id).await?;
        Ok(Response::new(proto::ListDomainsResponse {
            domains: domains.into_iter().map(domain_of).collect(),
        }))
    }

    async fn delete_domain(
        &self,
        request: Request<proto::DomainRequest>,
    ) -> Result<Response<proto::DeleteDomainResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id, domain_id) = domain_request(&request)?;
        domains::delete(&self.app, principal, workspace_id, domain_id).await?;
        Ok(Response::new(proto::DeleteDomainResponse {}))
    }

    async fn list_variables(
        &self,
        request: Request<proto::ListVariablesRequest>,
    ) -> Result<Response<proto::ListVariablesResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ListVariablesRequest { workspace_id } = request.get_ref();
        let (workspace_id,) = (required("workspace_id", *workspace_id),).validated(&request)?;
        let variables = workspaces::list_variables(&self.app.db, principal, workspace_id).await?;
        Ok(Response::new(proto::ListVariablesResponse {
            variables: variables.into_iter().map(variable).collect(),
        }))
    }
}

fn workspace(row: WorkspaceRow) -> proto::Workspace {
    proto::Workspace {
        id: row.id,
        name: row.name,
        slug: row.slug,
    }
}

fn variable(variable: Variable) -> proto::Variable {
    proto::Variable {
        key: variable.key,
        help_text: variable.help_text.map(str::to_owned),
    }
}

fn settings_of(settings: workspaces::Settings) -> proto::WorkspaceSettings {
    let workspaces::Settings {
        workspace_id,
        hot_score,
        hot_score_is_default,
        time_zone,
    } = settings;
    proto::WorkspaceSettings {
        workspace_id,
        hot_score,
        hot_score_is_default,
        time_zone,
    }
}

fn domain_request(request: &Request<proto::DomainRequest>) -> Result<(i64, i64), Status> {
    let proto::DomainRequest {
        workspace_id,
        domain_id,
    } = *request.get_ref();
    Ok((
        required("workspace_id", workspace_id),
        required("domain_id", domain_id),
    )
        .validated(request)?)
}

fn domain_of(domain: Domain) -> proto::Domain {
    let Domain {
        row,
        txt_name,
        txt_value,
        cname_target,
        https,
    } = domain;
    proto::Domain {
        https: https.map(|https| proto::DomainHttps {
            status: https.status.to_owned(),
            expires_at: https.expires_at.map(time::to_proto),
            reason: https.reason,
            next_order_at: Some(time::to_proto(https.next_order_at)),
        }),
        domain_id: row.id,
        workspace_id: row.workspace_id,
        hostname: row.hostname,
        status: row.status,
        reason: row.reason,
        txt_name,
        txt_value,
        cname_target,
        created_at: Some(time::to_proto(row.created_at)),
        verified_at: row.verified_at.map(time::to_proto),
        checked_at: row.checked_at.map(time::to_proto),
        next_check_at: row.next_check_at.map(time::to_proto),
    }
}
