//! Where renders and design checks run: on blocking threads, never on the async runtime's
//! workers, and at most [`threads`] at once, so however many renders are asked for (a design at
//! its budget, visitors of a thousand new pages) the runtime keeps answering `/healthz`, the API
//! and signals. Process-wide, like the cores it protects.

use std::sync::LazyLock;
use std::time::Duration;

use tokio::sync::Semaphore;

/// Renders running at once: one core is always left to the async runtime.
pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get().saturating_sub(1))
        .max(1)
}

static PERMITS: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(threads()));

/// The most instructions (the audit's estimate, every branch counted) of a render that runs on
/// the caller's thread rather than here ([`super::CompiledDesign::renders_inline`]); a test
/// holds the premade designs to it.
pub const INLINE_STEPS: u64 = 2_000;

/// The most bytes a lead's values may have in all for its page to render on the caller's
/// thread. With [`INLINE_STEPS`], each working on a value of at most this much (the campaign's
/// copy, at most 1,000 characters a part, and what it names of the lead included) such a
/// render touches a few megabytes at worst, about a millisecond; a usual one takes ~20 us.
pub const INLINE_LEAD_BYTES: usize = 4 * 1024;

/// How long a render waits for a free renderer before the caller is told to come back.
const QUEUE_WAIT: Duration = Duration::from_secs(5);

/// The pool was busy for longer than [`QUEUE_WAIT`] (or is gone: the process is ending).
#[derive(Debug, thiserror::Error)]
#[error("every renderer stayed busy for {} s", QUEUE_WAIT.as_secs())]
pub struct Busy;

/// A busy pool is an outage to the caller (503 for visitors, 500 for the API), not a refusal.
impl From<Busy> for crate::Error {
    fn from(busy: Busy) -> Self {
        Self::Internal(busy.into())
    }
}

/// Runs `work` on a blocking thread once a renderer is free. The renderer stays taken until
/// `work` ends, even when the caller stops waiting for it (a deadline, a client gone): a
/// blocking thread cannot be stopped, so its permit goes with it.
pub async fn run<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Busy> {
    let permit = tokio::time::timeout(QUEUE_WAIT, PERMITS.acquire())
        .await
        .map_err(|_| Busy)?
        .map_err(|_| Busy)?;
    let outcome = tokio::task::spawn_blocking(move || {
        let _taken = permit;
        work()
    })
    .await;
    match outcome {
        Ok(value) => Ok(value),
        // The work panicked: a bug in a render, logged by the panic hook; not the pool's state.
        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
        Err(_) => Err(Busy),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_renders_run_at_once_than_the_pool_has_threads() {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let work: Vec<_> = (0..threads() + 3)
            .map(|_| {
                let (running, most) = (running.clone(), most.clone());
                tokio::spawn(run(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(50));
                    running.fetch_sub(1, Ordering::SeqCst);
                }))
            })
            .collect();
        for task in work {
            task.await.unwrap().unwrap();
        }
        let most = most.load(Ordering::SeqCst);
        assert!((1..=threads()).contains(&most), "{most} at once");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_render_whose_caller_stopped_waiting_keeps_its_renderer_until_it_ends() {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let render = |running: Arc<AtomicUsize>, most: Arc<AtomicUsize>| {
            move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(200));
                running.fetch_sub(1, Ordering::SeqCst);
            }
        };
        // Every caller gives up after 20 ms, while its render still runs.
        for _ in 0..threads() + 2 {
            let work = run(render(running.clone(), most.clone()));
            let _ = tokio::time::timeout(Duration::from_millis(20), work).await;
        }
        run(render(running.clone(), most.clone())).await.unwrap();
        let most = most.load(Ordering::SeqCst);
        assert!((1..=threads()).contains(&most), "{most} at once");
    }
}
