-- memwrap schema v3: learning. Background jobs, observations backed by evidence, mental models, forgetting.
-- Independent of 0002 (extraction): it only relies on banks and memory_units from 0001.

-- Consolidation walks a bank's units in insertion order, from a watermark.
CREATE INDEX IF NOT EXISTS memory_units_bank_seq ON memory_units (bank_id, seq);

-- ------------------------------------------------------------------------------------------------ jobs
-- Background work is rows here; any process may run a worker. Claimed with FOR UPDATE SKIP LOCKED.
CREATE TABLE jobs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind         text NOT NULL,
    bank_id      text REFERENCES banks(bank_id) ON DELETE CASCADE,
    payload      jsonb NOT NULL DEFAULT '{}'::jsonb,
    status       text NOT NULL DEFAULT 'queued'
                 CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    priority     int NOT NULL DEFAULT 100,          -- lower runs first
    attempts     int NOT NULL DEFAULT 0,            -- claims so far, including ones whose worker died
    max_attempts int NOT NULL DEFAULT 5,
    run_after    timestamptz NOT NULL DEFAULT now(),
    dedupe_key   text,                              -- at most one queued job per key
    serial_key   text,                              -- jobs sharing a key never run at the same time
    claim_token  uuid,                              -- which claim is current (a re-claim replaces it)
    locked_by    text,
    lease_until  timestamptz,                       -- a running job whose lease passed is claimable again
    last_error   text,
    result       jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz
);
CREATE UNIQUE INDEX jobs_dedupe ON jobs (dedupe_key) WHERE status = 'queued';
CREATE INDEX jobs_open ON jobs (priority, run_after, id) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_serial_running ON jobs (serial_key) WHERE status = 'running';
CREATE INDEX jobs_bank ON jobs (bank_id, status);
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE status IN ('done', 'failed', 'cancelled');

-- One row per claim: who ran what, how it ended. The witness that no job was done twice.
CREATE TABLE job_runs (
    job_id      bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    claim_token uuid NOT NULL,
    attempt     int NOT NULL,
    worker_id   text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    outcome     text CHECK (outcome IN ('done', 'retry', 'failed', 'deferred', 'lost', 'cancelled')),
    error       text,
    PRIMARY KEY (job_id, claim_token)
);

-- ------------------------------------------------------------------------------------------------ consolidation state
-- Units consolidation has handled. A unit with no row above its bank's watermark is pending.
CREATE TABLE unit_learning (
    bank_id     text NOT NULL,
    unit_id     uuid NOT NULL,
    status      text NOT NULL CHECK (status IN ('done', 'failed')),
    attempts    int NOT NULL DEFAULT 0,
    retry_after timestamptz,
    error       text,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, unit_id),
    FOREIGN KEY (bank_id, unit_id) REFERENCES memory_units(bank_id, id) ON DELETE CASCADE
);
CREATE INDEX unit_learning_retry ON unit_learning (bank_id, retry_after) WHERE status = 'failed';

CREATE TABLE learn_progress (
    bank_id    text PRIMARY KEY REFERENCES banks(bank_id) ON DELETE CASCADE,
    watermark  bigint NOT NULL DEFAULT 0,           -- every unit with seq <= watermark has a unit_learning row
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- ------------------------------------------------------------------------------------------------ observations
-- An observation is a memory unit (fact_type 'observation', so recall finds it) plus this side row.
CREATE TABLE observations (
    bank_id           text NOT NULL,
    id                uuid NOT NULL,
    scope             text[] NOT NULL DEFAULT '{}',  -- sorted tags; its evidence has exactly these tags
    origin            text NOT NULL CHECK (origin IN ('heuristic', 'llm')),
    representative_id uuid,                          -- heuristic: the fact whose words it uses
    version           int NOT NULL DEFAULT 1,        -- its latest observation_history entry
    proof_count       int NOT NULL DEFAULT 0,        -- independent sources among active supporting evidence
    evidence_count    int NOT NULL DEFAULT 0,        -- active evidence entries
    first_evidence_at timestamptz,
    last_evidence_at  timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id),
    FOREIGN KEY (bank_id, id) REFERENCES memory_units(bank_id, id) ON DELETE CASCADE
);

