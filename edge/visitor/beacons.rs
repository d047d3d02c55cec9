//! Beacons from pages' tracking scripts, gathered into batches for core.
//!
//! A beacon is answered as soon as it is queued; a background task sends what is queued to
//! `VisitorService.RecordBeacons` at least every [`FLUSH_EVERY`] (or when [`BATCH`] are
//! waiting), so a crash loses at most about that much of view, click and time beacons (form
//! submissions never pass through here: they are stored before they are answered). Past the
//! memory's bound beacons go to a file (`beacon_spill.rs`) and are sent from there in turn, so
//! a burst or core away for a while is absorbed rather than refused. On shutdown the queue
//! refuses new beacons and everything queued in memory is sent before the process exits; what
//! waits on disk is sent for a few seconds more, and the rest stays in the file for the next
//! start on the same port.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lps::proto;
use prost::Message;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::beacon_spill::Spill;
use crate::core_client::Core;

/// The memory queued beacons may take at most by default (`--beacon-queue-mb`; each counted as
/// its encoded size plus its struct); beyond it a beacon goes to the spill file, and past that is refused (503), never
/// silently dropped. A beacon is up to 4 KiB of body, so a count alone would not bound memory:
/// 64 MiB is about 150,000 beacons as browsers send them (~450 bytes), a few seconds of the
/// most the edge accepts on two cores; the file (1 GiB by default) holds about a minute more.
pub const DEFAULT_QUEUE_MB: u64 = 64;
/// Beacons per call to core (core takes up to 10,000). A batch is one transaction, whose cost
/// is mostly the index pages it dirties and commits to the log: beacons land on random pages of
/// `page_events`' indexes, so the larger the batch, the more beacons share a page (5,000
/// stored 25% more a second than 2,000 under a stream of beacons).
const BATCH: usize = 5_000;
/// How long a beacon waits in the queue at most (unless core is down).
const FLUSH_EVERY: Duration = Duration::from_millis(250);

/// Where handlers queue beacons. Cheap to clone.
#[derive(Clone)]
pub struct BeaconQueue {
    sender: mpsc::UnboundedSender<proto::Beacon>,
    queued: Arc<QueuedBytes>,
    /// Where beacons go past the memory's bound (`beacon_spill.rs`), if anywhere.
    spill: Option<Arc<Spill>>,
}

/// The memory the queue holds, and its bound.
struct QueuedBytes {
    queued: AtomicUsize,
    most: usize,
}

impl QueuedBytes {
    /// The memory a queued beacon is counted as.
    fn of(beacon: &proto::Beacon) -> usize {
        std::mem::size_of::<proto::Beacon>() + beacon.encoded_len()
    }

    fn new(most: usize) -> Self {
        Self {
            queued: AtomicUsize::new(0),
            most,
        }
    }

