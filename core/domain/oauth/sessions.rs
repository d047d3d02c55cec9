//! Passwords (argon2id) and server-side sessions: logging in (as many hashes checked whatever
//! the email), setting a password through a one-time link, reading and ending a session.

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier, phc::PasswordHash};

use super::{MIN_PASSWORD_CHARS, SECOND, SESSION_PREFIX, SESSION_SECONDS};
use crate::auth::hash_key;
use crate::domain::teammates;
use crate::store::oauth::{self, SessionRow};
use crate::store::users;
use crate::time::Micros;
use crate::{App, Error, Result, time};

pub fn hash_password(password: &str) -> Result<String> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(Error::invalid(crate::error::FieldViolation::new(
            "password",
            format!("The password must be at least {MIN_PASSWORD_CHARS} characters."),
        )));
    }
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|e| Error::Internal(anyhow::anyhow!("argon2: {e}")))
}

fn password_matches(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored)
        .map(|hash| {
            Argon2::default()
                .verify_password(password.as_bytes(), &hash)
                .is_ok()
        })
        .unwrap_or(false)
}

/// A hash no password matches, verified against when no person has the email: an unknown
/// email takes as long to refuse as a wrong password.
static DUMMY_HASH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    Argon2::default()
        .hash_password(crate::random::token(32).as_bytes())
        .map(|hash| hash.to_string())
        .unwrap_or_default()
});

/// Passwords checked by every login, the dummy hash standing in for those the email lacks: an
/// unknown email, a person of one account and a person of two (a teammate invited into a
/// second account) take the same time to refuse. (Only an email with passwords in three or
/// more accounts takes longer.)
const LOGIN_VERIFICATIONS: usize = 2;

/// The hashes a login checks, each with its person's index in `users` (`None` for the dummy):
/// every person's with a password, then the dummy until there are [`LOGIN_VERIFICATIONS`].
fn hashes_to_check(users: &[oauth::LoginRow]) -> Vec<(Option<usize>, &str)> {
    let mut hashes: Vec<(Option<usize>, &str)> = users
        .iter()
        .enumerate()
        .filter_map(|(index, user)| Some((Some(index), user.password_hash.as_deref()?)))
        .collect();
    while hashes.len() < LOGIN_VERIFICATIONS {
        hashes.push((None, DUMMY_HASH.as_str()));
    }
    hashes
}

/// Failed logins for one email (from anywhere) past which every further failure for it is
/// answered a second later: slowed, never refused, so nobody can lock the owner out.
const SLOW_AFTER_FAILURES_PER_EMAIL: std::time::Duration = std::time::Duration::from_secs(1);

/// A person logs in. Every attempt counts against the client address (ten a minute; more are
/// refused with [`Error::RateLimited`]), so one address cannot guess for long and another
/// address is never stopped by it; failures also count against the email, and past ten a
/// minute each further failure for it is answered a second late. The password is checked on
/// a blocking thread, always [`LOGIN_VERIFICATIONS`] times (a dummy hash standing in), so the
/// time taken says nothing of the email.
pub async fn login(app: &App, email: &str, password: &str, client: &str) -> Result<String> {
    // The buckets are this database's: deployments sharing a Redis do not share them.
    let deployment = &hash_key(app.db.url())[..12];
    app.login_limiter
        .check(&format!("login-ip:{deployment}:{client}"))
        .await
        .into_result()?;
    let users = oauth::users_by_email(app.db.pool(), email.trim()).await?;
    let password = password.to_owned();
    let found = tokio::task::spawn_blocking(move || {
        let mut found = None;
        for (index, stored) in hashes_to_check(&users) {
            // Every hash is checked, even after a match: the same work whatever the email.
            if password_matches(&password, stored) && found.is_none() {
                found = index;
            }
        }
        found.map(|index| users[index].clone())
    })
    .await
    .map_err(|e| Error::Internal(e.into()))?;
    let Some(user) = found else {
        let email_bucket = format!("login:{deployment}:{}", email.trim().to_lowercase());
        if app
            .login_limiter
            .check(&email_bucket)
            .await
            .retry_after
            .is_some()
        {
            tokio::time::sleep(SLOW_AFTER_FAILURES_PER_EMAIL).await;
        }
        return Err(Error::Unauthenticated);
    };
    start_session(app.db.pool(), user.id, time::now()).await
}

