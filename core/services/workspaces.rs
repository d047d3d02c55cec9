//! `lps.v1.WorkspacesService`: reachable workspaces and their variables.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::workspaces::{self, Variable};
use crate::proto::{self, workspaces_service_server};
use crate::store::workspaces::WorkspaceRow;
use crate::validate::{Validated, required};

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
