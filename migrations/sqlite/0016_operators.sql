-- Who made a ledger row by hand (an operator's grant, spec 9.4), and why.
ALTER TABLE credit_ledger ADD COLUMN actor_type TEXT;
ALTER TABLE credit_ledger ADD COLUMN actor_id TEXT;
ALTER TABLE credit_ledger ADD COLUMN note TEXT;

-- Set while an operator has the account suspended: its keys and sessions
-- are refused and nothing new starts for it; nothing is deleted.
ALTER TABLE accounts ADD COLUMN suspended_at BIGINT;
