//! Credentials from memory: a resolved key, OAuth access token or session is kept for a while,
//! so an authenticated call in the steady state makes no database round trip. Revocations
//! (a key deleted, a grant revoked, a session ended) clear every cached credential at once, in
//! this process directly and in every other process on PostgreSQL through NOTIFY; on SQLite,
//! where another process cannot be told, an entry lives one second, so a revocation made
//! elsewhere takes effect within a second. Revocations are rare; clearing everything keeps the
//! rule simple and leaves no credential behind.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use moka::sync::Cache;

use crate::App;
use crate::principal::Principal;
use crate::store::Dialect;
use crate::time::Micros;

/// The NOTIFY channel of revocations.
pub const CHANNEL: &str = "lps_credentials";

/// Credentials cached at most (each a few hundred bytes).
const CAPACITY: u64 = 100_000;

/// A resolved credential and, for tokens, when it stops being valid.
#[derive(Clone)]
struct Resolved {
    principal: Principal,
    expires_at: Option<Micros>,
}

/// What the gatekeeper remembers of credentials, by their SHA-256.
pub struct CredentialCache {
    entries: Cache<String, Resolved>,
    /// Bumped by every revocation: a lookup that began before one does not cache its answer.
    epoch: AtomicU64,
    /// Credentials whose `last_used_at` was written in the last second.
    touched: Cache<String, ()>,
}

impl CredentialCache {
    pub fn new(dialect: Dialect) -> Self {
        let life = match dialect {
            Dialect::Sqlite => Duration::from_secs(1),
            // NOTIFY clears it at once; the bound only limits how long a notification lost to a
            // dropped listener connection could matter.
            Dialect::Postgres => Duration::from_secs(30),
        };
        Self {
            entries: Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(life)
                .build(),
            epoch: AtomicU64::new(0),
            touched: Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(Duration::from_secs(1))
                .build(),
        }
    }

    /// The principal of a cached, unexpired credential.
    pub fn get(&self, hash: &str, now: Micros) -> Option<Principal> {
        let resolved = self.entries.get(hash)?;
        if resolved.expires_at.is_some_and(|at| at <= now) {
            self.entries.invalidate(hash);
            return None;
        }
        Some(resolved.principal)
    }

    /// The current epoch, read before a lookup in the database.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Remembers what a lookup found, unless a revocation happened since it began.
    pub fn remember(
        &self,
        epoch: u64,
        hash: String,
        principal: Principal,
        expires_at: Option<Micros>,
    ) {
        if self.epoch() == epoch {
            self.entries.insert(
                hash,
                Resolved {
                    principal,
                    expires_at,
                },
            );
            // A revocation between the check and the insert must still win.
            if self.epoch() != epoch {
                self.entries.invalidate_all();
            }
        }
    }

    /// Forgets every credential.
    pub fn clear(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.entries.invalidate_all();
    }

    /// Whether this credential's last use is due to be written (at most once a second each).
    pub fn due_for_touch(&self, id: &str) -> bool {
        if self.touched.contains_key(id) {
            return false;
        }
        self.touched.insert(id.to_owned(), ());
        true
    }
}

/// After a revocation has committed: forget every credential here and, on PostgreSQL, in every
/// other process.
pub async fn revoked(app: &App) {
    app.credentials.clear();
    announce_revocation(&app.db).await;
}

/// Tells every process on this PostgreSQL database that a credential was revoked (an admin
/// command has no cache of its own; on SQLite other processes forget within a second).
pub async fn announce_revocation(db: &crate::store::Db) {
    if db.dialect() != Dialect::Postgres {
        return;
    }
    let told = match db.pool().acquire().await {
        Ok(mut conn) => crate::store::notify(&mut conn, db.dialect(), CHANNEL, "").await,
        Err(err) => Err(err),
    };
    if let Err(err) = told {
        tracing::warn!(error = %err, "other processes could not be told of a revocation");
    }
}

/// Clears the cache on every revocation another process announces. Runs until the process ends.
pub async fn relay_postgres(cache: Arc<CredentialCache>, database_url: String) {
    crate::store::listen_forever(&database_url, CHANNEL, |_| cache.clear()).await;
}
