//! Job and design-run status changes (by id), fanned out to `WatchJob` and `WatchDesignRun`
//! streams: in-process through a broadcast channel, and across processes on PostgreSQL through
//! `LISTEN/NOTIFY` on `lps_jobs`.

use tokio::sync::broadcast;

/// The PostgreSQL channel job ids are announced on.
pub const CHANNEL: &str = "lps_jobs";

/// Announces which jobs changed.
#[derive(Clone)]
pub struct JobEvents {
    sender: broadcast::Sender<String>,
}

impl Default for JobEvents {
    fn default() -> Self {
        Self {
            sender: broadcast::channel(1024).0,
        }
    }
}

impl JobEvents {
    pub fn publish(&self, job_id: &str) {
        // Nobody listening is fine.
        let _ = self.sender.send(job_id.to_owned());
    }

    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.sender.subscribe()
    }

    /// Relays other processes' notifications into this process, reconnecting when the
    /// connection drops. Runs until the process ends.
    pub async fn relay_postgres(self, database_url: String) {
        crate::store::listen_forever(&database_url, CHANNEL, |job_id| self.publish(job_id)).await;
    }
}
