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
