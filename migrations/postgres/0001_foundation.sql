-- Accounts, keys, email tokens, the audit log and support reports.
-- Portable encodings (see core/src/db): TEXT uuids, BIGINT microseconds, INTEGER booleans, TEXT JSON.

CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    email_verified INTEGER NOT NULL DEFAULT 0,
    pending_email TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE email_tokens (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX email_tokens_account ON email_tokens(account_id);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    expires_at BIGINT,
    last_used_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX api_keys_account ON api_keys(account_id, created_at);

CREATE TABLE audit_events (
    id BIGSERIAL PRIMARY KEY,
    account_id TEXT NOT NULL,
    actor_type TEXT NOT NULL,
    actor_id TEXT,
    action TEXT NOT NULL,
    target_type TEXT,
    target_id TEXT,
    ip TEXT,
    at BIGINT NOT NULL
);
CREATE INDEX audit_events_account ON audit_events(account_id, id);
