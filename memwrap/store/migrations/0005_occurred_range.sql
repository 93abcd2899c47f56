-- Temporal recall asks which memories' occurred interval overlaps the query's window. A B-tree on
-- (bank_id, occurred_start) can only bound one end, so "last month" read every memory dated before the end of
-- last month. A GiST index on the interval answers the overlap directly (btree_gist lets it lead with bank_id).
-- The expression must match engine/recall/arms.py `temporal` exactly; greatest() keeps a range whose end was
-- stored before its start valid (such a range becomes the single start day).
CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE INDEX IF NOT EXISTS memory_units_occurred_range ON memory_units
    USING gist (bank_id, tstzrange(occurred_start, greatest(occurred_start, occurred_end), '[]'))
    WHERE occurred_start IS NOT NULL;
