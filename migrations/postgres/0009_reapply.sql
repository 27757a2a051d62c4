-- What a conversation was last applied with (create or reapply), as JSON:
-- `agent_model` (the agent's model then; a conversation without its own
-- model refuses prompts once the agent's model differs, until reapplied)
-- and `credential_set_id` (the credential set its inference is bound to;
-- a reapply that would bind another is refused). NULL on conversations
-- opened before it was recorded: nothing is compared for them.
ALTER TABLE conversations ADD COLUMN applied TEXT;

-- Variables a running machine started with that a reapply removed from its
-- selection (JSON: `machine_started`, the machine's `last_resumed_at` then,
-- and `keys`). Agent processes started before the machine restarts get them
-- emptied, since its own environment cannot change while it runs.
ALTER TABLE sandboxes ADD COLUMN removed_vars TEXT;
