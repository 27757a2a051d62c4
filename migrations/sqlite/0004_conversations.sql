-- Conversations get their whole shape, turns are recorded, and output
-- events may carry structured blocks.

ALTER TABLE conversations ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
ALTER TABLE conversations ADD COLUMN model TEXT;
-- The conversation's own session config (JSON map), and what the runtime advertised.
ALTER TABLE conversations ADD COLUMN session_config TEXT;
ALTER TABLE conversations ADD COLUMN session_config_options TEXT;
ALTER TABLE conversations ADD COLUMN environment_id TEXT;
ALTER TABLE conversations ADD COLUMN vault_id TEXT;
ALTER TABLE conversations ADD COLUMN channel_id TEXT;
ALTER TABLE conversations ADD COLUMN permission_policy TEXT;
ALTER TABLE conversations ADD COLUMN sandbox_mode TEXT;
ALTER TABLE conversations ADD COLUMN machine_name TEXT;
ALTER TABLE conversations ADD COLUMN sandbox_api_access TEXT NOT NULL DEFAULT 'owner';
-- The ACP session of the live agent process, and where its stdout was read up to.
ALTER TABLE conversations ADD COLUMN acp_session_id TEXT;
ALTER TABLE conversations ADD COLUMN agent_offset BIGINT NOT NULL DEFAULT 0;
-- A prompt waiting for the machine to wake (JSON); at most one.
ALTER TABLE conversations ADD COLUMN pending_prompt TEXT;
ALTER TABLE conversations ADD COLUMN ended_at BIGINT;
CREATE INDEX conversations_channel ON conversations(account_id, agent_id, channel_id);

CREATE TABLE turns (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    account_id TEXT NOT NULL,
    prompt TEXT NOT NULL,
    status TEXT NOT NULL,
    origin TEXT NOT NULL,
    client_request_id TEXT,
    stop_reason TEXT,
    limit_reason TEXT,
    exit_code BIGINT,
    error TEXT,
    inference TEXT,
    model_selection TEXT,
    config_selection TEXT,
    usage TEXT,
    -- The JSON-RPC id of the session/prompt call, to adopt its answer after a restart.
    rpc_id BIGINT,
    inserted_at BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX turns_conversation ON turns(conversation_id, inserted_at);

ALTER TABLE events ADD COLUMN blocks TEXT;
-- The all-conversations stream catches up by account; whole_turns finds a turn's first event.
CREATE INDEX events_account ON events(account_id, id);
CREATE INDEX events_turn ON events(conversation_id, turn_id, id);
