-- memwrap schema v15: whether a webhook subscription may reach private addresses (memwrap/engine/webhooks/urls.py).
--
-- Decided when its URL is set, by who set it: false for a bank-scoped API key (unless
-- MEMWRAP_WEBHOOK_ALLOW_PRIVATE_ADDRESSES says otherwise), true for an admin key, a server without keys or the
-- library. NULL: a subscription from before this column; its deliveries are refused private addresses whenever
-- the delivering process sees bank-scoped keys configured.
ALTER TABLE webhook_subscriptions ADD COLUMN IF NOT EXISTS allow_private boolean;
