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
pub mod credits;
pub mod csv_imports;
pub mod deployment;
pub mod design_runs;
pub mod designs;
pub mod engagement;
pub mod enrichments;
pub mod erasure;
pub mod form_submissions;
pub mod idempotency;
pub mod jobs;
pub mod lead_lists;
pub mod leads;
pub mod oauth;
pub mod read_lane;
pub mod users;
pub mod variables;
pub mod workspaces;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{Any, AnyPool, Executor, Transaction};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::error::Outage;
use crate::{Error, Result};

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
/// 1,000). The log's file stays at about 16 MiB once it grew to it. Deleted content is
/// overwritten with zeros (`secure_delete`), so an erased person's values do not linger in
/// the file's free space.
///
/// A connection is not pinged before each use (sqlx's `test_before_acquire`): a SQLite
/// connection is a file opened in this process, with no server or network between that could
/// drop it, and the ping was a round trip to the connection's thread before every query (two
/// thread switches on a first visit's lookup). A connection that does fail reports it on use.
fn sqlite_pool(connections: u32, acquire_timeout: Duration) -> AnyPoolOptions {
    const SETUP: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                         PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON; \
                         PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 4000; \
                         PRAGMA secure_delete = ON;";
    discarding_unknown_state(AnyPoolOptions::new())
        .acquire_timeout(acquire_timeout)
        .max_connections(connections)
        .test_before_acquire(false)
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                conn.execute(SETUP).await?;
                Ok(())
            })
        })
}

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
    /// SQLite has one writer at a time; writers of this process queue here instead of
    /// inside SQLite, whose busy handler backs off by sleeping (up to 100 ms a try).
    write_gate: Arc<Mutex<()>>,
    /// Connections for the hottest single read, a first visit's lookup (see [`read_lane`]).
    read_lane: Arc<read_lane::ReadLane>,
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
        let (pool, writer) = match dialect {
            Dialect::Sqlite => {
                let url = sqlite_url(url);
                let readers = sqlite_pool(8, acquire_timeout)
                    .connect(&url)
                    .await
                    .map_err(with_context)?;
                // Writers queue on the write gate before they ask for this connection, so
                // waiting for it is waiting for the turn, however long that takes.
                let writer = sqlite_pool(1, Duration::from_secs(24 * 3600))
                    .connect(&url)
                    .await
                    .map_err(with_context)?;
                (readers, writer)
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
                (pool.clone(), pool)
            }
        };
        // The first-visit lookup reads a SQLite file on the calling thread (see `read_lane`).
        let lane_file = (dialect == Dialect::Sqlite)
            .then(|| sqlite_file(url))
            .flatten();
        let db = Self {
            read_lane: Arc::new(read_lane::ReadLane::new(pool.clone(), lane_file)),
            pool,
            writer,
            dialect,
            url: url.to_owned(),
            write_gate: Arc::default(),
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
        let _waiting = WaitingForWrite::start();
        let (tx, turn) = match self.dialect {
            Dialect::Sqlite => {
                let turn = self.write_gate.clone().lock_owned().await;
                (self.writer.begin_with("BEGIN IMMEDIATE").await?, Some(turn))
            }
            Dialect::Postgres => (self.writer.begin().await?, None),
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
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.writer)
            .await?;
        Ok(())
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
static STORAGE_FAILING: AtomicBool = AtomicBool::new(false);

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

/// Tells other processes listening on `channel` (PostgreSQL `LISTEN`) when the transaction
/// commits. Nothing on SQLite, where a database has one process serving it.
pub async fn notify(
    conn: &mut sqlx::AnyConnection,
    dialect: Dialect,
    channel: &str,
    payload: &str,
) -> sqlx::Result<()> {
    if dialect == Dialect::Postgres {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(channel)
            .bind(payload)
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// Calls `on_payload` with every PostgreSQL notification on `channel`, reconnecting a second
/// after the connection drops. Runs until the process ends.
pub async fn listen_forever(database_url: &str, channel: &str, on_payload: impl FnMut(&str)) {
    listen_forever_resyncing(database_url, channel, |_| {}, on_payload).await;
}

/// [`listen_forever`], calling `on_listening(true)` each time it (re)starts listening and
/// `on_listening(false)` when the connection is lost: whatever was notified while it was not
/// listening is lost, so a listener that must not miss anything starts afresh.
pub async fn listen_forever_resyncing(
    database_url: &str,
    channel: &str,
    mut on_listening: impl FnMut(bool),
    mut on_payload: impl FnMut(&str),
) {
    loop {
        match sqlx::postgres::PgListener::connect(database_url).await {
            Ok(mut listener) => {
                if let Err(err) = listener.listen(channel).await {
                    tracing::warn!(error = %err, channel, "cannot LISTEN");
                } else {
                    on_listening(true);
                    // `try_recv` says when the connection was lost (`recv` would reconnect
                    // silently, losing what was notified meanwhile): start afresh then.
                    while let Ok(Some(notification)) = listener.try_recv().await {
                        on_payload(notification.payload());
                    }
                    on_listening(false);
                }
            }
            Err(err) => tracing::warn!(error = %err, channel, "listener cannot connect"),
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Status names as an SQL list (`'queued', 'running'`), for `status IN (...)`. The names are
/// the code's own constants, never input.
pub(crate) fn status_list(statuses: &[&str]) -> String {
    statuses
        .iter()
        .map(|status| format!("'{status}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many rows of `columns` values one multi-row statement carries on this connection (its
/// SQL made with [`bulk_sql`]): one statement is a round trip on PostgreSQL, a parse on SQLite.
pub fn rows_per_statement(conn: &sqlx::AnyConnection, columns: usize) -> usize {
    let params = if is_sqlite(conn) { 3_000 } else { 6_000 };
    (params / columns.max(1)).max(1)
}

/// A multi-row statement's SQL as this connection binds it in linear time.
///
/// sqlx binds each SQLite parameter by asking for its name, which SQLite finds by walking the
/// list of named (`$n`) parameters: binding grows with the square of their count (a
/// 4,800-parameter insert spent ~90 µs a row on it). Anonymous `?` parameters have no names, so
/// on SQLite the `$n` become `?` when they appear once each, in order; otherwise (and on
/// PostgreSQL) the SQL is unchanged.
pub fn bulk_sql(conn: &sqlx::AnyConnection, sql: String) -> sqlx::AssertSqlSafe<String> {
    if is_sqlite(conn) {
        sqlx::AssertSqlSafe(anonymous_placeholders(&sql).unwrap_or(sql))
    } else {
        sqlx::AssertSqlSafe(sql)
    }
}

/// A multi-row insert's SQL, `{head} VALUES (...), ... {tail}` with `rows` rows of `columns`
/// parameters, as [`bulk_sql`] gives it, built once per shape and kept.
///
/// A 1,000-lead batch of an import inserts thousands of parameters in a few shapes over and
/// over; writing their placeholders and then rewriting them for SQLite was ~3% of an import's
/// CPU. The kept text depends on nothing but the arguments and the database, so a kept one
/// is always the one that would be built. At most [`KEPT_INSERT_SHAPES`] are kept (a full set
/// is dropped, to be built again); a shape is at most [`rows_per_statement`]'s parameters
/// (~7 bytes each), so the set stays under ~1.5 MiB.
pub fn multi_row_insert(
    conn: &sqlx::AnyConnection,
    head: &'static str,
    rows: usize,
    columns: usize,
    tail: &'static str,
) -> sqlx::AssertSqlSafe<Arc<str>> {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex, PoisonError};
    type Shape = (&'static str, usize, usize, &'static str, bool);
    static KEPT: LazyLock<Mutex<HashMap<Shape, Arc<str>>>> = LazyLock::new(Default::default);
    let shape = (head, rows, columns, tail, is_sqlite(conn));
    if let Some(sql) = KEPT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&shape)
    {
        return sqlx::AssertSqlSafe(sql.clone());
    }
    let sql = format!(
        "{head} VALUES {} {tail}",
        placeholder_rows(rows, columns, 1, &[])
    );
    let sql: Arc<str> = bulk_sql(conn, sql).0.into();
    let mut shapes = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if shapes.len() >= KEPT_INSERT_SHAPES {
        shapes.clear();
    }
    shapes.insert(shape, sql.clone());
    sqlx::AssertSqlSafe(sql)
}

/// How many multi-row insert shapes [`multi_row_insert`] keeps.
const KEPT_INSERT_SHAPES: usize = 32;

fn is_sqlite(conn: &sqlx::AnyConnection) -> bool {
    conn.backend_name() == "SQLite"
}

/// `sql` with `$1`, `$2`, ... replaced by `?`, if they appear exactly in that order and nothing
/// else in it looks like a placeholder.
fn anonymous_placeholders(sql: &str) -> Option<String> {
    if sql.contains(['?', '\'']) {
        return None;
    }
    let mut out = String::with_capacity(sql.len());
    let mut expected = 1usize;
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - at - 1);
        let number: usize = rest[at + 1..at + 1 + digits].parse().ok()?;
        if number != expected {
            return None;
        }
        expected += 1;
        out.push('?');
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    Some(out)
}

/// The tables whose rows belong to a workspace, for [`ids_in_workspace`].
#[derive(Debug, Clone, Copy)]
pub enum WorkspaceTable {
    Leads,
    Campaigns,
}

/// Which of `ids` are rows of `table` in the workspace, in ascending order. Asked in chunks, so
/// any number of ids works on both databases.
pub async fn ids_in_workspace(
    pool: &AnyPool,
    table: WorkspaceTable,
    workspace_id: i64,
    ids: &[i64],
) -> sqlx::Result<Vec<i64>> {
    let table = match table {
        WorkspaceTable::Leads => "leads",
        WorkspaceTable::Campaigns => "campaigns",
    };
    let mut found = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(200) {
        let sql = format!(
            "SELECT id FROM {table} WHERE workspace_id = $1 AND id IN ({})",
            placeholder_list(chunk.len(), 2)
        );
        let mut query = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql)).bind(workspace_id);
        for id in chunk {
            query = query.bind(*id);
        }
        found.extend(query.fetch_all(pool).await?);
    }
    found.sort_unstable();
    found.dedup();
    Ok(found)
}

/// `$first, $first+1, ...`: `count` numbered placeholders for an `IN (...)` list.
pub fn placeholder_list(count: usize, first: usize) -> String {
    (first..first + count)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `($1, $2), ($3, $4), ...`: `rows` tuples of `columns` numbered placeholders, for multi-row
/// `VALUES`. `casts` (one per column, or empty) wraps each in `CAST(... AS type)`, which
/// PostgreSQL needs where nothing else tells it a parameter's type.
pub fn placeholder_rows(rows: usize, columns: usize, first: usize, casts: &[&str]) -> String {
    use std::fmt::Write;
    // One buffer for the whole list: a bulk insert of 1,000 rows has thousands of cells.
    let mut out = String::with_capacity(rows * columns * 8);
    for row in 0..rows {
        out.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..columns {
            if column > 0 {
                out.push_str(", ");
            }
            let n = first + row * columns + column;
            let _ = match casts.get(column) {
                Some(ty) => write!(out, "CAST(${n} AS {ty})"),
                None => write!(out, "${n}"),
            };
        }
        out.push(')');
    }
    out
}

/// `%text%` in lower case with LIKE's wildcards escaped, for `LOWER(col) LIKE $n ESCAPE '\'`.
pub fn like_pattern(text: &str) -> String {
    let escaped = text
        .to_lowercase()
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

/// The file a `sqlite://` URL names.
pub fn sqlite_path(url: &str) -> &str {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    rest.split('?').next().unwrap_or(rest)
}

/// The file a SQLite URL names, if it names one (not an in-memory database).
fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let path = sqlite_path(url);
    (!path.is_empty() && path != ":memory:" && !url.contains("mode=memory"))
        .then(|| std::path::PathBuf::from(path))
}

/// Names the cause when a SQLite file cannot be used: its directory is missing, or (when not
/// to be created) the file itself.
fn check_sqlite_path(url: &str, create: bool) -> anyhow::Result<()> {
    let Some(path) = sqlite_file(url) else {
        return Ok(());
    };
    if !create && !path.exists() {
        anyhow::bail!(
            "the database {} does not exist: start `lps serve --database-url {url}` once, or \
             run `lps admin bootstrap --database-url {url}`",
            path.display()
        );
    }
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => std::path::Path::new("."),
    };
    if !directory.is_dir() {
        anyhow::bail!(
            "cannot create the SQLite database {}: the directory {} does not exist",
            path.display(),
            directory.display()
        );
    }
    Ok(())
}

/// Adds `mode=rwc` (create the file if missing) unless the URL already chooses a mode.
fn sqlite_url(url: &str) -> String {
    if url.contains("mode=") {
        url.to_owned()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    }
}

/// The URL without its password, for logs and error messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _password)) => {
                    format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..])
                }
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
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
    fn placeholders_in_order_become_anonymous() {
        assert_eq!(
            anonymous_placeholders("INSERT INTO t VALUES ($1, CAST($2 AS TEXT)), ($3, $4)")
                .as_deref(),
            Some("INSERT INTO t VALUES (?, CAST(? AS TEXT)), (?, ?)")
        );
        assert_eq!(
            anonymous_placeholders("SELECT 1").as_deref(),
            Some("SELECT 1")
        );
        // Repeated, out of order or beside literals: left as they are.
        assert_eq!(anonymous_placeholders("VALUES ($1, $1)"), None);
        assert_eq!(anonymous_placeholders("VALUES ($2, $1)"), None);
        assert_eq!(anonymous_placeholders("VALUES ($1, 'a?')"), None);
        assert_eq!(anonymous_placeholders("VALUES ($1, $x)"), None);
    }

    #[test]
    fn sqlite_urls_create_their_file_unless_told_otherwise() {
        assert_eq!(sqlite_url("sqlite://lps.db"), "sqlite://lps.db?mode=rwc");
        assert_eq!(
            sqlite_url("sqlite://a.db?x=1"),
            "sqlite://a.db?x=1&mode=rwc"
        );
        assert_eq!(sqlite_url("sqlite://a.db?mode=ro"), "sqlite://a.db?mode=ro");
    }

    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(
            redact("postgres://me:secret@127.0.0.1/db"),
            "postgres://me:***@127.0.0.1/db"
        );
        assert_eq!(redact("sqlite://lps.db"), "sqlite://lps.db");
    }

    #[test]
    fn placeholders_number_on_from_the_first() {
        assert_eq!(placeholder_list(3, 2), "$2, $3, $4");
        assert_eq!(placeholder_rows(2, 2, 1, &[]), "($1, $2), ($3, $4)");
        assert_eq!(
            placeholder_rows(1, 2, 5, &["BIGINT", "TEXT"]),
            "(CAST($5 AS BIGINT), CAST($6 AS TEXT))"
        );
    }

    #[test]
    fn like_patterns_match_wildcards_literally() {
        assert_eq!(like_pattern("50%_Off\\"), "%50\\%\\_off\\\\%");
    }

    #[test]
    fn only_sqlite_and_postgres_are_spoken() {
        assert_eq!(Dialect::of_url("sqlite://x"), Some(Dialect::Sqlite));
        assert_eq!(Dialect::of_url("postgresql://h/d"), Some(Dialect::Postgres));
        assert_eq!(Dialect::of_url("mysql://h/d"), None);
    }
}
