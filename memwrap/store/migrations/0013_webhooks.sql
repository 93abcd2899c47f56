-- memwrap schema v13: webhooks on memory events (memwrap/engine/webhooks; docs/webhooks.md).
--
-- A subscription belongs to one bank and goes with it (ON DELETE CASCADE). Its secret signs every request
-- (HMAC-SHA256 over "timestamp.body"), so it is stored as it was shown once at creation: a signature cannot be
-- made from a hash of it.
CREATE TABLE IF NOT EXISTS webhook_subscriptions (
    bank_id      text NOT NULL REFERENCES banks(bank_id) ON DELETE CASCADE,
    id           uuid NOT NULL,
    url          text NOT NULL,
    events       text[] NOT NULL,
    secret       text NOT NULL,
    include_text boolean NOT NULL DEFAULT true,
    enabled      boolean NOT NULL DEFAULT true,
    description  text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id)
);

-- One row per event and subscription: the exact body sent on every attempt (the signature covers it), its
-- `event_id` (the idempotency key, the same on every retry) and where its delivery stands. A 'webhook' job of the
-- queue carries it out (its payload names the row).
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    bank_id         text NOT NULL,
    id              bigint GENERATED ALWAYS AS IDENTITY,
    subscription_id uuid NOT NULL,
    event_id        uuid NOT NULL,
    event           text NOT NULL,
    body            text NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'skipped')),
    attempts        int NOT NULL DEFAULT 0,
    last_status     int,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    -- Every key leads with bank_id: the tables distribute by bank (tests/test_distribution_rule.py).
    PRIMARY KEY (bank_id, id),
    FOREIGN KEY (bank_id, subscription_id) REFERENCES webhook_subscriptions (bank_id, id) ON DELETE CASCADE,
    UNIQUE (bank_id, subscription_id, event_id)
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_subscription ON webhook_deliveries (bank_id, subscription_id, id DESC);
-- Finished deliveries are pruned after a while (delivery.py, KEEP_FINISHED_DELIVERIES_SECONDS).
CREATE INDEX IF NOT EXISTS webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending';

-- The delivery log: one row per attempt (its HTTP status, or the error when there was no answer, and how long).
CREATE TABLE IF NOT EXISTS webhook_attempts (
    bank_id     text NOT NULL,
    delivery_id bigint NOT NULL,
    attempt     int NOT NULL,
    status_code int,
    error       text,
    duration_ms double precision NOT NULL,
    started_at  timestamptz NOT NULL,
    PRIMARY KEY (bank_id, delivery_id, attempt),
    FOREIGN KEY (bank_id, delivery_id) REFERENCES webhook_deliveries (bank_id, id) ON DELETE CASCADE
);

-- Events look up the enabled subscriptions of a bank on every write: a bank without any answers from the index.
CREATE INDEX IF NOT EXISTS webhook_subscriptions_enabled ON webhook_subscriptions (bank_id) WHERE enabled;
