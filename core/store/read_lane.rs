//! Connections kept apart from the pool for the hottest single read: a lead page's lookup on
//! its first visit. sqlx's pool pings every connection it is given back, whatever happened to
//! it: on SQLite a round trip to the connection's thread (two thread switches), on PostgreSQL a
//! network round trip, after every query. A connection here goes back to the lane only once its
//! read finished ([`LaneConnection::finished`]); one whose read failed or was given up (the
//! visitor left) is dropped, and the lane takes a fresh one from the pool when it needs one.

use std::sync::Mutex;

use sqlx::{AnyConnection, AnyPool};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Connections the lane holds at most (besides the pool's): reads waiting beyond them queue.
const CONNECTIONS: usize = 4;

pub struct ReadLane {
    pool: AnyPool,
    idle: Mutex<Vec<AnyConnection>>,
    permits: Semaphore,
}

impl std::fmt::Debug for ReadLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().map_or(0, |idle| idle.len());
        f.debug_struct("ReadLane").field("idle", &idle).finish()
    }
}

/// A connection of the lane, given back by [`LaneConnection::finished`] and dropped otherwise.
pub struct LaneConnection<'l> {
    lane: &'l ReadLane,
    connection: Option<AnyConnection>,
    _permit: SemaphorePermit<'l>,
}

impl ReadLane {
    /// A lane whose connections come from `pool` (set up as the pool's are).
    pub fn new(pool: AnyPool) -> Self {
        Self {
            pool,
            idle: Mutex::default(),
            permits: Semaphore::new(CONNECTIONS),
        }
    }

    /// A connection of the lane, waiting at most as long as the pool's acquire does (then
    /// `PoolTimedOut`, as the pool would answer).
    pub async fn acquire(&self) -> sqlx::Result<LaneConnection<'_>> {
        let wait = self.pool.options().get_acquire_timeout();
        let permit = tokio::time::timeout(wait, self.permits.acquire())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let connection = match idle {
            Some(connection) => connection,
            // Taken out of the pool for good: the pool may open another in its place.
            None => self.pool.acquire().await?.detach(),
        };
        Ok(LaneConnection {
            lane: self,
            connection: Some(connection),
            _permit: permit,
        })
    }
}

impl LaneConnection<'_> {
    /// The read finished: the connection is as it was, ready for the next.
    pub fn finished(mut self) {
        if let Some(connection) = self.connection.take() {
            let mut idle = self.lane.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.push(connection);
        }
    }
}

impl std::ops::Deref for LaneConnection<'_> {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        self.connection.as_ref().expect("taken only by finished")
    }
}

impl std::ops::DerefMut for LaneConnection<'_> {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        self.connection.as_mut().expect("taken only by finished")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sqlx::any::{AnyPoolOptions, install_default_drivers};

    use super::*;

    #[tokio::test]
    async fn a_read_waits_for_a_free_connection_no_longer_than_the_pool_would() {
        install_default_drivers();
        let pool = AnyPoolOptions::new()
            .acquire_timeout(Duration::from_millis(200))
            .connect("sqlite::memory:")
            .await
            .unwrap();
        let lane = ReadLane::new(pool);
        let mut held = Vec::new();
        for _ in 0..CONNECTIONS {
            held.push(lane.acquire().await.unwrap());
        }
        let waited = lane
            .acquire()
            .await
            .err()
            .expect("every connection is taken");
        assert!(matches!(waited, sqlx::Error::PoolTimedOut), "{waited}");
        // A finished read gives its connection back for the next, which needs no new one.
        held.pop().unwrap().finished();
        let next = lane.acquire().await.unwrap();
        next.finished();
        assert_eq!(lane.idle.lock().unwrap().len(), 1);
    }
}
