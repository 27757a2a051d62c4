-- Claimable principals (DESIGN 9.3, docs/claimable.md): accounts without an
-- email or a password, opened and owned by an application account until a
-- person claims them. (SQLite rebuilds the table for the same change.)
-- Every step may run twice, like the SQLite file's.

-- NULL for a claimable principal; UNIQUE admits many NULLs.
ALTER TABLE accounts ALTER COLUMN email DROP NOT NULL;
-- NULL for a claimable principal: no password ever signs in to it.
ALTER TABLE accounts ALTER COLUMN password_hash DROP NOT NULL;

-- One row per principal: who opened it, who owns it now, and the
-- idempotency key of the create. The id is the claim grant id of the API:
-- random (v4), since whoever holds it may claim the principal.
CREATE TABLE IF NOT EXISTS claim_grants (
    id TEXT PRIMARY KEY,
    -- The principal's own account.
    account_id TEXT NOT NULL UNIQUE REFERENCES accounts(id) ON DELETE CASCADE,
    -- The current owner: the application until the claim, then the claimer.
    owner_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    -- The application that opened it; kept after the claim for its idempotency key.
    application_id TEXT REFERENCES accounts(id) ON DELETE SET NULL,
    idempotency_key TEXT NOT NULL,
    claimed_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (application_id, idempotency_key)
);
CREATE INDEX IF NOT EXISTS claim_grants_owner ON claim_grants(owner_id);

-- Keys of a principal minted for its application (create and each repeat);
-- a claim deletes them.
CREATE TABLE IF NOT EXISTS claimable_keys (
    key_id TEXT PRIMARY KEY REFERENCES api_keys(id) ON DELETE CASCADE,
    grant_id TEXT NOT NULL REFERENCES claim_grants(id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS claimable_keys_grant ON claimable_keys(grant_id);
