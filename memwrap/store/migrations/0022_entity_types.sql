-- memwrap schema v22: an entity may carry a type the bank declared (issue 39; Graphiti's and Zep's custom entity
-- types).
--
-- A bank lists the kinds of entity it cares about in its settings (banks.config 'entity_types': names and
-- descriptions, engine/banks/entity_types.py); LLM extraction gives each entity of such a kind its type name, stored here.
-- NULL, the default, is "no declared type": every entity of a bank without types, every entity found without an
-- LLM (provider "none" recognises names, not kinds), and every entity of a store older than this version.
ALTER TABLE entities ADD COLUMN IF NOT EXISTS entity_type text;
-- Recall's entity-type filter reads the entities of each candidate memory by primary key (unit_entities, then
-- entities); this index serves the other direction, "the entities of this type" (the entity listing's
-- `entity_type`, compared in any case as the filter is), and leads with bank_id as every key does (the distribution
-- rule, Citus).
CREATE INDEX IF NOT EXISTS entities_type ON entities (bank_id, lower(entity_type)) WHERE entity_type IS NOT NULL;
