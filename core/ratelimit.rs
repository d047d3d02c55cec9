//! Per-credential rate limits: GCRA over a one-minute window (the default, 120 per minute,
//! allows a burst of 120 and then one request every half second).
//!
//! State lives in memory by default, or in Redis (one atomic script per check, using Redis's
//! clock) when several instances must share it. Redis is never waited for: each check has
//! [`REDIS_DEADLINE`], a failure opens a breaker for [`REDIS_PAUSE`] during which checks are
//! made in this process's memory instead (each process then limits on its own), a core starts
//! without Redis and connects when it appears. An outage of the limiter never becomes an
//! outage of the API, nor a slowdown of it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use http::{HeaderMap, HeaderValue};
use redis::aio::ConnectionManager;

use crate::{Error, Result};

const PERIOD: Duration = Duration::from_secs(60);

/// The longest a check waits for Redis (a round trip on a network takes well under a
/// millisecond; past this Redis is taken as gone).
pub const REDIS_DEADLINE: Duration = Duration::from_millis(50);
/// How long after a failure checks stay in memory before Redis is tried again.
pub const REDIS_PAUSE: Duration = Duration::from_secs(5);

/// The response metadata (and HTTP headers, of the same names) that report a caller's
/// rate-limit state ([`Decision::put_headers`]).
pub const RATE_LIMIT_LIMIT: &str = "x-ratelimit-limit";
pub const RATE_LIMIT_REMAINING: &str = "x-ratelimit-remaining";
pub const RETRY_AFTER: &str = "retry-after";

/// The same names as `HeaderName`s (a name given as `&str` is parsed again at each use);
/// `grpc::names` gives them with the other metadata names.
pub mod names {
    use http::HeaderName;

    pub const RATE_LIMIT_LIMIT: HeaderName = HeaderName::from_static(super::RATE_LIMIT_LIMIT);
    pub const RATE_LIMIT_REMAINING: HeaderName =
        HeaderName::from_static(super::RATE_LIMIT_REMAINING);
    pub const RETRY_AFTER: HeaderName = http::header::RETRY_AFTER;
}

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub limit: u32,
    pub remaining: u32,
    /// Set when the request is refused: how long until one more is allowed.
    pub retry_after: Option<Duration>,
}

impl Decision {
    fn allowed(limit: u32, remaining: u32) -> Self {
        Self {
            limit,
            remaining,
            retry_after: None,
        }
    }

    fn refused(limit: u32, retry_after: Duration) -> Self {
        Self {
            limit,
            remaining: 0,
            retry_after: Some(retry_after),
        }
    }

    /// The state as the headers (and gRPC metadata, of the same names) that report it:
    /// `X-RateLimit-Limit`, `X-RateLimit-Remaining` and, when refused, `Retry-After` in whole
    /// seconds (at least 1).
    pub fn put_headers(self, headers: &mut HeaderMap) {
        headers.insert(names::RATE_LIMIT_LIMIT, HeaderValue::from(self.limit));
        headers.insert(
            names::RATE_LIMIT_REMAINING,
            HeaderValue::from(self.remaining),
        );
        if let Some(retry_after) = self.retry_after {
            let seconds = retry_after.as_secs_f64().ceil().max(1.0) as u64;
            headers.insert(names::RETRY_AFTER, HeaderValue::from(seconds));
        }
    }

    /// The state [`Decision::put_headers`] reported in `headers`, if they report one.
    pub fn from_headers(headers: &HeaderMap) -> Option<Self> {
        let number = |name| headers.get(name)?.to_str().ok()?.parse::<u64>().ok();
        Some(Self {
            limit: u32::try_from(number(names::RATE_LIMIT_LIMIT)?).ok()?,
            remaining: u32::try_from(number(names::RATE_LIMIT_REMAINING)?).ok()?,
            retry_after: number(names::RETRY_AFTER).map(Duration::from_secs),
        })
    }

    /// The refusal as an error, when refused.
    pub fn into_result(self) -> Result<Self> {
        match self.retry_after {
            Some(retry_after) => Err(Error::RateLimited { retry_after }),
            None => Ok(self),
        }
    }
}

/// Where the limiter keeps its theoretical arrival times.
enum Backend {
    Memory(MemoryGcra),
    Redis(Arc<SharedGcra>),
}

/// GCRA in Redis, with this process's memory standing in while Redis is away.
struct SharedGcra {
    client: redis::Client,
    /// The connection, once made (a background task makes it, and makes it again).
    manager: RwLock<Option<ConnectionManager>>,
    /// Whether a task is connecting now.
    connecting: AtomicBool,
    /// Until when checks skip Redis (the breaker is open).
    paused_until: Mutex<Option<Instant>>,
    /// Whether Redis is out (said once in the log when it goes, once when it is back).
    out: AtomicBool,
    fallback: MemoryGcra,
}

