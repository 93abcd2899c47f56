-- memwrap schema v24: a memory's row kept whole, its embedding beside its text (issue 36: recall latency on banks
-- of long technical messages).
--
-- PostgreSQL moves a row's large values out to the table's TOAST relation once the row passes toast_tuple_target
-- (2,032 bytes by default). A memory of a long message is ~2.9 kB (a 1,536-byte 384-dimension embedding, its text,
-- its search vector), so on such banks 76% of the embeddings lived in TOAST: the exact nearest-memory scan of a
-- 2,000-memory bank read 9,640 buffers (two index probes and a TOAST chunk read per row) in 22.5 ms. With the rows
-- kept whole it reads 906 buffers in 7.5 ms, measured on the same bank (bench/README.md, "rows kept whole").
--
-- The embedding is stored MAIN (inline, compressed only if the row still does not fit: a float vector hardly
-- compresses), and the target is the page's limit, so only a memory whose text alone fills a page goes out of line.
-- Rows written before this version keep their layout until they are written again: `memwrap reembed` rewrites
-- them all, or `VACUUM FULL memory_units` (docs/operations.md).
ALTER TABLE memory_units SET (toast_tuple_target = 8160);
ALTER TABLE memory_units ALTER COLUMN embedding SET STORAGE MAIN;
