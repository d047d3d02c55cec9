//! Connections kept apart from the pool for the hottest single read: a lead page's lookup on
//! its first visit.
//!
//! On a SQLite file the lookup runs on the calling thread, on connections of SQLite's own
//! opened by rusqlite ([`OnThread`]). sqlx runs every SQLite statement on a thread of the
//! connection's, so each query was two thread switches (the request to that thread, the answer
//! back): ~38% of a first visit's CPU. The read is an indexed lookup of one row from pages
//! SQLite keeps in memory, a few microseconds, shorter than the switches it saves; a WAL reader
//! never waits for the writer, and these connections never wait at all (no busy timeout): a
//! read that cannot go at once, or fails in any way, is run again the pooled way below, which
//! reports sqlx's own error if it fails too.
//!
//! Otherwise (PostgreSQL, an in-memory SQLite, or when the on-thread read gives way) the lane
//! holds connections detached from sqlx's pool. sqlx's pool pings every connection it is given
//! back, whatever happened to it: on SQLite a round trip to the connection's thread, on
//! PostgreSQL a network round trip, after every query. A connection here goes back to the lane
//! only once its read finished ([`LaneConnection::finished`]); one whose read failed or was
//! given up (the visitor left) is dropped, and the lane takes a fresh one from the pool when it
//! needs one.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rusqlite::OptionalExtension;
use sqlx::{AnyConnection, AnyPool};
use tokio::sync::{Semaphore, SemaphorePermit};

use super::designs::{self, PageRow};

/// Connections the lane holds at most (besides the pool's), of either kind: reads waiting
/// beyond them queue (pooled) or go the pooled way (on the thread).
const CONNECTIONS: usize = 4;

pub struct ReadLane {
    pool: AnyPool,
    idle: Mutex<Vec<AnyConnection>>,
    permits: Semaphore,
    on_thread: Option<OnThread>,
}

impl std::fmt::Debug for ReadLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().map_or(0, |idle| idle.len());
        f.debug_struct("ReadLane")
            .field("idle", &idle)
            .field("on_thread", &self.on_thread.as_ref().map(|o| &o.file))
            .finish()
    }
}

/// A connection of the lane, given back by [`LaneConnection::finished`] and dropped otherwise.
pub struct LaneConnection<'l> {
    lane: &'l ReadLane,
    connection: Option<AnyConnection>,
    _permit: SemaphorePermit<'l>,
}

/// SQLite connections of the lane's own on the database file, used on the calling thread.
struct OnThread {
    file: PathBuf,
    idle: Mutex<Vec<rusqlite::Connection>>,
    /// Connections open, idle or in use.
    open: AtomicUsize,
    /// Set once the file could not be opened: every read goes the pooled way from then on.
    unusable: AtomicBool,
}

