-- sample_weights: every $event sample on the capture's time axis with its
-- CPU, its package (perf_cpu.socket_id) and what it weighs as a core and as
-- a DRAM indicator (Ono et al. 2015, sampling-based power measurement,
-- §2.2): $core and $dram are `period` (the sample period), `samples` (1)
-- or `read` (the increase of the counter $core_event / $dram_event read at
-- the sample, 0 when not read there). The input of sample_energy
-- (query/src/energy.rs), in capture and time order.
SELECT p.capture AS cap,
       CAST(p.sample_id AS BIGINT) AS sid,
       CAST(p.t_ns AS BIGINT) AS tns,
       CAST(p.cpu AS INT) AS cpu_id,
       CAST(CASE $core WHEN 'period' THEN COALESCE(p.period, 1)
                       WHEN 'samples' THEN 1
                       ELSE COALESCE(rc.delta, 0) END AS DOUBLE) AS wc,
       CAST(CASE $dram WHEN 'period' THEN COALESCE(p.period, 1)
                       WHEN 'samples' THEN 1
                       ELSE COALESCE(rd.delta, 0) END AS DOUBLE) AS wd,
       CAST(tp.socket_id AS INT) AS pkg
FROM perf_sample_t p
LEFT JOIN (SELECT capture, sample_id, delta FROM read_delta WHERE event = $core_event) rc
  ON rc.capture = p.capture AND rc.sample_id = p.sample_id
LEFT JOIN (SELECT capture, sample_id, delta FROM read_delta WHERE event = $dram_event) rd
  ON rd.capture = p.capture AND rd.sample_id = p.sample_id
LEFT JOIN perf_cpu tp
  ON tp.capture = p.capture AND tp.source_id = p.source_id
 AND tp.cpu = CAST(p.cpu AS INT) AND tp.socket_id >= 0
WHERE CAST(p.event AS VARCHAR) = $event AND p.t_ns IS NOT NULL
ORDER BY cap, tns, sid
