-- Connections (the connections extension): an account's OAuth providers, the
-- connections made by signing in to them, and sign-ins under way.

CREATE TABLE IF NOT EXISTS connection_providers (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    name TEXT NOT NULL,
    issuer TEXT,
    authorization_endpoint TEXT,
    token_endpoint TEXT,
    revocation_endpoint TEXT,
    -- `client_secret_basic` or `client_secret_post`.
    token_auth_method TEXT NOT NULL,
    client_id TEXT NOT NULL,
    sealed_client_secret TEXT NOT NULL,
    scopes TEXT NOT NULL,
    hosts TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, slug)
);

CREATE TABLE IF NOT EXISTS connections (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    provider_id TEXT NOT NULL REFERENCES connection_providers(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    scopes TEXT NOT NULL,
    sealed_access_token TEXT,
    sealed_refresh_token TEXT,
    expires_at BIGINT,
    last_refreshed_at BIGINT,
    refresh_error TEXT,
    lease_until BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, provider_id)
);
CREATE INDEX IF NOT EXISTS connections_due ON connections(status, expires_at);

CREATE TABLE IF NOT EXISTS connection_attempts (
    state_hash TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    provider_id TEXT NOT NULL REFERENCES connection_providers(id) ON DELETE CASCADE,
    sealed_verifier TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS connection_attempts_expiry ON connection_attempts(expires_at);
