//! Beacons the memory queue has no room for, kept in a file until core takes them: a burst (a
//! campaign sent to thousands at once, a scanner wave, core paused or restarting) is absorbed
//! on disk instead of refused, since a browser's `sendBeacon` never sends again.
//!
//! Order is kept: once a beacon went to the file, every later one follows it there until the
//! sender has read the file to its end, and the sender takes what memory holds (older) before
//! what the file holds. Each beacon is stored as its length (4 bytes, little-endian) and its
//! protobuf encoding. Appends gather in a buffer of [`BUFFER_BYTES`] before they are written,
//! so a beacon costs no system call of its own; the sender writes the buffer out before it
//! reads. The file is bounded ([`Spill::open`]'s `most_bytes`); past it beacons are refused.
//!
//! The file is named after the HTTP port, exists only while it holds beacons, and is locked
//! while the process has it: a process restarted on the same port and directory sends first
//! what an earlier one left in it (a kill loses only the unwritten buffer), and a second
//! process never shares it.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use lps::proto;
use prost::Message;

/// Appends gathered before they are written to the file.
const BUFFER_BYTES: usize = 256 * 1024;
/// The largest record read back: a beacon is at most 4 KiB of body and a few headers, so
/// anything longer is a damaged file, not a beacon.
const MOST_RECORD_BYTES: usize = 64 * 1024;
/// What one read of the file takes at most.
const READ_BYTES: usize = 4 * 1024 * 1024;

/// A file of beacons waiting for core, with its bound.
pub struct Spill {
    path: PathBuf,
    most_bytes: u64,
    /// Whether beacons wait in the file or its buffer (read without the lock, on every push).
    holds_any: AtomicBool,
    /// Told when the spill starts holding beacons: the sender may be waiting on memory.
    started: tokio::sync::Notify,
    state: Mutex<State>,
}

struct State {
    /// The file, while it holds beacons.
    file: Option<File>,
    /// Where the next record is read from, and where the file's records end.
    read: u64,
    written: u64,
    /// Records appended and not yet written to the file.
    buffer: Vec<u8>,
    /// Whether a failed write was logged (once until one succeeds).
    failing: bool,
}

/// Why a beacon was not spilled.
#[derive(Debug)]
pub enum NoRoom {
    /// The file holds its bound.
    Full,
    /// The file could not be written (a full disk, say).
    Failed,
}

impl Spill {
    /// The spill of the process serving HTTP on `port`, in `dir`, holding at most `most_bytes`
    /// (none when 0, or when the file cannot be had: beacons past memory are then refused, as
    /// they would be without it). What an earlier process left in it is read back first.
    pub fn open(dir: &Path, port: u16, most_bytes: u64) -> Option<Self> {
        if most_bytes == 0 {
            return None;
        }
        let path = dir.join(format!("lps-beacons-{port}.spill"));
        match Self::open_at(&path, most_bytes) {
            Ok(spill) => Some(spill),
            Err(err) => {
                tracing::warn!(error = %err, path = %path.display(),
                    "no file for beacons past the memory queue: past it they are refused");
                None
            }
        }
    }

    fn open_at(path: &Path, most_bytes: u64) -> io::Result<Self> {
        let (mut file, mut left) = (None, 0);
        if path.exists() {
            // What an earlier process left: its whole records (a kill may have cut the last).
            let mut found = open_locked(path)?;
            left = whole_records(&mut found)?;
            found.set_len(left)?;
            if left > 0 {
                tracing::info!(bytes = left, path = %path.display(),
                    "beacons an earlier process kept on disk are sent first");
                file = Some(found);
            } else {
                std::fs::remove_file(path)?;
            }
        }
        Ok(Self {
            path: path.to_owned(),
            most_bytes,
            holds_any: AtomicBool::new(left > 0),
            started: tokio::sync::Notify::new(),
            state: Mutex::new(State {
                file,
                read: 0,
                written: left,
                buffer: Vec::new(),
                failing: false,
            }),
        })
    }

    /// Whether beacons wait here: a new beacon must then follow them.
    pub fn holds_any(&self) -> bool {
        self.holds_any.load(Ordering::Acquire)
    }

    /// Resolves once beacons may wait here (at once if they began to since last asked).
    pub async fn started(&self) {
        self.started.notified().await;
    }

