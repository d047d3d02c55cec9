//! The teammates of the Settings page (owners only): the list, an invitation (its one-time
//! link shown once), a change of role (owner or member) and a removal (asked first).

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::response::Response;
use lps::proto;
use serde::Serialize;

use super::settings::settings_address;
use super::{
    Confirmation, Notice, Settings, SignedForm, SignedIn, after_action, confirm, gone, number,
    redirect_with, text, unavailable,
};
use crate::core_client::Core;
use crate::http::session_cookie::as_credential;

type Form_ = BTreeMap<String, String>;

/// A person as the teammates table shows them.
#[derive(Serialize)]
pub(super) struct TeammateRow {
    id: i64,
    name: String,
    email: String,
    role: String,
    /// The role a button offers instead: `member` for an owner, `owner` for a member.
    other_role: &'static str,
    joined: bool,
}

/// The account's people, for the Settings page.
pub(super) async fn list(core: &Core, token: &str) -> Result<Vec<TeammateRow>, tonic::Status> {
    Ok(core
        .account()
        .list_teammates(as_credential(token, proto::ListTeammatesRequest {}))
        .await?
        .into_inner()
        .teammates
        .into_iter()
        .map(|t| TeammateRow {
            other_role: if t.role == "owner" { "member" } else { "owner" },
            id: t.user_id,
            name: t.name,
            email: t.email,
            role: t.role,
            joined: t.has_password,
        })
        .collect())
}

/// An owner invites a person: the one-time link is shown once, to pass on.
pub async fn invite(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(token, form): SignedForm,
) -> Response {
    let outcome = core
        .account()
        .invite_teammate(as_credential(
            &token,
            proto::InviteTeammateRequest {
                email: text(&form, "email"),
                name: text(&form, "name"),
                role: text(&form, "role"),
            },
        ))
        .await;
    let notice = match outcome {
        Ok(reply) => {
            let reply = reply.into_inner();
            let who = reply.teammate.map(|t| t.email).unwrap_or_default();
            Notice {
                alert: false,
                text: format!(
                    "{who} was invited. Send them this link (shown only once; it works once, for seven days) to choose their password:"
                ),
                secret: Some(reply.setup_url),
            }
        }
        Err(status) => Notice::alert(status.message()),
    };
    redirect_with(
        &settings,
        &settings_address(number(&form, "workspace_id")),
        &notice,
    )
}

/// An owner makes a teammate an owner or a member.
pub async fn change_role(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(token, form): SignedForm,
) -> Response {
    let outcome = core
        .account()
        .change_teammate_role(as_credential(
            &token,
            proto::ChangeTeammateRoleRequest {
                user_id: number(&form, "user_id"),
                role: text(&form, "role"),
            },
        ))
        .await;
    let notice = match outcome {
        Ok(reply) => {
            let teammate = reply.into_inner().teammate.unwrap_or_default();
            Notice::news(&if teammate.role == "owner" {
                format!("{} is now an owner.", teammate.name)
            } else {
                format!(
                    "{} is now a member: the invitations they made that were still pending and \
                     their connected apps were revoked.",
                    teammate.name
                )
            })
        }
        Err(status) => Notice::alert(status.message()),
    };
    redirect_with(
        &settings,
        &settings_address(number(&form, "workspace_id")),
        &notice,
    )
}

/// A step before removing a teammate.
pub async fn confirm_remove(
    State(core): State<Core>,
    SignedIn(token, person): SignedIn,
    Query(query): Query<Form_>,
) -> Response {
    let wanted = number(&query, "user_id");
    let teammate = match core
        .account()
        .list_teammates(as_credential(&token, proto::ListTeammatesRequest {}))
        .await
    {
        Ok(reply) => reply
            .into_inner()
            .teammates
            .into_iter()
            .find(|t| Some(t.user_id) == wanted),
        Err(status) if status.code() == tonic::Code::PermissionDenied => None,
        Err(status) => return unavailable(&status),
    };
    let Some(teammate) = teammate else {
        return gone("This person is not a teammate.");
    };
    confirm(
        "Remove a teammate",
        Confirmation {
            question: format!("Remove {} ({})?", teammate.name, teammate.email),
            consequence: "They are signed out at once and their connected apps stop working; keys they created keep working.",
            action: "/dashboard/teammates/remove",
            csrf: person.csrf_token,
            field: "user_id",
            value: teammate.user_id.to_string(),
            button: "Remove",
        },
    )
}

pub async fn remove(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(token, form): SignedForm,
) -> Response {
    let outcome = core
        .account()
        .remove_teammate(as_credential(
            &token,
            proto::RemoveTeammateRequest {
                user_id: number(&form, "user_id"),
            },
        ))
        .await;
    after_action(
        &settings,
        "/dashboard/settings",
        outcome,
        "The teammate was removed.",
    )
}
