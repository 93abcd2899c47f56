-- memwrap schema v12: a memory may expire.
--
-- `expires_at`: the moment a memory stops being recalled (retain(..., expires_at=...), update() sets or clears it;
-- NULL, the default, never expires). Past it, recall (every arm, neighbours, the block), reflect and
-- consolidation's input leave the memory out, as they do an invalidated one; list() shows it with
-- include_expired=True and get() always. Nothing is deleted: an expired memory is hidden, not forgotten (the
-- per-bank `raw_ttl_days` deletes raw facts; this hides any memory, fact or raw, at a time of its own).
-- The bank's extraction instructions (banks.config 'extraction_instructions') need no column: they are a setting.
ALTER TABLE memory_units ADD COLUMN IF NOT EXISTS expires_at timestamptz;
-- No index: every reader filters on it beside an indexed condition (bank, ids, vector), never by range alone.
