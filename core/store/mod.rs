//! Storage: one sqlx `Any` pool over SQLite or PostgreSQL, one module per aggregate.
//!
//! Every statement is plain SQL text that both databases accept (`$n` placeholders,
//! `RETURNING`, `ON CONFLICT`); the few dialect differences live in [`Dialect`]. Values are the
//! types the `Any` driver carries: integers, text, and `Option` of them. Timestamps are
//! microseconds since the epoch (see [`crate::time`]).

pub mod accounts;
pub mod api_tokens;
pub mod assets;
pub mod audiences;
pub mod backup;
pub mod brandings;
pub mod callbacks;
pub mod campaigns;
pub mod certificates;
mod checkpoints;
mod conflicts;
pub mod credits;
pub mod csv_imports;
pub mod deployment;
pub mod design_runs;
pub mod designs;
pub mod domains;
pub mod engagement;
pub mod engagement_reports;
pub mod enrichments;
pub mod erasure;
pub mod form_submissions;
pub mod idempotency;
pub mod jobs;
pub mod lead_lists;
pub mod leads;
pub mod notification_channels;
mod notify;
pub mod oauth;
pub mod read_lane;
mod sql;
mod urls;
pub mod users;
pub mod variables;
pub mod workspaces;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{Any, AnyPool, Executor, Transaction};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::{Error, Result};

use conflicts::STORAGE_FAILING;
pub use conflicts::retry_conflicts;
pub use notify::{listen_forever, listen_forever_resyncing, notify};
use sql::insert_into;
use sql::is_sqlite;
pub(crate) use sql::status_list;
pub use sql::{
    WorkspaceTable, bulk_sql, ids_in_workspace, like_pattern, multi_row_insert, placeholder_list,
    placeholder_rows, rows_per_statement,
};
use urls::{check_sqlite_path, sqlite_file, sqlite_url};
pub use urls::{redact, sqlite_path};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// Which database a [`Db`] speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// Appended to a `SELECT` that claims rows for a worker: on PostgreSQL other workers skip
    /// the claimed rows instead of waiting; SQLite has one writer at a time anyway.
    pub fn skip_locked(self) -> &'static str {
        match self {
            Self::Sqlite => "",
            Self::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// Appended to a `SELECT` whose row the transaction then rewrites from what it read: on
    /// PostgreSQL a concurrent writer waits; SQLite's write transactions are already one at a
    /// time (`BEGIN IMMEDIATE`).
    pub fn for_update(self) -> &'static str {
        match self {
            Self::Sqlite => "",
            Self::Postgres => " FOR UPDATE",
        }
    }

    /// The dialect a database URL names, if lps supports it.
    pub fn of_url(url: &str) -> Option<Self> {
        if url.starts_with("sqlite:") {
            Some(Self::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Self::Postgres)
        } else {
            None
        }
    }
}

