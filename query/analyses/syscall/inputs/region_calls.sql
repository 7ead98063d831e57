-- region_calls: the events that change a process's address space, in the
-- order `memory_region` replays them (query/src/regions.rs): successful
-- mmap/munmap/mremap/brk calls, process creation and execve from the
-- `syscall` table, then exits (is_exit = 1) from strace's lines
-- (`+++ exited`, `+++ killed`) and perf's EXIT records. Rows without a
-- time come first; ties keep the trace's own order (input, line, call).
SELECT capture, syscall_id, pid, time_ns, CAST(name AS VARCHAR) AS name, args, retval,
       addr, length, new_length, flags, fd_path, stack_id, 0 AS is_exit, source_id, line
FROM syscall
WHERE retval IS NOT NULL
  AND name IN ('mmap', 'mmap2', 'munmap', 'mremap', 'brk', 'fork', 'vfork', 'clone', 'clone3',
               'execve', 'execveat')
UNION ALL
SELECT capture, -1, pid, time_ns, CAST(kind AS VARCHAR), '', NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, 1, source_id, line
FROM strace_event
WHERE kind <> 'signal'
UNION ALL
SELECT capture, -1, tid, time_ns, 'exited', '', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1,
       source_id, NULL
FROM perf_task_event
WHERE kind = 'exit'
ORDER BY capture, time_ns NULLS FIRST, source_id, line, syscall_id
