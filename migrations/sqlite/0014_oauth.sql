-- OAuth clients (spec 4.4) and their authorization codes (PKCE, spec 5.4).

CREATE TABLE oauth_clients (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    -- JSON array of strings, each matched exactly.
    redirect_uris TEXT NOT NULL,
    -- Set by an operator; until then the client signs in only its own account.
    published_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX oauth_clients_account ON oauth_clients(account_id, created_at);

-- A code is single-use and short-lived; the key issued from it is kept, so a
-- replayed code revokes that key (RFC 6749 section 4.1.2).
CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    key_id TEXT,
    used_at BIGINT,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX oauth_codes_expiry ON oauth_codes(expires_at);
