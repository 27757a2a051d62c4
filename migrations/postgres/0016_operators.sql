-- Who made a ledger row by hand (an operator's grant, spec 9.4), and why.
ALTER TABLE credit_ledger ADD COLUMN actor_type TEXT;
ALTER TABLE credit_ledger ADD COLUMN actor_id TEXT;
ALTER TABLE credit_ledger ADD COLUMN note TEXT;

-- A row while an operator has the account suspended: its keys and sessions
-- are refused and nothing new starts for it; nothing is deleted. A table of
-- its own: the accounts table is rebuilt by migration 12 on SQLite, which
-- checks its exact columns.
CREATE TABLE account_suspensions (
    account_id TEXT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    suspended_at BIGINT NOT NULL
);
