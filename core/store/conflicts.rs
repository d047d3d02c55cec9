//! What a database error means for the caller: a write that lost a race and may be retried,
//! an outage (storage full, the database out of reach) answered 503/507 with `Retry-After`,
//! or an internal error; and the flag that keeps `/readyz` honest while storage is full.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::Outage;
use crate::{Error, Result};

/// Whether a statement lost a race with a concurrent writer and the operation would succeed if
/// run again: a unique constraint met by a row committed meanwhile (two requests creating the
/// same lead or slug at once), a reference to a row deleted meanwhile (an import storing a lead
/// that an erasure removed after the import had found it: run again, it creates the lead anew),
/// or a PostgreSQL serialisation failure or deadlock.
pub fn is_write_conflict(err: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = err else {
        return false;
    };
    matches!(
        db.kind(),
        sqlx::error::ErrorKind::UniqueViolation | sqlx::error::ErrorKind::ForeignKeyViolation
    ) || matches!(db.code().as_deref(), Some("40001" | "40P01"))
}

/// Runs a write operation again (up to four times in all) while it meets
/// [`Error::Conflict`]: the next attempt sees the row the other request committed (an existing
/// lead is then updated instead of inserted twice, a taken slug skipped).
pub async fn retry_conflicts<T, F, Fut>(mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Err(Error::Conflict(err)) if tries < 4 => {
                tracing::debug!(error = %err, tries, "write conflict; retrying");
                tries += 1;
                tokio::time::sleep(Duration::from_millis(5 * tries)).await;
            }
            outcome => return outcome,
        }
    }
}

/// What an error says of the database itself, if it is an outage rather than a refusal of
/// one statement: storage full (SQLite's `SQLITE_FULL` or an I/O error writing, PostgreSQL's
/// class 53, insufficient resources), or the database out of reach.
pub fn outage_of(err: &sqlx::Error) -> Option<Outage> {
    match err {
        sqlx::Error::Database(db) => {
            let code = db.code()?;
            let storage = match code.parse::<i32>() {
                // SQLite: the primary result code is the low byte of an extended one.
                Ok(sqlite) => matches!(sqlite & 0xff, 10 | 13),
                Err(_) => code.starts_with("53"),
            };
            storage.then_some(Outage::StorageFull)
        }
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => {
            Some(Outage::DatabaseUnreachable)
        }
        sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) => Some(Outage::DatabaseUnreachable),
        _ => None,
    }
}

/// Whether writes have been failing for want of storage since the last one that succeeded:
/// `/readyz` says not ready meanwhile (and tries a write of its own to find out when space is
/// back). One flag for the process, as the storage is.
pub(super) static STORAGE_FAILING: AtomicBool = AtomicBool::new(false);

/// A database error as core's error: a write conflict the caller may retry, an outage (storage
/// full, the database unreachable: 503/507 with `Retry-After`), else internal.
impl From<sqlx::Error> for crate::Error {
    fn from(err: sqlx::Error) -> Self {
        if is_write_conflict(&err) {
            return Self::Conflict(err);
        }
        match outage_of(&err) {
            Some(outage) => {
                if outage == Outage::StorageFull {
                    STORAGE_FAILING.store(true, Ordering::Relaxed);
                }
                tracing::warn!(error = %err, reason = outage.reason(), "the database is out");
                Self::Unavailable(outage)
            }
            None => Self::Internal(err.into()),
        }
    }
}
