//! The process's allocator: the system allocator, which can count the bytes currently allocated
//! and their peak, so `kleinrock bench` can report memory per flow. Counting is off unless
//! [`counting`] turns it on: then each allocation costs two atomic read-modify-writes (about
//! 10 % of a packet-level run, which allocates a few times per packet); off, one relaxed load.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// The counting allocator.
pub struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
/// Bytes allocated since counting began, less those freed (negative when older blocks are
/// freed), and the most it reached.
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(bytes: usize) {
    if ON.load(Ordering::Relaxed) {
        let bytes = bytes as isize;
        let now = CURRENT.fetch_add(bytes, Ordering::Relaxed) + bytes;
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

fn shrank(bytes: usize) {
    if ON.load(Ordering::Relaxed) {
        CURRENT.fetch_sub(bytes as isize, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is the system allocator's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

/// Counts the bytes allocated while `work` runs; returns its result and the most it held
/// allocated at once (blocks it frees that were allocated before count against it).
pub fn counting<T>(work: impl FnOnce() -> T) -> (T, usize) {
    CURRENT.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    ON.store(true, Ordering::Relaxed);
    let out = work();
    ON.store(false, Ordering::Relaxed);
    (out, PEAK.load(Ordering::Relaxed).max(0) as usize)
}
