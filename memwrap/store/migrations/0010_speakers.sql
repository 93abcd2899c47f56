-- memwrap schema v10: who said a memory is a field of it, not an entity.
--
-- `speaker` is "user", "assistant", "tool", "system" or a participant's name as written ("Alice", "张伟"), read
-- from the turn's leading label ("user: …", "Alice: …") or from the item's metadata role when retained
-- (memwrap/engine/retain/speakers.py, turn_speaker); NULL when nobody is known (a note, a fact, an observation).
-- Recall filters on it (filters={"speakers": [...]}), the block shows it, and the assistant's turns weigh less.
ALTER TABLE memory_units ADD COLUMN IF NOT EXISTS speaker text;
CREATE INDEX IF NOT EXISTS memory_units_speaker ON memory_units (bank_id, lower(speaker)) WHERE speaker IS NOT NULL;

-- Memories retained before: their speaker from their label, by the rules of speakers.turn_speaker (role labels;
-- a capitalised name of up to three words or a Chinese name of up to six characters before a colon, not a heading
-- word such as "Note:" — the list is speakers.HEADING_WORDS).
UPDATE memory_units m SET speaker = CASE l.label
        WHEN 'human' THEN 'user' WHEN 'ai' THEN 'assistant' WHEN 'tool result' THEN 'tool' ELSE l.label END
FROM (
    SELECT bank_id, id,
           substring(lower(text) from '^(user|assistant|tool result|tool|system|human|ai)[[:space:]]*:') AS label
    FROM memory_units
    WHERE fact_type = 'raw' AND speaker IS NULL
) l
WHERE m.bank_id = l.bank_id AND m.id = l.id AND l.label IS NOT NULL;

UPDATE memory_units m SET speaker = l.name
FROM (
    SELECT bank_id, id,
           substring(text from '^([A-Z][[:alnum:]_''.-]*(?: [A-Z][[:alnum:]_''.-]*){0,2}|[㐀-鿿]{1,6})[[:space:]]*(?::[[:space:]]|：)') AS name
    FROM memory_units
    WHERE fact_type = 'raw' AND speaker IS NULL
) l
WHERE m.bank_id = l.bank_id AND m.id = l.id AND l.name IS NOT NULL
  AND lower(l.name) NOT IN (
    'note', 'notes', 'update', 'updates', 'reminder', 'todo', 'to-do', 'fyi', 'ps', 'p.s', 're', 'fw', 'fwd', 'edit',
    'warning', 'error', 'question', 'answer', 'q', 'a', 'summary', 'tip', 'tips', 'step', 'example', 'important',
    'source', 'subject', 'date', 'time', 'location', 'address', 'email', 'phone', 'name', 'title', 'status', 'result',
    'results', 'output', 'input', 'goal', 'goals', 'plan', 'plans', 'idea', 'ideas', 'news', 'info', 'bonus',
    'caution', 'disclaimer', 'spoiler', 'context', 'background', 'problem', 'solution', 'reason', 'because', 'hint',
    'recap', 'tldr', 'tl;dr', 'nb');

-- The speaker's name was taken for an entity of every turn it labelled: unlink it where the turn's own words do not
-- name it, and count the entities' mentions again.
WITH unlinked AS (
    DELETE FROM unit_entities ue
    USING memory_units m, entities e
    WHERE m.speaker IS NOT NULL AND ue.bank_id = m.bank_id AND ue.unit_id = m.id
      AND e.bank_id = ue.bank_id AND e.id = ue.entity_id AND e.name_key = lower(m.speaker)
      AND position(lower(m.speaker) IN lower(substring(m.text from length(m.speaker) + 2))) = 0
    RETURNING ue.bank_id, ue.entity_id
)
UPDATE entities e SET mention_count = greatest(e.mention_count - u.n, 0)
FROM (SELECT bank_id, entity_id, count(*) AS n FROM unlinked GROUP BY bank_id, entity_id) u
WHERE e.bank_id = u.bank_id AND e.id = u.entity_id;
