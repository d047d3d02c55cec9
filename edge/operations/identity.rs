//! Credential checks: `GET /hello-world`, `GET /hello-world-user`.

use lps::proto;
use serde::Serialize;
use utoipa::ToSchema;

use super::caller::{Caller, Reply};
use super::error::ApiError;
use super::input::Check;

#[derive(Serialize, ToSchema)]
pub struct MessageBody {
    pub message: String,
}

#[derive(Serialize, ToSchema)]
pub struct UserBody {
    pub id: i64,
    pub name: String,
    pub email: String,
}

impl From<Option<proto::User>> for UserBody {
    fn from(user: Option<proto::User>) -> Self {
        let proto::User { id, name, email } = user.unwrap_or_default();
        Self { id, name, email }
    }
}

#[derive(Serialize, ToSchema)]
pub struct HelloWorldUserBody {
    pub message: String,
    pub user: UserBody,
    /// The key's bound workspace; null for legacy keys, which reach every workspace of the
    /// account.
    pub workspace_id: Option<i64>,
}

/// Tests authentication.
#[utoipa::path(get, path = "/hello-world", tag = "API tokens",
    responses((status = 200, body = MessageBody)))]
pub(super) async fn hello_world(caller: Caller) -> Result<Reply<MessageBody>, ApiError> {
    caller
        .call(
            Check::default(),
            proto::HelloWorldRequest {},
            |core, request| async move { core.identity().hello_world(request).await },
            |r| MessageBody { message: r.message },
        )
        .await
}

/// Verifies a key and returns its owner and bound workspace.
#[utoipa::path(get, path = "/hello-world-user", tag = "API tokens",
    responses((status = 200, body = HelloWorldUserBody)))]
pub(super) async fn hello_world_user(
    caller: Caller,
) -> Result<Reply<HelloWorldUserBody>, ApiError> {
    caller
        .call(
            Check::default(),
            proto::WhoAmIRequest {},
            |core, request| async move { core.identity().who_am_i(request).await },
            |r| HelloWorldUserBody {
                message: r.message,
                user: r.user.into(),
                workspace_id: r.workspace_id,
            },
        )
        .await
}
