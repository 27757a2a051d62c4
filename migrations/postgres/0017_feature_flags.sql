-- Runtime flags an operator set (PUT /api/admin/features/{name}, or
-- `acs admin features set`): each overrides the configuration's
-- `features.<name>` on every replica until it is removed.
CREATE TABLE feature_flags (
    name TEXT PRIMARY KEY,
    enabled INTEGER NOT NULL,
    updated_at BIGINT NOT NULL,
    updated_by TEXT NOT NULL
);

-- Every change of a stored flag, never rewritten: the flags' audit trail
-- (flags belong to the deployment, not to an account's audit log).
CREATE TABLE feature_flag_changes (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    enabled INTEGER,
    actor TEXT NOT NULL,
    ip TEXT,
    at BIGINT NOT NULL
);
