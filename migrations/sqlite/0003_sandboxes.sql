-- Sandboxes (the machines conversations run on), the conversations that hold
-- them, the event log their stages write to, and egress records.

CREATE TABLE sandboxes (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    machine_name TEXT NOT NULL,
    status TEXT NOT NULL,
    mode TEXT NOT NULL,
    provider TEXT NOT NULL,
    agent_id TEXT,
    environment_id TEXT,
    vault_id TEXT,
    runtime TEXT NOT NULL,
    sandbox_api_access TEXT NOT NULL,
    fingerprint TEXT,
    url TEXT,
    checkpoint_id TEXT,
    checkpoint_at BIGINT,
    -- provider-private state needed to reattach (JSON), and the last failure
    machine TEXT,
    error TEXT,
    busy INTEGER NOT NULL DEFAULT 0,
    touched_at BIGINT NOT NULL,
    last_resumed_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX sandboxes_account ON sandboxes(account_id, created_at);
CREATE INDEX sandboxes_status ON sandboxes(status, touched_at);
-- A live machine name is unique per account; a terminated one may be reused.
CREATE UNIQUE INDEX sandboxes_live_name ON sandboxes(account_id, machine_name) WHERE status <> 'terminated';

-- Conversations grow in the conversations issue; a sandbox lists the ones it holds.
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    sandbox_id TEXT,
    runtime TEXT NOT NULL,
    status TEXT NOT NULL,
    title TEXT,
    mid_turn INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX conversations_sandbox ON conversations(sandbox_id, created_at);
CREATE INDEX conversations_account ON conversations(account_id, created_at);

-- The event log: stage and output events. Ids are global to the server.
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL,
    conversation_id TEXT,
    sandbox_id TEXT,
    turn_id TEXT,
    kind TEXT NOT NULL,
    stream TEXT NOT NULL DEFAULT '',
    stage TEXT,
    state TEXT,
    data TEXT NOT NULL,
    duration_ms BIGINT,
    ts BIGINT NOT NULL
);
CREATE INDEX events_conversation ON events(conversation_id, id);
CREATE INDEX events_sandbox ON events(sandbox_id, id);

CREATE TABLE egress_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
    method TEXT NOT NULL,
    host TEXT NOT NULL,
    credential_keys TEXT NOT NULL,
    service TEXT,
    status BIGINT,
    latency_ms BIGINT,
    error TEXT,
    at BIGINT NOT NULL
);
CREATE INDEX egress_events_sandbox ON egress_events(sandbox_id, id);

-- The callback key of a sandbox acts only for that machine.
ALTER TABLE api_keys ADD COLUMN sandbox_id TEXT;
