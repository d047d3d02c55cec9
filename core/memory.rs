//! The allocator, and giving freed memory back to the operating system.
//!
//! Requests and imports allocate and free many small pieces; jemalloc does that with less work
//! than glibc's malloc: served at once on one CPU against the same build with glibc, it
//! answered 7-8% more requests, and imports took 8-9% less CPU (benches/README.md). C code
//! (SQLite) keeps glibc's malloc. Unlike mimalloc (tried before), jemalloc can return every
//! thread's free pages from any one thread, which [`release_freed`] relies on.
//!
//! A large import allocates and frees a few hundred megabytes. Neither allocator returns all
//! freed memory at once by itself (jemalloc lets dirty pages decay over seconds, and only while
//! the process keeps allocating; glibc only returns the top of its heaps), so resident memory
//! would stay near the import's peak long after it ended. When a burst of work is over, and once
//! a process has started (building the app frees a few megabytes: the OpenAPI document as a
//! JSON tree, migrations), [`release_freed`] asks both to return what is free.

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Returns freed heap memory to the system: every jemalloc arena's free pages (whichever thread
/// freed them), and glibc's free heap where C code allocated.
pub fn release_freed() {
    #[cfg(not(target_env = "msvc"))]
    // SAFETY: `arena.<MALLCTL_ARENAS_ALL>.purge` (4096 names every arena) takes and returns no
    // value and only releases pages that hold no allocation; the name is NUL-terminated.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            c"arena.4096.purge".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory that is already free; it takes no pointers and
    // is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
