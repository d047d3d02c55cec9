//! Idempotent retries of the REST API's POSTs (Stripe's `Idempotency-Key` convention): the
//! first answer for a key is kept per credential for [`KEPT_FOR`] and replayed for a retry
//! with the same key and the same request; the same key with a different request is refused;
//! while the first request is being carried out a retry is told so (one effect, never two).
//! A request whose process died lets its key go after [`LOCK`].

use std::time::Duration;

use crate::auth::Principal;
use crate::error::FieldViolation;
use crate::store::idempotency as kept;
use crate::{App, Error, Result, time};

/// How long an answer is kept.
pub const KEPT_FOR: Duration = Duration::from_secs(24 * 60 * 60);
/// How long a request holds its key before a retry may take it over.
pub const LOCK: Duration = Duration::from_secs(60);
/// The header, as documented.
pub const HEADER: &str = "Idempotency-Key";

/// What an earlier use of the key means for this request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begun {
    Proceed,
    Replay {
        status: u16,
        content_type: String,
        body: Vec<u8>,
    },
    InFlight,
    Mismatch,
}

/// 1 to 255 visible ASCII characters.
fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::invalid(FieldViolation::new(
            HEADER,
            "The Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is best).",
        )));
    }
    Ok(())
}

pub async fn begin(app: &App, principal: &Principal, key: &str, hash: &str) -> Result<Begun> {
    check_key(key)?;
    let credential = principal.token_id.as_str();
    // A few rounds: each loses only to another request changing the row in between.
    for _ in 0..3 {
        let now = time::now();
        let locked_until = now + LOCK.as_micros() as i64;
        let pool = app.db.pool();
        if kept::claim(pool, credential, key, hash, now, locked_until).await? {
            return Ok(Begun::Proceed);
        }
        let Some(row) = kept::get(pool, credential, key).await? else {
            continue;
        };
        let expired = row.created_at < now - KEPT_FOR.as_micros() as i64;
        let abandoned = row.status.is_none() && row.locked_until < now;
        if expired || abandoned {
            if kept::take_over(pool, credential, key, &row, hash, now, locked_until).await? {
                return Ok(Begun::Proceed);
            }
            continue;
        }
        if row.request_hash != hash {
            return Ok(Begun::Mismatch);
        }
        return Ok(match row.status {
            None => Begun::InFlight,
            Some(status) => Begun::Replay {
                status: u16::try_from(status).unwrap_or(500),
                content_type: row.content_type.unwrap_or_default(),
                body: row.body.unwrap_or_default(),
            },
        });
    }
    Ok(Begun::InFlight)
}

/// Keeps the answer of the request that claimed `key` (`status` 0: lets the key go).
pub async fn finish(
    app: &App,
    principal: &Principal,
    key: &str,
    hash: &str,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> Result<()> {
    check_key(key)?;
    let credential = principal.token_id.as_str();
    let pool = app.db.pool();
    if status == 0 {
        kept::release(pool, credential, key, hash).await?;
    } else {
        kept::keep(
            pool,
            credential,
            key,
            hash,
            i64::from(status),
            content_type,
            body,
        )
        .await?;
    }
    Ok(())
}

/// Forgets answers older than [`KEPT_FOR`], every hour, until the process ends.
pub async fn forget_expired_forever(app: App) {
    loop {
        let cutoff = time::now() - KEPT_FOR.as_micros() as i64;
        if let Err(err) = kept::forget_older_than(app.db.pool(), cutoff).await {
            tracing::warn!(error = %err, "expired idempotency keys could not be forgotten");
        }
        tokio::time::sleep(Duration::from_secs(60 * 60)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_short_visible_ascii() {
        assert!(check_key("0b5c1f4e-8d3a-4c1e-9f7a-2b6d8e0c4a11").is_ok());
        assert!(check_key("retry-7").is_ok());
        assert!(check_key("").is_err());
        assert!(check_key("has space").is_err());
        assert!(check_key(&"k".repeat(256)).is_err());
        assert!(check_key("clé").is_err());
    }
}
