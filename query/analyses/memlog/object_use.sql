-- mem_object_use: per mapped object (executable, library, [heap], [stack],
-- anonymous memory) of a saved /proc/PID/maps: pages mapped, pages the
-- memory log touched and never touched, functions executed and never
-- executed, data objects touched and never touched (Mibu et al., memory
-- access analysis for memory saving).
CREATE VIEW mem_object_use AS
WITH ps AS (SELECT capture, max(page_size) AS page_size FROM mem_page GROUP BY capture),
mapped AS (
  SELECT m.capture, m.path, sum(CAST(m.end_address - m.start_address AS BIGINT) / ps.page_size) AS mapped_pages
  FROM mem_map m JOIN ps ON ps.capture = m.capture
  GROUP BY m.capture, m.path
), touched AS (
  SELECT m.capture, m.path, count(*) AS touched_pages, sum(p.bytes_touched) AS bytes_touched
  FROM mem_page p JOIN mem_map m
    ON m.capture = p.capture AND p.page >= m.start_address AND p.page < m.end_address
  GROUP BY m.capture, m.path
), syms AS (
  SELECT capture, path,
         sum(CASE WHEN kind = 'function' THEN 1 ELSE 0 END) AS functions,
         sum(CASE WHEN kind = 'function' AND used THEN 1 ELSE 0 END) AS functions_executed,
         sum(CASE WHEN kind = 'object' THEN 1 ELSE 0 END) AS data_objects,
         sum(CASE WHEN kind = 'object' AND used THEN 1 ELSE 0 END) AS data_objects_touched
  FROM mem_symbol_use GROUP BY capture, path
)
SELECT mp.capture,
       CASE WHEN mp.path = '' THEN '[anon]' ELSE mp.path END AS object,           -- mapped file or pseudo name
       mp.mapped_pages,                                                          -- pages mapped
       coalesce(t.touched_pages, 0) AS touched_pages,                            -- pages the log touched
       mp.mapped_pages - coalesce(t.touched_pages, 0) AS untouched_pages,        -- pages never touched
       coalesce(t.bytes_touched, 0) AS bytes_touched,                            -- distinct bytes touched
       coalesce(s.functions, 0) AS functions,                                    -- functions (mem_symbol)
       coalesce(s.functions_executed, 0) AS functions_executed,                  -- with at least one fetch
       coalesce(s.functions, 0) - coalesce(s.functions_executed, 0) AS functions_never_executed,
       coalesce(s.data_objects, 0) AS data_objects,                              -- data objects
       coalesce(s.data_objects_touched, 0) AS data_objects_touched,              -- with at least one access
       coalesce(s.data_objects, 0) - coalesce(s.data_objects_touched, 0) AS data_objects_never_touched
FROM mapped mp
LEFT JOIN touched t ON t.capture = mp.capture AND t.path = mp.path
LEFT JOIN syms s ON s.capture = mp.capture AND s.path = mp.path;
