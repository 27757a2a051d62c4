//! Reapply (spec 3.3, 4.1 reapply rules): a live conversation takes another
//! agent, environment, vault, model or session config while its machine and
//! disk stay. The checks that refuse it (ended, busy, still building, a
//! credential that would change, a selection that needs a new disk) are plain
//! functions below; the handler gathers their facts, then updates the
//! selection in one transaction and stops the agent process, so the next
//! prompt starts one that reads the new selection.
//!
//! A conversation also records what it was applied with ([`Applied`]): the
//! agent's model then, and the credential set its inference is bound to. A
//! conversation without its own model refuses prompts once the agent's model
//! differs (409 `inference_source_changed`) until it is reapplied.

use std::collections::BTreeSet;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::model::Conversation;
use super::store::{self, ConversationRow, Selection};
use super::{engine, owned, rules};
use crate::agents::Agent;
use crate::audit::{self, Actor};
use crate::auth::{Principal, Scope};
use crate::environments::{self, Environment, EnvironmentSpec};
use crate::error::{ApiError, ApiResult, Kind};
use crate::events::{self, StageState};
use crate::http::extract::nullable;
use crate::http::{Data, Json, Path, ok};
use crate::refusal::{Building, Busy, Ended, Refusal};
use crate::sandboxes::model::{ConversationStatus, SandboxRow, SandboxState};
use crate::state::AppState;

/// `ReapplyRequest`: every field optional. A field not named keeps its value;
/// null clears the environment override, the vault, the model (back to the
/// agent's) or the session config (back to the agent's options).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReapplyRequest {
    /// Another agent of the same runtime; absent (or null) keeps the current one.
    pub agent_id: Option<Uuid>,
    /// The environment override; null returns to the agent's environment.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub environment_id: Option<Option<Uuid>>,
    /// The vault override; null returns to the agent's vault.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub vault_id: Option<Option<Uuid>>,
    /// `provider/model_id`; null returns to the agent's model.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub model: Option<Option<String>>,
    /// The conversation's own options (over the agent's); null returns to the agent's.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<crate::agents::SessionConfig>)]
    pub session_config: Option<Option<Value>>,
}

/// What a conversation was last applied with (create or reapply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The agent's model at the time; a conversation without its own model
    /// follows it only through a reapply.
    pub agent_model: Option<String>,
    /// The credential set inference resolves to (the conversation's, the
    /// agent's, else the account default); none for a runtime that reads none.
    pub credential_set_id: Option<Uuid>,
}

/// A field after the request: absent keeps `current`, null clears, a value replaces.
fn pick<T>(current: Option<T>, sent: Option<Option<T>>) -> Option<T> {
    sent.unwrap_or(current)
}

fn ended() -> ApiError {
    Refusal::Ended(Ended::Reapply).into()
}

fn busy() -> ApiError {
    Refusal::Busy(Busy::Reapply).into()
}

fn building() -> ApiError {
    Refusal::Provisioning(Building::Reapply).into()
}

fn source_changed(message: &str) -> ApiError {
    ApiError::conflict("inference_source_changed", message)
}

/// Whether the conversation may take a reapply now: 410 once ended, 409
/// `conversation_busy` while a turn runs, 503 `provisioning` while its
/// machine is being built.
pub fn check_state(conv: ConversationStatus, machine: Option<SandboxState>) -> ApiResult<()> {
    match (conv, machine) {
        (ConversationStatus::Terminated, _) => Err(ended()),
        (ConversationStatus::Running, _) => Err(busy()),
        (ConversationStatus::Pending, _) | (_, Some(SandboxState::Pending | SandboxState::Starting)) => Err(building()),
        _ => Ok(()),
    }
}

/// The disk a conversation's machine was built with, and who else holds it.
#[derive(Debug, Clone)]
pub struct Disk {
    /// The runtime the conversation runs (its agent process on this disk).
    pub runtime: String,
    pub agent_id: Uuid,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    /// The build fingerprint recorded at launch (none: not recorded, or no environment).
    pub fingerprint: Option<String>,
    /// The agents of the other live conversations on the machine.
    pub other_agents: Vec<Uuid>,
}

