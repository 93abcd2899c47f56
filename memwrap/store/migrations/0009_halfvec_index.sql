-- The vector index in half precision (memwrap/store/vector_index.py says why: at 2M memories the full-precision
-- graph no longer fit the embedded server's shared_buffers and a search read ~1,150 pages from the kernel).
-- The column keeps full precision; queries take the index's candidates and sort them by the exact distance.
-- Only the old index is dropped here: Store.open builds the new one right after the migrations, with the
-- memory its graph needs (memwrap/store/vector_index.py, ensure_vector_index). On a big existing store that
-- is a one-time build (about 6 minutes for 2M memories on 2 cores).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'memory_units_embedding_hnsw'
               AND indexdef NOT LIKE '%halfvec%') THEN
        DROP INDEX memory_units_embedding_hnsw;
    END IF;
END $$;
