//! Giving freed memory back to the operating system.
//!
//! A large import allocates and frees a few hundred megabytes in many small pieces. glibc's
//! allocator keeps freed memory inside the process (it only returns the top of its heaps), so
//! resident memory would stay near the import's peak long after it ended. When a burst of work
//! is over, [`release_freed`] asks the allocator to return what is free.

/// Returns freed heap memory to the system, where the allocator supports it (glibc on Linux);
/// elsewhere nothing.
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory that is already free; it takes no pointers and
    // is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
