-- Runners (DESIGN 9.8): a user's own machine serving sandboxes over a
-- WebSocket it dials. The token is shown once; only its digest is kept.

CREATE TABLE runners (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    -- What the runner said of itself when it last connected.
    hostname TEXT,
    root TEXT,
    connected_at BIGINT,
    last_seen_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX runners_account_name ON runners(account_id, name);

-- The runner a `runner` machine lives on.
ALTER TABLE sandboxes ADD COLUMN runner_id TEXT;