    /// Keeps `beacon` after every beacon kept before it.
    pub fn append(&self, beacon: &proto::Beacon) -> Result<(), NoRoom> {
        let length = beacon.encoded_len();
        let mut state = self.lock();
        // While the file cannot be written, beacons gather in memory up to a few buffers'
        // worth (the sender still takes them from there), then are refused.
        if state.buffer.len() >= BUFFER_BYTES
            && self.write_buffer(&mut state).is_err()
            && state.buffer.len() >= 4 * BUFFER_BYTES
        {
            return Err(NoRoom::Failed);
        }
        let kept = state.written - state.read + state.buffer.len() as u64;
        if kept + 4 + length as u64 > self.most_bytes {
            return Err(NoRoom::Full);
        }
        state
            .buffer
            .extend_from_slice(&(length as u32).to_le_bytes());
        beacon
            .encode(&mut state.buffer)
            .expect("a Vec grows to take a message");
        if !self.holds_any.swap(true, Ordering::AcqRel) {
            self.started.notify_one();
        }
        Ok(())
    }

    /// Takes up to `most` beacons, the oldest first. Once every beacon is taken the file is
    /// emptied, and new beacons go to memory again. Blocking file work: for a blocking thread.
    pub fn take(&self, most: usize) -> io::Result<Vec<proto::Beacon>> {
        let mut state = self.lock();
        let written_out = self.write_buffer(&mut state).is_ok();
        let mut taken = Vec::new();
        while taken.len() < most && state.read < state.written {
            let want = (state.written - state.read).min(READ_BYTES as u64) as usize;
            let mut bytes = vec![0; want];
            let at = state.read;
            let file = state.file.as_mut().expect("records written are in a file");
            file.seek(SeekFrom::Start(at))?;
            file.read_exact(&mut bytes)?;
            let mut used = 0;
            while taken.len() < most {
                let Some((beacon, size)) = record(&bytes[used..])? else {
                    break;
                };
                taken.push(beacon);
                used += size;
            }
            if used == 0 {
                // A record longer than one read: never written by this file's appends.
                return Err(io::Error::new(io::ErrorKind::InvalidData, "damaged record"));
            }
            state.read += used as u64;
        }
        if !written_out && state.read == state.written {
            // The file is read to its end and could not take the buffer: from memory, then.
            let mut used = 0;
            while taken.len() < most {
                let Some((beacon, size)) = record(&state.buffer[used..])? else {
                    break;
                };
                taken.push(beacon);
                used += size;
            }
            state.buffer.drain(..used);
        }
        if state.read == state.written && state.buffer.is_empty() {
            self.emptied(&mut state);
        }
        Ok(taken)
    }

    /// Bytes kept (in the file or its buffer) and not yet taken.
    pub fn kept_bytes(&self) -> u64 {
        let state = self.lock();
        state.written - state.read + state.buffer.len() as u64
    }

    /// Writes what is buffered at the file's end, so a stop keeps it for the next start.
    pub fn write_out(&self) -> io::Result<()> {
        let mut state = self.lock();
        self.write_buffer(&mut state)
    }

    /// Forgets everything kept, after the file proved unreadable (it is logged by the caller).
    pub fn discard(&self) {
        let mut state = self.lock();
        state.buffer.clear();
        self.emptied(&mut state);
    }

