-- memwrap schema v2: retain with an LLM. Entity aliases, and raw turns waiting for (re-)extraction.
-- Extracted facts are ordinary memory_units (fact_type 'world' / 'experience'); their provenance is in
-- metadata: "source_ids" (the document ids of the turns a fact came from) and "source_items" (item hashes).

-- Other names of an entity, learnt once and reused: 老张 / Zhang Wei → the entity 张伟.
-- alias_key is entity_key(alias). An alias wins over an entity of the same key (老张 seen alone before the
-- model said who it is): resolution looks here first.
CREATE TABLE entity_aliases (
    bank_id    text NOT NULL,
    alias_key  text NOT NULL,
    alias      text NOT NULL,
    entity_id  uuid NOT NULL,
    source     text NOT NULL CHECK (source IN ('llm', 'similar')),  -- said by the model / found by resolution
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, alias_key),
    FOREIGN KEY (bank_id, entity_id) REFERENCES entities(bank_id, id) ON DELETE CASCADE
);
CREATE INDEX entity_aliases_entity ON entity_aliases (bank_id, entity_id);

-- Retained items whose extraction failed (timeout, invalid output, provider down). Their raw units are
-- stored and recalled meanwhile; a background pass turns them into facts and then deletes the row.
-- next_attempt_at NULL: gave up after the maximum number of attempts (the raw memory stays).
CREATE TABLE extraction_queue (
    bank_id         text NOT NULL REFERENCES banks(bank_id) ON DELETE CASCADE,
    item_hash       text NOT NULL,
    attempts        int NOT NULL DEFAULT 0,
    last_error      text,
    next_attempt_at timestamptz DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, item_hash)
);
CREATE INDEX extraction_queue_due ON extraction_queue (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
