# DuckDB baseline for bench/query.sh: `trawl report hotspots --no-inline`
# (by function and module, period weight, the event with most samples)
# as one plain SQL query over the same capture's Parquet files: self by the
# leaf frame, total once per distinct stack, names from `symbol`'s outermost
# level (return addresses looked up at rel_pc - 1).
# Usage: hotspots_duckdb.py CAPTURE_DIR   (prints rows and the top 5)
import sys, duckdb
d = sys.argv[1]
t = lambda n: f"read_parquet('{d}/{n}.parquet')"
rows = duckdb.sql(f'''
WITH ev AS (SELECT event FROM {t('perf_sample')} GROUP BY event ORDER BY count(*) DESC, event LIMIT 1),
sw AS (SELECT stack_id, count(*) AS n, sum(COALESCE(period, 1)) AS w FROM {t('perf_sample')}
       WHERE stack_id IS NOT NULL AND event = (SELECT event FROM ev) GROUP BY stack_id),
fn AS (SELECT f.frame_id, COALESCE(s.function, '0x' || lpad(lower(hex(f.rel_pc)), 16, '0')) AS function,
              COALESCE(m.path, '[unknown]') AS module
       FROM {t('frame')} f
       LEFT JOIN {t('module')} m ON m.module_id = f.module_id
       LEFT JOIN {t('symbol')} s ON s.module_id = f.module_id AND NOT s.inlined
         AND s.rel_pc = CASE WHEN f.is_return AND f.rel_pc > 0 THEN f.rel_pc - 1 ELSE f.rel_pc END),
self AS (SELECT fn.function, fn.module, sum(sw.n) AS n, sum(sw.w) AS w FROM sw
         JOIN {t('stack')} st ON st.stack_id = sw.stack_id AND st.depth = 0
         JOIN fn ON fn.frame_id = st.frame_id GROUP BY ALL),
total AS (SELECT function, module, sum(n) AS n, sum(w) AS w FROM (
            SELECT DISTINCT sw.stack_id, sw.n, sw.w, fn.function, fn.module FROM sw
            JOIN {t('stack')} st ON st.stack_id = sw.stack_id JOIN fn ON fn.frame_id = st.frame_id)
          GROUP BY ALL)
SELECT t.function, t.module, COALESCE(s.n, 0) AS self_samples, COALESCE(s.w, 0) AS self_period,
       round(100.0 * COALESCE(s.w, 0) / (SELECT sum(w) FROM sw), 4) AS self_pct,
       t.n AS total_samples, t.w AS total_period, round(100.0 * t.w / (SELECT sum(w) FROM sw), 4) AS total_pct
FROM total t LEFT JOIN self s ON s.function = t.function AND s.module = t.module
ORDER BY self_pct DESC, total_pct DESC, t.function, t.module
''').fetchall()
print(len(rows), "rows")
for r in rows[:5]:
    print(r)
