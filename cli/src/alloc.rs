//! The allocator, chosen per command: glibc's malloc for the work on one
//! capture, mimalloc (Leijen, Zorn, de Moura, "Mimalloc: Free List
//! Sharding in Action", 2019) for an archive ingest.
//!
//! Measured on this 2-core machine (bench/regress.sh's files): on one
//! large capture glibc's is faster and smaller — `ingest --no-symbolize`
//! of 3.6 M samples 2.38 s against mimalloc's 2.66 s, `report hotspots`
//! 2.44 s / 611 MB against 3.06 s / 602–960 MB (mimalloc's fresh pages
//! cost this machine's kernel up to 3 s of system time a run). An archive
//! ingest runs many small captures on several threads at once, where
//! glibc's arenas contend and fragment: 100 new runs with a warm store
//! 1.26–1.30 s with glibc's, 1.02–1.13 s with mimalloc's.
//!
//! mimalloc is built without asking for transparent huge pages (by default
//! it madvises its 1 GiB arena for them; the crate's `no_thp`). On this
//! machine, a virtual machine whose free memory goes back to the host, a
//! first touch of a 2 MiB page cost ~10 ms where 4 KiB pages cost 0.5 ms a
//! MiB: the first archive ingest after a pause spent 2.3–2.7 s in the
//! kernel, zeroing huge pages, where a run right after another spent
//! 0.5 s (nothing-changed runs over 100,000 captures, each after 30 s
//! idle: 2.55–2.98 s with huge pages, 1.06–1.16 s without).
//!
//! Every allocation goes to the allocator chosen when it is made; a free
//! or a resize goes to the allocator that owns the block (mimalloc says
//! which blocks are in its heap), so blocks made before the switch stay
//! with glibc's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use mimalloc::MiMalloc;

/// Set once, never cleared: new blocks come from mimalloc.
static MIMALLOC: AtomicBool = AtomicBool::new(false);

/// The process's allocator (see the module's documentation).
pub struct Chosen;

/// New allocations come from mimalloc from now on.
pub fn use_mimalloc() {
    MIMALLOC.store(true, Relaxed);
}

/// Whether mimalloc made the block at `p`.
fn mimalloc_owns(p: *mut u8) -> bool {
    // SAFETY: reads mimalloc's map of its own segments and arenas; any
    // address may be asked.
    MIMALLOC.load(Relaxed) && unsafe { libmimalloc_sys::mi_is_in_heap_region(p as *const _) }
}

// SAFETY: each call is passed to one of two allocators that implement
// GlobalAlloc themselves; a block is freed and resized only by the one that
// made it.
unsafe impl GlobalAlloc for Chosen {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if MIMALLOC.load(Relaxed) {
            MiMalloc.alloc(layout)
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if MIMALLOC.load(Relaxed) {
            MiMalloc.alloc_zeroed(layout)
        } else {
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if mimalloc_owns(p) {
            MiMalloc.dealloc(p, layout)
        } else {
            System.dealloc(p, layout)
        }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if mimalloc_owns(p) {
            MiMalloc.realloc(p, layout, new_size)
        } else {
            System.realloc(p, layout, new_size)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks made by glibc's allocator before the switch are freed and
    /// resized by it afterwards; new blocks come from mimalloc. Checked
    /// with mimalloc's own test of ownership and by using every block.
    #[test]
    fn blocks_stay_with_the_allocator_that_made_them() {
        let a = Chosen;
        let l = Layout::from_size_align(100, 8).unwrap();
        unsafe {
            let before = a.alloc(l);
            before.write_bytes(7, 100);
            assert!(!libmimalloc_sys::mi_is_in_heap_region(before as *const _));
            use_mimalloc();
            let after = a.alloc(l);
            after.write_bytes(9, 100);
            assert!(libmimalloc_sys::mi_is_in_heap_region(after as *const _));
            let grown = a.realloc(before, l, 4000);
            assert!(!libmimalloc_sys::mi_is_in_heap_region(grown as *const _));
            assert_eq!(*grown.add(99), 7);
            let l2 = Layout::from_size_align(4000, 8).unwrap();
            a.dealloc(grown, l2);
            let after2 = a.realloc(after, l, 4000);
            assert!(libmimalloc_sys::mi_is_in_heap_region(after2 as *const _));
            assert_eq!(*after2.add(99), 9);
            a.dealloc(after2, l2);
        }
    }
}
