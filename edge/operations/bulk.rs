//! Operations carrying thousands of leads (`/leads/upsert-leads`,
//! `/leads/import-to-workspace`) read their body and hand it to core on a thread of their own
//! at background priority (`lps::priority`), not on the runtime answering visitors.
//!
//! A request of 1,000 leads is parsed, checked and turned into core's request between two
//! awaits: about 4 ms of CPU. On the HTTP runtime every page, beacon and call behind it on that
//! thread waited for it, and on a busy CPU the import took visitors' share: a warm page's p99
//! was 14 times its idle p99 while 1,000-lead requests streamed in. Here the operating system
//! gives the CPU to the threads answering visitors first; the import takes what is left,
//! never none.

use std::future::Future;

use tracing::Instrument;

/// Bodies over this many bytes are parsed on the bulk thread (a request of 100 leads is about
/// 15 KiB; smaller ones cost less than the hop between threads).
pub const BULK_BODY_BYTES: usize = 64 * 1024;

/// Runs `work` on the bulk thread and waits for it, in the caller's tracing span (its trace
/// and request id go with it). A panic in `work` goes on in the caller, as if it ran there.
pub async fn on_bulk_thread<F>(work: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match BULK.spawn(work.in_current_span()).await {
        Ok(output) => output,
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // The runtime is never shut down while the process runs.
            Err(error) => unreachable!("the bulk runtime cancelled a task: {error}"),
        },
    }
}

/// One thread, at background priority. Never dropped (a runtime must not be dropped inside
/// another), it lives as long as the process.
static BULK: std::sync::LazyLock<tokio::runtime::Runtime> = std::sync::LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("lps-bulk")
        .on_thread_start(lps::priority::lower_this_thread)
        .enable_all()
        .build()
        .expect("a runtime for bulk operations")
});

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_runs_on_the_bulk_thread_and_its_panic_reaches_the_caller() {
        let name = on_bulk_thread(async { std::thread::current().name().map(str::to_owned) });
        assert_eq!(name.await.as_deref(), Some("lps-bulk"));
        let panicked = tokio::spawn(on_bulk_thread(async { panic!("bulk work failed") })).await;
        assert!(panicked.unwrap_err().is_panic());
    }
}
