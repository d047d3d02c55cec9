//! Background work's share of the CPU: threads that store imports run at a lower priority
//! (nice 10), so that when the CPU is busy the operating system gives it to the threads
//! answering visitors and callers first (about 90% of it when both want it all), and imports
//! take what is left. They are never starved: a lower priority is a smaller share, not none.
//!
//! A thread made by a lowered thread inherits its priority; that is how SQLite's connection
//! thread for imports gets it (`store::Db::begin_background_write`).

/// The nice value background threads run at (0 is everyone else's, 19 the lowest).
pub const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority to [`BACKGROUND_NICE`] (Linux: priorities are per
/// thread there; elsewhere nothing changes). A failure changes nothing and is not an error.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority on the calling thread's own id; no memory involved.
        unsafe {
            let thread = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, BACKGROUND_NICE);
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
        let before = nice();
        let (lowered, made) = std::thread::spawn(move || {
            lower_this_thread();
            let made = std::thread::spawn(nice).join().unwrap();
            (nice(), made)
        })
        .join()
        .unwrap();
        assert_eq!(lowered, BACKGROUND_NICE.max(before));
        assert_eq!(made, lowered, "inherited");
        assert_eq!(nice(), before, "this thread is untouched");
    }
}