/// The selection a reapply asks for, resolved against its agent.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub agent_id: Uuid,
    pub runtime: &'a str,
    /// The environment and vault in effect (the override, else the agent's).
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    /// The effective environment's build fingerprint (none without an environment).
    pub fingerprint: Option<&'a str>,
}

/// Why the target needs a new disk (the `field` of 409 `rebuild_required`),
/// if it does: another runtime or other build inputs (`environment`), or a
/// machine whose selection other live conversations hold (`guest` when they
/// are of another agent, a guest pairing; `shared_sandbox` otherwise).
/// `empty_build` is the fingerprint of an environment with no build inputs,
/// what a machine without an environment was built from.
pub fn rebuild_field(disk: &Disk, target: &Target, empty_build: &str) -> Option<&'static str> {
    if disk.runtime != target.runtime {
        return Some("environment");
    }
    // A machine built from an environment without a recorded fingerprint cannot be trusted to match.
    let built = match (&disk.fingerprint, disk.environment_id) {
        (Some(f), _) => Some(f.as_str()),
        (None, None) => Some(empty_build),
        (None, Some(_)) => None,
    };
    if built != Some(target.fingerprint.unwrap_or(empty_build)) {
        return Some("environment");
    }
    let moves = target.agent_id != disk.agent_id
        || target.environment_id != disk.environment_id
        || target.vault_id != disk.vault_id;
    if !moves || disk.other_agents.is_empty() {
        return None;
    }
    if disk.other_agents.iter().any(|a| *a != disk.agent_id) {
        return Some("guest");
    }
    Some("shared_sandbox")
}

fn rebuild_required(field: &str) -> ApiError {
    let why = match field {
        "guest" => "the machine hosts a guest pairing",
        "shared_sandbox" => "other conversations on this machine hold its current selection",
        _ => {
            "the runtime or the environment's packages, repositories, setup script or network policy differ from what the machine was built from"
        }
    };
    ApiError::conflict(
        "rebuild_required",
        format!("This selection needs a new disk: {why}. Open a new conversation, or reset the sandbox (DELETE /api/sandboxes/{{id}})."),
    )
    .with("field", field)
}

/// 409 `inference_source_changed` when the target binds another credential set.
pub fn check_binding(bound: Option<&Applied>, target_set: Option<Uuid>) -> ApiResult<()> {
    match bound {
        Some(b) if b.credential_set_id != target_set => Err(source_changed(
            "This selection would run on another inference credential than the one the conversation is bound to; \
             open a new conversation instead.",
        )),
        _ => Ok(()),
    }
}

/// 409 `inference_source_changed` for a prompt to a conversation that follows its
/// agent's model when that model changed since the conversation was applied.
pub fn check_agent_model(
    own_model: Option<&str>,
    applied: Option<&Applied>,
    agent_model: Option<&str>,
) -> ApiResult<()> {
    match applied {
        Some(a) if own_model.is_none() && a.agent_model.as_deref() != agent_model => Err(source_changed(
            "The agent's model changed since this conversation was applied; reapply the conversation to run on it.",
        )),
        _ => Ok(()),
    }
}

/// Variables a running machine's own environment holds that its selection no
/// longer has: a reapply cannot change the environment of a machine that
/// runs, so agent processes started before it restarts get them emptied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemovedVars {
    /// The machine's `last_resumed_at` when recorded: a restart rebuilds its environment from
    /// the selection, and the record no longer applies.
    pub machine_started: Option<i64>,
    pub keys: BTreeSet<String>,
}

impl RemovedVars {
    /// The keys, when recorded in the machine run that started at `machine_started`.
    pub fn in_run(self, machine_started: Option<i64>) -> BTreeSet<String> {
        if self.machine_started == machine_started { self.keys } else { BTreeSet::new() }
    }

    /// After the machine's selection changed from variables `old` to `new` during the run that
    /// started at `machine_started`, with `earlier` removed before in that run.
    pub fn after(
        earlier: BTreeSet<String>,
        machine_started: Option<i64>,
        old: BTreeSet<String>,
        new: &BTreeSet<String>,
    ) -> RemovedVars {
        let keys = earlier.into_iter().chain(old).filter(|k| !new.contains(k)).collect();
        RemovedVars { machine_started, keys }
    }
}