impl SharedGcra {
    /// The connection, if Redis may be asked now; else `None` (and a connection is being
    /// made in the background when there is none).
    fn usable(self: &Arc<Self>, now: Instant) -> Option<ConnectionManager> {
        let paused = *self
            .paused_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if paused.is_some_and(|until| now < until) {
            return None;
        }
        let manager = self
            .manager
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        if manager.is_none() {
            self.connect_in_background();
        }
        manager
    }

    /// Opens the breaker: Redis failed or was too slow.
    fn pause(self: &Arc<Self>, now: Instant, err: &dyn std::fmt::Display) {
        self.went_out(err);
        *self
            .paused_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(now + REDIS_PAUSE);
    }

    /// Says once per outage that Redis is out.
    fn went_out(&self, err: &dyn std::fmt::Display) {
        if !self.out.swap(true, Ordering::SeqCst) {
            tracing::warn!(
                error = %err,
                "Redis is not answering; each process keeps its own rate limits until it does \
                 (checked again every {} s)",
                REDIS_PAUSE.as_secs()
            );
        }
    }

    /// Says once that Redis answers again.
    fn came_back(&self) {
        // A load first: every check that Redis answers passes here.
        if self.out.load(Ordering::Relaxed) && self.out.swap(false, Ordering::SeqCst) {
            tracing::info!("Redis answers again; rate limits are shared again");
        }
    }

    /// Connects in a task of its own (once at a time), retrying every [`REDIS_PAUSE`] until
    /// Redis answers.
    fn connect_in_background(self: &Arc<Self>) {
        if self.connecting.swap(true, Ordering::SeqCst) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.connecting.store(false, Ordering::SeqCst);
            return;
        };
        let shared = self.clone();
        runtime.spawn(async move {
            loop {
                let config = redis::aio::ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(REDIS_PAUSE))
                    .set_response_timeout(Some(REDIS_DEADLINE))
                    .set_number_of_retries(0);
                match ConnectionManager::new_with_config(shared.client.clone(), config).await {
                    Ok(manager) => {
                        *shared
                            .manager
                            .write()
                            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(manager);
                        shared.came_back();
                        break;
                    }
                    Err(err) => {
                        shared.went_out(&err);
                        tokio::time::sleep(REDIS_PAUSE).await;
                    }
                }
            }
            shared.connecting.store(false, Ordering::SeqCst);
        });
    }
}

/// GCRA state of this process: each key's theoretical arrival time, in [`SHARDS`] maps each
/// behind its own lock, so concurrent requests of different credentials seldom wait for each
/// other (one lock for every key was the limiter's hottest point under load).
struct MemoryGcra {
    limit: u32,
    shards: Box<[Mutex<MemoryState>]>,
    /// Which shard a key is in (keyed once per limiter: a caller cannot aim at one shard).
    spread: std::collections::hash_map::RandomState,
}

/// Maps the keys are spread over.
const SHARDS: usize = 32;

#[derive(Default)]
struct MemoryState {
    tats: HashMap<String, Instant>,
    /// When keys whose allowance is full again were last forgotten.
    swept_at: Option<Instant>,
}

impl MemoryGcra {
    fn new(limit: u32) -> Self {
        Self {
            limit,
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            spread: std::collections::hash_map::RandomState::new(),
        }
    }

    /// The shard of `key`'s state.
    fn shard(&self, key: &str) -> &Mutex<MemoryState> {
        use std::hash::BuildHasher;
        &self.shards[(self.spread.hash_one(key) as usize) % SHARDS]
    }

    fn check(&self, key: &str, now: Instant) -> Decision {
        let interval = PERIOD / self.limit;
        let mut state = self
            .shard(key)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Forget keys whose allowance is full again, at most once a period: the map stays as
        // small as the set of credentials active in the last two periods, and no request pays
        // for a scan of it more than once a minute.
        if state.swept_at.is_none_or(|at| now - at >= PERIOD) {
            state.tats.retain(|_, tat| *tat > now);
            state.swept_at = Some(now);
        }
        // A known key is looked up (and hashed) once, not twice.
        let tats = &mut state.tats;
        let known = tats.get_mut(key);
        let tat = known.as_deref().copied().unwrap_or(now).max(now);
        let new_tat = tat + interval;
        let backlog = new_tat - now;
        if backlog > PERIOD {
            return Decision::refused(self.limit, backlog - PERIOD);
        }
        // The key is copied only the first time it is seen.
        match known {
            Some(tat) => *tat = new_tat,
            None => {
                tats.insert(key.to_owned(), new_tat);
            }
        }
        let remaining =
            ((PERIOD - backlog).as_secs_f64() / interval.as_secs_f64() + 1e-9).floor() as u32;
        Decision::allowed(self.limit, remaining)
    }
}

/// A GCRA rate limiter keyed by credential.
pub struct RateLimiter {
    limit: u32,
    backend: Backend,
}

/// GCRA in Redis: `tat` (theoretical arrival time, ms) per key, with Redis's own clock so that
/// every instance agrees. Returns {allowed, remaining, retry_after_ms}.
const REDIS_GCRA: &str = r"
local period = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local interval = period / limit
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
if new_tat - now > period then
  return {0, 0, math.ceil(new_tat - now - period)}
