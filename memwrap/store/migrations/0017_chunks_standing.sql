-- memwrap schema v17: what a chunk of a long message stands for, and the user's standing instructions.
--
-- `turn_part` / `turn_parts`: a message (one speaker's turn) longer than a memory unit is split into chunks; each
-- chunk records its place in the turn (0-based) and how many chunks the turn has. NULL for a turn kept whole (the
-- common case) and for extracted facts. Recall shows several chunks of one message as one line, in message order
-- (engine/recall/pack.py), and every surface reports the chunk's place (RecalledMemory.part / parts).
ALTER TABLE memory_units ADD COLUMN IF NOT EXISTS turn_part int;
ALTER TABLE memory_units ADD COLUMN IF NOT EXISTS turn_parts int;
-- `standing`: the domain ("code", "writing", "any") of a standing instruction or preference the user stated
-- ("always format code with black", "I prefer minimal dependencies"), recognised at retain time
-- (engine/language/instructions.py); NULL for everything else. A request that is a task of that domain brings the
-- bank's standing instructions back (engine/recall/standing.py), read through this small partial index.
ALTER TABLE memory_units ADD COLUMN IF NOT EXISTS standing text;
CREATE INDEX IF NOT EXISTS memory_units_standing ON memory_units (bank_id, mentioned_at DESC) WHERE standing IS NOT NULL;
