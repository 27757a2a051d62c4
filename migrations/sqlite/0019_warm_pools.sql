-- Warm pools (docs/scale.md, "Warm pools"). A machine built ahead of demand
-- names its pool until a conversation claims it; warm_at is set once its
-- agent process waits started (or that start failed) and it may be claimed.
ALTER TABLE sandboxes ADD COLUMN pool TEXT;
ALTER TABLE sandboxes ADD COLUMN warm_at BIGINT;
CREATE INDEX sandboxes_pool ON sandboxes (pool, status);
