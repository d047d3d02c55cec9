//! "Forgot your password?": a person asks for a link by email to choose a new password. The
//! answer is the same whether or not the address is anyone's, and the email is written and
//! sent after the answer, so neither its words nor its time tell.
//!
//! Bounded: per client address, as many requests as logins (ten a minute); per person, one
//! email every [`EVERY`] (a request meanwhile sends nothing). A link works once, for
//! [`LINK_LIFETIME`], and choosing a password with it ends every session of the person (as
//! any new password does). Only people who have a password are sent one: someone invited who
//! has not yet chosen theirs uses their invitation's link.

use crate::auth::hash_key;
use crate::domain::letters::{Button, Letter};
use crate::error::FieldViolation;
use crate::store::oauth;
use crate::time::Micros;
use crate::{App, Error, Result, time};

/// How long a reset link works.
pub const LINK_LIFETIME: Micros = 3_600_000_000;
/// The least time between two reset emails to one person.
pub const EVERY: Micros = 300_000_000;

/// Asks for a reset link for `email`, from `client`.
pub async fn request_reset(app: &App, email: &str, client: &str) -> Result<()> {
    if app.mailer.is_none() {
        return Err(Error::Precondition(
            "This server sends no email, so a password cannot be reset by email: ask an owner \
             of your workspace to remove and invite you again, or whoever runs lps to set \
             --smtp-url.",
        ));
    }
    let email = email.trim().to_lowercase();
    if crate::domain::lead::email(&email).is_err() || email.is_empty() {
        return Err(Error::Invalid(vec![FieldViolation::new(
            "email",
            "The email must be a valid email address.",
        )]));
    }
    let deployment = &hash_key(app.db.url())[..12];
    app.login_limiter
        .check(&format!("reset-ip:{deployment}:{client}"))
        .await
        .into_result()?;
    let app = app.clone();
    tokio::spawn(async move {
        if let Err(err) = send_links(&app, &email).await {
            tracing::warn!(error = %err, "a password reset could not be sent");
        }
    });
    Ok(())
}

/// Emails each person with this address who has a password (one per account) their link,
/// unless one was sent them within [`EVERY`].
async fn send_links(app: &App, email: &str) -> Result<()> {
    let Some(mailer) = &app.mailer else {
        return Ok(());
    };
    let pool = app.db.pool();
    for person in oauth::users_by_email(pool, email).await? {
        if person.password_hash.is_none() {
            continue;
        }
        let now = time::now();
        let expires_at = now + LINK_LIFETIME;
        if oauth::has_link_expiring_after(pool, person.id, expires_at - EVERY).await? {
            continue;
        }
        let token = crate::random::token(43);
        oauth::insert_password_setup(pool, &hash_key(&token), person.id, expires_at).await?;
        let link = app.config.dashboard_url(&format!("/setup?token={token}"));
        let mut mail = Letter {
            subject: "Choose a new lps password".to_owned(),
            headline: "Choose a new password".to_owned(),
            paragraphs: vec![
                format!(
                    "Someone, we hope you, asked to reset the lps password of {email}. The \
                     link works once, for an hour; using it signs you out everywhere else."
                ),
                "If it was not you, ignore this email: your password stays as it is.".to_owned(),
            ],
            button: Some(Button {
                label: "Choose a new password",
                url: link,
            }),
            ..Letter::default()
        }
        .written();
        mail.to = vec![email.to_owned()];
        mailer.send(&mail).await.map_err(|why| {
            Error::Internal(anyhow::anyhow!("the reset email was not sent: {why}"))
        })?;
    }
    Ok(())
}
