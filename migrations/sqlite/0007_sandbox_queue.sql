-- The bounded sandbox queue (spec 4.2): starts that met the tenant or fleet
-- concurrency ceiling, waiting in FIFO order per account.

CREATE TABLE sandbox_requests (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    -- `queued`, `started`, `failed` or `cancelled`.
    status TEXT NOT NULL,
    -- The ConversationCreateRequest as sent (JSON), run again at the start.
    body TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    channel_id TEXT,
    -- How it is opened: 1 for a teammate's conversation; 1 when its turn is `autonomous`.
    team INTEGER NOT NULL DEFAULT 0,
    autonomous INTEGER NOT NULL DEFAULT 0,
    -- The schedule whose run this is, told of the outcome.
    schedule_id TEXT,
    -- The id a fresh start gives its conversation, chosen at queue time so that a start
    -- cut short (its server died) is recognised by the conversation it left behind.
    fresh_conversation_id TEXT NOT NULL,
    -- Set once started, and on `prompt_delivery_unknown`.
    conversation_id TEXT,
    error TEXT,
    -- A worker's claim: a token fencing what it records, and its lease. `began_at` is set
    -- just before the start runs; a lease that ran out after it means the start may have
    -- happened.
    claim TEXT,
    lease_until BIGINT,
    began_at BIGINT,
    inserted_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    -- A request still queued then fails with `queue_wait_expired`.
    expires_at BIGINT NOT NULL,
    started_at BIGINT,
    ended_at BIGINT
);
-- Each account's line in order (heads, positions, the per-account count); also the
-- round-robin key (the account's latest start) and the listing.
CREATE INDEX sandbox_requests_line ON sandbox_requests(account_id, status, inserted_at, id);
CREATE INDEX sandbox_requests_started ON sandbox_requests(account_id, started_at) WHERE started_at IS NOT NULL;
CREATE INDEX sandbox_requests_due ON sandbox_requests(expires_at) WHERE status = 'queued';
CREATE INDEX sandbox_requests_claim ON sandbox_requests(claim) WHERE claim IS NOT NULL;
CREATE INDEX sandbox_requests_settled ON sandbox_requests(updated_at) WHERE status <> 'queued';
