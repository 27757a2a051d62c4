-- no-transaction
-- Claimable principals (DESIGN 9.3, docs/claimable.md): accounts without an
-- email or a password, opened and owned by an application account until a
-- person claims them.
--
-- `accounts.email` and `accounts.password_hash` lose NOT NULL. SQLite cannot
-- drop a NOT NULL constraint in place, so the table is rebuilt as its
-- documented 12-step procedure says. That needs `foreign_keys` OFF, which
-- cannot change inside a transaction (hence `no-transaction` above, which
-- sqlx honours): with it ON, `DROP TABLE accounts` would cascade-delete every
-- row of every table that references an account. The rebuild itself runs in
-- one transaction, so a failure leaves the old table as it was. Outside a
-- transaction sqlx records the migration after the script: if the process
-- dies in between, the script runs again, so every step may run twice.

-- The rebuild below copies exactly these columns and makes these indexes again.
-- A migration that adds a column or an index to `accounts` before this one
-- must be matched here; until it is, this CHECK fails the migration (before
-- anything changed) instead of the rebuild silently dropping it.
DROP TABLE IF EXISTS temp.claimable_guard;
CREATE TEMP TABLE claimable_guard (
    columns TEXT NOT NULL
        CHECK (columns = 'id,email,password_hash,email_verified,pending_email,created_at,updated_at,credit_balance,comped,onboarding_completed_at,deleting_at'),
    -- Indexes made by CREATE INDEX (not by UNIQUE), to be made again after the rename.
    indexes TEXT NOT NULL CHECK (indexes = 'accounts_deleting')
);
INSERT INTO claimable_guard (columns, indexes) VALUES (
    (SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('accounts') ORDER BY cid)),
    (SELECT COALESCE(group_concat(name, ','), '') FROM (SELECT name FROM pragma_index_list('accounts') WHERE origin = 'c' ORDER BY name))
);
DROP TABLE claimable_guard;

PRAGMA foreign_keys = OFF;

BEGIN IMMEDIATE;

CREATE TABLE accounts_new (
    id TEXT PRIMARY KEY,
    -- NULL for a claimable principal; SQLite's UNIQUE admits many NULLs.
    email TEXT UNIQUE,
    -- NULL for a claimable principal: no password ever signs in to it.
    password_hash TEXT,
    email_verified INTEGER NOT NULL DEFAULT 0,
    pending_email TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    credit_balance BIGINT NOT NULL DEFAULT 0,
    comped INTEGER NOT NULL DEFAULT 0,
    onboarding_completed_at BIGINT,
    deleting_at BIGINT
);
INSERT INTO accounts_new (id, email, password_hash, email_verified, pending_email, created_at, updated_at, credit_balance,
                          comped, onboarding_completed_at, deleting_at)
    SELECT id, email, password_hash, email_verified, pending_email, created_at, updated_at, credit_balance,
           comped, onboarding_completed_at, deleting_at FROM accounts;
DROP TABLE accounts;
ALTER TABLE accounts_new RENAME TO accounts;
-- As migration 11 made it.
CREATE INDEX IF NOT EXISTS accounts_deleting ON accounts(deleting_at) WHERE deleting_at IS NOT NULL;

-- Every reference to an account still resolves (the copy kept every id);
-- a dangling one fails the CHECK and rolls the rebuild back.
-- (OR ROLLBACK ends the transaction itself: the script stops at the error.)
DROP TABLE IF EXISTS temp.claimable_fk_guard;
CREATE TEMP TABLE claimable_fk_guard (dangling INTEGER NOT NULL CHECK (dangling = 0));
INSERT OR ROLLBACK INTO claimable_fk_guard (dangling)
    SELECT COUNT(*) FROM pragma_foreign_key_check WHERE parent = 'accounts';
DROP TABLE claimable_fk_guard;

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

COMMIT;

PRAGMA foreign_keys = ON;