/// A pool of SQLite connections set up as every connection of lps is: WAL, `synchronous =
/// NORMAL` (durable at each checkpoint, consistent always), foreign keys, a busy timeout for
/// other processes' writes, and statement journals in memory (a multi-row statement that may
/// need undoing otherwise writes its undo pages to a temporary file: an eighth of an import's
/// time), and a checkpoint once the write-ahead log holds 4,000 pages (16 MiB) instead of
/// SQLite's default 1,000: a checkpoint copies each page once however many commits changed it
/// since the last, and with 1,000 the leads' index pages were copied again after nearly every
/// batch of an import (SQLite alone stored 100,000 leads 18% faster with 10,000 than with
/// 1,000). The log's file stays at about 16 MiB once it grew to it. (A file's writer makes no
/// checkpoints itself: a thread of its own does, see `checkpoints.rs`; the threshold stays for
/// a process whose thread could not start.) Deleted content is
/// overwritten with zeros (`secure_delete`), so an erased person's values do not linger in
/// the file's free space.
///
/// `cache_kib` is the connection's page cache: SQLite's default (2 MiB) for readers, more for
/// the one writer, whose inserts into `page_events`' indexes otherwise read most index
/// pages back from the OS (`pread`) on every batch of beacons. `more_setup` runs after the
/// rest (the writer's, when a thread of its own checkpoints).
///
/// A connection is not pinged before each use (sqlx's `test_before_acquire`): a SQLite
/// connection is a file opened in this process, with no server or network between that could
/// drop it, and the ping was a round trip to the connection's thread before every query (two
/// thread switches on a first visit's lookup). A connection that does fail reports it on use.
fn sqlite_pool(
    connections: u32,
    acquire_timeout: Duration,
    cache_kib: u32,
    more_setup: &'static str,
) -> AnyPoolOptions {
    discarding_unknown_state(AnyPoolOptions::new())
        .acquire_timeout(acquire_timeout)
        .max_connections(connections)
        .test_before_acquire(false)
        .after_connect(move |conn, _meta| {
            Box::pin(async move {
                conn.execute(SETUP).await?;
                // Negative: KiB rather than pages.
                let cache = format!("PRAGMA cache_size = -{cache_kib}");
                conn.execute(sqlx::AssertSqlSafe(cache)).await?;
                if !more_setup.is_empty() {
                    conn.execute(more_setup).await?;
                }
                Ok(())
            })
        })
}

/// SQLite's settings for the whole process, made once before its first connection: no
/// memory statistics (`SQLITE_CONFIG_MEMSTATUS`). With them (SQLite's default), every
/// allocation and free SQLite makes takes one global mutex to count it: a tenth of the SQLite
/// thread's CPU while an import ran (issue 50's profile), for figures lps never reads (the
/// `sqlite3_memory_used` family; the page caches are bounded by `cache_size` instead).
/// `sqlite3_config` works only before SQLite initialises itself: in a process that already
/// opened a database some other way it is refused, harmlessly, and SQLite keeps counting.
pub(crate) fn configure_sqlite_once() {
    static CONFIGURED: std::sync::Once = std::sync::Once::new();
    CONFIGURED.call_once(|| {
        // SAFETY: `SQLITE_CONFIG_MEMSTATUS` takes one int. `Once` makes this the only call,
        // and every connection lps opens (sqlx's through `Db` and `backup`, rusqlite's in
        // `read_lane` and `checkpoints`) calls this first, so no other thread is inside
        // SQLite meanwhile. Called late, SQLite only answers `SQLITE_MISUSE`.
        let code = unsafe {
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS,
                0 as std::ffi::c_int,
            )
        };
        if code != rusqlite::ffi::SQLITE_OK {
            tracing::debug!(
                code,
                "SQLite was initialised already; memory statistics stay on"
            );
        }
    });
}

/// Every SQLite connection's setup (see [`sqlite_pool`]).
const SETUP: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                     PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON; \
                     PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 4000; \
                     PRAGMA secure_delete = ON;";

/// SQLite's own default page cache, for each reading connection.
const READER_CACHE_KIB: u32 = 2_000;
/// The writer's page cache (see [`sqlite_pool`]); `docs/limits.md` counts it in lps's memory.
const WRITER_CACHE_KIB: u32 = 16 * 1024;

/// A pool that never hands out a connection whose transaction state is unknown: one still
/// counted inside a transaction (its `ROLLBACK` failed: SQLite rolls back by itself when the
/// disk is full, and sqlx's own rollback then fails) is closed and replaced. Without this, the
/// one writer connection of a SQLite database refused every later transaction ("non-zero
/// transaction depth") until the process restarted.
fn discarding_unknown_state(options: AnyPoolOptions) -> AnyPoolOptions {
    options.before_acquire(|conn, _meta| {
        Box::pin(async move {
            let clean = !sqlx::Connection::is_in_transaction(conn);
            if !clean {
                tracing::warn!("a database connection left in a transaction was replaced");
            }
            Ok(clean)
        })
    })
}

