-- Moved from core's migration 5 (docs/extensions.md): a database that ran it
-- already has these, hence IF NOT EXISTS.

-- Signed webhooks (spec 2.7, 3.2, 6.1): endpoints, one delivery per endpoint
-- and event (a durable job), and every HTTP attempt of each delivery.

CREATE TABLE IF NOT EXISTS webhook_endpoints (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    description TEXT,
    -- JSON list of filters: exact types, `conversation.<stage>.*` or `*`.
    event_types TEXT NOT NULL,
    -- The signing secret, sealed with the account's data key.
    secret TEXT NOT NULL,
    status TEXT NOT NULL,
    consecutive_failures BIGINT NOT NULL DEFAULT 0,
    disabled_at BIGINT,
    disabled_reason TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_endpoints_account ON webhook_endpoints(account_id, status);

CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    account_id TEXT NOT NULL,
    -- The log event id as a string (`test_<uuid>` for a test event).
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    -- The exact body sent on every attempt.
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    -- Set while an attempt is due; null once the delivery succeeded or gave up.
    next_attempt_at BIGINT,
    -- A worker's claim (a token fencing what it records); an expired lease is claimed
    -- again (the worker died).
    lease_until BIGINT,
    claim TEXT,
    -- What the due attempt is: `automatic`, or a one-off `redeliver`/`test` (no retries,
    -- sent while the endpoint is disabled too).
    attempt_trigger TEXT NOT NULL DEFAULT 'automatic',
    -- 1 while the payload still lacks the conversation's facts: its first event can be written
    -- a moment before the conversation row (the machine launches first); filled at dispatch.
    awaiting_facts INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS webhook_deliveries_event ON webhook_deliveries(endpoint_id, event_id);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS webhook_deliveries_age ON webhook_deliveries(created_at);
-- A claim reads back the rows it stamped; without this it scans the whole log.
CREATE INDEX IF NOT EXISTS webhook_deliveries_claim ON webhook_deliveries(claim) WHERE claim IS NOT NULL;

CREATE TABLE IF NOT EXISTS webhook_attempts (
    id TEXT PRIMARY KEY,
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    attempt BIGINT NOT NULL,
    -- `automatic`, `redeliver` or `test`.
    attempt_trigger TEXT NOT NULL,
    at BIGINT NOT NULL,
    response_status BIGINT,
    -- The first 4 KB of the answer.
    response_body TEXT,
    error TEXT,
    latency_ms BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_attempts_delivery ON webhook_attempts(delivery_id, attempt);
