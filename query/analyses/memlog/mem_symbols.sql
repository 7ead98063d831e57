-- mem_symbols: which functions ran and which data objects were touched,
-- and which never were? (Mibu et al., memory access analysis for memory
-- saving.) The symbols of the mapped files
-- (`mem_symbol_use`), narrowed by kind, object path and use.
--
-- Parameters (NULL: no restriction):
--   $kind    text   `function` or `object`
--   $object  text   only symbols of objects whose path contains this
--   $never   bool   only symbols never executed / never touched
SELECT
  capture,                                      -- capture
  path,                                         -- mapped file
  name,                                         -- symbol
  kind,                                         -- function or object
  section,                                      -- ELF section
  '0x' || to_hex(start_address) AS address,     -- start address in the run
  size,                                         -- bytes
  fetches,                                      -- instruction fetches inside it
  loads,                                        -- loads inside it
  stores,                                       -- stores inside it
  modifies,                                     -- modifies inside it
  used,                                         -- executed or touched at all
  first_ordinal,                                -- first access
  last_ordinal                                  -- last access
FROM mem_symbol_use
WHERE ($kind IS NULL OR kind = $kind)
  AND ($object IS NULL OR strpos(path, $object) > 0)
  AND (NOT COALESCE($never, false) OR NOT used)
ORDER BY capture, path, start_address, name
