//! Attach (spec 4.1 create rules 2 and 3): a new conversation on an existing
//! sandbox of the caller (`sandbox_id`), and the rules of machines shared by
//! several conversations: the guest pairing of `claude` with `codex`, one
//! running turn per runtime on a machine for the runtimes that cannot share
//! one (409 `sandbox_at_capacity`), and one inference source for the codex
//! conversations of a machine (409 `codex_inference_conflict`).

use axum::http::StatusCode;
use sqlx::Row;
use uuid::Uuid;

use super::model::ConversationCreateRequest;
use super::reapply::{Applied, applied_at_create};
use super::store;
use crate::agents::{Agent, SandboxMode};
use crate::auth::{Principal, Scope};
use crate::db::RowExt;
use crate::error::{ApiError, ApiResult};
use crate::sandboxes::model::{ApiAccess, SandboxRow, SandboxState};
use crate::state::AppState;

/// A sandbox a new conversation may join.
#[derive(Debug, Clone)]
pub struct Attach {
    pub sandbox: SandboxRow,
    /// The joining agent is not the machine's own: a `claude`/`codex` guest.
    pub guest: bool,
}

/// What a joining conversation brings to the identity check.
#[derive(Debug, Clone, Copy)]
pub struct Joiner<'a> {
    pub agent_id: Uuid,
    pub runtime: &'a str,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
}

fn unprocessable(code: &str, message: &str) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
}

/// Only `ready` and `suspended` machines take a new conversation (409 `sandbox_not_attachable`).
pub fn check_status(status: SandboxState) -> ApiResult<()> {
    match status {
        SandboxState::Ready | SandboxState::Suspended => Ok(()),
        other => Err(ApiError::conflict(
            "sandbox_not_attachable",
            format!("The sandbox is {}; only a ready or suspended sandbox can be attached.", other.as_str()),
        )),
    }
}

/// Whether `joiner` may join `machine`, and as a guest (`true`). `ran`: the
/// agents of every conversation ever opened on the machine. Same environment
/// and vault, else 422 `sandbox_identity_mismatch`; the machine's agent with
/// its runtime, else 422 `sandbox_runtime_mismatch`; another agent only to pair
/// `claude` with `codex` on a persistent home no third agent has run on, else
/// 422 `sandbox_identity_mismatch`.
pub fn check_identity(machine: &SandboxRow, joiner: Joiner<'_>, ran: &[Uuid]) -> ApiResult<bool> {
    if machine.environment_id != joiner.environment_id || machine.vault_id != joiner.vault_id {
        return Err(unprocessable(
            "sandbox_identity_mismatch",
            "The sandbox was built from another environment or vault than this conversation's.",
        ));
    }
    if machine.agent_id == Some(joiner.agent_id) {
        if machine.runtime != joiner.runtime {
            return Err(unprocessable(
                "sandbox_runtime_mismatch",
                "The sandbox runs another runtime than the agent now has; start a new sandbox.",
            ));
        }
        return Ok(false);
    }
    let pair = matches!((machine.runtime.as_str(), joiner.runtime), ("claude", "codex") | ("codex", "claude"));
    let third = ran.iter().any(|a| Some(*a) != machine.agent_id && *a != joiner.agent_id);
    if pair && machine.mode == SandboxMode::Persistent && !third {
        return Ok(true);
    }
    Err(unprocessable(
        "sandbox_identity_mismatch",
        "The sandbox belongs to another agent; only a claude and a codex agent may share a persistent home, \
         and only where no other agent has run.",
    ))
}

/// Runtimes whose turns may run side by side on one machine.
pub fn shares_turns(runtime: &str) -> bool {
    matches!(runtime, "claude" | "codex")
}

/// The agents of every conversation ever opened on a machine.
async fn agents_that_ran(state: &AppState, sandbox_id: Uuid) -> ApiResult<Vec<Uuid>> {
    let rows = sqlx::query("SELECT DISTINCT agent_id FROM conversations WHERE sandbox_id = $1")
        .bind(sandbox_id.to_string())
        .fetch_all(&state.db.pool)
        .await?;
    Ok(rows.iter().map(|r| r.uuid("agent_id")).collect::<Result<_, _>>()?)
}

