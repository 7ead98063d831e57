-- syscall_offsets: per capture, how many inputs its system calls come from
-- and the least offset of them onto the capture's time axis (time_base),
-- to place traced calls beside metrics (query/src/cause.rs).
SELECT c.capture, count(DISTINCT c.source_id) AS n, min(b.offset_ns) AS off
FROM (SELECT DISTINCT capture, source_id FROM syscall) c
LEFT JOIN time_base b ON b.capture = c.capture AND b.source_id = c.source_id
GROUP BY c.capture
