//! Delivering callbacks from the outbox: `POST` of the JSON payload, signed with the
//! workspace's secret, retried with exponential backoff (1 s, 2 s, 4 s, ... up to an hour)
//! until delivered or tried `MAX_ATTEMPTS` times.
//!
//! Deliveries run concurrently, at most [`MAX_IN_FLIGHT`] at once and [`PER_DESTINATION`] per
//! receiving host, taken in turn across workspaces and receivers: a slow or dead receiver holds only its
//! own few slots (and backs off on its own schedule) while everyone else's callbacks go out. A
//! callback is claimed just before its delivery starts, with a lease longer than the delivery
//! can take (connect and response timeouts), so no two processes attempt it at once and a
//! crash only delays it until the lease ends.
//!
//! Signature: `X-Lps-Signature: sha256=HEX(HMAC-SHA256(secret, "{X-Lps-Timestamp}.{body}"))`.
//!
//! Receivers on private, loopback, link-local or other special-purpose addresses are refused
//! (SSRF protection, see [`crate::outbound`]) unless the core runs with
//! `--allow-private-network`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::{Notify, Semaphore};

use crate::outbound;
use crate::store::{callbacks, workspaces};
use crate::{App, Result, time};

/// Attempts before a callback is given up.
pub const MAX_ATTEMPTS: i64 = 10;
/// Deliveries in flight at once, in this process.
pub const MAX_IN_FLIGHT: usize = 32;
/// Deliveries in flight at once to one receiving host.
pub const PER_DESTINATION: usize = 4;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const TIMEOUT: Duration = Duration::from_secs(10);
/// How long a claimed callback is reserved for its sender: its delivery starts at once and
/// cannot outlast `TIMEOUT`; the rest is room for recording the outcome.
const LEASE: Duration = Duration::from_secs(30);

/// What this process has in flight.
#[derive(Default)]
struct InFlight {
    per_host: HashMap<String, usize>,
}