/// Every check of an attach except the key's scope (see [`check_scope`]).
pub async fn check(
    state: &AppState,
    account_id: Uuid,
    agent: &Agent,
    req: &ConversationCreateRequest,
) -> ApiResult<Attach> {
    let Some(sandbox_id) = req.sandbox_id else { return Err(ApiError::internal()) };
    if req.sandbox_api_access == Some(ApiAccess::None) {
        return Err(ApiError::invalid("sandbox_api_access", "`none` is unavailable when attaching to a sandbox"));
    }
    let sandbox = crate::sandboxes::store::get(&state.db, sandbox_id)
        .await?
        // A machine waiting in a warm pool is taken by a claim, never attached to.
        .filter(|s| s.account_id == account_id && s.pool.is_none())
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "sandbox_not_found", "No such sandbox."))?;
    check_status(sandbox.status)?;
    let joiner = Joiner {
        agent_id: agent.id,
        runtime: agent.spec.runtime.as_str(),
        environment_id: req.environment_id.or(agent.spec.environment_id),
        vault_id: req.vault_id.or(agent.spec.vault_id),
    };
    let guest = check_identity(&sandbox, joiner, &agents_that_ran(state, sandbox.id).await?)?;
    if joiner.runtime == "codex" {
        check_codex_source(state, account_id, agent, req.inference_credential_id, sandbox.id).await?;
    }
    Ok(Attach { sandbox, guest })
}

fn guest_scope() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "guest_attach_requires_full_scope",
        "Attaching another agent's sandbox as a guest needs a full-scope API key.",
    )
    .with("reason", "insufficient_scope")
}

/// A guest attach, or a `fresh` rotation of a channel whose conversation is a
/// guest, needs a full-scope key (403 `guest_attach_requires_full_scope`).
/// Other refusals of the request are left to the start, which reports them
/// first.
pub async fn check_scope(state: &AppState, p: &Principal, req: &ConversationCreateRequest) -> ApiResult<()> {
    if p.scope == Scope::Full {
        return Ok(());
    }
    let Ok(agent) = crate::agents::get_agent(state, p.account_id, req.agent_id).await else { return Ok(()) };
    if req.sandbox_id.is_some() {
        return match check(state, p.account_id, &agent, req).await {
            Ok(a) if a.guest => Err(guest_scope()),
            _ => Ok(()),
        };
    }
    if let (Some(channel), true) = (&req.channel_id, req.fresh.unwrap_or(false))
        && let Some(conv) =
            store::channel_latest(&state.db, p.account_id, agent.id, req.environment_id, req.vault_id, channel).await?
        && let Some(machine) = match conv.sandbox_id {
            Some(id) => crate::sandboxes::store::get(&state.db, id).await?,
            None => None,
        }
        && machine.agent_id != Some(conv.agent_id)
    {
        return Err(guest_scope());
    }
    Ok(())
}

/// On runtimes other than `claude` and `codex`, a turn may not start while
/// another conversation on the machine runs a turn of the same runtime (409
/// `sandbox_at_capacity`).
pub async fn check_capacity(state: &AppState, sandbox_id: Uuid, runtime: &str, except: Uuid) -> ApiResult<()> {
    if shares_turns(runtime) {
        return Ok(());
    }
    let other = sqlx::query(
        "SELECT id FROM conversations WHERE sandbox_id = $1 AND runtime = $2 AND status = 'running' AND id <> $3 \
         LIMIT 1",
    )
    .bind(sandbox_id.to_string())
    .bind(runtime.to_owned())
    .bind(except.to_string())
    .fetch_optional(&state.db.pool)
    .await?;
    match other {
        Some(_) => Err(ApiError::conflict(
            "sandbox_at_capacity",
            format!("Another conversation on this sandbox runs a {runtime} turn; wait for it to end."),
        )),
        None => Ok(()),
    }
}

