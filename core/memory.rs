//! The process's allocator, and giving freed memory back to the operating system.
//!
//! lps allocates with mimalloc rather than the system's malloc: every request, page and import
//! row allocates and frees many small pieces, and mimalloc's per-thread free lists make that
//! cheaper (quick runs on one CPU: `GET /hello-world-user` and the router floor ~6-8% more
//! requests a second, an import ~3-9% less CPU; figures in `benches/README.md`).
//!
//! Two of its defaults are changed, both for resident memory: arenas are committed as they are
//! used rather than eagerly, and freed pages are returned to the system at once rather than
//! after a delay (with the defaults an idle server held ~78 MiB instead of ~42 MiB). A large
//! import allocates and frees a few hundred megabytes in many small pieces; when a burst of work
//! is over, [`release_freed`] also asks the allocator to return what is free.

use std::ffi::c_long;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's option numbers (`mi_option_e` in `mimalloc.h`; stable across its versions, retired
/// options keep their numbers).
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Sets the allocator's options; called first thing in `main`, before the runtime starts its
/// threads.
pub fn configure_allocator() {
    // SAFETY: mi_option_set only stores a number in mimalloc's option table; any value is valid
    // for these two options.
    unsafe {
        libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0 as c_long);
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 0 as c_long);
    }
}

/// Returns freed heap memory to the system.
pub fn release_freed() {
    // SAFETY: mi_collect frees only memory that is already free in the calling thread's heap
    // and the abandoned ones; it takes no pointers and may be called from any thread.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}
