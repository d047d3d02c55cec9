//! `POST /generate-api-token`, `GET /get-api-tokens`, `DELETE /delete-api-token`.

use lps::{proto, wire};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::identity::MessageBody;
use super::input::{Input, Lenient};
use super::workspaces::WorkspaceQuery;

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct GenerateApiTokenRequest {
    /// A name to recognise the key by (at most 255 characters).
    #[schema(value_type = String, max_length = 255)]
    pub name: Lenient<String>,
    /// The workspace the key is bound to.
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct TokenBody {
    /// The key, `sk-proj-...`. Shown this once only.
    pub token: String,
}

#[derive(Serialize, ToSchema)]
pub struct ApiTokenBody {
    pub id: String,
    pub name: String,
    pub created_at: String,
    /// Null until the key is first used.
    pub last_used_at: Option<String>,
    /// The name of the person who created the key.
    pub created_by: String,
}

#[derive(Serialize, ToSchema)]
pub struct ApiTokensBody {
    pub tokens: Vec<ApiTokenBody>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TokenIdQuery {
    /// The id of the key, as listed by `GET /get-api-tokens`.
    #[param(value_type = String, max_length = 255)]
    pub token_id: Lenient<String>,
}

/// Creates a key bound to the workspace. Needs a plan with API access (Pro tier and up).
#[utoipa::path(post, path = "/generate-api-token", tag = "API tokens",
    request_body = GenerateApiTokenRequest,
    responses(
        (status = 200, body = TokenBody),
        (status = 403, body = ErrorBody, description = "Workspace not reachable, the plan has no API access, or (extension) the caller is an app connected with OAuth, which may not create keys"),
        (status = 422, body = ErrorBody),
    ))]
pub(super) async fn generate_api_token(
    caller: Caller,
    Input(body, mut check): Input<GenerateApiTokenRequest>,
) -> Result<Reply<TokenBody>, ApiError> {
    let request = proto::GenerateApiTokenRequest {
        name: check.field("name", body.name),
        workspace_id: check.field("workspace_id", body.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.api_tokens().generate_api_token(request).await },
            |r| TokenBody { token: r.token },
        )
        .await
}

/// The workspace's keys plus the account's legacy unbound keys.
#[utoipa::path(get, path = "/get-api-tokens", tag = "API tokens",
    params(WorkspaceQuery),
    responses(
        (status = 200, body = ApiTokensBody),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
pub(super) async fn get_api_tokens(
    caller: Caller,
    Input(query, mut check): Input<WorkspaceQuery>,
) -> Result<Reply<ApiTokensBody>, ApiError> {
    let request = proto::ListApiTokensRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.api_tokens().list_api_tokens(request).await },
            |r| ApiTokensBody {
                tokens: r.tokens.into_iter().map(api_token).collect(),
            },
        )
        .await
}

/// Revokes a key; it fails from the very next request.
#[utoipa::path(delete, path = "/delete-api-token", tag = "API tokens",
    params(TokenIdQuery),
    responses(
        (status = 200, body = MessageBody),
        (status = 403, body = ErrorBody, description = "Extension: the caller is an app connected with OAuth, which may not delete keys"),
        (status = 404, body = ErrorBody, description = "API token not found"),
        (status = 422, body = ErrorBody),
    ))]
pub(super) async fn delete_api_token(
    caller: Caller,
    Input(query, mut check): Input<TokenIdQuery>,
) -> Result<Reply<MessageBody>, ApiError> {
    let request = proto::DeleteApiTokenRequest {
        token_id: check.field("token_id", query.token_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.api_tokens().delete_api_token(request).await },
            |r| MessageBody { message: r.message },
        )
        .await
}

fn api_token(token: proto::ApiToken) -> ApiTokenBody {
    let proto::ApiToken {
        id,
        name,
        created_at,
        last_used_at,
        created_by,
        workspace_id: _,
    } = token;
    ApiTokenBody {
        id,
        name,
        created_at: created_at.as_ref().map(wire::iso8601).unwrap_or_default(),
        last_used_at: last_used_at.as_ref().map(wire::iso8601),
        created_by,
    }
}
