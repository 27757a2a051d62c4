-- Credits (an account balance and its append-only ledger), metering of
-- hosted sandbox time, a conversation's inference credential selection,
-- and the lock row that serialises starts against the fleet ceiling.

ALTER TABLE accounts ADD COLUMN credit_balance BIGINT NOT NULL DEFAULT 0;
-- A comped account spends nothing and is never refused for credits.
ALTER TABLE accounts ADD COLUMN comped INTEGER NOT NULL DEFAULT 0;

CREATE TABLE credit_ledger (
    id BIGSERIAL PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    -- Signed: grants are positive, spending negative.
    amount BIGINT NOT NULL,
    balance_after BIGINT NOT NULL,
    -- initial_grant, grant, sandbox_time, platform_turn
    reason TEXT NOT NULL,
    sandbox_id TEXT,
    conversation_id TEXT,
    turn_id TEXT,
    inserted_at BIGINT NOT NULL
);
CREATE INDEX credit_ledger_account ON credit_ledger(account_id, id);

-- Hosted time is charged up to this instant; null while the machine is not
-- active (pending, starting, ready) or was started with credits off.
ALTER TABLE sandboxes ADD COLUMN metered_at BIGINT;
CREATE INDEX sandboxes_metered ON sandboxes(metered_at) WHERE metered_at IS NOT NULL;

-- The credential set chosen at create (pinned across wakes).
ALTER TABLE conversations ADD COLUMN inference_credential_id TEXT;

-- Starts lock the 'fleet' row before counting active machines, so two
-- replicas cannot both take the last place under the fleet ceiling.
CREATE TABLE capacity_locks (
    name TEXT PRIMARY KEY
);
INSERT INTO capacity_locks (name) VALUES ('fleet');