end
redis.call('SET', KEYS[1], tostring(new_tat), 'PX', math.ceil(new_tat - now) + 1)
return {1, math.floor((period - (new_tat - now)) / interval + 1e-9), 0}
";

impl RateLimiter {
    /// An in-memory limiter, or a Redis-backed one when `redis_url` is given (a URL that does
    /// not parse is an error; a Redis that does not answer yet is not: it is connected to in
    /// the background).
    pub async fn new(limit: u32, redis_url: Option<&str>) -> Result<Self> {
        let limit = limit.max(1);
        let backend = match redis_url {
            None => Backend::Memory(MemoryGcra::new(limit)),
            Some(url) => {
                let client = redis::Client::open(url)
                    .context("parsing the Redis URL")
                    .map_err(Error::Internal)?;
                let shared = Arc::new(SharedGcra {
                    client,
                    manager: RwLock::new(None),
                    connecting: AtomicBool::new(false),
                    paused_until: Mutex::new(None),
                    out: AtomicBool::new(false),
                    fallback: MemoryGcra::new(limit),
                });
                shared.connect_in_background();
                Backend::Redis(shared)
            }
        };
        Ok(Self { limit, backend })
    }

    /// Counts one request of `key` and says whether it may proceed.
    pub async fn check(&self, key: &str) -> Decision {
        match &self.backend {
            Backend::Memory(gcra) => gcra.check(key, Instant::now()),
            Backend::Redis(shared) => {
                let now = Instant::now();
                let Some(manager) = shared.usable(now) else {
                    return shared.fallback.check(key, now);
                };
                let asked = tokio::time::timeout(REDIS_DEADLINE, self.check_in_redis(manager, key));
                match asked.await {
                    Ok(Ok(decision)) => {
                        shared.came_back();
                        decision
                    }
                    Ok(Err(err)) => {
                        shared.pause(now, &err);
                        shared.fallback.check(key, now)
                    }
                    Err(_) => {
                        shared.pause(now, &"no answer within the deadline");
                        shared.fallback.check(key, now)
                    }
                }
            }
        }
    }

    async fn check_in_redis(
        &self,
        mut manager: ConnectionManager,
        key: &str,
    ) -> redis::RedisResult<Decision> {
        let (allowed, remaining, retry_after_ms): (i64, i64, i64) = redis::Script::new(REDIS_GCRA)
            .key(format!("lps:ratelimit:{key}"))
            .arg(PERIOD.as_millis() as u64)
            .arg(self.limit)
            .invoke_async(&mut manager)
            .await?;
        Ok(if allowed == 1 {
            Decision::allowed(self.limit, remaining.max(0) as u32)
        } else {
            Decision::refused(
                self.limit,
                Duration::from_millis(retry_after_ms.max(1) as u64),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_minute_of_requests_is_allowed_at_once_then_refused() {
        let gcra = MemoryGcra::new(120);
        let now = Instant::now();
        for n in 1..=120 {
            let decision = gcra.check("k", now);
            assert_eq!(decision.retry_after, None, "request {n}");
            assert_eq!(decision.remaining, 120 - n);
        }
        let refused = gcra.check("k", now);
        assert_eq!(refused.remaining, 0);
        assert_eq!(refused.retry_after, Some(Duration::from_millis(500)));
    }

    #[test]
    fn allowance_comes_back_one_interval_at_a_time() {
        let gcra = MemoryGcra::new(120);
        let start = Instant::now();
        for _ in 0..120 {
            gcra.check("k", start);
        }
        let later = start + Duration::from_millis(500);
        assert_eq!(gcra.check("k", later).retry_after, None);
        assert!(gcra.check("k", later).retry_after.is_some());
    }

    #[test]
    fn a_state_reads_back_from_the_headers_that_report_it() {
        for decision in [
            Decision::allowed(120, 7),
            Decision::refused(120, Duration::from_millis(500)),
            Decision::refused(60, Duration::from_millis(2_500)),
        ] {
            let mut headers = HeaderMap::new();
            decision.put_headers(&mut headers);
            let read = Decision::from_headers(&headers).unwrap();
            assert_eq!(
                (read.limit, read.remaining),
                (decision.limit, decision.remaining)
            );
            // Retry-After is in whole seconds, rounded up, never 0.
            let seconds = decision
                .retry_after
                .map(|after| after.as_secs_f64().ceil().max(1.0) as u64);
            assert_eq!(read.retry_after.map(|after| after.as_secs()), seconds);
        }
        assert!(Decision::from_headers(&HeaderMap::new()).is_none());
    }

    #[test]
    fn credentials_do_not_share_allowances() {
        let gcra = MemoryGcra::new(1);
        let now = Instant::now();
        assert_eq!(gcra.check("a", now).retry_after, None);
        assert_eq!(gcra.check("b", now).retry_after, None);
        assert!(gcra.check("a", now).retry_after.is_some());
    }
}
