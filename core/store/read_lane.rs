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
//! Each of those reads is a transaction of its own, begun after the read was asked (never an
//! older snapshot: a page cache stamps what it keeps with the changes it had seen before the
//! read). A WAL read transaction takes a shared lock on the log's index (a `fcntl` system call
//! on the `-shm` file) and releases it (another): ~8% of a first visit's CPU. SQLite skips both
//! calls while another connection of the process holds the same lock, so one more connection
//! ([`Holder`]) keeps a read transaction open beside the reads, begun again while a read's is
//! open (the two then share the lock) once it is [`HOLDER_RENEWED_AFTER`] old. What that costs:
//! a checkpoint cannot copy past the holder's snapshot, and the log's finishing copy
//! (`checkpoints.rs`) may wait for it, at most twice [`HOLDER_ENDED_AFTER`] (a task ends it
//! once no read renewed it for that long, looking every [`HOLDER_ENDED_AFTER`]). Reads taking
//! turns on two connections holding each other's locks were tried first: each connection's
//! page cache then held its own copy of the hot pages, and the lookups' misses ate most of the
//! gain.
//!
//! Otherwise (PostgreSQL, an in-memory SQLite, or when the on-thread read gives way) the lane
//! holds connections detached from sqlx's pool. sqlx's pool pings every connection it is given
//! back, whatever happened to it: on SQLite a round trip to the connection's thread, on
//! PostgreSQL a network round trip, after every query. A connection here goes back to the lane
//! only once its read finished ([`LaneConnection::finished`]); one whose read failed or was
//! given up (the visitor left) is dropped, and the lane takes a fresh one from the pool when it
//! needs one.
//!
//! On those connections lookups go in batches ([`ReadLane::page`]): while a batch is being
//! looked up, the addresses asked meanwhile queue, and the next batch takes all of them (up to
//! [`designs::PAGES_AT_ONCE`]) in one statement. On PostgreSQL a lookup alone was a network
//! round trip, ~80 µs of lps's CPU (the kernel's second socket, the wake-up of the database's
//! process) and ~110 µs of PostgreSQL's, for a row; a batch pays them once for all its rows
//! (first visits on PostgreSQL: 11.7k -> 24.6k a second on the benchmark, ~15 a batch). A
//! lookup never waits for a batch to fill: one asked while no batch is out goes at once, alone.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rusqlite::OptionalExtension;
use sqlx::{AnyConnection, AnyPool};
use tokio::sync::{Semaphore, SemaphorePermit, oneshot};

use super::designs::{self, PageRow};

/// Connections the lane holds at most (besides the pool's), of either kind: reads waiting
/// beyond them queue (pooled) or go the pooled way (on the thread).
const CONNECTIONS: usize = 4;

/// Batches of lookups in flight at once (see [`ReadLane::page`]): the fewer, the more each
/// takes along. With one a lookup waits at most for the batch ahead of it; with the four
/// connections each free, lookups went alone (1.5 a batch at 12k visits a second).
const BATCHES: usize = 1;

/// The age at which a read begins the [`Holder`]'s transaction again (see the module's comment).
const HOLDER_RENEWED_AFTER: Duration = Duration::from_millis(1);
/// The age at which the [`Holder`]'s transaction is ended when no read renewed it.
const HOLDER_ENDED_AFTER: Duration = Duration::from_millis(2);

pub struct ReadLane {
    pool: AnyPool,
    idle: Mutex<Vec<AnyConnection>>,
    permits: Semaphore,
    on_thread: Option<Arc<OnThread>>,
    /// Addresses waiting for the next batch, in the order they were asked.
    asked: Mutex<VecDeque<Asked>>,
    /// Batches being looked up at once, at most [`BATCHES`].
    turns: Semaphore,
}

/// An address waiting to be looked up in a batch, and where its answer goes.
struct Asked {
    campaign_slug: String,
    lead_slug: String,
    answer: oneshot::Sender<Answer>,
}