impl OnThread {
    /// Runs `read` on one of the lane's connections, or answers `None` when it cannot at once
    /// (every connection in use, the file cannot be opened, SQLite is busy or fails): the
    /// caller then reads the pooled way.
    fn read<T>(
        &self,
        read: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> Option<T> {
        if self.unusable.load(Ordering::Relaxed) {
            return None;
        }
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let connection = match idle {
            Some(connection) => connection,
            None => self.open()?,
        };
        match read(&connection) {
            Ok(found) => {
                let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
                idle.push(connection);
                Some(found)
            }
            Err(err) => {
                tracing::debug!(error = %err, "an on-thread read gave way to the pool");
                self.open.fetch_sub(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// A new connection, if fewer than [`CONNECTIONS`] are open.
    fn open(&self) -> Option<rusqlite::Connection> {
        let taken = self
            .open
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |open| {
                (open < CONNECTIONS).then_some(open + 1)
            });
        taken.ok()?;
        let opened = Self::connect(&self.file);
        if let Err(err) = &opened {
            tracing::warn!(
                file = %self.file.display(),
                error = %err,
                "first-visit lookups cannot read the SQLite file directly; they use the pool"
            );
            self.unusable.store(true, Ordering::Relaxed);
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        opened.ok()
    }

    /// A connection that only reads and never waits: an existing file (no create), no busy
    /// timeout, `query_only`. SQLite's own mutex is off (`NO_MUTEX`): a connection is used by
    /// one thread at a time, taken out of `idle` for its read.
    fn connect(file: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> {
        use rusqlite::OpenFlags;
        let connection = rusqlite::Connection::open_with_flags(
            file,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(std::time::Duration::ZERO)?;
        connection.pragma_update(None, "query_only", true)?;
        Ok(connection)
    }
}

impl ReadLane {
    /// A lane whose connections come from `pool` (set up as the pool's are), and, given the
    /// SQLite file the pool reads, that read it on the calling thread.
    pub fn new(pool: AnyPool, sqlite_file: Option<PathBuf>) -> Self {
        Self {
            pool,
            idle: Mutex::default(),
            permits: Semaphore::new(CONNECTIONS),
            on_thread: sqlite_file.map(|file| OnThread {
                file,
                idle: Mutex::default(),
                open: AtomicUsize::new(0),
                unusable: AtomicBool::new(false),
            }),
        }
    }

    /// The lead's page in the campaign ([`designs::page`]), on the calling thread where it can
    /// be, else on a connection of the lane.
    pub async fn page(
        &self,
        campaign_slug: &str,
        lead_slug: &str,
    ) -> sqlx::Result<Option<PageRow>> {
        let on_thread = self.on_thread.as_ref().and_then(|on_thread| {
            on_thread.read(|connection| {
                connection
                    .prepare_cached(designs::PAGE)?
                    .query_row((lead_slug, campaign_slug), PageRow::from_sqlite)
                    .optional()
            })
        });
        if let Some(found) = on_thread {
            return Ok(found);
        }
        let mut connection = self.acquire().await?;
        let found = designs::page(&mut *connection, campaign_slug, lead_slug).await?;
        connection.finished();
        Ok(found)
    }

    /// A connection of the lane, waiting at most as long as the pool's acquire does (then
    /// `PoolTimedOut`, as the pool would answer).
    async fn acquire(&self) -> sqlx::Result<LaneConnection<'_>> {
        let wait = self.pool.options().get_acquire_timeout();
        let permit = tokio::time::timeout(wait, self.permits.acquire())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let connection = match idle {
            Some(connection) => connection,
            // Taken out of the pool for good: the pool may open another in its place.
            None => self.pool.acquire().await?.detach(),
        };
        Ok(LaneConnection {
            lane: self,
            connection: Some(connection),
            _permit: permit,
        })
    }
}

impl LaneConnection<'_> {
    /// The read finished: the connection is as it was, ready for the next.
    pub fn finished(mut self) {
        if let Some(connection) = self.connection.take() {
            let mut idle = self.lane.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.push(connection);
        }
    }
}

impl std::ops::Deref for LaneConnection<'_> {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        self.connection.as_ref().expect("taken only by finished")
    }
}

impl std::ops::DerefMut for LaneConnection<'_> {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        self.connection.as_mut().expect("taken only by finished")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sqlx::any::{AnyPoolOptions, install_default_drivers};

    use super::*;

    /// A database file with one lead on the page `/p/spring/lead-a` of a live campaign.
    async fn one_page() -> (tempfile::TempDir, crate::store::Db) {
        let (dir, db) = crate::store::test_workspace().await;
        for sql in [
            "INSERT INTO brandings (workspace_id, name, created_at) VALUES (1, 'B', 0)",
            "INSERT INTO campaigns (workspace_id, branding_id, name, slug, created_at, is_live,
                                    live_version) VALUES (1, 1, 'Spring', 'spring', 0, 1, 3)",
            "INSERT INTO leads (workspace_id, slug, first_name, email, custom_values, created_at,
                                updated_at)
             VALUES (1, 'lead-a', 'Ada', NULL, '{\"team\":\"x\"}', 0, 42)",
            "INSERT INTO campaign_leads (campaign_id, lead_id, created_at) VALUES (1, 1, 0)",
        ] {
            sqlx::query(sql).execute(db.pool()).await.unwrap();
        }
        (dir, db)
    }

