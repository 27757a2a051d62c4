-- Subscriptions (the openai_subscriptions extension): vendor subscriptions
-- linked by device-code sign-in, and the sign-ins (link attempts).

CREATE TABLE IF NOT EXISTS openai_subscriptions (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    -- `active`, `revoked`, `expired` or `disconnected`.
    status TEXT NOT NULL,
    -- The vendor account signed in to (the ID token's subject).
    vendor_account TEXT,
    account_email TEXT,
    plan TEXT,
    sealed_access_token TEXT,
    sealed_refresh_token TEXT,
    expires_at BIGINT,
    -- Bumped by each reconnect and disconnect: an attempt that began before is stale.
    revision BIGINT NOT NULL,
    exhausted_until BIGINT,
    usage_checked_at BIGINT,
    refresh_lease_until BIGINT,
    last_used_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE IF NOT EXISTS openai_link_attempts (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    -- `link` or `reconnect`.
    kind TEXT NOT NULL,
    name TEXT,
    grant_id TEXT,
    grant_revision BIGINT,
    state TEXT NOT NULL,
    sealed_device_code TEXT,
    user_code TEXT,
    verification_url TEXT,
    poll_interval BIGINT NOT NULL,
    auth_unreachable BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    next_poll_at BIGINT NOT NULL,
    lease_until BIGINT,
    result_grant_id TEXT,
    failure_reason TEXT,
    failure_grant_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS openai_link_attempts_due ON openai_link_attempts(state, next_poll_at);
CREATE INDEX IF NOT EXISTS openai_link_attempts_account ON openai_link_attempts(account_id, created_at);
