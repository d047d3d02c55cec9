//! `GET /account/credits`.

use lps::{proto, wire};
use serde::Serialize;
use utoipa::ToSchema;

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::Input;
use super::workspaces::WorkspaceQuery;

#[derive(Serialize, ToSchema)]
pub struct CreditsBody {
    /// Raw plan identifier naming tier and rung; match on its prefix.
    #[schema(example = "pro_monthly")]
    pub plan: String,
    /// What the whole account pool has left.
    pub remaining: i64,
    /// This workspace's use.
    pub workspace_used: i64,
    /// Null when the workspace is uncapped.
    pub workspace_limit: Option<i64>,
    /// `YYYY-MM-DD HH:MM:SS`, UTC.
    #[schema(example = "2026-12-22 06:54:38")]
    pub renews_at: String,
}

/// The plan, the account-wide credit pool and this workspace's use of it.
#[utoipa::path(get, path = "/account/credits", tag = "Account",
    params(WorkspaceQuery),
    responses(
        (status = 200, body = CreditsBody),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
pub(super) async fn credits(
    caller: Caller,
    Input(query, mut check): Input<WorkspaceQuery>,
) -> Result<Reply<CreditsBody>, ApiError> {
    let request = proto::GetCreditsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.account().get_credits(request).await },
            |r| {
                let proto::GetCreditsResponse {
                    plan,
                    remaining,
                    workspace_used,
                    workspace_limit,
                    renews_at,
                    // The ledger is the dashboard's (gRPC): the documented body is unchanged.
                    recent_entries: _,
                } = r;
                CreditsBody {
                    plan,
                    remaining,
                    workspace_used,
                    workspace_limit,
                    renews_at: renews_at
                        .as_ref()
                        .map(wire::plain_datetime)
                        .unwrap_or_default(),
                }
            },
        )
        .await
}
