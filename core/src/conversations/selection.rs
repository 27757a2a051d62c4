//! Whether a conversation's selection still resolves: its agent, and the
//! environment and vault its machine runs (or a new machine would be built
//! from). Deleting any of them is allowed (the owner's way to take a secret
//! out of use, which a running agent must not be able to hold up); a prompt
//! that meets one deleted is refused with 409 `selection_deleted` naming it
//! in `field`, and a turn that meets one after its prompt was accepted fails
//! with that reason on its `turn` `failed` event (docs/conversations.md).

use uuid::Uuid;

use super::store::ConversationRow;
use crate::error::{ApiError, ApiResult, Kind};
pub use crate::refusal::Deleted;
use crate::sandboxes::model::{SandboxRow, SandboxState};
use crate::state::AppState;

/// An environment and a vault, each maybe none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pair {
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
}

/// The environment and vault a turn runs with: those of its live machine
/// (built or reapplied with them), else those a new machine would be built
/// from (the conversation's overrides, else the agent's).
pub fn effective(live_machine: Option<Pair>, conversation: Pair, agent: Pair) -> Pair {
    live_machine.unwrap_or(Pair {
        environment_id: conversation.environment_id.or(agent.environment_id),
        vault_id: conversation.vault_id.or(agent.vault_id),
    })
}

/// 409 `selection_deleted` when the agent, environment or vault a turn on
/// `conv` would use is gone.
pub async fn check(state: &AppState, conv: &ConversationRow, machine: Option<&SandboxRow>) -> ApiResult<()> {
    let agent = match crate::agents::get_agent(state, conv.account_id, conv.agent_id).await {
        Ok(agent) => agent,
        Err(e) if e.kind == Kind::NotFound => return Err(Deleted::Agent.into()),
        Err(e) => return Err(e),
    };
    let live = machine
        .filter(|m| m.status != SandboxState::Terminated)
        .map(|m| Pair { environment_id: m.environment_id, vault_id: m.vault_id });
    let conversation = Pair { environment_id: conv.environment_id, vault_id: conv.vault_id };
    let agent = Pair { environment_id: agent.spec.environment_id, vault_id: agent.spec.vault_id };
    let Pair { environment_id, vault_id } = effective(live, conversation, agent);
    let account = conv.account_id.to_string();
    let exists = |sql: &'static str, id: Uuid| {
        sqlx::query(sql).bind(id.to_string()).bind(account.clone()).fetch_optional(&state.db.pool)
    };
    if let Some(id) = environment_id
        && exists("SELECT id FROM environments WHERE id = $1 AND account_id = $2", id).await?.is_none()
    {
        return Err(Deleted::Environment.into());
    }
    if let Some(id) = vault_id
        && exists("SELECT id FROM vaults WHERE id = $1 AND account_id = $2", id).await?.is_none()
    {
        return Err(Deleted::Vault.into());
    }
    Ok(())
}

/// What a turn refused this way records as its `error`: the code, then the sentence.
pub fn turn_error(e: &ApiError) -> String {
    match &e.message {
        Some(m) => format!("{}: {m}", e.error),
        None => e.error.clone(),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;

    #[test]
    fn a_live_machine_runs_its_own_selection_a_new_one_the_conversations() {
        let id = || Some(Uuid::now_v7());
        let (machine, conv, agent) = (
            Pair { environment_id: id(), vault_id: None },
            Pair { environment_id: id(), vault_id: None },
            Pair { environment_id: id(), vault_id: id() },
        );
        assert_eq!(effective(Some(machine), conv, agent), machine);
        let fresh = effective(None, conv, agent);
        assert_eq!(fresh, Pair { environment_id: conv.environment_id, vault_id: agent.vault_id });
        assert_eq!(effective(None, Pair::default(), Pair::default()), Pair::default());
    }

    #[test]
    fn a_deleted_part_is_a_conflict_naming_it() {
        for (d, field) in [(Deleted::Agent, "agent"), (Deleted::Environment, "environment"), (Deleted::Vault, "vault")]
        {
            let e = ApiError::from(d);
            assert_eq!((e.status, e.error.as_str()), (StatusCode::CONFLICT, "selection_deleted"));
            assert_eq!(e.extra["field"], field);
            assert!(turn_error(&e).starts_with(&format!("selection_deleted: The conversation's {field} was deleted")));
        }
    }
}
