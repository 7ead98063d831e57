-- page_reuse_pairs: which pages could share one physical page? (Mibu et
-- al., memory access analysis for memory saving, section 3.3.) Pairs of
-- pages (a, b) at $page_size where a is never touched after b is first
-- touched (a.last_ordinal < b.first_ordinal). A page touched both before
-- and after b's lifetime (the paper's page c)
-- overlaps it and never pairs with it. Pairs grow with the square of the
-- pages: filter or limit.
--
-- Parameters: $page_size (bytes; default: the ingest page size).
SELECT
  a.capture,                                    -- capture
  a.source_id,                                  -- input
  '0x' || to_hex(a.page) AS page_a,             -- page that is done
  a.last_ordinal AS a_last_ordinal,             -- its last access
  '0x' || to_hex(b.page) AS page_b,             -- page that starts afterwards
  b.first_ordinal AS b_first_ordinal            -- its first access
FROM _page a
JOIN _page b ON a.capture = b.capture AND a.source_id = b.source_id
WHERE a.last_ordinal < b.first_ordinal
ORDER BY a.capture, a.source_id, a.page, b.page
