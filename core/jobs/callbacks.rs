//! Delivering callbacks from the outbox: `POST` of the JSON payload, signed with the
//! workspace's secret, retried with exponential backoff (1 s, 2 s, 4 s, ... up to an hour)
//! until delivered or tried `MAX_ATTEMPTS` times. Rows are leased while being sent, so several
//! processes never send the same callback at once and a crash only delays it.
//!
//! Signature: `X-Lps-Signature: sha256=HEX(HMAC-SHA256(secret, "{X-Lps-Timestamp}.{body}"))`.
//!
//! Receivers on private, loopback or link-local addresses are refused (SSRF protection) unless
//! the core runs with `--allow-private-network`.

use std::net::IpAddr;
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::store::{callbacks, workspaces};
use crate::{App, Result, time};

/// The event a callback announces.
pub const EVENT: &str = "lead.page_generated";
/// Attempts before a callback is given up.
pub const MAX_ATTEMPTS: i64 = 10;
/// How long a claimed callback is reserved for its sender.
const LEASE: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(10);

/// Delivers until the process ends.
pub async fn run(app: App) {
    let client = match reqwest::Client::builder()
        .timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("lps/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(client) => client,
        Err(err) => {
            tracing::error!(error = %err, "cannot build the callback HTTP client");
            return;
        }
    };
    loop {
        let wait = match deliver_due(&app, &client).await {
            Ok(0) => idle_wait(&app).await,
            Ok(_) => Duration::ZERO,
            Err(err) => {
                tracing::error!(error = ?err, "callback delivery failed; retrying");
                Duration::from_secs(1)
            }
        };
        tokio::select! {
            _ = app.callbacks_due.notified() => {}
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

async fn deliver_due(app: &App, client: &reqwest::Client) -> Result<usize> {
    let now = time::now();
    // A read first, so an idle sender takes no write lock (see the job worker).
    if callbacks::next_due_at(app.db.pool())
        .await?
        .is_none_or(|at| at > now)
    {
        return Ok(0);
    }
    let mut tx = app.db.begin_write().await?;
    let due = callbacks::claim_due(
        &mut tx,
        app.db.dialect(),
        now,
        now + LEASE.as_micros() as i64,
        16,
    )
    .await?;
    tx.commit().await?;
    for callback in &due {
        let secret = workspaces::callback_secret(app.db.pool(), callback.workspace_id)
            .await?
            .unwrap_or_default();
        match send(client, app.config.allow_private_network, callback, &secret).await {
            Ok(()) => callbacks::mark_delivered(app.db.pool(), callback.id).await?,
            Err(Failure { reason, permanent }) => {
                let attempts = callback.attempts + 1;
                let retry_at = (attempts < MAX_ATTEMPTS && !permanent)
                    .then(|| time::now() + backoff(attempts).as_micros() as i64);
                tracing::warn!(callback = callback.id, attempts, %reason, "callback not delivered");
                callbacks::mark_failed(app.db.pool(), callback.id, &reason, retry_at).await?;
            }
        }
    }
    Ok(due.len())
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
    client: &reqwest::Client,
    allow_private: bool,
    callback: &callbacks::DueCallback,
    secret: &str,
) -> std::result::Result<(), Failure> {
    let url =
        reqwest::Url::parse(&callback.url).map_err(|e| permanent(format!("invalid URL: {e}")))?;
    if !allow_private {
        ensure_public(&url).await.map_err(permanent)?;
    }
    let timestamp = chrono::Utc::now().timestamp();
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("x-lps-event", EVENT)
        .header("x-lps-delivery", callback.id.to_string())
        .header("x-lps-timestamp", timestamp.to_string())
        .header(
            "x-lps-signature",
            signature(secret, timestamp, &callback.payload),
        )
        .body(callback.payload.clone())
        .send()
        .await
        .map_err(|e| format!("request failed: {e}"))?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(format!("receiver answered {}", response.status()).into())
    }
}

/// Refuses hosts that resolve to addresses not reachable from the public internet.
async fn ensure_public(url: &reqwest::Url) -> std::result::Result<(), String> {
    let host = url.host_str().ok_or("the URL has no host")?;
    let port = url.port_or_known_default().unwrap_or(443);
    let addresses = tokio::net::lookup_host((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    for address in addresses {
        if !is_public(address.ip()) {
            return Err(format!("{host} resolves to a private address; refused"));
        }
    }
    Ok(())
}

fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64)
        }
        IpAddr::V6(v6) => {
            let unique_local = (v6.segments()[0] & 0xfe00) == 0xfc00;
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            match v6.to_ipv4_mapped() {
                Some(v4) => is_public(IpAddr::V4(v4)),
                None => {
                    !(v6.is_loopback()
                        || v6.is_unspecified()
                        || v6.is_multicast()
                        || unique_local
                        || link_local)
                }
            }
        }
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
    fn private_and_loopback_addresses_are_not_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "169.254.169.254",
            "::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "100.64.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "2606:2800:220:1::"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }
}