    #[tokio::test]
    async fn a_sqlite_file_is_read_on_the_calling_thread_as_the_pool_reads_it() {
        let (_dir, db) = one_page().await;
        let lane = db.read_lane();
        let on_thread = lane.page("spring", "lead-a").await.unwrap().unwrap();
        // Read on the lane's own SQLite connection: none was taken from the pool.
        let own = lane.on_thread.as_ref().expect("a file database");
        assert_eq!(own.idle.lock().unwrap().len(), 1);
        assert!(lane.idle.lock().unwrap().is_empty());
        assert!(lane.page("spring", "lead-b").await.unwrap().is_none());
        assert!(lane.page("autumn", "lead-a").await.unwrap().is_none());

        let pooled = ReadLane::new(db.pool().clone(), None);
        let from_pool = pooled.page("spring", "lead-a").await.unwrap().unwrap();
        assert_eq!(format!("{on_thread:?}"), format!("{from_pool:?}"));
        assert_eq!(on_thread.lead_updated_at, 42);
        assert_eq!(on_thread.live_version, 3);
        assert_eq!(on_thread.email, None);
        assert_eq!(on_thread.custom_values, r#"{"team":"x"}"#);
    }

    #[tokio::test]
    async fn a_page_row_is_read_by_the_positions_of_its_named_columns() {
        let (dir, _db) = one_page().await;
        let connection = OnThread::connect(&dir.path().join("lps.db")).unwrap();
        let statement = connection.prepare(designs::PAGE).unwrap();
        assert_eq!(statement.column_names(), designs::PAGE_COLUMNS);
    }

    #[tokio::test]
    async fn a_file_it_cannot_open_sends_every_read_the_pooled_way() {
        let (dir, db) = one_page().await;
        let lane = ReadLane::new(db.pool().clone(), Some(dir.path().join("missing.db")));
        for _ in 0..2 {
            let page = lane.page("spring", "lead-a").await.unwrap();
            assert_eq!(page.unwrap().first_name.as_deref(), Some("Ada"));
        }
        let own = lane.on_thread.as_ref().unwrap();
        assert!(own.unusable.load(Ordering::Relaxed));
        assert_eq!(own.open.load(Ordering::Relaxed), 0);
        assert_eq!(lane.idle.lock().unwrap().len(), 1);
    }

    #[test]
    fn a_read_that_fails_gives_way_and_its_connection_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lps.db");
        rusqlite::Connection::open(&file).unwrap();
        let lane = OnThread {
            file,
            idle: Mutex::default(),
            open: AtomicUsize::new(0),
            unusable: AtomicBool::new(false),
        };
        // query_only: the lane's connections cannot write.
        let wrote = lane.read(|c| c.execute("CREATE TABLE t (x INTEGER)", ()));
        assert_eq!(wrote, None);
        assert_eq!(lane.open.load(Ordering::Relaxed), 0);
        assert_eq!(
            lane.read(|c| c.query_row("SELECT 7", (), |r| r.get::<_, i64>(0))),
            Some(7)
        );
        assert_eq!(lane.idle.lock().unwrap().len(), 1);
        // Every connection in use: the next read gives way at once instead of waiting.
        let mut held = vec![lane.idle.lock().unwrap().pop().unwrap()];
        held.extend((1..CONNECTIONS).map(|_| lane.open().unwrap()));
        assert_eq!(lane.read(|_| Ok(())), None);
        assert_eq!(lane.open.load(Ordering::Relaxed), CONNECTIONS);
        assert!(!lane.unusable.load(Ordering::Relaxed));
    }

    #[tokio::test]
    async fn a_read_waits_for_a_free_connection_no_longer_than_the_pool_would() {
        install_default_drivers();
        let pool = AnyPoolOptions::new()
            .acquire_timeout(Duration::from_millis(200))
            .connect("sqlite::memory:")
            .await
            .unwrap();
        let lane = ReadLane::new(pool, None);
        let mut held = Vec::new();
        for _ in 0..CONNECTIONS {
            held.push(lane.acquire().await.unwrap());
        }
        let waited = lane
            .acquire()
            .await
            .err()
            .expect("every connection is taken");
        assert!(matches!(waited, sqlx::Error::PoolTimedOut), "{waited}");
        // A finished read gives its connection back for the next, which needs no new one.
        held.pop().unwrap().finished();
        let next = lane.acquire().await.unwrap();
        next.finished();
        assert_eq!(lane.idle.lock().unwrap().len(), 1);
    }
}
