-- The example extension's one table, in its own migration history
-- (`_sqlx_migrations_example`).
CREATE TABLE example_notes (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX example_notes_account ON example_notes(account_id, created_at);
