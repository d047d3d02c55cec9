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
//! Signed as Standard Webhooks specifies (`webhook-id`, `webhook-timestamp`,
//! `webhook-signature`), and with lps's older, deprecated `X-Lps-Signature` beside it (see
//! [`crate::domain::webhook_signature`]).
//!
//! A receiving host (per workspace) that fails [`Health::unhealthy_after`] attempts in a row is
//! unhealthy: it is paused, its callbacks wait (none is dropped or spends an attempt), and
//! when the pause ends the next attempt is its probe; each pause doubles, from
//! [`Health::first_pause`] to an hour. One success resumes it.
//!
//! An email channel's message (its `url` a `mailto:`) goes to the configured SMTP server
//! instead, by the same schedule, and its health is that server's (destination `smtp`).
//!
//! Receivers on private, loopback, link-local or other special-purpose addresses are refused
//! (SSRF protection, see [`crate::outbound`]) unless the core runs with
//! `--allow-private-network`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};

use crate::domain::webhook_signature;
use crate::outbound;
use crate::store::callbacks::Attempt;
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
            let span = || {
                tracing::info_span!("callback delivery", otel.kind = "client",
                    callback = callback.id, event = %callback.event)
            };
            let delivery = deliver(&app, &client, &callback);
            if let Err(err) = crate::telemetry::traced(span, delivery).await {
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

/// When a receiving host is taken for unhealthy and paused.
#[derive(Debug, Clone, Copy)]
pub struct Health {
    /// Failed attempts in a row (across its callbacks) that make a host unhealthy.
    pub unhealthy_after: i64,
    /// Its first pause; each next one is twice as long, at most an hour.
    pub first_pause: Duration,
}

impl Health {
    /// The pause after `pauses` earlier ones.
    pub fn pause(&self, pauses: i64) -> Duration {
        let factor = 2u32.saturating_pow(pauses.clamp(0, 16) as u32);
        self.first_pause
            .saturating_mul(factor)
            .min(Duration::from_secs(3600))
    }
}

/// One attempt, and its outcome recorded (the callback's and its receiving host's).
async fn deliver(
    app: &App,
    client: &outbound::Client,
    callback: &callbacks::DueCallback,
) -> Result<()> {
    let secrets = workspaces::callback_secrets(app.db.pool(), callback.workspace_id)
        .await?
        .unwrap_or_default();
    let started = time::now();
    let clock = std::time::Instant::now();
    let outcome = if callback.url.starts_with("mailto:") {
        send_mail(app, callback).await
    } else {
        send(client, callback, &secrets.signing(started)).await
    };
    let attempt = |status_code| Attempt {
        at: started,
        status_code,
        latency_ms: clock.elapsed().as_millis() as i64,
    };
    let pool = app.db.pool();
    match outcome {
        Ok(status) => {
            let now = time::now();
            callbacks::mark_delivered(pool, callback.id, attempt(Some(status)), now).await?;
            callbacks::endpoint_succeeded(pool, callback.workspace_id, &callback.destination, now)
                .await?;
            crate::metrics::callback_attempt("delivered");
        }
        Err(Failure {
            reason,
            status,
            permanent,
        }) => {
            let attempts = callback.attempts + 1;
            let now = time::now();
            let retry_at = (attempts < MAX_ATTEMPTS && !permanent)
                .then(|| now + backoff(attempts).as_micros() as i64);
            tracing::warn!(callback = callback.id, attempts, %reason, "callback not delivered");
            callbacks::mark_failed(pool, callback.id, &reason, retry_at, attempt(status)).await?;
            // An address refused by policy says nothing of the receiver's health.
            if !permanent {
                record_endpoint_failure(app, callback, &reason, now).await?;
            }
            crate::metrics::callback_attempt(if retry_at.is_some() {
                "retrying"
            } else {
                "failed"
            });
        }
    }
    Ok(())
}

/// Counts a failure against the callback's receiving host; past the threshold the host is
/// paused (again, for longer).
async fn record_endpoint_failure(
    app: &App,
    callback: &callbacks::DueCallback,
    reason: &str,
    now: time::Micros,
) -> Result<()> {
    let health = app.config.callback_health;
    let pool = app.db.pool();
    let (failures, pauses) = callbacks::endpoint_failed(
        pool,
        callback.workspace_id,
        &callback.destination,
        reason,
        now,
    )
    .await?;
    if failures >= health.unhealthy_after {
        let pause = health.pause(pauses);
        let until = now + pause.as_micros() as i64;
        callbacks::pause_endpoint(
            pool,
            callback.workspace_id,
            &callback.destination,
            until,
            now,
        )
        .await?;
        tracing::warn!(
            workspace = callback.workspace_id,
            destination = %callback.destination,
            failures,
            pause_seconds = pause.as_secs(),
            "callback receiver unhealthy: paused"
        );
    }
    Ok(())
}

/// Wait before attempt `attempts + 1`: 1 s, 2 s, 4 s, ... at most an hour.
pub fn backoff(attempts: i64) -> Duration {
    let exponent = (attempts - 1).clamp(0, 12) as u32;
    Duration::from_secs(2u64.pow(exponent)).min(Duration::from_secs(3600))
}

/// Why a delivery failed, and whether trying again could help.
struct Failure {
    reason: String,
    /// The receiver's answer, when one came.
    status: Option<u16>,
    /// An address refused by policy or unparseable: retrying cannot help.
    permanent: bool,
}

impl Failure {
    fn transient(reason: String) -> Self {
        Self {
            reason,
            status: None,
            permanent: false,
        }
    }

    fn permanent(reason: String) -> Self {
        Self {
            reason,
            status: None,
            permanent: true,
        }
    }
}

/// One attempt of an email channel's message (its payload a [`crate::mailer::Mail`]):
/// SMTP's 250 once the server took every copy, or why not.
async fn send_mail(
    app: &App,
    callback: &callbacks::DueCallback,
) -> std::result::Result<u16, Failure> {
    let Some(mailer) = &app.mailer else {
        return Err(Failure::permanent(
            "no SMTP server is configured (--smtp-url)".to_owned(),
        ));
    };
    let mail: crate::mailer::Mail = serde_json::from_str(&callback.payload)
        .map_err(|e| Failure::permanent(format!("not an email: {e}")))?;
    if mail.to.is_empty() {
        // Every teammate it was for has left the account or unsubscribed: nothing to send.
        return Ok(250);
    }
    mailer.send(&mail).await.map_err(Failure::transient)?;
    Ok(250)
}

/// One attempt: the receiver's 2xx status, or why not.
async fn send(
    client: &outbound::Client,
    callback: &callbacks::DueCallback,
    secrets: &[&str],
) -> std::result::Result<u16, Failure> {
    let timestamp = chrono::Utc::now().timestamp();
    let message_id = webhook_signature::message_id(callback.id);
    let current = secrets.first().copied().unwrap_or_default();
    let response = client
        .post(&callback.url)
        .map_err(|refused| Failure::permanent(refused.0))?
        .header("content-type", "application/json")
        .header("webhook-id", message_id.as_str())
        .header("webhook-timestamp", timestamp.to_string())
        .header(
            "webhook-signature",
            webhook_signature::standard(secrets, &message_id, timestamp, &callback.payload),
        )
        .header("x-lps-event", callback.event.as_str())
        .header("x-lps-delivery", callback.id.to_string())
        .header("x-lps-timestamp", timestamp.to_string())
        .header(
            "x-lps-signature",
            webhook_signature::legacy(current, timestamp, &callback.payload),
        )
        .body(callback.payload.clone())
        .send()
        .await
        .map_err(|e| match outbound::is_refused(&e) {
            Some(reason) => Failure::permanent(reason),
            None => Failure::transient(format!("request failed: {e}")),
        })?;
    let status = response.status();
    if status.is_success() {
        Ok(status.as_u16())
    } else {
        Err(Failure {
            reason: format!("receiver answered {status}"),
            status: Some(status.as_u16()),
            permanent: false,
        })
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
    fn pauses_double_up_to_an_hour() {
        let health = Health {
            unhealthy_after: 5,
            first_pause: Duration::from_secs(60),
        };
        let pauses: Vec<u64> = (0..4).map(|n| health.pause(n).as_secs()).collect();
        assert_eq!(pauses, [60, 120, 240, 480]);
        assert_eq!(health.pause(100).as_secs(), 3600);
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
