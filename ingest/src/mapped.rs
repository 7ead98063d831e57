//! Input files mapped read-only, and their pages given back as a reader
//! moves past them: the two `unsafe` operations of every reader of a
//! mapped input (perf.data, strace dumps, memory logs), in one place.

/// The file `f` mapped read-only.
pub(crate) fn map_readonly(f: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the file is opened read-only. As with perf itself, a file
    // truncated by another process while it is being read can fault.
    unsafe { memmap2::Mmap::map(f) }
}

/// Gives the pages of `m` in `[from, from + len)` back to the kernel, so
/// that resident memory does not grow with the file.
pub(crate) fn release(m: &memmap2::Mmap, from: usize, len: usize) {
    // SAFETY: a read-only, file-backed mapping: dropped pages read the
    // same bytes from the file (the page cache) if touched again.
    let _ = unsafe { m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, len) };
}
