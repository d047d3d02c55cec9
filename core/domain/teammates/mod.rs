//! The people of an account: owners do everything; members work with campaigns, leads and
//! analytics (see [`Principal::is_owner`]). An owner invites a person by email; the invitation
//! is a one-time link where they choose their password (the first start's setup link, for
//! seven days), and it records who made it.
//!
//! An invitation is only as good as its maker's power to invite (issue 44): removing a person,
//! or making an owner a member (members invite nobody), revokes the invitations they made that
//! are still pending, in the same transaction; and a link is accepted only while its invitation
//! still stands ([`invitation_stands`]).

use crate::auth::hash_key;
use crate::error::FieldViolation;
use crate::principal::Principal;
use crate::store::users::{self, InviteeRow, Role, TeammateRow};
use crate::store::{Db, oauth};
use crate::time::Micros;
use crate::{App, Error, Result, time};

/// How long an invitation's link works.
const LINK_MICROS: i64 = 7 * time::MICROS_PER_DAY;

/// What a role must be.
pub const ROLE_RULE: &str = "The role must be owner or member.";

/// The account's people, for its owners.
pub async fn list(db: &Db, principal: &Principal) -> Result<Vec<TeammateRow>> {
    principal.may_manage_teammates()?;
    Ok(users::teammates(db.pool(), principal.account_id).await?)
}

/// Who is invited.
pub struct Invitation {
    pub email: String,
    pub name: Option<String>,
    pub role: Option<String>,
}

/// A person invited, and how their link reaches them.
pub struct Invited {
    pub teammate: TeammateRow,
    /// Where they choose their password.
    pub link: String,
    /// Whether the link was emailed to them (else it is for the inviter to pass on).
    pub emailed: bool,
}

/// Adds the person to the account and emails them the link, when the server sends email.
pub async fn invite(app: &App, principal: &Principal, invitation: Invitation) -> Result<Invited> {
    principal.may_manage_teammates()?;
    let email = invitation.email.trim().to_owned();
    let mut violations = Vec::new();
    if let Err(message) = crate::domain::lead::email(&email).and_then(|e| {
        if e.is_empty() {
            Err("The email field is required.".to_owned())
        } else {
            Ok(e)
        }
    }) {
        violations.push(FieldViolation::new("email", message));
    }
    let role = match invitation.role.as_deref().map(str::trim) {
        None | Some("") => Role::Member,
        Some(text) => Role::parse(text).unwrap_or_else(|| {
            violations.push(FieldViolation::new("role", ROLE_RULE));
            Role::Member
        }),
    };
    let name = invitation
        .name
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| email.split('@').next().unwrap_or_default().to_owned());
    if name.chars().count() > 255 || name.chars().any(char::is_control) {
        violations.push(FieldViolation::new(
            "name",
            "The name must be at most 255 characters, without control characters.",
        ));
    }
    if violations.is_empty()
        && users::email_taken(app.db.pool(), principal.account_id, &email).await?
    {
        violations.push(FieldViolation::new(
            "email",
            "This person is already a teammate.",
        ));
    }
    if !violations.is_empty() {
        return Err(Error::Invalid(violations));
    }
    let now = time::now();
    let token = crate::random::token(43);
    let mut tx = app.db.begin_write().await?;
    let id = users::insert_invited(
        &mut *tx,
        principal.account_id,
        &name,
        &email,
        role,
        principal.user.id,
        now,
    )
    .await?;
    let expires_at = now + LINK_MICROS;
    oauth::insert_password_setup(&mut *tx, &hash_key(&token), id, expires_at).await?;
    tx.commit().await?;
    let link = app.config.dashboard_url(&format!("/setup?token={token}"));
    let row = TeammateRow {
        id,
        name,
        email,
        role: role.as_str().to_owned(),
        has_password: 0,
        created_at: now,
        invited_by: Some(principal.user.id),
        invited_by_name: Some(principal.user.name.clone()),
        link_expires_at: Some(expires_at),
    };
    let emailed = match &app.mailer {
        Some(mailer) => {
            let mail = invitation_mail(principal, &row, role, &link);
            match mailer.send(&mail).await {
                Ok(()) => true,
                Err(why) => {
                    // The invitation stands; the inviter is shown the link to pass on.
                    tracing::warn!(%why, "an invitation could not be emailed");
                    false
                }
            }
        }
        None => false,
    };
    Ok(Invited {
        teammate: row,
        link,
        emailed,
    })
}

