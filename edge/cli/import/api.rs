//! The REST API as `lps import` uses it: JSON in and out, a job's events read as they come,
//! and retries that are safe (rate limits waited out, a keyed request sent again as it is).

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;

use crate::operations;

/// The API as this command uses it: JSON in and out, retries that are safe.
#[derive(Clone)]
pub(super) struct Api {
    client: reqwest::Client,
    base: String,
    pub(super) key: String,
}

/// Attempts per request before giving up (rate limits and network errors).
const ATTEMPTS: u32 = 8;
/// How long a 409 (the same batch still being carried out) is waited out.
const IN_FLIGHT_PATIENCE: Duration = Duration::from_secs(75);

impl Api {
    pub(super) fn new(url: &str, key: &str) -> anyhow::Result<Self> {
        let url = url.trim_end_matches('/');
        let base = if url.ends_with(operations::BASE_PATH) {
            url.to_owned()
        } else {
            format!("{url}{}", operations::BASE_PATH)
        };
        Ok(Self {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()?,
            base,
            key: key.to_owned(),
        })
    }

    pub(super) async fn get<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> anyhow::Result<T> {
        self.send(|| self.client.get(format!("{}{path}", self.base)))
            .await
    }

    /// Reads the job's events (`GET /leads/get-status/stream`) until it ends, moving `advance`
    /// by each; answers the last status, or none if the stream was cut short (the job is then
    /// followed otherwise).
    pub(super) async fn events(
        &self,
        job: &str,
        advance: &mut impl FnMut(u64),
    ) -> anyhow::Result<Option<Value>> {
        let mut answer = self
            .client
            .get(format!(
                "{}/leads/get-status/stream?job_id={job}",
                self.base
            ))
            .bearer_auth(&self.key)
            .timeout(Duration::from_secs(24 * 3600))
            .send()
            .await?
            .error_for_status()?;
        let mut pending: Vec<u8> = Vec::new();
        while let Some(chunk) = answer.chunk().await? {
            pending.extend_from_slice(&chunk);
            // Each event ends with a blank line; its `data:` line is the status object.
            while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = pending.drain(..end + 2).collect();
                let text = String::from_utf8_lossy(&event);
                for data in text.lines().filter_map(|line| line.strip_prefix("data:")) {
                    let status: Value = serde_json::from_str(data.trim())?;
                    advance(status["processed_rows"].as_u64().unwrap_or(0));
                    if ended(&status) {
                        return Ok(Some(status));
                    }
                }
            }
        }
        Ok(None)
    }

    /// A POST with an idempotency key: retried as it is, it is carried out once.
    pub(super) async fn post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        idempotency_key: &str,
        body: axum::body::Bytes,
    ) -> anyhow::Result<T> {
        self.send(|| {
            self.client
                .post(format!("{}{path}", self.base))
                .header("Idempotency-Key", idempotency_key)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone())
        })
        .await
    }

    /// Sends until answered: a 429 waits `Retry-After`, a 409 (the same key still in flight)
    /// and network errors back off; any other error is the answer. A 409 is waited out for as
    /// long as the server holds a key whose request never finished (its lock, 60 s).
    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        request: impl Fn() -> reqwest::RequestBuilder,
    ) -> anyhow::Result<T> {
        let mut backoff = Duration::from_millis(250);
        let in_flight_until = std::time::Instant::now() + IN_FLIGHT_PATIENCE;
        let mut attempt = 1;
        loop {
            match request().bearer_auth(&self.key).send().await {
                Ok(answer) if answer.status().is_success() => {
                    return answer.json().await.context("reading the answer");
                }
                // Not a failed attempt: the first request with this key is still being carried out.
                Ok(answer)
                    if answer.status() == reqwest::StatusCode::CONFLICT
                        && std::time::Instant::now() < in_flight_until =>
                {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                Ok(answer)
                    if matches!(answer.status().as_u16(), 429 | 503) && attempt < ATTEMPTS =>
                {
                    let wait = answer
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .map_or(backoff, Duration::from_secs);
                    tokio::time::sleep(wait).await;
                }
                Ok(answer) => {
                    let status = answer.status();
                    let text = answer.text().await.unwrap_or_default();
                    bail!("the API answered {status}: {text}");
                }
                Err(err) if attempt < ATTEMPTS => {
                    tracing::warn!(error = %err, "request failed; retrying");
                    tokio::time::sleep(backoff).await;
                }
                Err(err) => return Err(err).context("the API could not be reached"),
            }
            attempt += 1;
            backoff = (backoff * 2).min(Duration::from_secs(10));
        }
    }
}

/// Whether a job's status is its last.
pub(super) fn ended(status: &Value) -> bool {
    matches!(status["status"].as_str(), Some("completed" | "failed"))
}
