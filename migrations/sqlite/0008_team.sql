-- Teammates and their cron schedules (spec 2.6, 4.5).

-- The team: an agent with bindings (null = the agent's own environment or vault).
CREATE TABLE team_members (
    account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    environment_id TEXT,
    vault_id TEXT,
    inserted_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, agent_id)
);

-- A teammate's conversations (opened by a team message or a schedule's run).
ALTER TABLE conversations ADD COLUMN team INTEGER NOT NULL DEFAULT 0;
CREATE INDEX conversations_team ON conversations(agent_id, team, created_at);

-- A schedule goes with its teammate. `next_run_at` is null while disabled;
-- a replica fires a due schedule only when its compare-and-set on
-- `next_run_at` wins, so each due time fires once. The claim also puts the
-- run "in hand" (`run_id`, `run_lease_until`) until it has been handed on;
-- a run whose server died meanwhile is taken up again after its lease.
CREATE TABLE team_schedules (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    name TEXT,
    cron TEXT NOT NULL,
    prompt TEXT NOT NULL,
    one_off INTEGER NOT NULL,
    enabled INTEGER NOT NULL,
    next_run_at BIGINT,
    last_run_at BIGINT,
    last_conversation_id TEXT,
    last_error TEXT,
    run_id TEXT,
    run_lease_until BIGINT,
    inserted_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    FOREIGN KEY (account_id, agent_id) REFERENCES team_members(account_id, agent_id) ON DELETE CASCADE
);
CREATE INDEX team_schedules_agent ON team_schedules(account_id, agent_id, inserted_at);
CREATE INDEX team_schedules_due ON team_schedules(next_run_at);
CREATE INDEX team_schedules_in_hand ON team_schedules(run_lease_until);
