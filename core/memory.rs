//! The allocator, and giving freed memory back to the operating system.
//!
//! lps allocates with mimalloc rather than glibc's malloc: a page hit allocates and frees a few
//! dozen small buffers, and glibc spent ~16% of a page hit's CPU on them (`_int_free`,
//! `malloc_consolidate`); mimalloc serves a page hit ~20% faster for ~3 MiB more resident
//! memory at rest. It is built without transparent huge pages (`no_thp`), which otherwise
//! cost ~20 MiB at rest.
//!
//! A large import allocates and frees a few hundred megabytes in many small pieces, and an
//! allocator keeps freed memory inside the process for reuse, so resident memory would stay
//! near the import's peak long after it ended. When a burst of work is over,
//! [`release_freed`] asks both allocators (mimalloc for Rust's allocations, glibc's for
//! SQLite's) to return what is free.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc 3's `mimalloc.h` (the Rust bindings do not name it yet;
/// its neighbour `mi_option_eager_commit_delay`, 14, they do).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Settles how the allocator gives memory back (call first thing in `main`): memory freed in
/// whole pages goes back to the system at once rather than after mimalloc's default 1 s, which
/// keeps resident memory at rest lower (38 MiB rather than 44 with 10,000 leads' pages served)
/// and costs page hits nothing measurable.
pub fn init() {
    // SAFETY: sets an option of the allocator; no pointers, any thread, any time.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
}

/// Returns freed heap memory to the system.
pub fn release_freed() {
    // SAFETY: mi_collect only releases memory that is already free; it takes no pointers and
    // may be called from any thread at any time.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: as above, for glibc's malloc_trim.
    unsafe {
        libc::malloc_trim(0);
    }
}
