-- Browser sessions (the `acs_session` cookie) and device logins (RFC 8628).

CREATE TABLE browser_sessions (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    csrf TEXT NOT NULL,
    ip TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX browser_sessions_account ON browser_sessions(account_id);
CREATE INDEX browser_sessions_expiry ON browser_sessions(expires_at);

-- A device login waits for its owner's approval at /device. Before approval
-- it belongs to no account; `account_id` is set by the approval.
CREATE TABLE device_logins (
    id TEXT PRIMARY KEY,
    device_code_hash TEXT NOT NULL UNIQUE,
    user_code TEXT NOT NULL UNIQUE,
    key_name TEXT NOT NULL,
    status TEXT NOT NULL,
    account_id TEXT REFERENCES accounts(id) ON DELETE CASCADE,
    last_polled_at BIGINT,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX device_logins_expiry ON device_logins(expires_at);