fn invitation_mail(
    principal: &Principal,
    invitee: &TeammateRow,
    role: Role,
    link: &str,
) -> crate::mailer::Mail {
    use crate::domain::letters::{Button, Letter};
    let inviter = &principal.user.name;
    let mut mail = Letter {
        subject: format!("{inviter} invited you to lps"),
        headline: format!("{inviter} invited you to lps"),
        paragraphs: vec![
            format!(
                "{inviter} added you, {}, to their team on lps as {} {}.",
                invitee.name,
                if role == Role::Owner { "an" } else { "a" },
                role.as_str()
            ),
            "Choose your password to sign in. The link works once, for seven days.".to_owned(),
        ],
        button: Some(Button {
            label: "Choose your password",
            url: link.to_owned(),
        }),
        footer: Some(
            "If you did not expect this, ignore this email: nothing happens until the link is \
             used."
                .to_owned(),
        ),
        ..Letter::default()
    }
    .written();
    mail.to = vec![invitee.email.clone()];
    mail
}

/// Removes a person of the account (never oneself): their sessions and apps end at once, and
/// the invitations they made that are still pending are revoked.
pub async fn remove(app: &App, principal: &Principal, user_id: i64) -> Result<()> {
    principal.may_manage_teammates()?;
    if user_id == principal.user.id {
        return Err(Error::Precondition(
            "You cannot remove yourself; ask another owner.",
        ));
    }
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    let removed = users::remove(&mut tx, principal.account_id, user_id, now).await?;
    if !removed {
        return Err(Error::NotFound("Teammate not found"));
    }
    revoke_pending_invitations(&mut tx, principal.account_id, user_id, now).await?;
    tx.commit().await?;
    crate::credentials::revoked(app).await;
    Ok(())
}

/// Makes a person of the account (never oneself) an owner or a member. An owner made a member
/// loses what only owners hold at once: the invitations they made that are still pending
/// (members invite nobody) and their apps (members connect no apps); their sessions
/// act as a member's from their next request.
pub async fn change_role(
    app: &App,
    principal: &Principal,
    user_id: i64,
    role: Role,
) -> Result<TeammateRow> {
    principal.may_manage_teammates()?;
    if user_id == principal.user.id {
        return Err(Error::Precondition(
            "You cannot change your own role; ask another owner.",
        ));
    }
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    let Some(before) = users::teammate(&mut *tx, principal.account_id, user_id).await? else {
        return Err(Error::NotFound("Teammate not found"));
    };
    users::set_role(&mut *tx, principal.account_id, user_id, role).await?;
    if role == Role::Member && before.role == Role::Owner.as_str() {
        revoke_pending_invitations(&mut tx, principal.account_id, user_id, now).await?;
        oauth::revoke_apps_of(&mut tx, user_id, now).await?;
    }
    let after = users::teammate(&mut *tx, principal.account_id, user_id)
        .await?
        .ok_or(Error::NotFound("Teammate not found"))?;
    tx.commit().await?;
    crate::credentials::revoked(app).await;
    Ok(after)
}

/// Revokes the invitations a person made that are still pending: each invited person is
/// removed, and their link with them. (A pending person has made no invitation: inviting takes
/// a session, and a session a password.)
async fn revoke_pending_invitations(
    conn: &mut sqlx::AnyConnection,
    account_id: i64,
    inviter: i64,
    now: Micros,
) -> Result<()> {
    for invitee in users::pending_invitees(&mut *conn, inviter).await? {
        users::remove(conn, account_id, invitee, now).await?;
    }
    Ok(())
}