    /// Counts `bytes` more, unless that passes the bound.
    fn take(&self, bytes: usize) -> bool {
        self.queued
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |queued| {
                (queued + bytes <= self.most).then_some(queued + bytes)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        self.queued.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// Why a beacon was not queued.
#[derive(Debug)]
pub enum Refused {
    /// The queue and its file are full (or the file cannot be written): core is not keeping
    /// up.
    Full,
    /// The process is shutting down.
    Closed,
}

impl BeaconQueue {
    /// Queues `beacon` in memory; past the memory's bound, or while beacons wait on disk
    /// (which it must follow), in the spill file.
    pub fn push(&self, beacon: proto::Beacon) -> Result<(), Refused> {
        if self.sender.is_closed() {
            return Err(Refused::Closed);
        }
        let spilling = self.spill.as_ref().is_some_and(|spill| spill.holds_any());
        let bytes = QueuedBytes::of(&beacon);
        if !spilling && self.queued.take(bytes) {
            return self.sender.send(beacon).map_err(|_| {
                self.queued.give_back(bytes);
                Refused::Closed
            });
        }
        match &self.spill {
            Some(spill) => spill.append(&beacon).map_err(|_| Refused::Full),
            None => Err(Refused::Full),
        }
    }
}

/// The sending task; [`Flusher::finish`] stops taking beacons and sends what is queued.
pub struct Flusher {
    stop: tokio::sync::oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Flusher {
    pub async fn finish(self) {
        let _ = self.stop.send(());
        if let Err(err) = self.task.await {
            tracing::error!(error = %err, "the beacon sender failed");
        }
    }
}

/// How long a stopping process goes on sending what waits on disk; the rest stays in the file
/// for the next start on the same port (`beacon_spill.rs`).
const SEND_SPILLED_WHEN_STOPPING: Duration = Duration::from_secs(10);

/// Starts the queue (at most `memory` bytes) and its sending task; beacons past memory go to
/// `spill`, if any.
pub fn start(core: Core, memory: usize, spill: Option<Spill>) -> (BeaconQueue, Flusher) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let queued = Arc::new(QueuedBytes::new(memory));
    let spill = spill.map(Arc::new);
    if let Some(spill) = &spill {
        tokio::spawn(write_out_every_second(Arc::downgrade(spill)));
    }
    let task = tokio::spawn(run(core, receiver, queued.clone(), spill.clone(), stopped));
    (
        BeaconQueue {
            sender,
            queued,
            spill,
        },
        Flusher { stop, task },
    )
}

async fn run(
    core: Core,
    mut receiver: mpsc::UnboundedReceiver<proto::Beacon>,
    queued: Arc<QueuedBytes>,
    spill: Option<Arc<Spill>>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut stopping: Option<tokio::time::Instant> = None;
    loop {
        let spilled = spill.as_ref().is_some_and(|spill| spill.holds_any());
        if stopping.is_some() || spilled {
            // What memory holds, without waiting: older than anything on disk.
            while batch.len() < BATCH {
                match receiver.try_recv() {
                    Ok(beacon) => batch.push(beacon),
                    Err(_) => break,
                }
            }
        } else {
            tokio::select! {
                received = receiver.recv_many(&mut batch, BATCH) => {
                    if received == 0 {
                        stopping = Some(tokio::time::Instant::now());
                    }
                }
                _ = &mut stopped => {
                    // From here `push` fails; what is queued is still received below.
                    receiver.close();
                    stopping = Some(tokio::time::Instant::now());
                }
                // Beacons went to disk while memory had none for this task to wait on (its
                // bound taken by a batch being sent, or none at all).
                () = spill_started(spill.as_deref()) => {}
            }
            if stopping.is_none() && batch.len() < BATCH {
                // Let a batch fill for a moment: fewer, larger writes.
                let deadline = tokio::time::sleep(FLUSH_EVERY);
                tokio::pin!(deadline);
                while batch.len() < BATCH {
                    let room = BATCH - batch.len();
                    tokio::select! {
                        received = receiver.recv_many(&mut batch, room) => {
                            if received == 0 { break; }
                        }
                        _ = &mut deadline => break,
                    }
                }
            }
        }
        let from_memory: usize = batch.iter().map(QueuedBytes::of).sum();
        if batch.is_empty()
            && let Some(spill) = &spill
            && spill.holds_any()
        {
            let sending_on = stopping.is_none_or(|at| at.elapsed() < SEND_SPILLED_WHEN_STOPPING);
            if sending_on {
                batch = take_spilled(spill.clone()).await;
            }
        }
        if batch.is_empty() {
            // Stopped only once memory is empty too: the stop may have been noticed before
            // what was queued ahead of it was received (it is, at the top of the loop).
            if stopping.is_some() && receiver.is_empty() {
                keep_for_next_start(spill.as_deref());
                return;
            }
            continue;
        }
        let sent = send(&core, std::mem::take(&mut batch), stopping.is_some()).await;
        // Counted until sent: a batch waiting for core holds its memory too.
        queued.give_back(from_memory);
        if let Err(lost) = sent {
            spill_at_shutdown(spill.as_deref(), lost);
        }
    }
}

/// Resolves when `spill` starts holding beacons; never without one.
async fn spill_started(spill: Option<&Spill>) {
    match spill {
        Some(spill) => spill.started().await,
        None => std::future::pending().await,
    }
}

/// Writes what the spill buffered to its file every second, so a beacon spilled while the
/// sender waits on core (paused, restarting) is on disk within a second, not only once a
/// buffer's worth gathered. Ends with the queue.
async fn write_out_every_second(spill: std::sync::Weak<Spill>) {
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(spill) = spill.upgrade() else {
            return;
        };
        if spill.holds_any() {
            // A failure is logged by the spill and tried again next time.
            let _ = tokio::task::spawn_blocking(move || spill.write_out()).await;
        }
    }
}

/// Up to a batch of the beacons waiting on disk (file work, on a blocking thread). A file
/// that cannot be read back is logged and forgotten rather than tried forever.
async fn take_spilled(spill: Arc<Spill>) -> Vec<proto::Beacon> {
    let taken = tokio::task::spawn_blocking(move || {
        spill.take(BATCH).inspect_err(|err| {
            tracing::error!(error = %err, path = %spill.path().display(), bytes = spill.kept_bytes(),
                "beacons on disk could not be read back; they are lost");
            spill.discard();
        })
    })
    .await;
    match taken {
        Ok(Ok(beacons)) => beacons,
        _ => Vec::new(),
    }
}

/// At shutdown, what waits on disk stays there for the next start (its buffer written out).
fn keep_for_next_start(spill: Option<&Spill>) {
    let Some(spill) = spill.filter(|spill| spill.holds_any()) else {
        return;
    };
    match spill.write_out() {
        Ok(()) => tracing::warn!(bytes = spill.kept_bytes(), path = %spill.path().display(),
            "beacons not sent before stopping are kept on disk for the next start on this port"),
        Err(err) => tracing::error!(error = %err, bytes = spill.kept_bytes(),
            "beacons not sent before stopping could not be kept on disk: they are lost"),
    }
}

/// A batch core could not take at shutdown: on disk for the next start, if there is a spill.
fn spill_at_shutdown(spill: Option<&Spill>, lost: Vec<proto::Beacon>) {
    let count = lost.len();
    let kept = spill.is_some_and(|spill| lost.iter().all(|beacon| spill.append(beacon).is_ok()));
    if kept {
        tracing::warn!(
            count,
            "core unreachable at shutdown: beacons kept on disk for the next start"
        );
    } else {
        tracing::error!(count, "beacons lost at shutdown: core unreachable");
    }
}

/// Sends one batch, retrying while core is unreachable (a few times only when shutting down,
/// after which the batch is handed back).
async fn send(
    core: &Core,
    beacons: Vec<proto::Beacon>,
    stopping: bool,
) -> Result<(), Vec<proto::Beacon>> {
    let count = beacons.len();
    let mut request = proto::RecordBeaconsRequest { beacons };
    let mut delay = Duration::from_millis(100);
    for attempt in 1.. {
        match core.visitor().record_beacons(request.clone()).await {
            Ok(_) => return Ok(()),
            Err(status) if stopping && attempt >= 5 => {
                tracing::warn!(%status, count, "core unreachable at shutdown");
                return Err(std::mem::take(&mut request.beacons));
            }
            Err(status) if status.code() == tonic::Code::InvalidArgument => {
                tracing::error!(%status, count, "beacons refused by core");
                return Ok(());
            }
            Err(status) => {
                tracing::warn!(%status, count, attempt, "beacons not recorded yet; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beacon(user_agent_bytes: usize) -> proto::Beacon {
        proto::Beacon {
            campaign_slug: "spring".into(),
            lead_slug: "ada-lovelace-1".into(),
            user_agent: "a".repeat(user_agent_bytes),
            ..proto::Beacon::default()
        }
    }

    const MOST: usize = DEFAULT_QUEUE_MB as usize * 1024 * 1024;

    #[test]
    fn the_queue_is_bounded_by_the_memory_its_beacons_take() {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let queue = BeaconQueue {
            sender,
            queued: Arc::new(QueuedBytes::new(MOST)),
            spill: None,
        };
        // Large beacons fill the bound in fewer than small ones would.
        let large = QueuedBytes::of(&beacon(4_000));
        assert!(large > 4_000);
        let fits = MOST / large;
        for _ in 0..fits {
            queue.push(beacon(4_000)).expect("within the bound");
        }
        assert!(matches!(queue.push(beacon(4_000)), Err(Refused::Full)));
        // What the sender takes and sends is given back.
        let taken = receiver.try_recv().expect("queued");
        queue.queued.give_back(QueuedBytes::of(&taken));
        queue.push(beacon(4_000)).expect("room again");
        // A closed queue refuses and keeps nothing counted.
        receiver.close();
        let before = queue.queued.queued.load(Ordering::Relaxed);
        queue.queued.give_back(large);
        assert!(matches!(queue.push(beacon(4_000)), Err(Refused::Closed)));
        assert_eq!(queue.queued.queued.load(Ordering::Relaxed), before - large);
    }
}
