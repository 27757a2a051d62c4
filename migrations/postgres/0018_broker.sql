-- The egress broker (docs/broker.md).

-- The deployment's CAs: the newest unretired one signs for machines started
-- now; a machine keeps the one it started with (sandboxes.broker_ca_id).
-- The private key is sealed with the master key named beside it.
CREATE TABLE broker_cas (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    cert_pem TEXT NOT NULL,
    master_key_id TEXT NOT NULL,
    key_sealed TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    retired_at BIGINT
);

ALTER TABLE sandboxes ADD COLUMN broker_ca_id TEXT;

-- Secret bindings: the credential the broker adds to requests to a host.
-- Exactly one source: a vault key, an environment secret key, or a record
-- of an extension's source (source_kind names it, e.g. connection_id).
CREATE TABLE secret_bindings (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    host TEXT NOT NULL,
    header TEXT NOT NULL,
    template TEXT NOT NULL,
    source_kind TEXT NOT NULL,
    source_id TEXT NOT NULL,
    source_key TEXT,
    enabled INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, name)
);
