-- Operator keys (DESIGN 9.4): minted with `acs admin key create` on the
-- database, shown once, kept as SHA-256 digests. They belong to no account.
CREATE TABLE IF NOT EXISTS operator_keys (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at BIGINT
);
