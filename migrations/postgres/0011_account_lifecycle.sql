-- Account lifecycle (DESIGN 9.3, docs/accounts.md): onboarding, avatar, exports.

ALTER TABLE accounts ADD COLUMN onboarding_completed_at BIGINT;
-- Set when a deletion begins (keys gone, sign-in refused); a deletion cut short by a crash is
-- finished by a worker once this is old.
ALTER TABLE accounts ADD COLUMN deleting_at BIGINT;
CREATE INDEX accounts_deleting ON accounts(deleting_at) WHERE deleting_at IS NOT NULL;

-- One avatar per account, kept apart from `accounts` so reading an account never reads the image.
CREATE TABLE account_avatars (
    account_id TEXT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    media_type TEXT NOT NULL,
    data BYTEA NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE account_exports (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    -- `pending`, `completed` or `failed`.
    status TEXT NOT NULL,
    error TEXT,
    -- Uncompressed size of the document, once completed.
    byte_size BIGINT,
    -- A worker's claim (a token fencing what it writes) and its lease; a lease that ran out is
    -- claimed again (the worker died) and the document is written from the start.
    claim TEXT,
    lease_until BIGINT,
    -- Set when the export settles: `completed` + exports.ttl_hours, the download's end.
    expires_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX account_exports_account ON account_exports(account_id, created_at);
CREATE INDEX account_exports_pending ON account_exports(status, lease_until);
CREATE INDEX account_exports_expiry ON account_exports(expires_at);

-- The document, in order: every replica streams it out from here.
CREATE TABLE account_export_chunks (
    export_id TEXT NOT NULL REFERENCES account_exports(id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (export_id, seq)
);
