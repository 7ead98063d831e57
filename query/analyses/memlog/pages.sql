-- pages: which pages did the program use, how, and for how long?
-- (Mibu et al., memory access analysis for memory saving.) Every page the
-- memory log touched at $page_size (see
-- page.sql), with the object mapped there, its accesses per kind, how much
-- of it was used and its lifetime in access ordinals.
--
-- Parameters: $page_size (bytes; default: the ingest page size).
WITH o AS (
  SELECT p.capture, p.source_id, p.page,
         min(CASE WHEN m.path = '' THEN '[anon]' ELSE m.path END) AS object
  FROM _page p
  JOIN mem_map m ON m.capture = p.capture AND p.page < m.end_address AND p.page + p.page_size > m.start_address
  GROUP BY p.capture, p.source_id, p.page
)
SELECT
  p.capture,                                                    -- capture
  p.source_id,                                                  -- input
  '0x' || to_hex(p.page) AS page,                               -- page address, hex
  o.object,                                                     -- mapped object ([anon]; null: unmapped)
  p.fetches,                                                    -- instruction fetches
  p.loads,                                                      -- loads
  p.stores,                                                     -- stores
  p.modifies,                                                   -- modifies (load and store)
  p.fetches + p.loads + p.stores + p.modifies AS accesses,      -- all accesses
  p.bytes_touched,                                              -- distinct bytes touched
  round(100.0 * p.bytes_touched / p.page_size, 1) AS used_pct,  -- share of the page touched, %
  p.first_ordinal,                                              -- first access
  p.last_ordinal,                                               -- last access
  p.last_ordinal - p.first_ordinal + 1 AS lifetime,             -- accesses from first to last
  p.page AS page_address,                                       -- page address, number
  p.page_size                                                   -- bytes
FROM _page p
LEFT JOIN o ON o.capture = p.capture AND o.source_id = p.source_id AND o.page = p.page
ORDER BY p.capture, p.source_id, p.page
