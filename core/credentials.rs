//! Credentials from memory: a resolved key, OAuth access token or session is kept for a while,
//! so an authenticated call in the steady state makes no database round trip. Revocations
//! (a key deleted, a grant revoked, a session ended) clear every cached credential at once, in
//! this process directly and in every other process on PostgreSQL through NOTIFY; on SQLite,
//! where another process cannot be told, an entry lives one second, so a revocation made
//! elsewhere takes effect within a second. Revocations are rare; clearing everything keeps the
//! rule simple and leaves no credential behind.
//!
//! Both maps are `quick_cache`'s, each entry stamped with when it was kept: an entry past its
//! life is a miss (and removed). `moka`, used before, kept its own clock and read log on every
//! hit, about half of what authenticating a cached key cost (issue 50's profile of
//! `GET /hello-world-user`), as it did for pages (`page_cache.rs`). Expired entries are not
//! swept; they stay within the same bound of entries until displaced.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use quick_cache::sync::Cache;

use crate::App;
use crate::principal::Principal;
use crate::store::Dialect;
use crate::time::{self, Micros};

/// The NOTIFY channel of revocations.
pub const CHANNEL: &str = "lps_credentials";

/// Credentials cached at most (each a few hundred bytes).
const CAPACITY: usize = 100_000;
/// How long a credential's last use is not written again.
const TOUCH_EVERY: Duration = Duration::from_secs(1);

/// A resolved credential, when it was kept, and, for tokens, when it stops being valid.
#[derive(Clone)]
struct Resolved {
    principal: Principal,
    kept_at: Micros,
    expires_at: Option<Micros>,
}

/// Whether something stamped at `at` is younger than `life` at `now` (a clock that went back
/// makes it old: it is looked up again rather than kept longer).
fn younger(at: Micros, life: Micros, now: Micros) -> bool {
    (0..life).contains(&(now - at))
}

/// What the gatekeeper remembers of credentials, by their SHA-256.
pub struct CredentialCache {
    entries: Cache<String, Resolved>,
    /// How long an entry is used.
    life: Micros,
    /// Bumped by every revocation: a lookup that began before one does not cache its answer.
    epoch: AtomicU64,
    /// When each credential's `last_used_at` was last written.
    touched: Cache<String, Micros>,
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
            entries: Cache::new(CAPACITY),
            life: time::micros(life),
            epoch: AtomicU64::new(0),
            touched: Cache::new(CAPACITY),
        }
    }

    /// The principal of a cached, unexpired credential.
    pub fn get(&self, hash: &str, now: Micros) -> Option<Principal> {
        let resolved = self.entries.get(hash)?;
        let expired = resolved.expires_at.is_some_and(|at| at <= now);
        if expired || !younger(resolved.kept_at, self.life, now) {
            self.entries.remove(hash);
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
        kept_at: Micros,
        expires_at: Option<Micros>,
    ) {
        if self.epoch() == epoch {
            self.entries.insert(
                hash,
                Resolved {
                    principal,
                    kept_at,
                    expires_at,
                },
            );
            // A revocation between the check and the insert must still win.
            if self.epoch() != epoch {
                self.entries.clear();
            }
        }
    }

    /// Forgets every credential.
    pub fn clear(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.entries.clear();
    }

    /// Whether this credential's last use is due to be written at `now` (at most once a second
    /// each; two requests at once may both be told so, which writes the same time twice).
    pub fn due_for_touch(&self, id: &str, now: Micros) -> bool {
        if self
            .touched
            .get(id)
            .is_some_and(|at| younger(at, time::micros(TOUCH_EVERY), now))
        {
            return false;
        }
        self.touched.insert(id.to_owned(), now);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::CredentialKind;
    use crate::store::users::UserRow;

    fn principal() -> Principal {
        let user = UserRow {
            id: 1,
            account_id: 2,
            name: "Ada".into(),
            email: "ada@example.com".into(),
        };
        Principal::of_credential(CredentialKind::ApiKey, "7", user, Some(3), false)
    }

    #[test]
    fn an_entry_lives_its_life_and_no_longer() {
        let cache = CredentialCache::new(Dialect::Sqlite);
        let epoch = cache.epoch();
        cache.remember(epoch, "h".into(), principal(), 10_000_000, None);
        assert!(cache.get("h", 10_000_000).is_some());
        assert!(cache.get("h", 10_999_999).is_some());
        assert!(
            cache.get("h", 11_000_000).is_none(),
            "a second old on SQLite"
        );
        assert!(cache.get("h", 10_000_000).is_none(), "removed once expired");
        // A clock that went back does not stretch an entry's life.
        cache.remember(cache.epoch(), "h".into(), principal(), 10_000_000, None);
        assert!(cache.get("h", 9_999_999).is_none());
    }

    #[test]
    fn a_token_ends_when_it_expires_and_a_revocation_forgets_everything() {
        let cache = CredentialCache::new(Dialect::Postgres);
        cache.remember(cache.epoch(), "t".into(), principal(), 0, Some(5_000_000));
        assert!(cache.get("t", 4_999_999).is_some());
        assert!(cache.get("t", 5_000_000).is_none());
        cache.remember(cache.epoch(), "k".into(), principal(), 0, None);
        assert!(cache.get("k", 20_000_000).is_some(), "30 s on PostgreSQL");
        let before = cache.epoch();
        cache.clear();
        assert!(cache.get("k", 0).is_none());
        // A lookup that began before the revocation does not keep its answer.
        cache.remember(before, "k".into(), principal(), 0, None);
        assert!(cache.get("k", 0).is_none());
    }

    #[test]
    fn a_last_use_is_written_at_most_once_a_second() {
        let cache = CredentialCache::new(Dialect::Sqlite);
        assert!(cache.due_for_touch("7", 1_000_000));
        assert!(!cache.due_for_touch("7", 1_500_000));
        assert!(
            cache.due_for_touch("8", 1_500_000),
            "each credential its own"
        );
        assert!(cache.due_for_touch("7", 2_000_000));
        assert!(
            cache.due_for_touch("7", 1_000_000),
            "after the clock went back"
        );
    }
}