/// A new session for the person: its token (stored as its hash) with a CSRF secret of its own.
async fn start_session<'c>(
    ex: impl sqlx::Executor<'c, Database = sqlx::Any>,
    user_id: i64,
    now: Micros,
) -> Result<String> {
    let token = format!("{SESSION_PREFIX}{}", crate::random::token(43));
    let csrf = crate::random::token(32);
    let expires_at = now + SESSION_SECONDS * SECOND;
    oauth::insert_session(ex, &hash_key(&token), user_id, &csrf, now, expires_at).await?;
    Ok(token)
}

/// A one-time setup link chooses the person's password and signs them in (a session token).
pub async fn set_password_with_link(app: &App, link_token: &str, password: &str) -> Result<String> {
    let hash = hash_password(password)?;
    let mut tx = app.db.begin_write().await?;
    let token = take_setup_link(&mut tx, link_token, &hash, time::now()).await?;
    tx.commit().await?;
    crate::credentials::revoked(app).await;
    Ok(token)
}

/// Takes a setup link within a transaction: sets the person's password (already hashed) and
/// starts their session, if the link is unused, unexpired and the invitation behind it still
/// stands ([`teammates::invitation_stands`]); otherwise the link is gone, and nothing it wrote
/// outlives the transaction.
pub(crate) async fn take_setup_link(
    conn: &mut sqlx::AnyConnection,
    link_token: &str,
    password_hash: &str,
    now: Micros,
) -> Result<String> {
    let gone = || Error::NotFound("This link was already used, has expired or was revoked.");
    let user_id = oauth::take_password_setup(&mut *conn, &hash_key(link_token), now)
        .await?
        .ok_or_else(gone)?;
    let invitee = users::invitee(&mut *conn, user_id).await?;
    if !invitee.as_ref().is_some_and(teammates::invitation_stands) {
        return Err(gone());
    }
    oauth::set_password(conn, user_id, password_hash).await?;
    start_session(&mut *conn, user_id, now).await
}

/// Sets (or, empty, clears) the person's own time zone: as stored.
pub async fn set_time_zone(app: &App, user_id: i64, time_zone: Option<String>) -> Result<String> {
    crate::validate::time_zone("time_zone", time_zone.clone())
        .map_err(|violation| Error::Invalid(vec![violation]))?;
    let zone = time_zone
        .map(|z| z.trim().to_owned())
        .filter(|z| !z.is_empty());
    crate::store::users::set_time_zone(app.db.pool(), user_id, zone.as_deref()).await?;
    Ok(zone.unwrap_or_default())
}

pub async fn session(app: &App, token: &str) -> Result<Option<SessionRow>> {
    Ok(oauth::session(app.db.pool(), &hash_key(token), time::now()).await?)
}

pub async fn logout(app: &App, token: &str) -> Result<()> {
    oauth::delete_session(app.db.pool(), &hash_key(token)).await?;
    crate::credentials::revoked(app).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_login_checks_as_many_hashes_whatever_the_email() {
        let person = |id, hash: Option<&str>| oauth::LoginRow {
            id,
            password_hash: hash.map(str::to_owned),
        };
        let unknown: Vec<oauth::LoginRow> = Vec::new();
        let invited_only = [person(1, None)];
        let one = [person(1, None), person(2, Some("h2"))];
        let two = [person(1, Some("h1")), person(2, Some("h2"))];
        for users in [&unknown[..], &invited_only, &one, &two] {
            assert_eq!(hashes_to_check(users).len(), LOGIN_VERIFICATIONS);
        }
        assert_eq!(
            hashes_to_check(&one),
            [(Some(1), "h2"), (None, DUMMY_HASH.as_str())]
        );
    }
}
