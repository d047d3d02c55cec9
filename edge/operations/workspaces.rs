//! `GET /workspaces/get-list`, `GET /workspaces/get-variable-list`.

use lps::proto;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Check, Input, Lenient};

/// The query of every path that only names a workspace.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WorkspaceQuery {
    /// The workspace to act on.
    #[param(value_type = i64)]
    pub workspace_id: Lenient<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct WorkspaceBody {
    pub id: i64,
    pub name: String,
    pub slug: String,
}

#[derive(Serialize, ToSchema)]
pub struct VariableBody {
    pub key: String,
    /// Present on the five default variables only.
    #[serde(rename = "helpText", skip_serializing_if = "Option::is_none")]
    pub help_text: Option<String>,
}

/// Workspaces the key reaches: exactly one for a workspace-bound key.
#[utoipa::path(get, path = "/workspaces/get-list", tag = "Workspaces",
    responses((status = 200, body = Vec<WorkspaceBody>)))]
pub(super) async fn get_list(caller: Caller) -> Result<Reply<Vec<WorkspaceBody>>, ApiError> {
    caller
        .call(
            Check::default(),
            proto::ListWorkspacesRequest {},
            |core, request| async move { core.workspaces().list_workspaces(request).await },
            |r| {
                r.workspaces
                    .into_iter()
                    .map(|proto::Workspace { id, name, slug }| WorkspaceBody { id, name, slug })
                    .collect()
            },
        )
        .await
}

/// The default variables (with `helpText`) and the workspace's custom ones.
#[utoipa::path(get, path = "/workspaces/get-variable-list", tag = "Workspaces",
    params(WorkspaceQuery),
    responses(
        (status = 200, body = Vec<VariableBody>),
        (status = 403, body = ErrorBody, description = "Workspace not found or access not permitted"),
        (status = 422, body = ErrorBody, description = "Missing or invalid workspace_id"),
    ))]
pub(super) async fn get_variable_list(
    caller: Caller,
    Input(query, mut check): Input<WorkspaceQuery>,
) -> Result<Reply<Vec<VariableBody>>, ApiError> {
    let request = proto::ListVariablesRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.workspaces().list_variables(request).await },
            |r| {
                r.variables
                    .into_iter()
                    .map(|proto::Variable { key, help_text }| VariableBody { key, help_text })
                    .collect()
            },
        )
        .await
}
