//! Giving freed heap pages back to the kernel after a complete list.
//!
//! A list (the first, or a relist after a watch expired) decodes pages of objects and replaces what changed;
//! until #42 a relist also built a second map of every key beside the cache until `InitDone` swapped them
//! (sources/stripped.rs now marks the cache in place). glibc's allocator keeps the pages that frees
//! afterwards for reuse instead of returning them, so every relist used to leave the process's RSS at the
//! list's high-water mark (+18-20 MiB at 5,000 nodes the first time, see benches/RESULTS.md "Chaos soak"),
//! which reads like a leak to whoever watches the pod's memory. `malloc_trim` returns free pages of every
//! arena; it runs once per complete list (rare: start-up, and relists after outages), never per event.
//! musl's allocator (the static release build) returns freed memory on its own, so there it does nothing.

/// Returns the allocator's free pages to the kernel (glibc); a no-op elsewhere.
pub(crate) fn release_free_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it takes the arenas' locks as malloc does.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    /// Reading /proc/self/statm needs Linux; the point is that a trim after freeing a large allocation does
    /// not leave it resident.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_trim_returns_freed_pages() {
        fn resident_pages() -> u64 {
            let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
            statm
                .split_whitespace()
                .nth(1)
                .expect("resident field")
                .parse()
                .expect("a number")
        }
        // Many small blocks (below mmap's threshold, so they live in the heap arenas like a cache's entries),
        // every other one kept so the heap's top cannot simply shrink.
        let mut blocks: Vec<Vec<u8>> = (0..40_000).map(|i| vec![(i % 251) as u8; 2_000]).collect();
        let kept: Vec<Vec<u8>> = blocks.iter().step_by(64).cloned().collect();
        let before_free = resident_pages();
        blocks.clear();
        blocks.shrink_to_fit();
        super::release_free_pages();
        let after_trim = resident_pages();
        assert!(
            after_trim + 9_000 < before_free,
            "resident pages: {before_free} with the blocks, {after_trim} after freeing them and trimming \
             (expected ~19,500 fewer)"
        );
        assert_eq!(kept.len(), 625);
    }
}