/// The variables `machine`'s current run holds beyond its selection.
pub(crate) async fn removed_vars(state: &AppState, machine: &SandboxRow) -> ApiResult<BTreeSet<String>> {
    let stored = store::removed_vars(&state.db, machine.id).await?;
    let stored: RemovedVars = stored.and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
    Ok(stored.in_run(machine.last_resumed_at))
}

/// The names of the variables a machine with `row`'s selection gets.
async fn var_names(state: &AppState, row: &SandboxRow, env: Option<&Environment>) -> ApiResult<BTreeSet<String>> {
    Ok(crate::sandboxes::service::material(state, row, env).await?.env.into_keys().collect())
}

/// What to record as removed when `machine` takes `next`'s selection.
async fn removed_by(
    state: &AppState,
    machine: &SandboxRow,
    next: &SandboxRow,
    env: Option<&Environment>,
) -> ApiResult<RemovedVars> {
    // A machine that is not running builds its environment from the selection when it starts.
    if machine.status != SandboxState::Ready {
        return Ok(RemovedVars::default());
    }
    let old_env = match machine.environment_id {
        Some(e) => environments::get_environment(state, machine.account_id, e).await.ok(),
        None => None,
    };
    // An old selection that cannot be read any more (its vault deleted) adds nothing known.
    let old = var_names(state, machine, old_env.as_ref()).await.unwrap_or_default();
    let new = var_names(state, next, env).await?;
    let earlier = removed_vars(state, machine).await?;
    Ok(RemovedVars::after(earlier, machine.last_resumed_at, old, &new))
}

/// The credential set a conversation on `agent` binds to, looked up the way
/// inference resolution does: the conversation's set, the agent's, then the
/// account default (only for a runtime that reads a credential).
async fn credential_set(
    state: &AppState,
    account_id: Uuid,
    own: Option<Uuid>,
    agent: &Agent,
) -> ApiResult<Option<Uuid>> {
    match crate::agents::credentials::resolve_credential_set(own, agent.spec.inference_credential_id, None) {
        Some(id) => Ok(Some(id)),
        None if !crate::inference::rules::kinds(agent.spec.runtime).is_empty() => {
            Ok(crate::credentials::default_set_id(&state.db.pool, account_id).await?)
        }
        None => Ok(None),
    }
}

async fn applied_of(state: &AppState, id: Uuid) -> ApiResult<Option<Applied>> {
    Ok(store::applied(&state.db, id).await?.and_then(|v| serde_json::from_value(v).ok()))
}

/// What a new conversation on `agent` is applied with; recorded at create.
pub(crate) async fn applied_at_create(
    state: &AppState,
    account_id: Uuid,
    own_set: Option<Uuid>,
    agent: &Agent,
) -> ApiResult<Value> {
    let applied = Applied {
        agent_model: agent.spec.model.clone(),
        credential_set_id: credential_set(state, account_id, own_set, agent).await?,
    };
    serde_json::to_value(applied).map_err(|_| ApiError::internal())
}

/// The prompt-time check of [`check_agent_model`] for a stored conversation.
pub(crate) async fn check_prompt(state: &AppState, conv: &ConversationRow) -> ApiResult<()> {
    if conv.model.is_some() {
        return Ok(());
    }
    let agent = match crate::agents::get_agent(state, conv.account_id, conv.agent_id).await {
        Ok(agent) => agent,
        Err(e) if e.kind == Kind::NotFound => {
            return Err(super::selection::Deleted::Agent.into());
        }
        Err(e) => return Err(e),
    };
    check_agent_model(None, applied_of(state, conv.id).await?.as_ref(), agent.spec.model.as_deref())
}

/// The conversation's machine as built, and its other live holders.
async fn disk_of(state: &AppState, conv: &ConversationRow, machine: &SandboxRow) -> ApiResult<Disk> {
    Ok(Disk {
        runtime: conv.runtime.clone(),
        agent_id: conv.agent_id,
        environment_id: machine.environment_id,
        vault_id: machine.vault_id,
        fingerprint: store::sandbox_fingerprint(&state.db, machine.id).await?,
        other_agents: store::other_live_agents(&state.db, machine.id, conv.id).await?,
    })
}

