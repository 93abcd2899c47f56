-- memwrap schema v24: a memory's row kept whole, its embedding beside its text (issue 36: recall latency on banks
-- of long technical messages).
--
-- PostgreSQL moves a row's large values out to the table's TOAST relation once the row passes toast_tuple_target
-- (2,032 bytes by default). A memory of a long message is ~2.9 kB (a 1,536-byte 384-dimension embedding, its text,
-- its search vector), so on such banks most embeddings lived in TOAST (59.5 MB of it beside a 54.7 MB heap): the
-- exact nearest-memory scan of a ~2,800-memory bank read 12,800 buffers (TOAST index probes and chunk reads per
-- row) in 12-21 ms. With the rows kept whole it reads 1,155 buffers in 4.5-7.2 ms, on the same bank (bench/README.md,
-- "One scan for two arms, and rows kept whole").
--
-- The embedding is stored MAIN (inline, compressed only if the row still does not fit: a float vector hardly
-- compresses), and the target is the page's limit, so only a memory whose text alone fills a page goes out of line.
-- Rows written before this version keep their layout until they are written again: `memwrap reembed` rewrites
-- them all, or `VACUUM FULL memory_units` (docs/operations.md).
ALTER TABLE memory_units SET (toast_tuple_target = 8160);
ALTER TABLE memory_units ALTER COLUMN embedding SET STORAGE MAIN;
