-- The used pages of a memory log at a page size of the caller's choice
-- (Mibu et al., memory access analysis for memory saving): `mem_page`
-- regrouped by $page_size, a power of two and a
-- multiple of the page size the capture was ingested with (counts and
-- distinct bytes add up exactly).
--
-- Parameters (NULL: the default):
--   $page_size   int   bytes (default: the ingest page size)

-- _page: mem_page at $page_size.
CREATE OR REPLACE VIEW _page AS
WITH sz AS (
  SELECT max(page_size) AS base, CAST(COALESCE($page_size, max(page_size)) AS BIGINT) AS ps
  FROM mem_page
)
SELECT
  m.capture,                                                   -- capture
  m.source_id,                                                 -- input
  m.page - m.page % CAST(sz.ps AS BIGINT UNSIGNED) AS page,    -- address of the page's first byte
  sz.ps AS page_size,                                          -- bytes
  sum(m.fetches) AS fetches,                                   -- instruction fetches
  sum(m.loads) AS loads,                                       -- loads
  sum(m.stores) AS stores,                                     -- stores
  sum(m.modifies) AS modifies,                                 -- modifies
  sum(m.bytes_accessed) AS bytes_accessed,                     -- bytes accessed, all accesses
  sum(m.bytes_touched) AS bytes_touched,                       -- distinct bytes touched
  min(m.first_ordinal) AS first_ordinal,                       -- first access
  max(m.last_ordinal) AS last_ordinal                          -- last access
FROM mem_page m CROSS JOIN sz
WHERE assert_true(sz.ps > 0 AND sz.ps % sz.base = 0 AND (sz.ps & (sz.ps - 1)) = 0,
        concat('page_size ', CAST(sz.ps AS VARCHAR),
               ': must be a power of two and a multiple of the page size the capture was ingested with (',
               CAST(sz.base AS VARCHAR), '); ingest again with --page-size for smaller pages'))
GROUP BY m.capture, m.source_id, 3, sz.ps;