/// Whether a queued prompt of conversation `me` must keep waiting: another conversation on the
/// machine runs a turn of the same runtime (not claude or codex). Two queued prompts claimed at
/// once, neither with a turn yet, are told apart by id: the lower one goes first, so exactly one
/// of them runs and the other waits for its turn to end.
pub async fn queued_turn_blocked(state: &AppState, sandbox_id: Uuid, runtime: &str, me: Uuid) -> ApiResult<bool> {
    if shares_turns(runtime) {
        return Ok(false);
    }
    let blocker = sqlx::query(
        "SELECT c.id FROM conversations c WHERE c.sandbox_id = $1 AND c.runtime = $2 AND c.status = 'running' \
         AND c.id <> $3 AND (c.id < $3 OR EXISTS \
         (SELECT 1 FROM turns t WHERE t.conversation_id = c.id AND t.status = 'running')) LIMIT 1",
    )
    .bind(sandbox_id.to_string())
    .bind(runtime.to_owned())
    .bind(me.to_string())
    .fetch_optional(&state.db.pool)
    .await?;
    Ok(blocker.is_some())
}

/// Where a codex conversation's model access comes from, for comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodexSource {
    /// A set naming a subscription: exempt from the comparison.
    Subscription,
    /// A credential set holding an OpenAI key, at this revision.
    Set(Uuid, i64),
    /// No set key: the machine's own variables or the platform's credential.
    Machine,
}

/// 409 `codex_inference_conflict` unless `joiner` matches every comparable `holders` source.
pub fn check_codex_conflict(joiner: CodexSource, holders: &[CodexSource]) -> ApiResult<()> {
    if joiner == CodexSource::Subscription {
        return Ok(());
    }
    if holders.iter().any(|h| *h != CodexSource::Subscription && *h != joiner) {
        return Err(ApiError::conflict(
            "codex_inference_conflict",
            "The codex conversations on this sandbox run on another inference source; use the same credential set.",
        ));
    }
    Ok(())
}

async fn codex_source(state: &AppState, set: Option<Uuid>) -> ApiResult<CodexSource> {
    let Some(set) = set else { return Ok(CodexSource::Machine) };
    let row = sqlx::query("SELECT revision, openai_grant_id FROM inference_credential_sets WHERE id = $1")
        .bind(set.to_string())
        .fetch_optional(&state.db.pool)
        .await?;
    let Some(row) = row else { return Ok(CodexSource::Machine) };
    if row.opt_uuid("openai_grant_id")?.is_some() {
        return Ok(CodexSource::Subscription);
    }
    let revision: i64 = row.try_get("revision")?;
    let key = sqlx::query("SELECT 1 FROM inference_credentials WHERE set_id = $1 AND provider = 'openai_api_key'")
        .bind(set.to_string())
        .fetch_optional(&state.db.pool)
        .await?;
    Ok(if key.is_some() { CodexSource::Set(set, revision) } else { CodexSource::Machine })
}

fn bound_set(applied: Option<serde_json::Value>) -> Option<Uuid> {
    applied.and_then(|v| serde_json::from_value::<Applied>(v).ok()).and_then(|a| a.credential_set_id)
}

