-- memwrap schema v14: what the engine's own LLM calls cost, per bank, per day (UTC) and per purpose.
--
-- `purpose` is the LLM role the call was made for: extraction (retain), consolidation (observations, mental
-- models, forgetting) or reflect. One row per (bank, day, purpose), added to after every successful request
-- (memwrap/engine/llm/usage.py); the memory browser's Usage view and the `llm_usage` verb read it. Tokens are as
-- the provider reported them: input includes cached input, which is also counted on its own.
CREATE TABLE IF NOT EXISTS llm_usage (
    bank_id             text NOT NULL REFERENCES banks(bank_id) ON DELETE CASCADE,
    day                 date NOT NULL,
    purpose             text NOT NULL,
    requests            bigint NOT NULL DEFAULT 0,
    input_tokens        bigint NOT NULL DEFAULT 0,
    output_tokens       bigint NOT NULL DEFAULT 0,
    cached_input_tokens bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (bank_id, day, purpose)
);
