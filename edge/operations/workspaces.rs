//! `GET /workspaces/get-list`, `GET /workspaces/get-variable-list`; extensions:
//! `GET /workspaces/get-settings`, `POST /workspaces/update-settings`.

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

/// A workspace's own settings.
#[derive(Serialize, ToSchema)]
pub struct WorkspaceSettingsBody {
    pub workspace_id: i64,
    /// The score at which its leads are hot (`lead.hot`, the app's badge, `hot_only`); 0:
    /// never.
    #[schema(example = 8.0)]
    pub hot_score: f64,
    /// Whether that is the server's default (`--hot-score`), the workspace having set none.
    pub hot_score_is_default: bool,
    /// IANA name: the default time zone of its notification channels (`UTC` until set).
    #[schema(example = "Europe/Berlin")]
    pub time_zone: String,
}

impl From<proto::WorkspaceSettings> for WorkspaceSettingsBody {
    fn from(s: proto::WorkspaceSettings) -> Self {
        let proto::WorkspaceSettings {
            workspace_id,
            hot_score,
            hot_score_is_default,
            time_zone,
        } = s;
        Self {
            workspace_id,
            hot_score,
            hot_score_is_default,
            time_zone,
        }
    }
}

/// Extension: the workspace's own settings: when its leads are hot, and its time zone.
#[utoipa::path(get, path = "/workspaces/get-settings", tag = "Workspaces",
    params(WorkspaceQuery),
    responses(
        (status = 200, body = WorkspaceSettingsBody),
        (status = 403, body = ErrorBody, description = "Workspace not found or access not permitted"),
        (status = 422, body = ErrorBody, description = "Missing or invalid workspace_id"),
    ))]
pub(super) async fn get_settings(
    caller: Caller,
    Input(query, mut check): Input<WorkspaceQuery>,
) -> Result<Reply<WorkspaceSettingsBody>, ApiError> {
    let request = proto::GetWorkspaceSettingsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.workspaces().get_workspace_settings(request).await },
            WorkspaceSettingsBody::from,
        )
        .await
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct UpdateSettingsRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// From 0 (no lead is ever hot) to 1000; left out: unchanged.
    #[schema(value_type = Option<f64>, minimum = 0, maximum = 1000)]
    pub hot_score: Lenient<f64>,
    /// An IANA name (`Europe/Berlin`), or empty for UTC; left out: unchanged.
    #[schema(value_type = Option<String>, max_length = 64)]
    pub time_zone: Lenient<String>,
}

/// Extension: changes what is given of the workspace's settings (owners only).
#[utoipa::path(post, path = "/workspaces/update-settings", tag = "Workspaces",
    request_body = UpdateSettingsRequest,
    responses(
        (status = 200, body = WorkspaceSettingsBody),
        (status = 403, body = ErrorBody, description = "Not an owner, or not the caller's workspace"),
        (status = 422, body = ErrorBody, description = "A hot score out of 0 to 1000, or an unknown time zone"),
    ))]
pub(super) async fn update_settings(
    caller: Caller,
    Input(body, mut check): Input<UpdateSettingsRequest>,
) -> Result<Reply<WorkspaceSettingsBody>, ApiError> {
    let request = proto::UpdateWorkspaceSettingsRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        hot_score: check.field("hot_score", body.hot_score),
        time_zone: check.field("time_zone", body.time_zone),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move {
                core.workspaces().update_workspace_settings(request).await
            },
            WorkspaceSettingsBody::from,
        )
        .await
}