/// Delivers until the process ends.
pub async fn run(app: App) {
    let limits = outbound::Limits {
        connect_timeout: CONNECT_TIMEOUT,
        timeout: TIMEOUT,
        max_redirects: 0,
    };
    let client = match outbound::client(
        app.config.allow_private_network,
        &app.config.resolve,
        limits,
    ) {
        Ok(client) => client,
        Err(err) => {
            tracing::error!(error = %err, "cannot build the callback HTTP client");
            return;
        }
    };
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let in_flight = Arc::new(Mutex::new(InFlight::default()));
    let finished = Arc::new(Notify::new());
    loop {
        let wait = match dispatch_due(&app, &client, &slots, &in_flight, &finished).await {
            Ok(Dispatch::Started) => Duration::ZERO,
            Ok(Dispatch::NothingDue) => idle_wait(&app).await,
            // Until a delivery finishes (the `finished` wake-up), or a while, so that
            // callbacks due meanwhile for other receivers are seen.
            Ok(Dispatch::AllBusy) => Duration::from_secs(1),
            Err(err) => {
                tracing::error!(error = ?err, "callback delivery failed; retrying");
                Duration::from_secs(1)
            }
        };
        tokio::select! {
            _ = app.callbacks_due.notified() => {}
            _ = finished.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Until the next callback falls due (at most a few seconds, so other processes' new work is
/// noticed too).
async fn idle_wait(app: &App) -> Duration {
    let ceiling = Duration::from_secs(2);
    match callbacks::next_due_at(app.db.pool()).await {
        Ok(Some(at)) => {
            let micros = (at - time::now()).max(0) as u64;
            Duration::from_micros(micros).min(ceiling)
        }
        _ => ceiling,
    }
}

/// What one round of the sender did.
enum Dispatch {
    /// Deliveries were started (or others took the picked callbacks first): look again.
    Started,
    /// No callback is due.
    NothingDue,
    /// Callbacks are due, but every slot, or every slot their receivers may have, is taken.
    AllBusy,
}

/// Claims as many due callbacks as there are free slots, fairly, and starts their deliveries.
async fn dispatch_due(
    app: &App,
    client: &outbound::Client,
    slots: &Arc<Semaphore>,
    in_flight: &Arc<Mutex<InFlight>>,
    finished: &Arc<Notify>,
) -> Result<Dispatch> {
    let free = slots.available_permits();
    if free == 0 {
        return Ok(Dispatch::AllBusy);
    }
    let now = time::now();
    // A read first, so an idle sender takes no write lock (see the job worker).
    let candidates = callbacks::due_candidates(
        app.db.pool(),
        now,
        PER_DESTINATION as i64,
        (free * 8) as i64,
    )
    .await?;
    let picked = {
        let in_flight = in_flight.lock().unwrap_or_else(|p| p.into_inner());
        pick_fairly(&candidates, free, &in_flight.per_host)
    };
    if candidates.is_empty() {
        return Ok(Dispatch::NothingDue);
    }
    if picked.is_empty() {
        return Ok(Dispatch::AllBusy);
    }
    let mut tx = app.db.begin_write().await?;
    let claimed = callbacks::claim(&mut tx, &picked, now, now + LEASE.as_micros() as i64).await?;
    tx.commit().await?;
    for callback in claimed {
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            break; // cannot happen: no more were claimed than slots were free
        };
        let host = callbacks::destination_of(&callback.url);
        *in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .per_host
            .entry(host.clone())
            .or_default() += 1;
        let (app, client, in_flight, finished) = (
            app.clone(),
            client.clone(),
            in_flight.clone(),
            finished.clone(),
        );
        tokio::spawn(async move {
            if let Err(err) = deliver(&app, &client, &callback).await {
                tracing::error!(error = ?err, callback = callback.id, "recording a callback outcome failed");
            }
            let mut in_flight = in_flight.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(count) = in_flight.per_host.get_mut(&host) {
                *count -= 1;
                if *count == 0 {
                    in_flight.per_host.remove(&host);
                }
            }
            drop(in_flight);
            drop(permit);
            finished.notify_one();
        });
    }
    Ok(Dispatch::Started)
}

/// Up to `free` candidates, in the order the outbox gives them (already in turn across
/// workspaces and receivers), skipping receivers that have [`PER_DESTINATION`] deliveries in
/// flight.
fn pick_fairly(
    candidates: &[callbacks::DueCandidate],
    free: usize,
    busy_hosts: &HashMap<String, usize>,
) -> Vec<i64> {
    let mut per_host = busy_hosts.clone();
    candidates
        .iter()
        .filter(|candidate| {
            let count = per_host
                .entry(callbacks::destination_of(&candidate.url))
                .or_default();
            let room = *count < PER_DESTINATION;
            *count += usize::from(room);
            room
        })
        .take(free)
        .map(|candidate| candidate.id)
        .collect()
}

/// One attempt, and its outcome recorded.
async fn deliver(
    app: &App,
    client: &outbound::Client,
    callback: &callbacks::DueCallback,
) -> Result<()> {
    let secret = workspaces::callback_secret(app.db.pool(), callback.workspace_id)
        .await?
        .unwrap_or_default();
    match send(client, callback, &secret).await {
        Ok(()) => {
            callbacks::mark_delivered(app.db.pool(), callback.id).await?;
            crate::metrics::callback_attempt("delivered");
        }
        Err(Failure { reason, permanent }) => {
            let attempts = callback.attempts + 1;
            let retry_at = (attempts < MAX_ATTEMPTS && !permanent)
                .then(|| time::now() + backoff(attempts).as_micros() as i64);
            tracing::warn!(callback = callback.id, attempts, %reason, "callback not delivered");
            callbacks::mark_failed(app.db.pool(), callback.id, &reason, retry_at).await?;
            crate::metrics::callback_attempt(if retry_at.is_some() {
                "retrying"
            } else {
                "failed"
            });
        }
    }
    Ok(())
}

/// Wait before attempt `attempts + 1`: 1 s, 2 s, 4 s, ... at most an hour.
pub fn backoff(attempts: i64) -> Duration {
    let exponent = (attempts - 1).clamp(0, 12) as u32;
    Duration::from_secs(2u64.pow(exponent)).min(Duration::from_secs(3600))
}

/// `sha256=HEX(HMAC-SHA256(secret, "{timestamp}.{body}"))`.
pub fn signature(secret: &str, timestamp: i64, body: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(format!("{timestamp}.{body}").as_bytes());
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Why a delivery failed, and whether trying again could help.
struct Failure {
    reason: String,
    /// An address refused by policy or unparseable: retrying cannot help.
    permanent: bool,
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Self {
            reason,
            permanent: false,
        }
    }
}

fn permanent(reason: String) -> Failure {
    Failure {
        reason,
        permanent: true,
    }
}

async fn send(
    client: &outbound::Client,
    callback: &callbacks::DueCallback,
    secret: &str,
) -> std::result::Result<(), Failure> {
    let timestamp = chrono::Utc::now().timestamp();
    let response = client
        .post(&callback.url)
        .map_err(|refused| permanent(refused.0))?
        .header("content-type", "application/json")
        .header("x-lps-event", callback.event.as_str())
        .header("x-lps-delivery", callback.id.to_string())
        .header("x-lps-timestamp", timestamp.to_string())
        .header(
            "x-lps-signature",
            signature(secret, timestamp, &callback.payload),
        )
        .body(callback.payload.clone())
        .send()
        .await
        .map_err(|e| match outbound::is_refused(&e) {
            Some(reason) => permanent(reason),
            None => Failure::from(format!("request failed: {e}")),
        })?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(format!("receiver answered {}", response.status()).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        let waits: Vec<u64> = (1..=4).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8]);
        assert_eq!(backoff(40).as_secs(), 3600);
    }

    #[test]
    fn signatures_are_hmac_sha256_of_timestamp_dot_body() {
        // Expected value computed independently with Python's hmac module.
        assert_eq!(
            signature("whsec_test", 1_700_000_000, r#"{"lead_id":1}"#),
            "sha256=502eab631001f78e47319a5e616d1155ada73141f88186167535af6a810e2413"
        );
        assert_ne!(signature("k", 1, "x"), signature("k", 2, "x"));
    }

    #[test]
    fn picks_spare_receivers_that_have_their_share_in_flight() {
        let candidate = |id, url: &str| callbacks::DueCandidate {
            id,
            url: url.into(),
        };
        // In the outbox's order: the first of each (workspace, receiver), then the second...
        let candidates = [
            candidate(1, "http://slow.example/a"),
            candidate(4, "http://fast.example/x"),
            candidate(2, "http://slow.example/b"),
            candidate(3, "http://slow.example/c"),
            candidate(5, "http://slow.example/d"),
        ];
        assert_eq!(pick_fairly(&candidates, 3, &HashMap::new()), [1, 4, 2]);
        let busy = HashMap::from([("slow.example".to_owned(), PER_DESTINATION - 1)]);
        assert_eq!(pick_fairly(&candidates, 10, &busy), [1, 4]);
    }
}
