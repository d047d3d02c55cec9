//! Job status changes, fanned out to `WatchJob` streams: in-process through a broadcast
//! channel, and across processes on PostgreSQL through `LISTEN/NOTIFY` on `lps_jobs`.

use std::time::Duration;

use sqlx::postgres::PgListener;
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
        loop {
            match PgListener::connect(&database_url).await {
                Ok(mut listener) => {
                    if let Err(err) = listener.listen(CHANNEL).await {
                        tracing::warn!(error = %err, "cannot LISTEN for job events");
                    } else {
                        while let Ok(notification) = listener.recv().await {
                            self.publish(notification.payload());
                        }
                    }
                }
                Err(err) => tracing::warn!(error = %err, "job event listener cannot connect"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}
