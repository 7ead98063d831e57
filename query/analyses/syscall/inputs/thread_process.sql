-- thread_process: thread → process (query/src/regions.rs): the calls' own
-- `tgid`, and perf's FORK records for threads that made no recorded call.
SELECT capture, pid, tgid FROM syscall WHERE tgid IS NOT NULL AND pid IS NOT NULL
UNION
SELECT capture, tid, pid FROM perf_task_event WHERE kind = 'fork'
