-- mem_reuse_pair: pairs of pages (a, b) where a is never touched after b
-- is first touched (a.last_ordinal < b.first_ordinal): a's physical page
-- could be reused as b's (Mibu et al., memory access analysis for memory
-- saving, section 3.3). A page touched both before and after b's lifetime
-- (the paper's page c) overlaps it and
-- never pairs with it. Pairs grow with the square of the pages: filter.
CREATE VIEW mem_reuse_pair AS
SELECT a.capture, a.source_id,
       a.page AS page_a,                  -- page that is done
       a.last_ordinal AS a_last_ordinal,  -- its last access
       b.page AS page_b,                  -- page that starts afterwards
       b.first_ordinal AS b_first_ordinal -- its first access
FROM mem_page a JOIN mem_page b
  ON a.capture = b.capture AND a.source_id = b.source_id
WHERE a.last_ordinal < b.first_ordinal;