/// A reapply's target, checked: the conversation's new selection and what it puts in effect.
struct Plan {
    agent: Agent,
    selection: Selection,
    /// The environment and vault in effect (the override, else the agent's).
    environment_id: Option<Uuid>,
    vault_id: Option<Uuid>,
    environment: Option<Environment>,
}

/// Resolves the request against the conversation, with the create-time checks
/// (model, session config, overrides, credential selection) and the binding.
async fn plan(state: &AppState, conv: &ConversationRow, req: ReapplyRequest) -> ApiResult<Plan> {
    let account_id = conv.account_id;
    let agent = crate::agents::get_agent(state, account_id, req.agent_id.unwrap_or(conv.agent_id)).await?;
    let model = pick(conv.model.clone(), req.model);
    rules::check_model(agent.spec.runtime, model.as_deref())?;
    let session_config = match req.session_config {
        Some(sent) => rules::session_config(sent)?,
        None => conv.session_config.clone(),
    };
    let environment_id = pick(conv.environment_id, req.environment_id);
    let vault_id = pick(conv.vault_id, req.vault_id);
    super::check_overrides(state, account_id, &agent, environment_id, vault_id).await?;
    if let Some(set) = conv.inference_credential_id.filter(|_| agent.id != conv.agent_id) {
        crate::inference::check_selection(state, account_id, &agent, set).await?;
    }
    let credential_set_id = credential_set(state, account_id, conv.inference_credential_id, &agent).await?;
    check_binding(applied_of(state, conv.id).await?.as_ref(), credential_set_id)?;

    let effective_env = environment_id.or(agent.spec.environment_id);
    let environment = match effective_env {
        Some(e) => Some(environments::get_environment(state, account_id, e).await?),
        None => None,
    };
    let selection = Selection {
        agent_id: agent.id,
        runtime: agent.spec.runtime.as_str().to_owned(),
        environment_id,
        vault_id,
        model,
        session_config,
        // The bound credential set is kept; the agent's model is taken as it is now.
        applied: json!(Applied { agent_model: agent.spec.model.clone(), credential_set_id }),
    };
    let vault_id = vault_id.or(agent.spec.vault_id);
    Ok(Plan { agent, selection, environment_id: effective_env, vault_id, environment })
}

/// 409 `rebuild_required` when the plan needs a new disk. Without a machine (never had one,
/// or its ephemeral one was reclaimed) there is no disk to match: the next prompt builds one.
async fn check_disk(
    state: &AppState,
    conv: &ConversationRow,
    machine: Option<&SandboxRow>,
    plan: &Plan,
) -> ApiResult<()> {
    let Some(m) = machine else { return Ok(()) };
    let target = Target {
        agent_id: plan.agent.id,
        runtime: &plan.selection.runtime,
        environment_id: plan.environment_id,
        vault_id: plan.vault_id,
        fingerprint: plan.environment.as_ref().map(|e| e.build_fingerprint.as_str()),
    };
    let empty_build = environments::rules::fingerprint(&EnvironmentSpec::default());
    match rebuild_field(&disk_of(state, conv, m).await?, &target, &empty_build) {
        Some(field) => Err(rebuild_required(field)),
        None => Ok(()),
    }
}

/// When the machine's selection moves (only possible when this conversation holds it alone):
/// the machine and what to record as its removed variables. The machine is re-labelled so that
/// its variables and secrets (read at each agent start and wake) follow the conversation.
async fn retarget(state: &AppState, machine: Option<&SandboxRow>, plan: &Plan) -> ApiResult<Option<(Uuid, Value)>> {
    let target = (Some(plan.agent.id), plan.environment_id, plan.vault_id);
    let Some(m) = machine.filter(|m| (m.agent_id, m.environment_id, m.vault_id) != target) else { return Ok(None) };
    let next = SandboxRow { agent_id: target.0, environment_id: target.1, vault_id: target.2, ..m.clone() };
    Ok(Some((m.id, json!(removed_by(state, m, &next, plan.environment.as_ref()).await?))))
}

