//! The teammates of the Settings page (owners only): the list (a pending invitation with who
//! made it and when its link expires), an invitation (its one-time link shown once), a change
//! of role (owner or member), and a removal or an invitation's revocation (asked first).

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::response::Response;
use lps::proto;
use serde::Serialize;

use super::{
    Confirmation, Notice, Settings, SignedForm, SignedIn, When, after_action, confirm, gone,
    number, redirect_with, settings_address, text, unavailable, when,
};
use crate::core_client::Core;
use crate::http::session_cookie::Session;

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
    invited_by: Option<String>,
    /// Until they have used it: when their link expires (or expired).
    link_expires: Option<When>,
    link_expired: bool,
}

/// The account's people, for the Settings page.
pub(super) async fn list(
    core: &Core,
    session: &Session,
) -> Result<Vec<TeammateRow>, tonic::Status> {
    let now = lps::wire::now();
    Ok(core
        .account()
        .list_teammates(session.request(proto::ListTeammatesRequest {}))
        .await?
        .into_inner()
        .teammates
        .into_iter()
        .map(|t| TeammateRow {
            other_role: if t.role == "owner" { "member" } else { "owner" },
            link_expires: when(t.link_expires_at.as_ref()),
            link_expired: t
                .link_expires_at
                .as_ref()
                .is_some_and(|at| lps::wire::from_proto_micros(at) <= now),
            id: t.user_id,
            name: t.name,
            email: t.email,
            role: t.role,
            joined: t.has_password,
            invited_by: t.invited_by_name,
        })
        .collect())
}

/// An owner invites a person: the one-time link is emailed to them, or, when the server sends
/// no email, shown once to pass on.
pub async fn invite(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let outcome = core
        .account()
        .invite_teammate(session.request(proto::InviteTeammateRequest {
            email: text(&form, "email"),
            name: text(&form, "name"),
            role: text(&form, "role"),
        }))
        .await;
    let notice = match outcome {
        Ok(reply) => {
            let reply = reply.into_inner();
            let who = reply.teammate.map(|t| t.email).unwrap_or_default();
            if reply.emailed {
                Notice::news(&format!(
                    "{who} was invited: they were emailed a link (it works once, for seven days) to choose their password."
                ))
            } else {
                Notice {
                    alert: false,
                    text: format!(
                        "{who} was invited. Send them this link (shown only once; it works once, for seven days) to choose their password:"
                    ),
                    secret: Some(reply.setup_url),
                }
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
    SignedForm(session, form): SignedForm,
) -> Response {
    let outcome = core
        .account()
        .change_teammate_role(session.request(proto::ChangeTeammateRoleRequest {
            user_id: number(&form, "user_id"),
            role: text(&form, "role"),
        }))
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

/// The teammate a confirmation names, if the account still has them; otherwise the page.
async fn teammate(
    core: &Core,
    session: &Session,
    query: &Form_,
) -> Result<Option<proto::Teammate>, Response> {
    let wanted = number(query, "user_id");
    match core
        .account()
        .list_teammates(session.request(proto::ListTeammatesRequest {}))
        .await
    {
        Ok(reply) => Ok(reply
            .into_inner()
            .teammates
            .into_iter()
            .find(|t| Some(t.user_id) == wanted)),
        Err(status) if status.code() == tonic::Code::PermissionDenied => Ok(None),
        Err(status) => Err(unavailable(&status)),
    }
}

/// A step before removing a teammate.
pub async fn confirm_remove(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    Query(query): Query<Form_>,
) -> Response {
    let teammate = match teammate(&core, &session, &query).await {
        Ok(Some(teammate)) => teammate,
        Ok(None) => return gone("This person is not a teammate."),
        Err(page) => return page,
    };
    confirm(
        "Remove a teammate",
        Confirmation {
            question: format!("Remove {} ({})?", teammate.name, teammate.email),
            consequence: "They are signed out at once and their connected apps stop working; invitations they made that are still pending are revoked; keys they created keep working.",
            action: "/dashboard/teammates/remove",
            csrf: person.csrf_token,
            fields: vec![("user_id", teammate.user_id.to_string())],
            button: "Remove",
            back: "/dashboard".to_owned(),
        },
    )
}

pub async fn remove(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let outcome = remove_teammate(&core, &session, &form).await;
    after_action(
        &settings,
        "/dashboard/settings",
        outcome,
        "The teammate was removed.",
    )
}

/// A step before revoking an invitation nobody has used yet.
pub async fn confirm_revoke(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    Query(query): Query<Form_>,
) -> Response {
    let teammate = match teammate(&core, &session, &query).await {
        Ok(Some(teammate)) if !teammate.has_password => teammate,
        Ok(_) => return gone("This invitation is not pending any more."),
        Err(page) => return page,
    };
    confirm(
        "Revoke an invitation",
        Confirmation {
            question: format!(
                "Revoke the invitation of {} ({})?",
                teammate.name, teammate.email
            ),
            consequence: "Their link stops working at once. To let them in later, invite them again.",
            action: "/dashboard/teammates/revoke",
            csrf: person.csrf_token,
            fields: vec![("user_id", teammate.user_id.to_string())],
            button: "Revoke the invitation",
            back: "/dashboard".to_owned(),
        },
    )
}

/// A pending invitation is revoked by removing its person (and their link with them).
pub async fn revoke(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let outcome = remove_teammate(&core, &session, &form).await;
    after_action(
        &settings,
        "/dashboard/settings",
        outcome,
        "The invitation was revoked: its link no longer works.",
    )
}

async fn remove_teammate(
    core: &Core,
    session: &Session,
    form: &Form_,
) -> Result<tonic::Response<proto::RemoveTeammateResponse>, tonic::Status> {
    core.account()
        .remove_teammate(session.request(proto::RemoveTeammateRequest {
            user_id: number(form, "user_id"),
        }))
        .await
}