    /// Nothing is kept any more: the file goes, and new beacons go to memory again.
    fn emptied(&self, state: &mut State) {
        if state.file.take().is_some() && std::fs::remove_file(&self.path).is_err() {
            // Left in place, it is cut at its start when it is next opened.
            tracing::warn!(path = %self.path.display(), "the emptied beacon spill file could not be removed");
        }
        state.read = 0;
        state.written = 0;
        self.holds_any.store(false, Ordering::Release);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write_buffer(&self, state: &mut State) -> io::Result<()> {
        if state.buffer.is_empty() {
            return Ok(());
        }
        let at = state.written;
        let outcome = match &mut state.file {
            Some(file) => Ok(file),
            None => open_locked(&self.path).map(|file| state.file.insert(file)),
        }
        .and_then(|file| {
            file.seek(SeekFrom::Start(at))?;
            file.write_all(&state.buffer)
        });
        match outcome {
            Ok(()) => {
                state.written += state.buffer.len() as u64;
                state.buffer.clear();
                state.failing = false;
                Ok(())
            }
            Err(err) => {
                if !state.failing {
                    tracing::error!(error = %err, path = %self.path.display(),
                        "beacons could not be written to disk; past the memory queue they are refused");
                }
                state.failing = true;
                // What a partial write left past the last whole record is overwritten next time.
                // The buffer's beacons were acknowledged: they stay buffered (bounded by
                // `most_bytes`) and are tried again.
                Err(err)
            }
        }
    }
}

/// The spill file at `path`, opened (made if missing, never cut) and locked against another
/// process.
fn open_locked(path: &Path) -> io::Result<File> {
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    file.try_lock().map_err(|err| match err {
        std::fs::TryLockError::WouldBlock => io::Error::new(
            io::ErrorKind::WouldBlock,
            "another process is using this file",
        ),
        std::fs::TryLockError::Error(err) => err,
    })?;
    Ok(file)
}

/// The length of `file`'s leading whole records (what an interrupted append left after them
/// is not a record), read a record at a time.
fn whole_records(file: &mut File) -> io::Result<u64> {
    file.seek(SeekFrom::Start(0))?;
    let mut reader = io::BufReader::new(&mut *file);
    let (mut used, mut body) = (0, Vec::new());
    loop {
        let mut length = [0; 4];
        if reader.read_exact(&mut length).is_err() {
            return Ok(used);
        }
        let length = u32::from_le_bytes(length) as usize;
        body.resize(length.min(MOST_RECORD_BYTES + 1), 0);
        let whole = length <= MOST_RECORD_BYTES
            && reader.read_exact(&mut body).is_ok()
            && proto::Beacon::decode(body.as_slice()).is_ok();
        if !whole {
            return Ok(used);
        }
        used += 4 + length as u64;
    }
}

/// The first record of `bytes` and its size; none when `bytes` holds no whole one.
fn record(bytes: &[u8]) -> io::Result<Option<(proto::Beacon, usize)>> {
    let Some(length) = bytes.get(..4) else {
        return Ok(None);
    };
    let length = u32::from_le_bytes(length.try_into().expect("four bytes")) as usize;
    if length > MOST_RECORD_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "damaged record"));
    }
    let Some(body) = bytes.get(4..4 + length) else {
        return Ok(None);
    };
    let beacon = proto::Beacon::decode(body)
        .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
    Ok(Some((beacon, 4 + length)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beacon(n: usize) -> proto::Beacon {
        proto::Beacon {
            campaign_slug: "spring".into(),
            lead_slug: format!("lead-{n}"),
            user_agent: "a".repeat(300),
            ..proto::Beacon::default()
        }
    }

    fn slugs(beacons: &[proto::Beacon]) -> Vec<String> {
        beacons.iter().map(|b| b.lead_slug.clone()).collect()
    }

    #[test]
    fn beacons_come_back_in_order_and_the_emptied_file_lets_memory_take_over() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::open(dir.path(), 8080, 1 << 30).unwrap();
        assert!(!spill.holds_any());
        // More than a buffer's worth, so some are in the file and some still buffered.
        for n in 0..2_000 {
            spill.append(&beacon(n)).unwrap();
        }
        assert!(spill.holds_any());
        let first = spill.take(1_500).unwrap();
        assert_eq!(
            slugs(&first),
            slugs(&(0..1_500).map(beacon).collect::<Vec<_>>())
        );
        assert!(spill.holds_any(), "500 left");
        spill.append(&beacon(2_000)).unwrap();
        let rest = spill.take(10_000).unwrap();
        assert_eq!(rest.len(), 501);
        assert_eq!(rest.last().unwrap().lead_slug, "lead-2000");
        assert!(!spill.holds_any());
        assert!(!spill.path().exists(), "an emptied spill leaves no file");
        assert!(spill.take(10).unwrap().is_empty());
    }

    #[test]
    fn the_bound_refuses_and_what_is_taken_makes_room() {
        let dir = tempfile::tempdir().unwrap();
        let one = 4 + beacon(0).encoded_len() as u64;
        let spill = Spill::open(dir.path(), 8080, one * 3).unwrap();
        for n in 0..3 {
            spill.append(&beacon(n)).unwrap();
        }
        assert!(matches!(spill.append(&beacon(3)), Err(NoRoom::Full)));
        assert_eq!(spill.kept_bytes(), one * 3);
        assert_eq!(spill.take(1).unwrap().len(), 1);
        spill.append(&beacon(3)).unwrap();
        assert_eq!(
            slugs(&spill.take(10).unwrap()),
            ["lead-1", "lead-2", "lead-3"]
        );
        assert!(Spill::open(dir.path(), 8081, 0).is_none(), "0 keeps none");
    }

    #[test]
    fn a_restarted_process_finds_what_was_written_and_no_cut_record() {
        let dir = tempfile::tempdir().unwrap();
        {
            let spill = Spill::open(dir.path(), 9000, 1 << 30).unwrap();
            for n in 0..10 {
                spill.append(&beacon(n)).unwrap();
            }
            spill.write_out().unwrap();
            // Another process cannot have the same file meanwhile.
            assert!(open_locked(spill.path()).is_err());
        }
        // A kill in the middle of a write leaves a cut record at the end.
        let path = dir.path().join("lps-beacons-9000.spill");
        let mut file = File::options().append(true).open(&path).unwrap();
        file.write_all(&[200, 0, 0, 0, 1, 2, 3]).unwrap();
        drop(file);
        let spill = Spill::open(dir.path(), 9000, 1 << 30).unwrap();
        assert!(spill.holds_any());
        let back = spill.take(100).unwrap();
        assert_eq!(
            slugs(&back),
            slugs(&(0..10).map(beacon).collect::<Vec<_>>())
        );
        assert!(!spill.holds_any());
    }
}
