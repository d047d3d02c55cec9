//! Background work's share of the CPU: the threads that store imports run under Linux's
//! `SCHED_IDLE` policy: they get a CPU when no thread answering visitors and callers wants it,
//! and such a thread waking up takes it from them at once. Imports take what is left; visitors
//! do not wait for them.
//!
//! Nice 10 alone (before) gave them ~10% of a busy CPU, but not when visitors' threads got it
//! back: the kernel's scheduler (EEVDF) lets a waking thread preempt the running one only
//! while it is under its fair share, and the thread answering HTTP, wanting the whole CPU, was
//! seldom under it; it waited for the next tick (up to 4 ms at 250 Hz) behind an import's
//! thread. Warm pages' p99 while an import ran was ~3.1 ms against ~1.0 ms now
//! (benches/README.md). The price: on a CPU that visitors keep busy, an import goes at the
//! pace of what they leave (about half as many leads a second in the benchmark), and this
//! process's other writes wait behind an import's batch that much longer. It is never stopped:
//! the kernel still gives a `SCHED_IDLE` thread a sliver of a CPU that others want entirely.
//!
//! A thread made by a lowered thread inherits its policy and priority; that is how SQLite's
//! connection thread for imports gets it (`store::Db::begin_background_write`).

/// The nice value background threads run at (0 is everyone else's, 19 the lowest): their
/// share of a busy CPU if the system refuses `SCHED_IDLE`.
pub const BACKGROUND_NICE: i32 = 10;

/// Puts the calling thread under `SCHED_IDLE`, at [`BACKGROUND_NICE`] for where that policy is
/// refused. Linux only (policies and priorities are per thread there); elsewhere nothing
/// changes. A failure changes nothing and is not an error.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid, setpriority and sched_setscheduler on the calling thread's own id;
        // the parameter lives on this stack for the call.
        unsafe {
            let thread = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, BACKGROUND_NICE);
            let param = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(thread, libc::SCHED_IDLE, &param);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_lowered_thread_and_the_threads_it_makes_run_lower_and_no_other_does() {
        let nice = || {
            // SAFETY: reads the calling thread's own priority.
            unsafe {
                *libc::__errno_location() = 0;
                libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t)
            }
        };
        // SAFETY: reads the calling thread's own policy.
        let policy = || unsafe { libc::sched_getscheduler(0) };
        let before = (nice(), policy());
        let (lowered, made) = std::thread::spawn(move || {
            lower_this_thread();
            let made = std::thread::spawn(move || (nice(), policy()))
                .join()
                .unwrap();
            ((nice(), policy()), made)
        })
        .join()
        .unwrap();
        assert_eq!(lowered, (BACKGROUND_NICE.max(before.0), libc::SCHED_IDLE));
        assert_eq!(made, lowered, "inherited");
        assert_eq!((nice(), policy()), before, "this thread is untouched");
    }
}
