//! The people of an account: owners do everything; members work with campaigns, leads and
//! analytics (see [`Principal::is_owner`]). An owner invites a person by email; the invitation
//! is a one-time link where they choose their password (the first start's setup link, for
//! seven days).

use crate::auth::hash_key;
use crate::error::FieldViolation;
use crate::principal::Principal;
use crate::store::users::{self, MEMBER, OWNER, TeammateRow};
use crate::store::{Db, oauth};
use crate::{App, Error, Result, time};

/// How long an invitation's link works.
const LINK_MICROS: i64 = 7 * time::MICROS_PER_DAY;

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

/// Adds the person to the account and answers them with the link's address.
pub async fn invite(
    app: &App,
    principal: &Principal,
    invitation: Invitation,
) -> Result<(TeammateRow, String)> {
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
        None | Some("") | Some(MEMBER) => MEMBER,
        Some(OWNER) => OWNER,
        Some(_) => {
            violations.push(FieldViolation::new(
                "role",
                "The role must be owner or member.",
            ));
            MEMBER
        }
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
    let id =
        users::insert_with_role(&mut *tx, principal.account_id, &name, &email, role, now).await?;
    oauth::insert_password_setup(&mut *tx, &hash_key(&token), id, now + LINK_MICROS).await?;
    tx.commit().await?;
    let link = format!(
        "{}/dashboard/setup?token={token}",
        app.config.public_url.trim_end_matches('/')
    );
    let row = TeammateRow {
        id,
        name,
        email,
        role: role.to_owned(),
        has_password: 0,
        created_at: now,
    };
    Ok((row, link))
}

/// Removes a person of the account (never oneself): their sessions and apps end at once.
pub async fn remove(app: &App, principal: &Principal, user_id: i64) -> Result<()> {
    principal.may_manage_teammates()?;
    if user_id == principal.user.id {
        return Err(Error::Precondition(
            "You cannot remove yourself; ask another owner.",
        ));
    }
    let mut tx = app.db.begin_write().await?;
    let removed = users::remove(&mut tx, principal.account_id, user_id, time::now()).await?;
    tx.commit().await?;
    if !removed {
        return Err(Error::NotFound("Teammate not found"));
    }
    crate::credentials::revoked(app).await;
    Ok(())
}
