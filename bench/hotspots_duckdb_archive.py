# DuckDB baseline for bench/archive.sh: `report hotspots --no-inline` (by
# function and module, period weight, cpu-clock samples) across every
# capture of an archive, reading its segments with the documented glob
# (read_parquet('A/segment=*/t.parquet', hive_partitioning = true)); ids
# are a segment's, so every join keys on `segment` too. With a capture
# name, only that capture's samples.
# Usage: hotspots_duckdb_archive.py ARCHIVE [CAPTURE]   (prints rows, top 5)
import sys, duckdb
d = sys.argv[1]
only = sys.argv[2] if len(sys.argv) > 2 else None
where = f"AND capture = '{only}'" if only else ""
t = lambda n: f"read_parquet('{d}/segment=*/{n}.parquet', hive_partitioning = true)"
rows = duckdb.sql(f'''
WITH sw AS (SELECT segment, stack_id, count(*) AS n, sum(COALESCE(period, 1)) AS w FROM {t('perf_sample')}
       WHERE stack_id IS NOT NULL AND event = 'cpu-clock' {where} GROUP BY ALL),
fn AS (SELECT f.segment, f.frame_id, COALESCE(s.function, '0x' || lpad(lower(hex(f.rel_pc)), 16, '0')) AS function,
              COALESCE(m.path, '[unknown]') AS module
       FROM {t('frame')} f
       LEFT JOIN {t('module')} m ON m.segment = f.segment AND m.module_id = f.module_id
       LEFT JOIN {t('symbol')} s ON s.segment = f.segment AND s.module_id = f.module_id AND NOT s.inlined
         AND s.rel_pc = CASE WHEN f.is_return AND f.rel_pc > 0 THEN f.rel_pc - 1 ELSE f.rel_pc END),
self AS (SELECT fn.function, fn.module, sum(sw.n) AS n, sum(sw.w) AS w FROM sw
         JOIN {t('stack')} st ON st.segment = sw.segment AND st.stack_id = sw.stack_id AND st.depth = 0
         JOIN fn ON fn.segment = st.segment AND fn.frame_id = st.frame_id GROUP BY ALL),
total AS (SELECT function, module, sum(n) AS n, sum(w) AS w FROM (
            SELECT DISTINCT sw.segment, sw.stack_id, sw.n, sw.w, fn.function, fn.module FROM sw
            JOIN {t('stack')} st ON st.segment = sw.segment AND st.stack_id = sw.stack_id
            JOIN fn ON fn.segment = st.segment AND fn.frame_id = st.frame_id)
          GROUP BY ALL)
SELECT t.function, t.module, COALESCE(s.n, 0) AS self_samples, t.n AS total_samples
FROM total t LEFT JOIN self s ON s.function = t.function AND s.module = t.module
ORDER BY self_samples DESC, total_samples DESC, t.function, t.module
''').fetchall()
print(len(rows), "rows")
for r in rows[:5]:
    print(r)
