-- memwrap schema v7: recall filters on metadata, and the history of updated memories.

-- Metadata equality and `in` filters are jsonb containment (metadata @> '{"project": "apollo"}'), applied inside
-- every recall arm (memwrap/engine/recall/filters.py). jsonb_path_ops answers containment with a smaller index
-- than the default opclass; btree_gin (0001) lets it lead with bank_id like the other GIN indexes.
-- fastupdate off, as for the others: a pending list is scanned linearly by every search.
CREATE INDEX IF NOT EXISTS memory_units_metadata ON memory_units
    USING gin (bank_id, metadata jsonb_path_ops) WITH (fastupdate = off);

-- Filters on a session (recall `session_ids`) use memory_units_session (bank_id, session_key, seq) from 0001.

-- Every earlier version of an updated memory (memwrap/engine/update.py): what it said, its metadata, tags and
-- dates until `replaced_at`, and which of them the update changed. The current version is the memory itself.
CREATE TABLE IF NOT EXISTS memory_history (
    bank_id        text NOT NULL,
    memory_id      uuid NOT NULL,
    version        int NOT NULL,                    -- 1 is the memory as first retained
    text           text NOT NULL,
    metadata       jsonb NOT NULL DEFAULT '{}'::jsonb,
    tags           text[] NOT NULL DEFAULT '{}',
    occurred_start timestamptz,
    occurred_end   timestamptz,
    valid_from     timestamptz NOT NULL,            -- when this version began (created, or the update before)
    replaced_at    timestamptz NOT NULL DEFAULT now(),
    changed        text[] NOT NULL,                 -- what the update that replaced it changed: text, metadata, tags
    PRIMARY KEY (bank_id, memory_id, version),
    FOREIGN KEY (bank_id, memory_id) REFERENCES memory_units(bank_id, id) ON DELETE CASCADE
);
