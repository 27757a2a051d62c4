-- Problem reports (the support extension). Core's first migration once created this
-- table; a database that ran it already has it, hence IF NOT EXISTS (docs/extensions.md).

CREATE TABLE IF NOT EXISTS support_reports (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    category TEXT NOT NULL,
    message TEXT NOT NULL,
    client TEXT,
    context TEXT,
    screenshot BYTEA,
    screenshot_media_type TEXT,
    status TEXT NOT NULL,
    external_url TEXT,
    forward_error TEXT,
    forwarded_at BIGINT,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT,
    lease_until BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS support_reports_account ON support_reports(account_id, created_at);
CREATE INDEX IF NOT EXISTS support_reports_due ON support_reports(status, next_attempt_at);