/// A codex conversation joining a machine needs the inference source of the
/// live codex conversations already there.
async fn check_codex_source(
    state: &AppState,
    account_id: Uuid,
    agent: &Agent,
    own_set: Option<Uuid>,
    sandbox_id: Uuid,
) -> ApiResult<()> {
    let rows = sqlx::query(
        "SELECT id FROM conversations WHERE sandbox_id = $1 AND runtime = 'codex' AND status <> 'terminated'",
    )
    .bind(sandbox_id.to_string())
    .fetch_all(&state.db.pool)
    .await?;
    if rows.is_empty() {
        return Ok(());
    }
    let mut holders = Vec::with_capacity(rows.len());
    for r in &rows {
        let set = bound_set(store::applied(&state.db, r.uuid("id")?).await?);
        holders.push(codex_source(state, set).await?);
    }
    let joiner = bound_set(Some(applied_at_create(state, account_id, own_set, agent).await?));
    check_codex_conflict(codex_source(state, joiner).await?, &holders)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn machine(runtime: &str, mode: SandboxMode) -> SandboxRow {
        SandboxRow {
            id: id(100),
            account_id: id(101),
            machine_name: "m".into(),
            status: SandboxState::Ready,
            mode,
            provider: "local".into(),
            agent_id: Some(id(1)),
            environment_id: Some(id(10)),
            vault_id: None,
            runtime: runtime.into(),
            api_access: ApiAccess::Owner,
            url: None,
            checkpoint_id: None,
            checkpoint_at: None,
            error: None,
            busy: false,
            last_resumed_at: None,
            created_at: 0,
            runner_id: None,
            broker_ca_id: None,
            pool: None,
        }
    }

    fn joiner(agent: u128, runtime: &str) -> Joiner<'_> {
        Joiner { agent_id: id(agent), runtime, environment_id: Some(id(10)), vault_id: None }
    }

    fn code(r: ApiResult<impl std::fmt::Debug>) -> String {
        r.unwrap_err().error.clone()
    }

    #[test]
    fn only_ready_and_suspended_machines_are_attachable() {
        assert!(check_status(SandboxState::Ready).is_ok());
        assert!(check_status(SandboxState::Suspended).is_ok());
        for s in [SandboxState::Pending, SandboxState::Starting, SandboxState::Terminated, SandboxState::Failed] {
            assert_eq!(code(check_status(s)), "sandbox_not_attachable");
        }
    }

    #[test]
    fn the_machines_own_agent_attaches_unless_its_runtime_changed() {
        let m = machine("gemini", SandboxMode::Ephemeral);
        assert!(!check_identity(&m, joiner(1, "gemini"), &[id(1)]).unwrap());
        assert_eq!(code(check_identity(&m, joiner(1, "claude"), &[id(1)])), "sandbox_runtime_mismatch");
    }

    #[test]
    fn another_environment_or_vault_is_another_identity() {
        let m = machine("claude", SandboxMode::Persistent);
        let other_env = Joiner { environment_id: None, ..joiner(1, "claude") };
        assert_eq!(code(check_identity(&m, other_env, &[])), "sandbox_identity_mismatch");
        let other_vault = Joiner { vault_id: Some(id(11)), ..joiner(2, "codex") };
        assert_eq!(code(check_identity(&m, other_vault, &[])), "sandbox_identity_mismatch");
    }

    #[test]
    fn claude_and_codex_pair_on_a_persistent_home_only() {
        let home = machine("claude", SandboxMode::Persistent);
        assert!(check_identity(&home, joiner(2, "codex"), &[id(1)]).unwrap());
        assert!(check_identity(&home, joiner(2, "codex"), &[id(1), id(2)]).unwrap(), "the guest returns");
        let codex_home = machine("codex", SandboxMode::Persistent);
        assert!(check_identity(&codex_home, joiner(2, "claude"), &[id(1)]).unwrap());
        let ephemeral = machine("claude", SandboxMode::Ephemeral);
        assert_eq!(code(check_identity(&ephemeral, joiner(2, "codex"), &[id(1)])), "sandbox_identity_mismatch");
        assert_eq!(code(check_identity(&home, joiner(2, "claude"), &[id(1)])), "sandbox_identity_mismatch");
        assert_eq!(code(check_identity(&home, joiner(2, "gemini"), &[id(1)])), "sandbox_identity_mismatch");
    }

    #[test]
    fn a_third_agent_ends_the_pairing() {
        let home = machine("claude", SandboxMode::Persistent);
        assert_eq!(code(check_identity(&home, joiner(2, "codex"), &[id(1), id(3)])), "sandbox_identity_mismatch");
    }

    #[test]
    fn only_claude_and_codex_share_turns() {
        assert!(shares_turns("claude") && shares_turns("codex"));
        assert!(!shares_turns("gemini") && !shares_turns("opencode") && !shares_turns("acp"));
    }

    #[test]
    fn codex_conversations_on_one_machine_need_one_source() {
        let (a, b) = (CodexSource::Set(id(1), 1), CodexSource::Set(id(2), 1));
        assert!(check_codex_conflict(a, &[]).is_ok());
        assert!(check_codex_conflict(a, &[a, a]).is_ok());
        assert_eq!(code(check_codex_conflict(a, &[b])), "codex_inference_conflict");
        assert_eq!(code(check_codex_conflict(a, &[CodexSource::Set(id(1), 2)])), "codex_inference_conflict");
        assert_eq!(code(check_codex_conflict(CodexSource::Machine, &[a])), "codex_inference_conflict");
        assert!(check_codex_conflict(CodexSource::Subscription, &[a, b]).is_ok(), "a subscription is exempt");
        assert!(check_codex_conflict(a, &[CodexSource::Subscription]).is_ok());
    }
}