CREATE TABLE observation_evidence (
    bank_id        text NOT NULL,
    observation_id uuid NOT NULL,
    memory_id      uuid NOT NULL,
    quote          text NOT NULL,
    evidenced_at   timestamptz NOT NULL,             -- when the source was said (its mentioned_at)
    source_key     text NOT NULL,                    -- the document id, else the retained item: one source each
    stance         text NOT NULL DEFAULT 'supports' CHECK (stance IN ('supports', 'superseded')),
    added_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, observation_id, memory_id),
    FOREIGN KEY (bank_id, observation_id) REFERENCES observations(bank_id, id) ON DELETE CASCADE,
    FOREIGN KEY (bank_id, memory_id) REFERENCES memory_units(bank_id, id) ON DELETE CASCADE
);
CREATE INDEX observation_evidence_memory ON observation_evidence (bank_id, memory_id);

-- Every version of an observation's text, with why it changed. Updates refine; nothing is silently overwritten.
CREATE TABLE observation_history (
    bank_id        text NOT NULL,
    observation_id uuid NOT NULL,
    version        int NOT NULL,
    text           text NOT NULL,
    action         text NOT NULL,                    -- created | refined | contradicted | rewritten | invalidated | restored
    reason         text NOT NULL DEFAULT '',
    proof_count    int NOT NULL DEFAULT 0,
    evidence_ids   uuid[] NOT NULL DEFAULT '{}',
    valid_from     timestamptz,                      -- world time: when the newest evidence behind it was said
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, observation_id, version),
    FOREIGN KEY (bank_id, observation_id) REFERENCES observations(bank_id, id) ON DELETE CASCADE
);

-- Why a unit was invalidated; caused_by names the unit whose invalidation cascaded here (restore undoes it).
CREATE TABLE invalidations (
    bank_id        text NOT NULL,
    unit_id        uuid NOT NULL,
    reason         text NOT NULL DEFAULT '',
    caused_by      uuid,
    invalidated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, unit_id),
    FOREIGN KEY (bank_id, unit_id) REFERENCES memory_units(bank_id, id) ON DELETE CASCADE
);
CREATE INDEX invalidations_cause ON invalidations (bank_id, caused_by) WHERE caused_by IS NOT NULL;

-- ------------------------------------------------------------------------------------------------ mental models
-- A named standing question per bank. Read with one query by (bank_id, name).
CREATE TABLE mental_models (
    bank_id       text NOT NULL REFERENCES banks(bank_id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    name          text NOT NULL,
    question      text NOT NULL,
    tags          text[] NOT NULL DEFAULT '{}',
    max_tokens    int NOT NULL,
    refresh_every double precision,                  -- seconds; NULL: only when its scope changes
    content       text NOT NULL DEFAULT '',
    version       int NOT NULL DEFAULT 0,
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'fresh', 'stale', 'failed')),
    generator     text,
    source_ids    uuid[] NOT NULL DEFAULT '{}',
    dirty_seq     bigint NOT NULL DEFAULT 0,         -- bumped on every stale mark; a refresh that raced one stays stale
    stale_since   timestamptz,
    stale_reason  text,
    last_error    text,
    refreshed_at  timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id),
    UNIQUE (bank_id, name)
);
CREATE INDEX mental_models_sources ON mental_models USING gin (source_ids);

CREATE TABLE mental_model_versions (
    bank_id      text NOT NULL,
    model_id     uuid NOT NULL,
    version      int NOT NULL,
    content      text NOT NULL,
    generator    text NOT NULL,
    source_ids   uuid[] NOT NULL DEFAULT '{}',
    reason       text NOT NULL DEFAULT '',
    generated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, model_id, version),
    FOREIGN KEY (bank_id, model_id) REFERENCES mental_models(bank_id, id) ON DELETE CASCADE
);
