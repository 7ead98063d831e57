-- heat_access: the accesses of one memory log (capture $cap, input $sid)
-- a heatmap draws: inside the address range [$alo, $ahi) and the
-- instruction range [$olo, $ohi] (each bound NULL: open). The heatmap
-- (query/src/memlog.rs) reads their extent, their pages and the accesses
-- themselves from this one selection.
SELECT ordinal, kind, address, size
FROM mem_access
WHERE capture = $cap AND source_id = $sid
  AND ($alo IS NULL OR address >= $alo) AND ($ahi IS NULL OR address < $ahi)
  AND ($olo IS NULL OR ordinal >= $olo) AND ($ohi IS NULL OR ordinal <= $ohi)
