-- memwrap schema v19: no planner statistics on bank_id, so that no plan depends on which banks the last ANALYZE saw.
--
-- With statistics, the planner knows the banks of the last ANALYZE (its most-common-values list) and guesses
-- that any other bank holds almost no rows. A bank retained since then (every new bank, and for a while any bank
-- in a home where others write) was planned as if it were empty: each lookup by (bank_id, key) used whichever
-- index led with bank_id, read the whole bank per probe, and the graph arm took 2 s instead of 20 ms until
-- autovacuum's next ANALYZE (issue 36: three LongMemEval banks in one home). Without statistics on the column,
-- every bank is estimated alike (a small share of the table), the key after bank_id always decides the index,
-- and recall's plans are the same whatever else the database holds. The columns after bank_id keep theirs.
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT c.relname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE a.attname = 'bank_id' AND c.relkind = 'r' AND n.nspname = current_schema() AND NOT a.attisdropped
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN bank_id SET STATISTICS 0', t.relname);
        -- Statistics already gathered stay until they are removed (ANALYZE no longer touches the column):
        -- PostgreSQL 18 has a function for it; before it, the table's owner may delete the rows itself.
        IF current_setting('server_version_num')::int >= 180000 THEN
            PERFORM pg_clear_attribute_stats(current_schema(), t.relname, 'bank_id', false);
        ELSE
            BEGIN
                DELETE FROM pg_statistic
                WHERE starelid = format('%I', t.relname)::regclass
                  AND staattnum = (SELECT attnum FROM pg_attribute
                                   WHERE attrelid = format('%I', t.relname)::regclass AND attname = 'bank_id');
            EXCEPTION WHEN insufficient_privilege THEN
                NULL;  -- a role that may not: the old figures stay, and plans are as before, until a superuser clears them
            END;
        END IF;
    END LOOP;
END
$$;
