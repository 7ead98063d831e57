-- mem_symbol_use: how each function and data object of the mapped files
-- (mem_symbol) was used in the memory log: instruction fetches inside a
-- function, loads/stores/modifies inside a data object. Symbols never
-- executed or touched have zero counts: "functions of each library never
-- executed" (Mibu et al., memory access analysis for memory saving).
-- Matching is by address range, done as an equi-join on 4 KiB buckets
-- (shifts, not division: UInt64 / Int64 would be decimal division)
-- (a symbol is listed under every bucket it spans) and then filtered.
CREATE VIEW _mem_symbol_bucket AS
SELECT capture, source_id, path, name, kind, start_address, end_address, size, section,
       CAST(bucket AS BIGINT UNSIGNED) AS bucket
FROM (SELECT *, unnest(range(CAST(start_address >> 12 AS BIGINT), CAST((end_address - CAST(1 AS BIGINT UNSIGNED)) >> 12 AS BIGINT) + 1)) AS bucket
      FROM mem_symbol);

CREATE VIEW _mem_data_by_address AS
SELECT capture, address,
       sum(CASE WHEN kind = 'L' THEN 1 ELSE 0 END) AS loads,
       sum(CASE WHEN kind = 'S' THEN 1 ELSE 0 END) AS stores,
       sum(CASE WHEN kind = 'M' THEN 1 ELSE 0 END) AS modifies,
       min(ordinal) AS first_ordinal, max(ordinal) AS last_ordinal
FROM mem_access WHERE kind <> 'I'
GROUP BY capture, address;

CREATE VIEW mem_symbol_use AS
WITH fetch_hits AS (
  SELECT b.capture, b.path, b.name, b.start_address,
         sum(f.count) AS fetches, min(f.first_ordinal) AS first_ordinal, max(f.last_ordinal) AS last_ordinal,
         0 AS loads, 0 AS stores, 0 AS modifies
  FROM _mem_symbol_bucket b
  JOIN mem_fetch f ON f.capture = b.capture AND f.address >> 12 = b.bucket
  WHERE b.kind = 'function' AND f.address >= b.start_address AND f.address < b.end_address
  GROUP BY b.capture, b.path, b.name, b.start_address
), data_hits AS (
  SELECT b.capture, b.path, b.name, b.start_address,
         0 AS fetches, min(d.first_ordinal) AS first_ordinal, max(d.last_ordinal) AS last_ordinal,
         sum(d.loads) AS loads, sum(d.stores) AS stores, sum(d.modifies) AS modifies
  FROM _mem_symbol_bucket b
  JOIN _mem_data_by_address d ON d.capture = b.capture AND d.address >> 12 = b.bucket
  WHERE d.address >= b.start_address AND d.address < b.end_address
  GROUP BY b.capture, b.path, b.name, b.start_address
), hits AS (
  SELECT capture, path, name, start_address,
         sum(fetches) AS fetches, sum(loads) AS loads, sum(stores) AS stores, sum(modifies) AS modifies,
         min(first_ordinal) AS first_ordinal, max(last_ordinal) AS last_ordinal
  FROM (SELECT * FROM fetch_hits UNION ALL SELECT * FROM data_hits)
  GROUP BY capture, path, name, start_address
)
SELECT s.capture,
       s.path,                                   -- object file (from mem_map)
       s.name,                                   -- function or data object
       s.kind,                                   -- function | object
       s.section,                                -- .text, .data, .bss, ...
       s.start_address,                          -- run-time address
       s.size,                                   -- bytes
       coalesce(h.fetches, 0) AS fetches,        -- instructions executed inside it
       coalesce(h.loads, 0) AS loads,            -- loads inside it
       coalesce(h.stores, 0) AS stores,          -- stores inside it
       coalesce(h.modifies, 0) AS modifies,      -- modifies inside it
       coalesce(h.fetches, 0) + coalesce(h.loads, 0) + coalesce(h.stores, 0) + coalesce(h.modifies, 0) > 0 AS used,
       h.first_ordinal,                          -- first use (instruction ordinal)
       h.last_ordinal                            -- last use
FROM mem_symbol s
LEFT JOIN hits h ON h.capture = s.capture AND h.path = s.path AND h.name = s.name AND h.start_address = s.start_address;