/// The `configuration` stage: `done` when the machine is up (the next agent reads the
/// selection), `failed` with a `reason` when it reads it only when it wakes or is built.
async fn report(state: &AppState, conv: &ConversationRow, machine: Option<&SandboxRow>, plan: &Plan) -> ApiResult<()> {
    let mut data = json!({"agent_id": plan.agent.id, "environment_id": plan.environment_id, "vault_id": plan.vault_id});
    let up = machine.is_some_and(|m| m.status == SandboxState::Ready);
    if !up {
        data["reason"] = json!(match machine {
            Some(_) => "the machine is asleep; it reads the selection when it wakes",
            None => "the conversation has no machine; the next prompt builds one from the selection",
        });
    }
    let scope = events::Scope {
        account_id: conv.account_id,
        sandbox_id: machine.map(|m| m.id),
        conversations: vec![conv.id],
        turn_id: None,
    };
    let st = if up { StageState::Done } else { StageState::Failed };
    events::stage(state, &scope, "configuration", st, &data, None).await?;
    Ok(())
}

/// Reapplies the conversation's selection (spec 4.1 reapply rules). Absent
/// fields keep their value, null clears an override. The machine and its disk
/// stay; the agent process stops and the next prompt starts one that reads
/// the new selection. `configuration` stage: `done` when the machine is up,
/// `failed` (with `reason`) when it reads the selection only when it wakes.
#[utoipa::path(post, path = "/api/conversations/{id}/reapply", operation_id = "reapplyConversation", tag = "conversations", params(("id" = Uuid, Path)),
    request_body = ReapplyRequest,
    responses((status = 200, description = "The conversation with its new selection", body = Data<Conversation>),
        (status = 403, description = "`insufficient_scope`: a sandbox's callback key may not reapply", body = crate::error::ErrorBody),
        (status = 404, description = "A conversation, agent, environment or vault the caller does not own; `inference_credential_not_found`", body = crate::error::ErrorBody),
        (status = 409, description = "`conversation_busy`; `inference_source_changed`; `rebuild_required` with `field` (`environment`, `shared_sandbox`, `guest`)", body = crate::error::ErrorBody),
        (status = 410, description = "`conversation_ended`", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed`, `model_invalid`, `session_config_invalid`, `environment_not_allowed`, `vault_not_allowed`, `inference_credential_not_allowed`, `inference_credential_unusable`", body = crate::error::ErrorBody),
        (status = 503, description = "`provisioning`: the machine is still being built", body = crate::error::ErrorBody)))]
pub(super) async fn reapply(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<ReapplyRequest>,
) -> ApiResult<Data<Conversation>> {
    // A machine's callback key may not choose what its machine holds (another vault's secrets).
    if p.scope == Scope::Sandbox {
        return Err(ApiError::insufficient_scope());
    }
    let conv = owned(&state, &p, id).await?;
    let machine = match conv.sandbox_id {
        Some(s) => crate::sandboxes::store::get(&state.db, s).await?.filter(|m| m.status != SandboxState::Terminated),
        None => None,
    };
    check_state(conv.status, machine.as_ref().map(|m| m.status))?;
    let plan = plan(&state, &conv, req).await?;
    check_disk(&state, &conv, machine.as_ref(), &plan).await?;
    let retarget = retarget(&state, machine.as_ref(), &plan).await?;

    let actor = Actor::key(&p);
    engine::with_agent_stopped(&state, &conv, async {
        let mut tx = state.db.begin().await?;
        if !store::reapply(&mut *tx, conv.id, &plan.selection).await? {
            // A prompt, a terminate or a wake moved the conversation since it was read.
            let now = store::get(&state.db, conv.id).await?.map_or(ConversationStatus::Terminated, |c| c.status);
            check_state(now, None)?;
            return Err(busy());
        }
        if let Some((machine_id, removed)) = &retarget {
            let selection = (plan.agent.id, plan.environment_id, plan.vault_id);
            store::retarget_sandbox(&mut *tx, *machine_id, selection, removed).await?;
        }
        audit::record(&mut *tx, &actor, "conversation.reapplied", Some(("conversation", conv.id))).await?;
        tx.commit().await?;
        Ok(())
    })
    .await?;
    report(&state, &conv, machine.as_ref(), &plan).await?;
    let row = store::get(&state.db, id).await?.ok_or_else(ApiError::internal)?;
    Ok(ok(Conversation::from(&row)))
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;

    const EMPTY: &str = "empty";

    fn disk() -> Disk {
        Disk {
            runtime: "claude".into(),
            agent_id: Uuid::from_u128(1),
            environment_id: Some(Uuid::from_u128(10)),
            vault_id: Some(Uuid::from_u128(20)),
            fingerprint: Some("fp".into()),
            other_agents: Vec::new(),
        }
    }

    fn same(d: &Disk) -> Target<'_> {
        Target {
            agent_id: d.agent_id,
            runtime: &d.runtime,
            environment_id: d.environment_id,
            vault_id: d.vault_id,
            fingerprint: d.fingerprint.as_deref(),
        }
    }

    #[test]
    fn absent_keeps_null_clears_a_value_replaces() {
        assert_eq!(pick(Some(1), None), Some(1));
        assert_eq!(pick(Some(1), Some(None)), None);
        assert_eq!(pick(Some(1), Some(Some(2))), Some(2));
        assert_eq!(pick(None, Some(Some(2))), Some(2));
    }

    #[test]
    fn the_body_tells_absent_from_null() {
        let r: ReapplyRequest = serde_json::from_value(json!({"model": null, "vault_id": null})).unwrap();
        assert_eq!(r.model, Some(None));
        assert_eq!(r.vault_id, Some(None));
        assert_eq!(r.environment_id, None);
        assert!(r.session_config.is_none());
        let r: ReapplyRequest = serde_json::from_value(json!({"session_config": null})).unwrap();
        assert_eq!(r.session_config, Some(None));
        assert!(serde_json::from_value::<ReapplyRequest>(json!({"prompt": "x"})).is_err());
    }

    #[test]
    fn ended_busy_and_building_are_refused() {
        use ConversationStatus as C;
        let code = |c, m| check_state(c, m).unwrap_err();
        assert_eq!(code(C::Terminated, Some(SandboxState::Ready)).status, StatusCode::GONE);
        let e = code(C::Running, Some(SandboxState::Ready));
        assert_eq!((e.status, e.error.as_str()), (StatusCode::CONFLICT, "conversation_busy"));
        let e = code(C::Idle, Some(SandboxState::Starting));
        assert_eq!((e.status, e.error.as_str()), (StatusCode::SERVICE_UNAVAILABLE, "provisioning"));
        assert!(check_state(C::Pending, None).is_err());
        for m in [None, Some(SandboxState::Ready), Some(SandboxState::Suspended), Some(SandboxState::Failed)] {
            assert!(check_state(C::Idle, m).is_ok());
            assert!(check_state(C::Failed, m).is_ok());
        }
    }

    #[test]
    fn the_same_selection_needs_no_rebuild() {
        let d = disk();
        assert_eq!(rebuild_field(&d, &same(&d), EMPTY), None);
    }

    #[test]
    fn another_runtime_or_build_needs_a_new_disk() {
        let d = disk();
        assert_eq!(rebuild_field(&d, &Target { runtime: "codex", ..same(&d) }, EMPTY), Some("environment"));
        let edited = Target { fingerprint: Some("fp2"), ..same(&d) };
        assert_eq!(rebuild_field(&d, &edited, EMPTY), Some("environment"));
        let unrecorded = Disk { fingerprint: None, ..disk() };
        assert_eq!(rebuild_field(&unrecorded, &same(&d), EMPTY), Some("environment"));
        // Leaving the environment for none: only fine when it had no build inputs.
        let none = Target { environment_id: None, fingerprint: None, ..same(&d) };
        assert_eq!(rebuild_field(&d, &none, EMPTY), Some("environment"));
        assert_eq!(rebuild_field(&Disk { fingerprint: Some(EMPTY.into()), ..disk() }, &none, EMPTY), None);
    }

    #[test]
    fn a_machine_without_environment_takes_one_without_build_inputs() {
        let d = Disk { environment_id: None, fingerprint: None, ..disk() };
        let plain = Target { environment_id: Some(Uuid::from_u128(11)), fingerprint: Some(EMPTY), ..same(&d) };
        assert_eq!(rebuild_field(&d, &plain, EMPTY), None);
        let built = Target { fingerprint: Some("fp"), ..plain };
        assert_eq!(rebuild_field(&d, &built, EMPTY), Some("environment"));
    }

    #[test]
    fn variables_and_vaults_move_freely_on_an_unshared_machine() {
        let d = disk();
        let other = Target { environment_id: Some(Uuid::from_u128(11)), vault_id: None, ..same(&d) };
        assert_eq!(rebuild_field(&d, &other, EMPTY), None);
    }

    #[test]
    fn a_shared_machine_keeps_its_selection() {
        let d = Disk { other_agents: vec![Uuid::from_u128(1)], ..disk() };
        assert_eq!(rebuild_field(&d, &same(&d), EMPTY), None, "the same selection is fine");
        let other_vault = Target { vault_id: Some(Uuid::from_u128(21)), ..same(&d) };
        assert_eq!(rebuild_field(&d, &other_vault, EMPTY), Some("shared_sandbox"));
        let guest = Disk { other_agents: vec![Uuid::from_u128(2)], ..disk() };
        assert_eq!(rebuild_field(&guest, &Target { vault_id: None, ..same(&guest) }, EMPTY), Some("guest"));
        assert_eq!(rebuild_field(&guest, &same(&guest), EMPTY), None);
    }

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn removed_variables_accumulate_within_one_machine_run() {
        let first =
            RemovedVars::after(BTreeSet::new(), Some(1), names(&["HOME", "TOKEN", "A"]), &names(&["HOME", "A"]));
        assert_eq!(first.keys, names(&["TOKEN"]));
        // A later change in the same run keeps what was removed before, unless it comes back.
        let second = RemovedVars::after(first.in_run(Some(1)), Some(1), names(&["HOME", "A"]), &names(&["HOME"]));
        assert_eq!(second.keys, names(&["A", "TOKEN"]));
        let back =
            RemovedVars::after(second.clone().in_run(Some(1)), Some(1), names(&["HOME"]), &names(&["HOME", "TOKEN"]));
        assert_eq!(back.keys, names(&["A"]));
        // A restarted machine built its environment from the selection.
        assert!(second.in_run(Some(2)).is_empty());
    }

    #[test]
    fn a_rebuild_names_its_field() {
        let e = rebuild_required("shared_sandbox");
        assert_eq!(e.error, "rebuild_required");
        assert_eq!(e.extra.get("field"), Some(&json!("shared_sandbox")));
    }

    #[test]
    fn another_credential_set_is_refused() {
        let (a, b) = (Uuid::from_u128(5), Uuid::from_u128(6));
        let bound = Applied { agent_model: None, credential_set_id: Some(a) };
        assert!(check_binding(Some(&bound), Some(a)).is_ok());
        assert_eq!(check_binding(Some(&bound), Some(b)).unwrap_err().error, "inference_source_changed");
        assert!(check_binding(Some(&bound), None).is_err());
        assert!(check_binding(None, Some(b)).is_ok(), "nothing recorded, nothing compared");
    }

    #[test]
    fn a_changed_agent_model_stops_conversations_that_follow_it() {
        let applied = Applied { agent_model: Some("anthropic/a".into()), credential_set_id: None };
        assert!(check_agent_model(None, Some(&applied), Some("anthropic/a")).is_ok());
        let e = check_agent_model(None, Some(&applied), Some("anthropic/b")).unwrap_err();
        assert_eq!((e.status, e.error.as_str()), (StatusCode::CONFLICT, "inference_source_changed"));
        assert!(check_agent_model(None, Some(&applied), None).is_err());
        assert!(check_agent_model(Some("anthropic/own"), Some(&applied), Some("anthropic/b")).is_ok());
        assert!(check_agent_model(None, None, Some("anthropic/b")).is_ok());
    }
}
