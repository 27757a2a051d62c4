-- Hosted chat-relay identities (spec 2.8) and the direct messages already
-- claimed for an answer, in the extension's own migration history
-- (`_sqlx_migrations_chat_relay`).
CREATE TABLE chat_relay_identities (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    display_name TEXT,
    agent_id TEXT NOT NULL,
    environment_id TEXT,
    vault_id TEXT NOT NULL,
    pubkey TEXT NOT NULL,
    -- The nsec sealed with the account's data key; never returned.
    sealed_nsec TEXT NOT NULL,
    auth_tag TEXT NOT NULL,
    owner_pubkey TEXT NOT NULL,
    relay_url TEXT NOT NULL,
    respond_to TEXT NOT NULL,
    respond_to_allowlist TEXT NOT NULL,
    sandbox_mode TEXT,
    enabled BIGINT NOT NULL DEFAULT 1,
    -- Unix seconds of the newest event seen on the relay: where the harness resumes.
    cursor_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, pubkey)
);

-- One row per direct message an identity took on: the unique key is the
-- claim, so no restart, reconnect or second replica answers one twice.
CREATE TABLE chat_relay_answered (
    pubkey TEXT NOT NULL,
    event_id TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    claimed_at BIGINT NOT NULL,
    PRIMARY KEY (pubkey, event_id)
);
