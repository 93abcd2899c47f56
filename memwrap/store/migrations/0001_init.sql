-- memwrap schema v1. Every key leads with bank_id; one vector index serves all banks.
-- {embedding_dim} is filled in from the configured embedding model when the schema is first created.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE TABLE IF NOT EXISTS store_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE banks (
    bank_id        text PRIMARY KEY,
    config         jsonb NOT NULL DEFAULT '{}'::jsonb,
    memory_count   bigint NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    last_retain_at timestamptz
);

CREATE TABLE memory_units (
    bank_id        text NOT NULL REFERENCES banks(bank_id) ON DELETE CASCADE,
    id             uuid NOT NULL,
    seq            bigint GENERATED ALWAYS AS IDENTITY,
    text           text NOT NULL,
    fact_type      text NOT NULL,
    document_id    text,
    session_key    text,
    part_index     int NOT NULL DEFAULT 0,
    context        text,
    metadata       jsonb NOT NULL DEFAULT '{}'::jsonb,
    tags           text[] NOT NULL DEFAULT '{}',
    item_hash      text NOT NULL,
    occurred_start timestamptz,
    occurred_end   timestamptz,
    mentioned_at   timestamptz NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    invalidated_at timestamptz,
    embedding      vector({embedding_dim}),
    search_tsv     tsvector NOT NULL,
    PRIMARY KEY (bank_id, id)
);

-- One HNSW index for every bank; recall filters by bank with pgvector's iterative index scan.
CREATE INDEX memory_units_embedding_hnsw ON memory_units USING hnsw (embedding vector_cosine_ops);
-- fastupdate off: a pending list of fresh entries is scanned linearly by every search (7 ms at 10k rows).
CREATE INDEX memory_units_search ON memory_units USING gin (bank_id, search_tsv) WITH (fastupdate = off);
CREATE INDEX memory_units_session ON memory_units (bank_id, session_key, seq);
CREATE INDEX memory_units_document ON memory_units (bank_id, document_id);
CREATE INDEX memory_units_mentioned ON memory_units (bank_id, mentioned_at);
CREATE INDEX memory_units_occurred ON memory_units (bank_id, occurred_start, occurred_end);
CREATE INDEX memory_units_item ON memory_units (bank_id, item_hash);
CREATE INDEX memory_units_tags ON memory_units USING gin (bank_id, tags) WITH (fastupdate = off);

-- What was retained, by content hash: retaining the same item again returns the same units.
CREATE TABLE retained_items (
    bank_id    text NOT NULL REFERENCES banks(bank_id) ON DELETE CASCADE,
    item_hash  text NOT NULL,
    unit_ids   uuid[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, item_hash)
);

CREATE TABLE entities (
    bank_id       text NOT NULL REFERENCES banks(bank_id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    name          text NOT NULL,
    name_key      text NOT NULL,
    mention_count bigint NOT NULL DEFAULT 0,
    first_seen    timestamptz NOT NULL DEFAULT now(),
    last_seen     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id),
    UNIQUE (bank_id, name_key)
);
CREATE INDEX entities_name_trgm ON entities USING gin (name_key gin_trgm_ops) WITH (fastupdate = off);

CREATE TABLE unit_entities (
    bank_id   text NOT NULL,
    unit_id   uuid NOT NULL,
    entity_id uuid NOT NULL,
    PRIMARY KEY (bank_id, unit_id, entity_id),
    FOREIGN KEY (bank_id, unit_id) REFERENCES memory_units(bank_id, id) ON DELETE CASCADE,
    FOREIGN KEY (bank_id, entity_id) REFERENCES entities(bank_id, id) ON DELETE CASCADE
);
CREATE INDEX unit_entities_entity ON unit_entities (bank_id, entity_id);

-- Directed links between units: 'next' (the following part of the same session), later 'causal', ...
CREATE TABLE memory_links (
    bank_id text NOT NULL,
    from_id uuid NOT NULL,
    to_id   uuid NOT NULL,
    kind    text NOT NULL,
    weight  real NOT NULL DEFAULT 1.0,
    PRIMARY KEY (bank_id, from_id, to_id, kind),
    FOREIGN KEY (bank_id, from_id) REFERENCES memory_units(bank_id, id) ON DELETE CASCADE,
    FOREIGN KEY (bank_id, to_id) REFERENCES memory_units(bank_id, id) ON DELETE CASCADE
);
CREATE INDEX memory_links_to ON memory_links (bank_id, to_id);
