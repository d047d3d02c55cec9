//! Copying a SQLite database's write-ahead log back into its file (a checkpoint) on a thread of
//! its own, instead of on the one writer right after a commit.
//!
//! With SQLite's automatic checkpoints, the commit that passed the threshold copied the log's
//! pages into the file and synced both before it returned: the writer, and every write queued
//! behind it, waited. Under a stream of beacons that was nearly every commit (a batch dirties
//! thousands of index pages), a third of the writer's time and most of a commit's. A checkpoint
//! needs no write lock (WAL readers and the writer go on while it copies), so it runs here,
//! every [`EVERY`], on a connection of its own; the writer's automatic checkpoints are off.
//!
//! The log only starts over from its beginning when a write begins after a checkpoint copied
//! all of it. A writer that never pauses would let it grow without end, so once it holds more
//! than [`MOST_LOG_FRAMES`] this thread takes the process's write turn (the writers of this
//! process wait) and finishes the copy (`RESTART`): the next write starts the log over and cuts
//! its file back to [`MOST_LOG_BYTES`] (`journal_size_limit`). Failures (a full disk) are
//! logged once and tried again each round; nothing is lost, the log just holds more meanwhile.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How often the log is copied into the file.
const EVERY: Duration = Duration::from_secs(1);
/// The log's length (pages of 4 KiB and their frame headers) past which the writers of this
/// process wait for the copy to finish, so that the log starts over.
const MOST_LOG_FRAMES: i64 = 16_384;
/// The size the log's file is cut back to when it starts over (`docs/limits.md`).
const MOST_LOG_BYTES: u64 = 64 * 1024 * 1024;
/// The writer's setup when checkpoints run here: it makes none itself, and cuts the log's file
/// back to [`MOST_LOG_BYTES`] when the log starts over.
pub(super) const WRITER_SETUP: &str =
    "PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = 67108864;";
/// How long the finishing copy waits for readers still on older pages of the log.
const READERS_WAIT: Duration = Duration::from_secs(2);

/// The checkpointing thread of a database file; it ends when this is dropped (with the last
/// clone of its `Db`).
#[derive(Debug)]
pub(super) struct Checkpoints {
    _stop: mpsc::Sender<()>,
}

/// Starts checkpointing `file` every [`EVERY`]; `write_gate` is the turn this process's
/// writers take. `None` when the thread or its connection cannot be had: then the writer keeps
/// SQLite's automatic checkpoints.
pub(super) fn start(file: &Path, write_gate: Arc<tokio::sync::Mutex<()>>) -> Option<Checkpoints> {
    let connection = match connect(file) {
        Ok(connection) => connection,
        Err(err) => {
            tracing::warn!(file = %file.display(), error = %err,
                "checkpoints stay on the writer: no connection of their own");
            return None;
        }
    };
    let (stop, stopped) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("lps-checkpoints".into())
        .spawn(move || run(&connection, &write_gate, &stopped));
    match spawned {
        Ok(_) => Some(Checkpoints { _stop: stop }),
        Err(err) => {
            tracing::warn!(error = %err, "checkpoints stay on the writer: no thread of their own");
            None
        }
    }
}

fn connect(file: &Path) -> rusqlite::Result<rusqlite::Connection> {
    super::configure_sqlite_once();
    let connection = rusqlite::Connection::open_with_flags(
        file,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(READERS_WAIT)?;
    connection.pragma_update(None, "journal_size_limit", MOST_LOG_BYTES as i64)?;
    Ok(connection)
}

fn run(
    connection: &rusqlite::Connection,
    write_gate: &tokio::sync::Mutex<()>,
    stopped: &mpsc::Receiver<()>,
) {
    let mut failing = false;
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(EVERY) {
        match checkpoint(connection, write_gate) {
            Ok(()) if failing => {
                tracing::info!("checkpoints succeed again");
                failing = false;
            }
            Ok(()) => {}
            Err(err) if !failing => {
                tracing::warn!(error = %err, "a checkpoint failed; it is tried again each second");
                failing = true;
            }
            Err(_) => {}
        }
    }
}

/// Copies what it can without waiting; past [`MOST_LOG_FRAMES`], the rest with this process's
/// writers held back.
fn checkpoint(
    connection: &rusqlite::Connection,
    write_gate: &tokio::sync::Mutex<()>,
) -> rusqlite::Result<()> {
    let log_frames = run_checkpoint(connection, "PASSIVE")?;
    if log_frames > MOST_LOG_FRAMES {
        let _turn = write_gate.blocking_lock();
        run_checkpoint(connection, "RESTART")?;
    }
    Ok(())
}

/// Runs `PRAGMA wal_checkpoint(mode)`; the log's length in frames.
fn run_checkpoint(connection: &rusqlite::Connection, mode: &str) -> rusqlite::Result<i64> {
    // (blocked, frames in the log, frames copied)
    connection.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        row.get(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(connection: &rusqlite::Connection) -> (i64, i64) {
        connection
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                Ok((row.get(1)?, row.get(2)?))
            })
            .unwrap()
    }

    #[test]
    fn the_writer_cuts_the_log_back_to_the_documented_size() {
        assert!(WRITER_SETUP.contains(&format!("journal_size_limit = {MOST_LOG_BYTES};")));
    }

    #[test]
    fn the_log_is_copied_into_the_file_while_the_writer_goes_on_and_starts_over_when_too_long() {
        let dir = std::env::temp_dir().join(format!("lps-checkpoints-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("db.sqlite");
        let _ = std::fs::remove_file(&file);
        crate::store::configure_sqlite_once();
        let writer = rusqlite::Connection::open(&file).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
                 CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB);",
            )
            .unwrap();
        let gate = tokio::sync::Mutex::new(());
        let checkpointer = connect(&file).unwrap();
        let write = |rows: usize| {
            writer
                .execute(
                    "INSERT INTO t (v) SELECT zeroblob(4000) FROM
                     (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
                      SELECT i FROM n)",
                    [rows as i64],
                )
                .unwrap();
        };
        // A short log is copied whole, without the write turn.
        write(100);
        checkpoint(&checkpointer, &gate).unwrap();
        let (log, copied) = frames(&checkpointer);
        assert!(log > 100 && copied == log, "{log} {copied}");
        // A write after a whole copy starts the log over.
        write(10);
        let (log, _) = frames(&checkpointer);
        assert!(log < 50, "the log started over: {log}");

        // A log past the bound is finished under this process's write turn: it waits for
        // the turn, and then the next write starts the log over and its file is cut back.
        write(MOST_LOG_FRAMES as usize + 1_000);
        let gate = Arc::new(gate);
        let turn = gate.clone().try_lock_owned().unwrap();
        let finishing = {
            let gate = gate.clone();
            std::thread::spawn(move || checkpoint(&checkpointer, &gate).unwrap())
        };
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !finishing.is_finished(),
            "the long log waits for the write turn"
        );
        drop(turn);
        finishing.join().unwrap();
        writer
            .pragma_update(None, "journal_size_limit", MOST_LOG_BYTES as i64)
            .unwrap();
        write(1);
        let (log, _) = frames(&connect(&file).unwrap());
        assert!(log < 50, "the log started over: {log}");
        let wal = std::fs::metadata(dir.join("db.sqlite-wal")).unwrap().len();
        assert!(wal <= MOST_LOG_BYTES, "the log's file was cut back: {wal}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
