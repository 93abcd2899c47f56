-- memwrap schema v23: whether a memory's text states a change (issue 36: recall latency on long technical banks).
--
-- Recall weighs its best hits against each other for replaced facts (engine/recall/order.py, apply_changes: 30 x 29
-- pairs), and a pair can only count when the newer memory states a change: a personal cue ("switched to", "no
-- longer", "搬到") or a technical one ("now averaging 250 ms", "renamed X to Y": language/tech_changes.py). Looking
-- for those cues in a long message's text is ~1 ms of regular expressions, most of a recall's order step on banks
-- of long messages (2-3% of their memories state a change). It is a pure function of the stored text and speaker
-- (language/change_cue.py), so it is worked out once when a memory is written and kept here.
--
-- NULL is "not worked out": rows of a store older than this version (filled in the background after start-up:
-- engine/change_cues.py), and rows whose text or speaker changed (the trigger below). Recall works a NULL out from
-- the text as before, so a missing value costs time, never a different answer.
ALTER TABLE memory_units ADD COLUMN IF NOT EXISTS change_cue boolean;

-- The backfill finds what is left to fill without reading the table; empty once it is done.
CREATE INDEX IF NOT EXISTS memory_units_change_cue_unknown ON memory_units (bank_id) WHERE change_cue IS NULL;

-- A writer that changes a memory's text or speaker without saying its cue leaves it unknown, not stale.
CREATE OR REPLACE FUNCTION memory_units_change_cue_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.text IS DISTINCT FROM OLD.text OR NEW.speaker IS DISTINCT FROM OLD.speaker)
       AND NEW.change_cue IS NOT DISTINCT FROM OLD.change_cue THEN
        NEW.change_cue := NULL;
    END IF;
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS memory_units_change_cue_stale ON memory_units;
CREATE TRIGGER memory_units_change_cue_stale BEFORE UPDATE OF text, speaker ON memory_units
    FOR EACH ROW EXECUTE FUNCTION memory_units_change_cue_stale();
