-- Account search (GET /api/admin/accounts?q=) walks accounts newest first
-- and matches `q` inside the email: with both in one index the walk reads
-- the index alone and touches the table only for the page it returns.
CREATE INDEX IF NOT EXISTS admin_accounts_search ON accounts(id, email);
