//! The running core's shared state: storage, configuration and the rate limiter.

use std::sync::Arc;

use crate::ratelimit::RateLimiter;
use crate::store::Db;

/// How a core instance is configured (from `lps serve` / `lps core` flags).
#[derive(Debug, Clone)]
pub struct CoreConfig {
    /// Where visitors reach pages, e.g. `http://127.0.0.1:8080`; page addresses start with it.
    pub public_url: String,
    /// Requests per minute allowed to one credential.
    pub rate_limit_per_minute: u32,
    /// Shares rate-limit state between instances when set.
    pub redis_url: Option<String>,
}

/// Everything a request handler in core needs. Cheap to clone.
#[derive(Clone)]
pub struct App {
    pub db: Db,
    pub config: Arc<CoreConfig>,
    pub limiter: Arc<RateLimiter>,
}

impl App {
    /// Connects the rate limiter's store (Redis when configured) around an open database.
    pub async fn new(db: Db, config: CoreConfig) -> crate::Result<Self> {
        let limiter =
            RateLimiter::new(config.rate_limit_per_minute, config.redis_url.as_deref()).await?;
        Ok(Self {
            db,
            config: Arc::new(config),
            limiter: Arc::new(limiter),
        })
    }
}
