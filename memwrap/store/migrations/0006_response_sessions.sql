-- The memory proxy files a Responses API call made with `previous_response_id` under the session of the
-- response it continues. The map is per bank (a response id seen in one bank says nothing about another) and
-- lives here, not in a process, so it survives a restart and is shared by every `memwrap serve` on this database.
-- Rows older than the provider keeps responses (30 days) are deleted by the proxy.
CREATE TABLE IF NOT EXISTS response_sessions (
    bank_id     text NOT NULL,
    response_id text NOT NULL,
    session     text NOT NULL,
    next_turn   integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, response_id)
);

CREATE INDEX IF NOT EXISTS response_sessions_created ON response_sessions (created_at);
