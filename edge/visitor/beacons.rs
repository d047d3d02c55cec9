//! Beacons from pages' tracking scripts, gathered into batches for core.
//!
//! A beacon is answered as soon as it is queued; a background task sends what is queued to
//! `VisitorService.RecordBeacons` at least every [`FLUSH_EVERY`] (or when [`BATCH`] are
//! waiting), so a crash loses at most about that much of view, click and time beacons (form
//! submissions never pass through here: they are stored before they are answered). On shutdown
//! the queue refuses new beacons and everything queued is sent before the process exits.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lps::proto;
use prost::Message;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::core_client::Core;

/// The memory queued beacons may take at most (each counted as its encoded size plus its
/// struct); beyond it a beacon is refused (503), not silently dropped. A beacon is up to 4 KiB
/// of body, so a count alone would not bound memory: 64 MiB is about 150,000 beacons as
/// browsers send them (~450 bytes), about 12 s of the most the edge accepts on two cores.
pub const MAX_QUEUED_BYTES: usize = 64 * 1024 * 1024;
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
}

/// The memory the queue holds, bounded by [`MAX_QUEUED_BYTES`].
#[derive(Default)]
struct QueuedBytes(AtomicUsize);

impl QueuedBytes {
    /// The memory a queued beacon is counted as.
    fn of(beacon: &proto::Beacon) -> usize {
        std::mem::size_of::<proto::Beacon>() + beacon.encoded_len()
    }

    /// Counts `bytes` more, unless that passes the bound.
    fn take(&self, bytes: usize) -> bool {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |queued| {
                (queued + bytes <= MAX_QUEUED_BYTES).then_some(queued + bytes)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        self.0.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// Why a beacon was not queued.
#[derive(Debug)]
pub enum Refused {
    /// The queue is full: core is not keeping up.
    Full,
    /// The process is shutting down.
    Closed,
}

impl BeaconQueue {
    pub fn push(&self, beacon: proto::Beacon) -> Result<(), Refused> {
        let bytes = QueuedBytes::of(&beacon);
        if !self.queued.take(bytes) {
            return Err(Refused::Full);
        }
        self.sender.send(beacon).map_err(|_| {
            self.queued.give_back(bytes);
            Refused::Closed
        })
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

/// Starts the queue and its sending task.
pub fn start(core: Core) -> (BeaconQueue, Flusher) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let queued = Arc::new(QueuedBytes::default());
    let task = tokio::spawn(run(core, receiver, queued.clone(), stopped));
    (BeaconQueue { sender, queued }, Flusher { stop, task })
}

async fn run(
    core: Core,
    mut receiver: mpsc::UnboundedReceiver<proto::Beacon>,
    queued: Arc<QueuedBytes>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut stopping = false;
    loop {
        if !stopping {
            tokio::select! {
                received = receiver.recv_many(&mut batch, BATCH) => {
                    if received == 0 {
                        stopping = true;
                    }
                }
                _ = &mut stopped => {
                    // From here `push` fails; what is queued is still received below.
                    receiver.close();
                    stopping = true;
                }
            }
            if !stopping && batch.len() < BATCH {
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
        } else {
            while batch.len() < BATCH {
                match receiver.try_recv() {
                    Ok(beacon) => batch.push(beacon),
                    Err(_) => break,
                }
            }
            if batch.is_empty() {
                return;
            }
        }
        if !batch.is_empty() {
            let bytes: usize = batch.iter().map(QueuedBytes::of).sum();
            send(&core, std::mem::take(&mut batch), stopping).await;
            // Counted until sent: a batch waiting for core holds its memory too.
            queued.give_back(bytes);
        }
    }
}

/// Sends one batch, retrying while core is unreachable (a few times only when shutting down).
async fn send(core: &Core, beacons: Vec<proto::Beacon>, stopping: bool) {
    let count = beacons.len();
    let request = proto::RecordBeaconsRequest { beacons };
    let mut delay = Duration::from_millis(100);
    for attempt in 1.. {
        match core.visitor().record_beacons(request.clone()).await {
            Ok(_) => return,
            Err(status) if stopping && attempt >= 5 => {
                tracing::error!(%status, count, "beacons lost at shutdown: core unreachable");
                return;
            }
            Err(status) if status.code() == tonic::Code::InvalidArgument => {
                tracing::error!(%status, count, "beacons refused by core");
                return;
            }
            Err(status) => {
                tracing::warn!(%status, count, attempt, "beacons not recorded yet; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
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

    #[test]
    fn the_queue_is_bounded_by_the_memory_its_beacons_take() {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let queue = BeaconQueue {
            sender,
            queued: Arc::default(),
        };
        // Large beacons fill the bound in fewer than small ones would.
        let large = QueuedBytes::of(&beacon(4_000));
        assert!(large > 4_000);
        let fits = MAX_QUEUED_BYTES / large;
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
        let before = queue.queued.0.load(Ordering::Relaxed);
        queue.queued.give_back(large);
        assert!(matches!(queue.push(beacon(4_000)), Err(Refused::Closed)));
        assert_eq!(queue.queued.0.load(Ordering::Relaxed), before - large);
    }
}
