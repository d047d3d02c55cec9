//! Counted engagement as it is recorded, fanned out to `WatchEngagement` streams: in-process
//! through a broadcast channel, and across processes on PostgreSQL through `NOTIFY` on
//! `lps_engagement`, sent in the recording transaction (so only committed events are told).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::store::{self, Dialect};
use crate::time::Micros;

/// The PostgreSQL channel engagement is announced on.
pub const CHANNEL: &str = "lps_engagement";
/// Bytes of one notification's payload (PostgreSQL's limit is 8,000).
const MAX_PAYLOAD_BYTES: usize = 7_000;

/// One counted event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedEvent {
    /// `page_viewed`, `button_clicked`, `scroll_100_percent`, `time_on_page`, `form_submitted`.
    pub event: String,
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub lead_id: i64,
    pub occurred_at: Micros,
    #[serde(default)]
    pub seconds: i64,
    #[serde(default)]
    pub target: Option<String>,
}

/// A notification: this process's events, marked with where they come from so the process
/// that sent them (which told its own watchers already) skips them.
#[derive(Serialize, Deserialize)]
struct Notification {
    origin: String,
    events: Vec<FeedEvent>,
}

#[derive(Clone)]
pub struct Feed {
    sender: broadcast::Sender<Arc<FeedEvent>>,
    /// This process, in notifications.
    origin: Arc<str>,
}

impl Default for Feed {
    fn default() -> Self {
        Self {
            sender: broadcast::channel(4096).0,
            origin: crate::random::token(16).into(),
        }
    }
}

impl Feed {
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<FeedEvent>> {
        self.sender.subscribe()
    }

    /// Tells this process's watchers (after the events are committed).
    pub fn publish_local(&self, events: Vec<FeedEvent>) {
        if self.sender.receiver_count() == 0 {
            return;
        }
        for event in events {
            // Nobody listening is fine.
            let _ = self.sender.send(Arc::new(event));
        }
    }

    /// Tells other processes, inside the recording transaction (PostgreSQL only).
    pub async fn announce(
        &self,
        conn: &mut sqlx::AnyConnection,
        dialect: Dialect,
        events: &[FeedEvent],
    ) -> sqlx::Result<()> {
        if dialect != Dialect::Postgres || events.is_empty() {
            return Ok(());
        }
        let mut batch: Vec<FeedEvent> = Vec::new();
        let mut bytes = 0;
        for event in events {
            let size = serde_json::to_string(event).map_or(0, |s| s.len()) + 1;
            if !batch.is_empty() && bytes + size > MAX_PAYLOAD_BYTES {
                self.notify(conn, std::mem::take(&mut batch)).await?;
                bytes = 0;
            }
            bytes += size;
            batch.push(event.clone());
        }
        self.notify(conn, batch).await
    }

    async fn notify(
        &self,
        conn: &mut sqlx::AnyConnection,
        events: Vec<FeedEvent>,
    ) -> sqlx::Result<()> {
        let payload = serde_json::to_string(&Notification {
            origin: self.origin.to_string(),
            events,
        })
        .unwrap_or_default();
        store::notify(conn, Dialect::Postgres, CHANNEL, &payload).await
    }

    /// Relays other processes' events to this process's watchers, reconnecting when the
    /// connection drops. Runs until the process ends.
    pub async fn relay_postgres(self, database_url: String) {
        store::listen_forever(
            &database_url,
            CHANNEL,
            |payload| match serde_json::from_str::<Notification>(payload) {
                Ok(n) if *n.origin != *self.origin => self.publish_local(n.events),
                Ok(_) => {}
                Err(err) => tracing::warn!(error = %err, "unreadable engagement notification"),
            },
        )
        .await;
    }
}