/// A batch's answer for one address.
enum Answer {
    Found(Option<PageRow>),
    /// No connection could be had (the pool's own error, made again for each).
    Failed(sqlx::Error),
    /// The batch failed: the address is looked up alone, whose error is sqlx's own.
    AskAlone,
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
    /// The connection holding a read transaction beside the reads.
    holder: Mutex<Holder>,
}

/// A connection of the lane's that never looks anything up: it holds a read transaction open
/// so that the reads' shared lock on the log's index is never the process's only one (see the
/// module's comment). Counted in [`OnThread::open`].
#[derive(Default)]
struct Holder {
    /// The connection, and when its transaction began (none open without it).
    connection: Option<rusqlite::Connection>,
    began: Option<Instant>,
    /// A task ends the transaction once it is [`HOLDER_ENDED_AFTER`] old ([`end_when_stale`]).
    watched: bool,
}

impl OnThread {
    /// Runs `read` on one of the lane's connections, or answers `None` when it cannot at once
    /// (every connection in use, the file cannot be opened, SQLite is busy or fails): the
    /// caller then reads the pooled way.
    fn read<T>(
        self: &Arc<Self>,
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
        let found = begin(&connection)
            .and_then(|()| read(&connection))
            .and_then(|found| {
                // While this read's transaction is open (its lock shared): see the module's comment.
                self.renew_holder();
                end(&connection).map(|()| found)
            });
        match found {
            Ok(found) => {
                let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
                idle.push(connection);
                Some(found)
            }
            Err(err) => {
                tracing::debug!(error = %err, "an on-thread read gave way to the pool");
                // Closed, which ends its transaction.
                self.open.fetch_sub(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Begins the holder's transaction again when it is none or [`HOLDER_RENEWED_AFTER`] old,
    /// opening the holder first if need be; a task ends it once stale. Called while a read's
    /// transaction is open, so the holder's begins on the lock the read holds (no system call)
    /// and the read's end leaves it held by the holder.
    fn renew_holder(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Nothing could end it later: no holder.
            return;
        };
        let mut holder = self.holder.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if holder
            .began
            .is_some_and(|began| now.duration_since(began) < HOLDER_RENEWED_AFTER)
        {
            return;
        }
        if holder.connection.is_none() {
            holder.connection = self.open();
        }
        let Some(connection) = &holder.connection else {
            return;
        };
        let ended = match holder.began {
            Some(_) => end(connection),
            None => Ok(()),
        };
        match ended.and_then(|()| hold(connection)) {
            Ok(()) => holder.began = Some(now),
            Err(err) => holder.close(&self.open, &err),
        }
        if holder.began.is_some() && !holder.watched {
            holder.watched = true;
            drop(runtime.spawn(end_when_stale(Arc::downgrade(self))));
        }
    }

    /// Ends the holder's transaction (closing the holder if that fails).
    fn end_holder(&self) {
        let mut holder = self.holder.lock().unwrap_or_else(|p| p.into_inner());
        holder.watched = false;
        if holder.began.take().is_none() {
            return;
        }
        if let Some(connection) = &holder.connection
            && let Err(err) = end(connection)
        {
            holder.close(&self.open, &err);
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
        super::configure_sqlite_once();
        let connection = rusqlite::Connection::open_with_flags(
            file,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(std::time::Duration::ZERO)?;
        connection.pragma_update(None, "query_only", true)?;
        Ok(connection)
    }

    fn new(file: PathBuf) -> Self {
        Self {
            file,
            idle: Mutex::default(),
            open: AtomicUsize::new(0),
            unusable: AtomicBool::new(false),
            holder: Mutex::default(),
        }
    }
}

impl Holder {
    /// Closes the holder after `err` (which ends its transaction), counted out of `open`.
    fn close(&mut self, open: &AtomicUsize, err: &rusqlite::Error) {
        tracing::debug!(error = %err, "the read lock's holder was closed");
        self.connection = None;
        self.began = None;
        open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Begins a (deferred) transaction on `connection`.
fn begin(connection: &rusqlite::Connection) -> rusqlite::Result<()> {
    connection.prepare_cached("BEGIN")?.execute(()).map(drop)
}

/// Begins a transaction on `connection` that holds the log's read lock: a deferred one takes it
/// only at its first statement that reads the database.
fn hold(connection: &rusqlite::Connection) -> rusqlite::Result<()> {
    begin(connection)?;
    connection
        .prepare_cached("SELECT 1 FROM sqlite_schema LIMIT 1")?
        .query_row((), |_| Ok(()))
        .optional()
        .map(drop)
}

/// Ends `connection`'s transaction.
fn end(connection: &rusqlite::Connection) -> rusqlite::Result<()> {
    connection.prepare_cached("COMMIT")?.execute(()).map(drop)
}

/// Ends the holder's transaction once it is [`HOLDER_ENDED_AFTER`] old, looking again while
/// reads keep renewing it; also when the task is dropped (its runtime shut down) or the lane
/// is gone.
async fn end_when_stale(on_thread: Weak<OnThread>) {
    struct EndsHolder(Weak<OnThread>);
    impl Drop for EndsHolder {
        fn drop(&mut self) {
            if let Some(on_thread) = self.0.upgrade() {
                on_thread.end_holder();
            }
        }
    }
    let watching = EndsHolder(on_thread);
    loop {
        tokio::time::sleep(HOLDER_ENDED_AFTER).await;
        let Some(on_thread) = watching.0.upgrade() else {
            return;
        };
        let fresh = (on_thread
            .holder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .began)
            .is_some_and(|began| began.elapsed() < HOLDER_ENDED_AFTER);
        if !fresh {
            // `watching` ends it.
            return;
        }
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
            on_thread: sqlite_file.map(|file| Arc::new(OnThread::new(file))),
            asked: Mutex::default(),
            turns: Semaphore::new(BATCHES),
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
        self.batched(campaign_slug, lead_slug).await
    }

    /// The lead's page looked up on a connection of the lane, together with the addresses
    /// asked meanwhile: the address queues; whoever has a connection next (this caller or
    /// another) takes the queue's front into one statement and answers each. A caller whose
    /// address another took waits for that answer; one whose batch failed or was given up (its
    /// caller left) looks it up alone.
    async fn batched(&self, campaign_slug: &str, lead_slug: &str) -> sqlx::Result<Option<PageRow>> {
        let (answer, mut answered) = oneshot::channel();
        self.queue().push_back(Asked {
            campaign_slug: campaign_slug.to_owned(),
            lead_slug: lead_slug.to_owned(),
            answer,
        });
        let answer = loop {
            let turn = tokio::select! {
                biased;
                answer = &mut answered => break answer,
                turn = wait_for(&self.turns, &self.pool) => turn?,
            };
            let permit = self.permit().await?;
            let batch: Vec<Asked> = {
                let mut queue = self.queue();
                let take = queue.len().min(designs::PAGES_AT_ONCE);
                queue.drain(..take).collect()
            };
            if batch.is_empty() {
                // Ours is in another caller's batch already.
                drop((turn, permit));
                break answered.await;
            }
            self.look_up(permit, batch).await;
            drop(turn);
        };
        match answer {
            Ok(Answer::Found(found)) => Ok(found),
            Ok(Answer::Failed(err)) => Err(err),
            Ok(Answer::AskAlone) | Err(_) => {
                let mut connection = self.acquire().await?;
                let found = designs::page(&mut *connection, campaign_slug, lead_slug).await?;
                connection.finished();
                Ok(found)
            }
        }
    }

    /// Looks up a batch of addresses on a connection of the lane and answers each.
    async fn look_up(&self, permit: SemaphorePermit<'_>, batch: Vec<Asked>) {
        let mut connection = match self.connection(permit).await {
            Ok(connection) => connection,
            Err(err) => {
                for asked in batch {
                    let again = match &err {
                        sqlx::Error::PoolTimedOut => Answer::Failed(sqlx::Error::PoolTimedOut),
                        sqlx::Error::PoolClosed => Answer::Failed(sqlx::Error::PoolClosed),
                        _ => Answer::AskAlone,
                    };
                    let _ = asked.answer.send(again);
                }
                return;
            }
        };
        let addresses: Vec<(&str, &str)> = batch
            .iter()
            .map(|asked| (asked.campaign_slug.as_str(), asked.lead_slug.as_str()))
            .collect();
        match designs::pages(&mut connection, &addresses).await {
            Ok(rows) => {
                connection.finished();
                let mut found: Vec<Option<PageRow>> = vec![None; batch.len()];
                for (at, row) in rows {
                    if let Some(slot @ None) = found.get_mut(at) {
                        *slot = Some(row);
                    }
                }
                for (asked, found) in batch.into_iter().zip(found) {
                    let _ = asked.answer.send(Answer::Found(found));
                }
            }
            Err(err) => {
                tracing::debug!(error = %err, "a batch of page lookups failed; each is asked alone");
                for asked in batch {
                    let _ = asked.answer.send(Answer::AskAlone);
                }
            }
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<Asked>> {
        self.asked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A connection of the lane, waiting at most as long as the pool's acquire does (then
    /// `PoolTimedOut`, as the pool would answer).
    async fn acquire(&self) -> sqlx::Result<LaneConnection<'_>> {
        let permit = self.permit().await?;
        self.connection(permit).await
    }

    /// The right to use one of the lane's connections, waited for at most as long as the
    /// pool's acquire waits.
    async fn permit(&self) -> sqlx::Result<SemaphorePermit<'_>> {
        wait_for(&self.permits, &self.pool).await
    }

    /// The connection `permit` lets its holder use: an idle one of the lane's, or one taken
    /// from the pool.
    async fn connection<'l>(
        &'l self,
        permit: SemaphorePermit<'l>,
    ) -> sqlx::Result<LaneConnection<'l>> {
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

/// A permit of `permits`, waited for at most as long as `pool`'s acquire waits (then
/// `PoolTimedOut`, as the pool would answer).
async fn wait_for<'s>(permits: &'s Semaphore, pool: &AnyPool) -> sqlx::Result<SemaphorePermit<'s>> {
    let wait = pool.options().get_acquire_timeout();
    tokio::time::timeout(wait, permits.acquire())
        .await
        .map_err(|_| sqlx::Error::PoolTimedOut)?
        .map_err(|_| sqlx::Error::PoolClosed)
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

    /// A pool of an in-memory SQLite database whose acquire waits at most `acquire_timeout`.
    async fn memory_pool(acquire_timeout: Duration) -> AnyPool {
        install_default_drivers();
        AnyPoolOptions::new()
            .acquire_timeout(acquire_timeout)
            .connect("sqlite::memory:")
            .await
            .unwrap()
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
    async fn each_read_sees_what_was_written_before_it_and_the_lock_holder_ends_soon_after() {
        let (dir, db) = one_page().await;
        let lane = db.read_lane();
        let own = lane.on_thread.as_ref().expect("a file database");
        let first_name = |row: Option<PageRow>| row.unwrap().first_name.unwrap();
        let holding = |own: &OnThread| {
            let holder = own.holder.lock().unwrap();
            let connection = holder.connection.as_ref();
            holder.began.is_some() && connection.is_some_and(|c| !c.is_autocommit())
        };
        let read_ended = |own: &OnThread| {
            let idle = own.idle.lock().unwrap();
            idle.len() == 1 && idle[0].is_autocommit()
        };
        assert_eq!(
            first_name(lane.page("spring", "lead-a").await.unwrap()),
            "Ada"
        );
        assert!(read_ended(own));
        assert!(holding(own));
        // Written after the holder's transaction began: the next read sees it (its own
        // transaction, begun after it was asked), and begins the holder's again (old enough).
        sqlx::query("UPDATE leads SET first_name = 'Grace' WHERE slug = 'lead-a'")
            .execute(db.pool())
            .await
            .unwrap();
        tokio::time::sleep(HOLDER_RENEWED_AFTER).await;
        assert_eq!(
            first_name(lane.page("spring", "lead-a").await.unwrap()),
            "Grace"
        );
        assert!(read_ended(own));
        assert!(holding(own));
        // The holder on the log keeps it from starting over; once stale, nothing does.
        let other = rusqlite::Connection::open(dir.path().join("lps.db")).unwrap();
        let restart = || {
            other
                .query_row("PRAGMA wal_checkpoint(RESTART)", (), |row| {
                    row.get::<_, i64>(0)
                })
                .unwrap()
        };
        assert_eq!(restart(), 1, "busy: a reader is still on the log");
        tokio::time::sleep(HOLDER_ENDED_AFTER * 10).await;
        assert!(!holding(own));
        assert_eq!(restart(), 0, "done: no reader left on the log");
        assert_eq!(
            own.open.load(Ordering::Relaxed),
            2,
            "the holder stays open, idle"
        );
    }

    #[tokio::test]
    async fn lookups_asked_while_every_connection_is_busy_go_in_one_batch_and_each_gets_its_own() {
        let (_dir, db) = one_page().await;
        let lane = std::sync::Arc::new(ReadLane::new(db.pool().clone(), None));
        let mut held = Vec::new();
        for _ in 0..CONNECTIONS {
            held.push(lane.acquire().await.unwrap());
        }
        let addresses = [
            ("spring", "lead-a"),
            ("spring", "lead-b"),
            ("autumn", "lead-a"),
            ("spring", "lead-a"),
        ];
        let asked: Vec<_> = addresses
            .iter()
            .map(|&(campaign, lead)| {
                let lane = lane.clone();
                tokio::spawn(async move { lane.page(campaign, lead).await })
            })
            .collect();
        while lane.queue().len() < addresses.len() {
            tokio::task::yield_now().await;
        }
        // One connection free: whoever takes it looks up every address queued, at once, so the
        // queue is empty by the time the first answer is in.
        held.pop().unwrap().finished();
        while !asked.iter().any(|task| task.is_finished()) {
            tokio::task::yield_now().await;
        }
        assert!(lane.queue().is_empty());
        let mut found = Vec::new();
        for asked in asked {
            found.push(asked.await.unwrap().unwrap().map(|row| row.lead_id));
        }
        assert_eq!(found, [Some(1), None, None, Some(1)]);
        assert_eq!(lane.idle.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_batch_answers_each_address_by_its_position() {
        let (_dir, db) = one_page().await;
        let mut connection = db.pool().acquire().await.unwrap();
        let found = designs::pages(
            &mut connection,
            &[("autumn", "lead-a"), ("spring", "lead-a"), ("spring", "x")],
        )
        .await
        .unwrap();
        let found: Vec<(usize, i64)> = found.iter().map(|(at, row)| (*at, row.lead_id)).collect();
        assert_eq!(found, [(1, 1)]);
        assert!(
            designs::pages(&mut connection, &[])
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_batch_without_a_connection_answers_each_with_the_pools_error() {
        let pool = memory_pool(Duration::from_millis(100)).await;
        let lane = ReadLane::new(pool.clone(), None);
        pool.close().await;
        let err = lane.page("spring", "lead-a").await.unwrap_err();
        assert!(
            matches!(err, sqlx::Error::PoolClosed | sqlx::Error::PoolTimedOut),
            "{err}"
        );
        assert!(lane.queue().is_empty());
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
        crate::store::configure_sqlite_once();
        rusqlite::Connection::open(&file).unwrap();
        let lane = Arc::new(OnThread::new(file));
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
        let pool = memory_pool(Duration::from_millis(200)).await;
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