/// How long a PostgreSQL session may sit idle inside a transaction before the server ends it,
/// releasing its locks: a paused or stuck process (SIGSTOP, a debugger, a frozen VM) must not
/// keep a claimed import chunk or a locked lead from every other process. Its transaction is
/// rolled back, so whoever takes the work over stores it once; the paused process, when it
/// wakes, finds its connection gone and writes nothing.
pub const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(30);

/// How long a request waits for a database connection by default (`--database-wait`) before it
/// is answered 503 with `Retry-After`.
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// What [`Db::readiness`] found.
pub struct Readiness {
    pub database_answers: bool,
    pub problems: Vec<String>,
    pub migrations_applied: u32,
    pub migrations_known: u32,
}

/// A connection pool and the dialect behind it. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Db {
    pool: AnyPool,
    dialect: Dialect,
    url: String,
    /// The pool write transactions run on: on PostgreSQL `pool` itself; on SQLite one
    /// connection of their own. SQLite forgets a connection's page cache whenever another
    /// connection has written since its last transaction, so writes taking turns over the
    /// readers' pool each started cold (every index page they touched read again from the
    /// file); on their own connection they find the pages they wrote last time.
    writer: AnyPool,
    /// Background writes (imports' batches): on SQLite a connection of their own, made on
    /// first use by the background thread that uses it, so its SQLite thread inherits that
    /// thread's lower priority (`crate::priority`); on PostgreSQL `pool` itself.
    background: AnyPool,
    /// SQLite has one writer at a time; writers of this process queue here instead of
    /// inside SQLite, whose busy handler backs off by sleeping (up to 100 ms a try).
    write_gate: Arc<Mutex<()>>,
    /// Connections for the hottest single read, a first visit's lookup (see [`read_lane`]).
    read_lane: Arc<read_lane::ReadLane>,
    /// A SQLite file's checkpoints, while any clone of this is alive (`checkpoints.rs`).
    _checkpoints: Option<Arc<checkpoints::Checkpoints>>,
}

/// A transaction that writes, holding this process's SQLite write turn (if any) until dropped.
pub struct WriteTransaction {
    pub tx: Transaction<'static, Any>,
    _turn: Option<OwnedMutexGuard<()>>,
}

impl WriteTransaction {
    pub async fn commit(self) -> sqlx::Result<()> {
        self.tx.commit().await?;
        STORAGE_FAILING.store(false, Ordering::Relaxed);
        Ok(())
    }

    pub async fn rollback(self) -> sqlx::Result<()> {
        self.tx.rollback().await
    }
}

impl std::ops::Deref for WriteTransaction {
    type Target = sqlx::AnyConnection;

    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl std::ops::DerefMut for WriteTransaction {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.tx
    }
}

