-- memwrap schema v7: one queue of background work. Raw turns waiting for their facts and units whose
-- consolidation failed were retried by state machines of their own (extraction_queue; unit_learning's attempts
-- and retry_after); they become rows of `jobs`, retried by the one policy (engine/learn/retry_policy.py).

-- Every waiting item becomes an 'extract' job with its attempts, error and due time. A parked row (no next
-- attempt: it used up its attempts) becomes a dead job; the others keep at least one attempt
-- (MEMWRAP_EXTRACTION_MAX_ATTEMPTS defaults to 8).
INSERT INTO jobs (kind, bank_id, payload, status, priority, attempts, max_attempts, run_after, last_error,
                  created_at, finished_at)
SELECT 'extract', q.bank_id, jsonb_build_object('item_hashes', jsonb_build_array(q.item_hash)),
       CASE WHEN q.next_attempt_at IS NULL THEN 'failed' ELSE 'queued' END,
       80, q.attempts,
       CASE WHEN q.next_attempt_at IS NULL THEN greatest(q.attempts, 1) ELSE greatest(8, q.attempts + 1) END,
       coalesce(q.next_attempt_at, now()), q.last_error, q.created_at,
       CASE WHEN q.next_attempt_at IS NULL THEN now() END
FROM extraction_queue q;

DROP TABLE extraction_queue;

-- Units waiting out their own backoff become one 'consolidate_parked' job per bank (the attempts they have left
-- of the 3 a parked unit gets, due when the first was). Units that used them up stay failed: facts, recalled,
-- never consolidated.
INSERT INTO jobs (kind, bank_id, payload, priority, max_attempts, run_after, serial_key, last_error)
SELECT 'consolidate_parked', l.bank_id, jsonb_build_object('unit_ids', jsonb_agg(l.unit_id::text ORDER BY l.unit_id)),
       60, greatest(3 - min(l.attempts), 1), min(l.retry_after), 'consolidate:' || l.bank_id, min(l.error)
FROM unit_learning l
WHERE l.status = 'failed' AND l.retry_after IS NOT NULL AND l.attempts < 3
GROUP BY l.bank_id;

-- unit_learning is now only the record of what consolidation handled: done, or failed (parked, with why).
ALTER TABLE unit_learning DROP COLUMN retry_after, DROP COLUMN attempts;

-- Extraction looks up a bank's open jobs of a kind (the job retain just queued).
CREATE INDEX jobs_bank_kind_open ON jobs (bank_id, kind) WHERE status IN ('queued', 'running');
