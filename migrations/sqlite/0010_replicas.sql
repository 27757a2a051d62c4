-- Servers sharing one database (core/src/replicas): each running server
-- keeps a row, refreshed every few seconds and removed at a clean stop.
-- `pid_scope` (the host's boot id and PID namespace) says where `pid` means
-- something: a server there whose process is gone is gone, silent or not.
CREATE TABLE servers (
    id TEXT PRIMARY KEY,
    started_at BIGINT NOT NULL,
    seen_at BIGINT NOT NULL,
    pid_scope TEXT NOT NULL,
    pid BIGINT NOT NULL
);

-- The server that owns a machine (its egress proxy; set when that server
-- builds or wakes it) and a conversation's running turn (set by the claim
-- that starts the turn). What a gone server owned is taken over by another;
-- a server that starts leaves what live servers own alone.
ALTER TABLE sandboxes ADD COLUMN server_id TEXT;
ALTER TABLE conversations ADD COLUMN server_id TEXT;