impl Db {
    /// Connects to `url` (`sqlite://FILE` or `postgres://...`) and applies pending migrations.
    /// A SQLite file is created if missing and put in WAL mode, so admin commands and a running
    /// server can share it. Failures name their cause (a missing directory, a refused
    /// connection) within seconds.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        Self::open(url, true, DEFAULT_ACQUIRE_TIMEOUT).await
    }

    /// [`Db::connect`] where a request waits at most `acquire_timeout` for a connection.
    pub async fn connect_waiting(url: &str, acquire_timeout: Duration) -> anyhow::Result<Self> {
        Self::open(url, true, acquire_timeout).await
    }

    /// Like [`Db::connect`], but a SQLite file that does not exist is an error instead of a new
    /// empty database (for admin commands, which act on an existing one).
    pub async fn connect_existing(url: &str) -> anyhow::Result<Self> {
        Self::open(url, false, DEFAULT_ACQUIRE_TIMEOUT).await
    }

    async fn open(url: &str, create: bool, acquire_timeout: Duration) -> anyhow::Result<Self> {
        install_default_drivers();
        let dialect = Dialect::of_url(url).ok_or_else(|| {
            anyhow::anyhow!("unsupported database URL {url:?}: use sqlite://FILE or postgres://...")
        })?;
        if dialect == Dialect::Sqlite {
            configure_sqlite_once();
            check_sqlite_path(url, create)?;
        }
        // One direct connection first: a refused or misnamed server is reported at once,
        // instead of after the pool's acquire timeout.
        let first = match dialect {
            Dialect::Sqlite => sqlite_url(url),
            Dialect::Postgres => url.to_owned(),
        };
        let probe = tokio::time::timeout(
            Duration::from_secs(10),
            <sqlx::AnyConnection as sqlx::Connection>::connect(&first),
        )
        .await
        .map_err(|_| anyhow::anyhow!("connecting to {}: no answer within 10 s", redact(url)))?
        .with_context(|| format!("connecting to {}", redact(url)))?;
        sqlx::Connection::close(probe).await.ok();
        let with_context = |err: sqlx::Error| {
            anyhow::Error::from(err).context(format!("connecting to {}", redact(url)))
        };
        let write_gate: Arc<Mutex<()>> = Arc::default();
        let mut checkpoints = None;
        // The SQLite file, read by the first-visit lookup on the calling thread (`read_lane`)
        // and checkpointed on a thread of its own (`checkpoints.rs`).
        let file = (dialect == Dialect::Sqlite)
            .then(|| sqlite_file(url))
            .flatten();
        let (pool, writer, background) = match dialect {
            Dialect::Sqlite => {
                let url = sqlite_url(url);
                let readers = sqlite_pool(8, acquire_timeout, READER_CACHE_KIB, "")
                    .connect(&url)
                    .await
                    .map_err(with_context)?;
                // The file exists now (the readers made it); its log is copied back on a
                // thread of its own, not by the writer (`checkpoints.rs`).
                checkpoints = file
                    .as_deref()
                    .and_then(|file| checkpoints::start(file, write_gate.clone()));
                let setup = match checkpoints {
                    Some(_) => checkpoints::WRITER_SETUP,
                    None => "",
                };
                // Writers queue on the write gate before they ask for this connection, so
                // waiting for it is waiting for the turn, however long that takes.
                let writer =
                    sqlite_pool(1, Duration::from_secs(24 * 3600), WRITER_CACHE_KIB, setup)
                        .connect(&url)
                        .await
                        .map_err(with_context)?;
                // Connected lazily: by the thread that first writes in the background.
                let background =
                    sqlite_pool(1, Duration::from_secs(24 * 3600), WRITER_CACHE_KIB, setup)
                        .connect_lazy(&url)
                        .map_err(with_context)?;
                (readers, writer, background)
            }
            Dialect::Postgres => {
                let pool = discarding_unknown_state(AnyPoolOptions::new())
                    .acquire_timeout(acquire_timeout)
                    .max_connections(16)
                    .after_connect(|conn, _meta| {
                        Box::pin(async move {
                            let setup = format!(
                                "SET idle_in_transaction_session_timeout = '{}s'",
                                IDLE_IN_TRANSACTION.as_secs()
                            );
                            conn.execute(sqlx::AssertSqlSafe(setup)).await?;
                            Ok(())
                        })
                    })
                    .connect(url)
                    .await
                    .map_err(with_context)?;
                (pool.clone(), pool.clone(), pool)
            }
        };
        let db = Self {
            read_lane: Arc::new(read_lane::ReadLane::new(pool.clone(), file)),
            pool,
            writer,
            background,
            dialect,
            url: url.to_owned(),
            write_gate,
            _checkpoints: checkpoints.map(Arc::new),
        };
        db.migrate()
            .await
            .map_err(Error::into_cause)
            .with_context(|| format!("applying migrations to {}", redact(url)))?;
        Ok(db)
    }

    async fn migrate(&self) -> Result<()> {
        match self.dialect {
            Dialect::Sqlite => SQLITE_MIGRATIONS.run(&self.pool).await?,
            Dialect::Postgres => POSTGRES_MIGRATIONS.run(&self.pool).await?,
        }
        Ok(())
    }

    /// Whether the database answers and has every migration this build knows.
    pub async fn readiness(&self) -> Readiness {
        let migrator = match self.dialect {
            Dialect::Sqlite => &SQLITE_MIGRATIONS,
            Dialect::Postgres => &POSTGRES_MIGRATIONS,
        };
        let known = migrator
            .iter()
            .filter(|m| m.migration_type.is_up_migration())
            .count() as u32;
        // Each question has a second: the edge answers /readyz within 1.5 s whatever happens here.
        let within = |seconds| std::time::Duration::from_secs(seconds);
        let mut problems = Vec::new();
        let answer = tokio::time::timeout(
            within(1),
            sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&self.pool),
        )
        .await;
        let database_answers = match answer {
            Ok(Ok(_)) => true,
            Ok(Err(err)) => {
                problems.push(format!("the database does not answer: {err}"));
                false
            }
            Err(_) => {
                problems.push("the database did not answer within 1 s".to_owned());
                false
            }
        };
        // No migrations table (a database never migrated) counts as none applied.
        let applied = if database_answers {
            tokio::time::timeout(
                within(1),
                sqlx::query_scalar::<_, i64>(
                    "SELECT CAST(COUNT(*) AS BIGINT) FROM _sqlx_migrations WHERE success",
                )
                .fetch_one(&self.pool),
            )
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or(0) as u32
        } else {
            0
        };
        if database_answers && applied < known {
            problems.push(format!(
                "{} of {known} migrations are not applied",
                known - applied
            ));
        }
        if database_answers && STORAGE_FAILING.load(Ordering::Relaxed) {
            match tokio::time::timeout(within(1), self.probe_write()).await {
                Ok(Ok(())) => STORAGE_FAILING.store(false, Ordering::Relaxed),
                Ok(Err(err)) => problems.push(format!("writes fail: storage is full ({err})")),
                Err(_) => problems.push("a write did not finish within 1 s".to_owned()),
            }
        }
        Readiness {
            database_answers,
            problems,
            migrations_applied: applied,
            migrations_known: known,
        }
    }

    /// One small write, committed (it needs storage for its log): whether writes reach the
    /// database again.
    async fn probe_write(&self) -> sqlx::Result<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO write_probes (id, at) VALUES (1, $1)
             ON CONFLICT (id) DO UPDATE SET at = excluded.at",
        )
        .bind(crate::time::now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await
    }

    /// Begins a transaction that will write. Every multi-statement write goes through here.
    ///
    /// On SQLite the transaction is `BEGIN IMMEDIATE`: it takes the write lock before its first
    /// read, so it can never fail to upgrade a read snapshot to a write ("database is locked",
    /// busy snapshot) when another process (an admin command, a second server) wrote meanwhile;
    /// waiting for that lock goes through SQLite's busy timeout.
    pub async fn begin_write(&self) -> sqlx::Result<WriteTransaction> {
        self.begin_write_on(&self.writer).await
    }

    /// [`Db::begin_write`] for work nobody waits on (imports' batches), from a background
    /// thread (`crate::priority`): on SQLite on a connection of its own, whose thread runs at
    /// that thread's lower priority, taking the same write turn as every other writer. Its
    /// page cache is its own, so a foreground write after it starts with a cold one.
    pub async fn begin_background_write(&self) -> sqlx::Result<WriteTransaction> {
        self.begin_write_on(&self.background).await
    }

    /// Reads for background work, on its connection (see [`Db::begin_background_write`]).
    pub fn background(&self) -> &AnyPool {
        &self.background
    }

    async fn begin_write_on(&self, writer: &AnyPool) -> sqlx::Result<WriteTransaction> {
        let _waiting = WaitingForWrite::start();
        let (tx, turn) = match self.dialect {
            Dialect::Sqlite => {
                let turn = self.write_gate.clone().lock_owned().await;
                (writer.begin_with("BEGIN IMMEDIATE").await?, Some(turn))
            }
            Dialect::Postgres => (writer.begin().await?, None),
        };
        Ok(WriteTransaction { tx, _turn: turn })
    }

    /// After rows of people were erased: on SQLite, the write-ahead log is copied into the
    /// database and emptied (`wal_checkpoint(TRUNCATE)`), so the erased values' old pages do not
    /// stay in the log until the next automatic checkpoint (with `secure_delete`, the database
    /// file itself keeps no copy). Waits its turn like any write; a reader still on an older
    /// snapshot can keep the log from being emptied, and the next erasure or automatic
    /// checkpoint does it then. On PostgreSQL, nothing: its dead rows and log are its own
    /// (docs/operations.md says what erasure guarantees on disk there).
    pub async fn checkpoint_after_erasure(&self) -> sqlx::Result<()> {
        if self.dialect != Dialect::Sqlite {
            return Ok(());
        }
        let _turn = self.write_gate.clone().lock_owned().await;
        // A checkpoint already running (the checkpoints thread's, another process's) makes
        // this one answer "blocked" at once instead of waiting: it is tried again, for up to
        // 2 s in all (each try may also wait out the busy timeout for readers), this process's
        // writers waiting meanwhile.
        let started = tokio::time::Instant::now();
        loop {
            let (blocked,): (i64,) = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
                .fetch_one(&self.writer)
                .await?;
            if blocked == 0 || started.elapsed() >= Duration::from_secs(2) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The pool, to run queries on.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// A first visit's lookup: on the calling thread (SQLite) or on connections given back
    /// without the pool's ping.
    pub fn read_lane(&self) -> &read_lane::ReadLane {
        &self.read_lane
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The URL this pool connects to (with its password: not for logs).
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// The gauge of write transactions waiting for their connection or turn (described with the
/// other metrics in `crate::metrics`).
pub const DB_WAITING: &str = "lps_db_transactions_waiting";

/// Counts a write transaction as waiting until dropped.
struct WaitingForWrite;

impl WaitingForWrite {
    fn start() -> Self {
        metrics::gauge!(DB_WAITING).increment(1.0);
        Self
    }
}

impl Drop for WaitingForWrite {
    fn drop(&mut self) {
        metrics::gauge!(DB_WAITING).decrement(1.0);
    }
}

/// A migrated database file with one account and its workspace (id 1), for store tests.
#[cfg(test)]
pub(crate) async fn test_workspace() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("lps.db").display());
    let db = Db::connect(&url).await.unwrap();
    for sql in [
        "INSERT INTO accounts (name, plan, credits_remaining, credit_allowance, renews_at,
                               created_at) VALUES ('A', 'free', 0, 0, 0, 0)",
        "INSERT INTO workspaces (account_id, name, slug, callback_secret, created_at)
         VALUES (1, 'W', 'w', '', 0)",
    ] {
        sqlx::query(sql).execute(db.pool()).await.unwrap();
    }
    (dir, db)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sqlite_and_postgres_are_spoken() {
        assert_eq!(Dialect::of_url("sqlite://x"), Some(Dialect::Sqlite));
        assert_eq!(Dialect::of_url("postgresql://h/d"), Some(Dialect::Postgres));
        assert_eq!(Dialect::of_url("mysql://h/d"), None);
    }

    /// Counted, SQLite's memory would show in `sqlite3_memory_used` once a database is
    /// open and written; uncounted, it stays at nothing.
    #[tokio::test]
    async fn sqlite_does_not_count_its_memory() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(&format!("sqlite://{}", dir.path().join("lps.db").display()))
            .await
            .unwrap();
        let mut tx = db.begin_write().await.unwrap();
        sqlx::query("CREATE TABLE counted (v TEXT)")
            .execute(&mut *tx.tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        // SAFETY: reads a counter; takes no arguments.
        assert_eq!(unsafe { rusqlite::ffi::sqlite3_memory_used() }, 0);
    }
}
