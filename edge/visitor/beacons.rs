//! Beacons from pages' tracking scripts, gathered into batches for core.
//!
//! A beacon is answered as soon as it is queued; a background task sends what is queued to
//! `VisitorService.RecordBeacons` at least every [`FLUSH_EVERY`] (or when [`BATCH`] are
//! waiting), so a crash loses at most about that much of view, click and time beacons (form
//! submissions never pass through here: they are stored before they are answered). On shutdown
//! the queue refuses new beacons and everything queued is sent before the process exits.

use std::time::Duration;

use lps::proto;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::core_client::Core;

/// Beacons queued at most; beyond this a beacon is refused (503), not silently dropped.
const CAPACITY: usize = 50_000;
/// Beacons per call to core.
const BATCH: usize = 2_000;
/// How long a beacon waits in the queue at most (unless core is down).
const FLUSH_EVERY: Duration = Duration::from_millis(250);

/// Where handlers queue beacons. Cheap to clone.
#[derive(Clone)]
pub struct BeaconQueue {
    sender: mpsc::Sender<proto::Beacon>,
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
        self.sender.try_send(beacon).map_err(|err| match err {
            mpsc::error::TrySendError::Full(_) => Refused::Full,
            mpsc::error::TrySendError::Closed(_) => Refused::Closed,
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
    let (sender, receiver) = mpsc::channel(CAPACITY);
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(run(core, receiver, stopped));
    (BeaconQueue { sender }, Flusher { stop, task })
}

async fn run(
    core: Core,
    mut receiver: mpsc::Receiver<proto::Beacon>,
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
            send(&core, std::mem::take(&mut batch), stopping).await;
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
