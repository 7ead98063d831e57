-- live_regions: which pieces of mapped memory were alive at a moment? The
-- rows of `memory_region` (mmap/brk/mremap regions replayed from the traced
-- calls) alive at $at_ns, or, without it, never freed: still mapped at the
-- end of the trace or when their process exited or exec'd. Columns: those
-- of memory_region.
--
-- Parameters: $at_ns (a time on syscall.time_ns's clock; default: the end).
SELECT * FROM _live_region