/// Whether a setup link still lets its person in: they were not removed, and whoever invited
/// them is still an owner (a link made before `invited_by` was recorded, or by `lps admin`,
/// names nobody). Revocation removes the invited person already; this is checked again when a
/// link is taken, so a link that escaped it (a race with the inviter's demotion) grants nothing.
///
/// A person who has chosen a password took their invitation long ago: a link of theirs is a
/// password reset, which holds while they are not removed, whoever invited them.
pub fn invitation_stands(invitee: &InviteeRow) -> bool {
    let removed = Role::parse(&invitee.role).is_none();
    let inviter_owns = match invitee.invited_by {
        None => true,
        Some(_) => invitee.inviter_role.as_deref() == Some(Role::Owner.as_str()),
    };
    !removed && (inviter_owns || invitee.has_password == 1)
}

#[cfg(test)]
mod properties;

#[cfg(test)]
mod tests {
    use super::*;

    fn invitee(role: &str, inviter_role: Option<&str>) -> InviteeRow {
        InviteeRow {
            role: role.to_owned(),
            has_password: 0,
            invited_by: inviter_role.map(|_| 1),
            inviter_role: inviter_role.map(str::to_owned),
        }
    }

    #[test]
    fn an_invitation_stands_while_its_maker_is_an_owner_and_its_person_is_not_removed() {
        assert!(invitation_stands(&invitee("owner", Some("owner"))));
        assert!(invitation_stands(&invitee("member", Some("owner"))));
        // The first owner's link, or one made by `lps admin`: nobody invited them.
        assert!(invitation_stands(&invitee("owner", None)));
        assert!(!invitation_stands(&invitee("owner", Some("member"))));
        assert!(!invitation_stands(&invitee("member", Some("member"))));
        assert!(!invitation_stands(&invitee("owner", Some("removed"))));
        assert!(!invitation_stands(&invitee("removed", Some("owner"))));
        assert!(!invitation_stands(&invitee("removed", None)));
        // A password reset: the invitation was taken, whoever made it is a member now.
        let joined = |role: &str| InviteeRow {
            has_password: 1,
            ..invitee(role, Some("member"))
        };
        assert!(invitation_stands(&joined("member")));
        assert!(!invitation_stands(&joined("removed")));
    }

    async fn set_role_behind_revocation(db: &Db, user_id: i64, role: &str) {
        sqlx::query("UPDATE users SET role = $2 WHERE id = $1")
            .bind(user_id)
            .bind(role)
            .execute(db.pool())
            .await
            .unwrap();
    }

    /// Takes the link in a transaction rolled back: whether it signed someone in.
    async fn link_signs_in(db: &Db, link: &str) -> bool {
        let mut tx = db.begin_write().await.unwrap();
        let taken = crate::domain::oauth::take_setup_link(&mut tx, link, "hash", time::now()).await;
        tx.rollback().await.unwrap();
        match taken {
            Ok(_) => true,
            Err(Error::NotFound(_)) => false,
            Err(other) => panic!("{other}"),
        }
    }

    /// Revocation removes the invited person when their maker is removed or made a member; a
    /// link that escaped it (its maker demoted while it was being made) is still refused.
    #[tokio::test]
    async fn a_link_signs_in_only_while_its_maker_is_an_owner_and_its_person_is_not_removed() {
        let (_dir, db) = crate::store::test_workspace().await;
        let now = time::now();
        let alice = users::insert(db.pool(), 1, "Alice", "alice@example.com", now)
            .await
            .unwrap();
        let invited =
            users::insert_invited(db.pool(), 1, "B", "b@example.com", Role::Owner, alice, now)
                .await
                .unwrap();
        oauth::insert_password_setup(db.pool(), &hash_key("link"), invited, now + LINK_MICROS)
            .await
            .unwrap();
        assert!(link_signs_in(&db, "link").await);
        set_role_behind_revocation(&db, alice, "member").await;
        assert!(!link_signs_in(&db, "link").await);
        set_role_behind_revocation(&db, alice, "removed").await;
        assert!(!link_signs_in(&db, "link").await);
        set_role_behind_revocation(&db, alice, "owner").await;
        set_role_behind_revocation(&db, invited, "removed").await;
        assert!(!link_signs_in(&db, "link").await);
        set_role_behind_revocation(&db, invited, "owner").await;
        assert!(link_signs_in(&db, "link").await);
    }
}
