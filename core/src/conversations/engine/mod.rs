//! The turn engine: one agent process per conversation, run by the
//! machine's `sandboxd` and spoken to over ACP; prompts open turns, whose
//! updates become events.
//!
//! Races are settled in the database: a turn opens only for the caller
//! whose conditional update moved the conversation to `running`, and a
//! prompt queued while the machine wakes is taken by exactly one opener.
//! The agent session itself lives in this server's memory ([`Live`]); after
//! a restart, [`reattach_all`] takes over the processes `sandboxd` kept.

mod blocks;
pub(crate) mod config;
mod connection;
mod labels;
mod permissions;
mod session;
mod turn;
mod usage;
mod warm;

pub use self::warm::hooks as warm_hooks;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use self::blocks::Transcript;
use self::session::Session;
use self::turn::{Outcome, TurnCtx};
use super::policy::{Effective, Policy};
use super::store::{self, ConversationRow, NewConversation, NewTurn};
use crate::acp::client::{AcpControl, SessionSetup};
use crate::acp::types::{ContentBlock, ImageContent, PermissionOutcome, RequestPermissionRequest};
use crate::agents::{Agent, SandboxMode};
use crate::credits::TurnRef;
use crate::error::{ApiError, ApiResult};
use crate::events::{self, NewEvent, Scope, StageState};
use crate::inference::Resolved;
use crate::inference::rules::Origin;
use crate::refusal::{Busy, Ended, Refusal};
use crate::replicas::{self, Control};
use crate::sandboxes::model::{ApiAccess, ConversationStatus, SandboxRow, SandboxState};
use crate::sandboxes::service::{self as machines, LaunchRequest};
use crate::state::AppState;

/// How long an interrupted agent gets to end its turn before its process is stopped.
const INTERRUPT_GRACE: Duration = Duration::from_secs(10);

/// An image sent with a prompt (already validated).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Image {
    /// Base64, as sent.
    pub data: String,
    pub media_type: String,
}

/// A prompt to deliver.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct PromptInput {
    pub prompt: String,
    pub client_request_id: Option<String>,
    /// This turn only; over the conversation's and the agent's.
    pub session_config: Option<Map<String, Value>>,
    #[serde(default)]
    pub images: Vec<Image>,
    /// `api`, or `autonomous` for a turn the service opened itself.
    pub origin: String,
    /// The turn's id when the sender chose it (a schedule's run, so that a
    /// run cut short by a crash is recognised instead of sent twice).
    #[serde(default)]
    pub turn_id: Option<Uuid>,
}

/// What happened to a delivered prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// The turn opened now.
    Accepted,
    /// The machine must wake first; the turn opens once it is ready.
    Queued,
}

/// The answer of a wake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WakeStatus {
    Awake,
    Waking,
}

/// How a conversation's machine is asked for.
#[derive(Debug, Clone, Default)]
pub struct MachineRequest {
    pub mode: Option<SandboxMode>,
    pub machine_name: Option<String>,
    /// An existing machine to open on (attach): no launch, and the conversation opens idle.
    pub attach: Option<SandboxRow>,
}

/// This server's live state of one conversation.
#[derive(Default)]
pub struct Live {
    /// The agent session; the turn task holds it while a turn runs.
    session: tokio::sync::Mutex<Option<Session>>,
    /// Cancels the running turn.
    control: Mutex<Option<AcpControl>>,
    /// Set by interrupt and terminate; the running turn ends `interrupted`.
    interrupted: AtomicBool,
    /// Permission requests of the running turn, waiting for an answer.
    permissions: Mutex<Vec<(Value, RequestPermissionRequest)>>,
}

/// The live conversations of this server.
#[derive(Default)]
pub struct Engine {
    live: Mutex<HashMap<Uuid, Arc<Live>>>,
}

/// This server's engine, kept in the state's slots (the state sits below
/// the conversations it serves).
fn engine(state: &AppState) -> Arc<Engine> {
    state.get_or_put(Engine::default)
}

impl Engine {
    fn live(&self, id: Uuid) -> Arc<Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).entry(id).or_default().clone()
    }

    fn forget(&self, id: Uuid) {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    }
}

fn api_access(stored: &str) -> ApiAccess {
    if stored == "none" { ApiAccess::None } else { ApiAccess::Owner }
}

fn ended() -> ApiError {
    Refusal::Ended(Ended::Terminated).into()
}

fn busy() -> ApiError {
    Refusal::Busy(Busy::Prompt).into()
}

/// Opens a conversation: launches (or finds) its machine, then stores the
/// row holding it. Nothing is stored when the launch is refused.
pub async fn create(
    state: &AppState,
    agent: &Agent,
    mut new: NewConversation,
    machine: MachineRequest,
) -> ApiResult<ConversationRow> {
    let applied = super::reapply::applied_at_create(state, new.account_id, new.inference_credential_id, agent).await?;
    let attached = machine.attach.is_some();
    let sandbox = match machine.attach {
        Some(existing) => {
            crate::sandboxes::store::touch(&state.db, existing.id).await?;
            existing
        }
        None => {
            let launch = LaunchRequest {
                account_id: new.account_id,
                agent: agent.clone(),
                environment_id: new.environment_id,
                vault_id: new.vault_id,
                mode: machine.mode,
                machine_name: machine.machine_name,
                api_access: api_access(&new.api_access),
                conversation_id: Some(new.id),
            };
            machines::launch(state, launch).await?
        }
    };
    new.sandbox_id = Some(sandbox.id);
    // An attached conversation opens idle even on a parked machine: its first prompt wakes it.
    new.status = Some(if sandbox.status == SandboxState::Ready || attached {
        ConversationStatus::Idle
    } else {
        ConversationStatus::Pending
    });
    if let Err(e) = store::insert(&state.db, &new).await {
        if !attached
            && !sandbox.persistent()
            && crate::sandboxes::store::holders(&state.db, sandbox.id).await.unwrap_or_default().is_empty()
        {
            let _ = machines::reclaim(state, sandbox.id).await;
        }
        return Err(e.into());
    }
    store::set_applied(&state.db, new.id, &applied).await?;
    // The machine may have become ready between the launch and the insert.
    if sandbox.status != SandboxState::Ready
        && let Ok(Some(now)) = crate::sandboxes::store::get(&state.db, sandbox.id).await
        && now.status == SandboxState::Ready
    {
        store::mark_idle_if_pending(&state.db, new.id).await?;
    }
    store::get(&state.db, new.id).await?.ok_or_else(ApiError::internal)
}

async fn machine_of(state: &AppState, conv: &ConversationRow) -> ApiResult<Option<SandboxRow>> {
    Ok(match conv.sandbox_id {
        Some(id) => crate::sandboxes::store::get(&state.db, id).await?,
        None => None,
    })
}

/// Delivers a prompt: opens the turn now when the machine is up (409
/// `conversation_busy` while a turn runs), else queues it (a second one
/// queued meanwhile is dropped) and wakes the machine.
pub async fn deliver(state: &AppState, conv: &ConversationRow, input: PromptInput) -> ApiResult<Delivery> {
    if conv.ended() {
        return Err(ended());
    }
    crate::credits::gate(state, conv.account_id).await?;
    let machine = machine_of(state, conv).await?;
    super::selection::check(state, conv, machine.as_ref()).await?;
    if let Some(m) = &machine {
        super::attach::check_capacity(state, m.id, &conv.runtime, conv.id).await?;
    }
    if let Some(m) = machine.as_ref().filter(|m| m.status == SandboxState::Ready) {
        if !store::claim_turn(&state.db, conv.id, state.events.server()).await? {
            return Err(busy());
        }
        // Two prompts that passed the capacity check together: each sees the other's claim and
        // gives way, so two turns of one runtime never run on the machine.
        if let Err(e) = super::attach::check_capacity(state, m.id, &conv.runtime, conv.id).await {
            store::set_status(&state.db, conv.id, ConversationStatus::Idle).await?;
            return Err(e);
        }
        open_turn(state, conv.id, m.id, input).await?;
        return Ok(Delivery::Accepted);
    }
    let queued = serde_json::to_value(&input).map_err(|_| ApiError::internal())?;
    // A second prompt while the machine wakes is dropped silently (spec 4.1, prompt rule 2).
    store::put_pending(&state.db, conv.id, &queued).await?;
    bring_up(state, conv, machine.as_ref()).await?;
    // The machine may have come up meanwhile, before anyone looked for waiting prompts.
    if let Some(fresh) = store::get(&state.db, conv.id).await?
        && let Some(m) = machine_of(state, &fresh).await?
        && m.status == SandboxState::Ready
    {
        open_pending(state, conv.id).await;
    }
    Ok(Delivery::Queued)
}

/// Starts the conversation's machine unless it is up or being built.
async fn bring_up(state: &AppState, conv: &ConversationRow, machine: Option<&SandboxRow>) -> ApiResult<()> {
    match machine.map(|m| m.status) {
        Some(SandboxState::Ready | SandboxState::Pending | SandboxState::Starting) => Ok(()),
        Some(SandboxState::Suspended | SandboxState::Failed) => {
            machines::wake(state, conv.sandbox_id.unwrap_or_default()).await.map(drop)
        }
        // Reclaimed (or never had one): the conversation goes on on a new machine.
        Some(SandboxState::Terminated) | None => {
            let agent = crate::agents::get_agent(state, conv.account_id, conv.agent_id).await?;
            let mode = match conv.sandbox_mode.as_deref() {
                Some("persistent") => Some(SandboxMode::Persistent),
                Some("ephemeral") => Some(SandboxMode::Ephemeral),
                _ => None,
            };
            let sandbox = machines::launch(
                state,
                LaunchRequest {
                    account_id: conv.account_id,
                    agent,
                    environment_id: conv.environment_id,
                    vault_id: conv.vault_id,
                    mode,
                    machine_name: None,
                    api_access: api_access(&conv.api_access),
                    conversation_id: Some(conv.id),
                },
            )
            .await?;
            store::set_sandbox(&state.db, conv.id, sandbox.id).await?;
            Ok(())
        }
    }
}

/// A turn recorded and ready to run.
struct Opened {
    conv: ConversationRow,
    sandbox_id: Uuid,
    turn_id: Uuid,
    input: PromptInput,
    /// The turn's model-provider credential.
    inference: Resolved,
    /// The model asked for (the conversation's, else the agent's) and the merged session config.
    model: Option<String>,
    session_config: Map<String, Value>,
}

/// Claims the conversation and takes its queued prompt, recording the turn;
/// `None` when no prompt waits or a turn runs.
async fn claim_pending(state: &AppState, conversation_id: Uuid) -> Option<Opened> {
    loop {
        let Ok(true) = store::claim_queued_turn(&state.db, conversation_id, state.events.server()).await else {
            return None;
        };
        if !queued_turn_waits(state, conversation_id).await {
            break;
        }
        let _ = store::set_status(&state.db, conversation_id, ConversationStatus::Idle).await;
        // The turn it gave way to opens it when it ends (`run_turns`), unless that turn ended
        // before this prompt was back in line: then it tries again itself.
        if queued_turn_waits(state, conversation_id).await {
            return None;
        }
    }
    let taken = store::take_pending(&state.db, conversation_id).await;
    let conv = store::get(&state.db, conversation_id).await;
    let (Ok(Some(prompt)), Ok(Some(conv))) = (taken, conv) else {
        let _ = store::set_status(&state.db, conversation_id, ConversationStatus::Idle).await;
        return None;
    };
    let (Some(sandbox_id), Ok(input)) = (conv.sandbox_id, serde_json::from_value::<PromptInput>(prompt)) else {
        tracing::error!(conversation = %conversation_id, "queued prompt unreadable or without a machine");
        let _ = store::set_status(&state.db, conversation_id, ConversationStatus::Idle).await;
        return None;
    };
    match record_turn(state, &conv, sandbox_id, input.clone()).await {
        Ok(opened) => Some(opened),
        Err(e) => {
            tracing::warn!(conversation = %conversation_id, "queued prompt not opened: {e:?}");
            // The prompt was answered `queued`: its turn fails in the open, naming a deleted
            // selection when that is why.
            let machine = machine_of(state, &conv).await.ok().flatten();
            let deleted = super::selection::check(state, &conv, machine.as_ref()).await.err();
            let e = deleted.filter(|d| matches!(d.refusal(), Some(Refusal::SelectionDeleted(_)))).unwrap_or(e);
            refuse_queued(state, &conv, sandbox_id, &input, &e).await;
            None
        }
    }
}

/// Records the turn of a queued prompt that could not open, failed with `e`.
async fn refuse_queued(state: &AppState, conv: &ConversationRow, sandbox_id: Uuid, input: &PromptInput, e: &ApiError) {
    let turn_id = input.turn_id.unwrap_or_else(Uuid::now_v7);
    let new = NewTurn {
        id: turn_id,
        conversation_id: conv.id,
        account_id: conv.account_id,
        prompt: input.prompt.clone(),
        origin: input.origin.clone(),
        client_request_id: input.client_request_id.clone(),
        model_selection: None,
        inference: None,
    };
    // A turn recorded before the failure (it failed later in the recording) is ended as it is.
    if let Err(err) = store::insert_turn(&state.db, &new).await
        && !crate::db::is_unique_violation(&err)
    {
        tracing::error!(turn = %turn_id, "refused turn not recorded: {err}");
        return;
    }
    let error = super::selection::turn_error(e);
    fail_unstarted(state, conv, (sandbox_id, turn_id), input, error, ConversationStatus::Idle).await;
}

/// Ends a recorded turn that never reached its agent: the turn `failed` with
/// `error`, the conversation `status`, and the `turn` stage events `started`
/// and `failed` (so their webhooks go too): a prompt never ends without a trace.
async fn fail_unstarted(
    state: &AppState,
    conv: &ConversationRow,
    (sandbox_id, turn_id): (Uuid, Uuid),
    input: &PromptInput,
    error: String,
    status: ConversationStatus,
) {
    // Redacted like all event data, with what of the machine's secrets can still be read.
    let redactor = match crate::sandboxes::store::get(&state.db, sandbox_id).await {
        Ok(Some(row)) => machines::machine_redactor(state, &row).await.ok(),
        _ => None,
    };
    let (client_request_id, error) = match &redactor {
        Some(r) => (input.client_request_id.as_deref().map(|c| r.redact_str(c)), r.redact_str(&error)),
        // Nothing to check it against: the caller's value is left out rather than shown unchecked.
        None => (None, error),
    };
    let end = store::TurnEnd { status: "failed", error: Some(error.clone()), ..Default::default() };
    if let Err(e) = store::end_turn(&state.db, turn_id, (conv.id, sandbox_id), &end, status).await {
        tracing::error!(turn = %turn_id, "turn end not recorded: {e}");
    }
    let scope = Scope {
        account_id: conv.account_id,
        sandbox_id: Some(sandbox_id),
        conversations: vec![conv.id],
        turn_id: Some(turn_id),
    };
    let started = json!({"turn_id": turn_id, "client_request_id": client_request_id});
    let failed = json!({"turn_id": turn_id, "stop_reason": null, "error": error});
    let events =
        [NewEvent::stage("turn", StageState::Started, &started), NewEvent::stage("turn", StageState::Failed, &failed)];
    if let Err(e) = events::append(state, &scope, &events, None).await {
        tracing::error!(turn = %turn_id, "turn events not written: {e}");
    }
    crate::events::signal::conversations_changed(state, conv.account_id, Some(sandbox_id)).await;
}

/// Prompts queued on a shared machine while it slept wake together: one turn per runtime (not
/// claude or codex) runs at a time, the others keep their prompt until it ends.
async fn queued_turn_waits(state: &AppState, conversation_id: Uuid) -> bool {
    match store::get(&state.db, conversation_id).await {
        Ok(Some(conv)) => match conv.sandbox_id {
            Some(sandbox_id) => {
                super::attach::queued_turn_blocked(state, sandbox_id, &conv.runtime, conv.id).await.unwrap_or(false)
            }
            None => false,
        },
        _ => false,
    }
}

/// Opens the turn of a queued prompt, if one waits and no turn runs.
async fn open_pending(state: &AppState, conversation_id: Uuid) {
    if let Some(opened) = claim_pending(state, conversation_id).await {
        let st = state.clone();
        tokio::spawn(async move { run_turns(st, opened).await });
    }
}

/// Records a turn on a conversation this caller claimed, and runs it.
async fn open_turn(state: &AppState, conversation_id: Uuid, sandbox_id: Uuid, input: PromptInput) -> ApiResult<()> {
    let conv = store::get(&state.db, conversation_id).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
    let opened = record_turn(state, &conv, sandbox_id, input).await?;
    let st = state.clone();
    tokio::spawn(async move { run_turns(st, opened).await });
    Ok(())
}

async fn record_turn(
    state: &AppState,
    conv: &ConversationRow,
    sandbox_id: Uuid,
    input: PromptInput,
) -> ApiResult<Opened> {
    let turn_id = input.turn_id.unwrap_or_else(Uuid::now_v7);
    let agent = crate::agents::get_agent(state, conv.account_id, conv.agent_id).await;
    let resolved = match agent {
        Ok(agent) => crate::inference::resolve(state, &conv.holder(), &agent).await.map(|r| (agent, r)),
        Err(e) => Err(e),
    };
    let (agent, resolved) = match resolved {
        Ok(r) => r,
        Err(e) => {
            let _ = store::set_status(&state.db, conv.id, ConversationStatus::Idle).await;
            // The refusal is on the stream too, whole (an unusable subscription's `until` with it).
            let scope = crate::events::Scope {
                account_id: conv.account_id,
                sandbox_id: Some(sandbox_id),
                conversations: vec![conv.id],
                turn_id: None,
            };
            if let Err(write) =
                crate::events::stage(state, &scope, "admission_refused", StageState::Failed, &e.body(), None).await
            {
                tracing::error!(conversation = %conv.id, "admission_refused not written: {write}");
            }
            return Err(e);
        }
    };
    let model = conv.model.clone().or_else(|| agent.spec.model.clone());
    let session_config = config::requested(&[
        agent.spec.session_config.as_ref(),
        conv.session_config.as_ref(),
        input.session_config.as_ref(),
    ]);
    let new = NewTurn {
        id: turn_id,
        conversation_id: conv.id,
        account_id: conv.account_id,
        prompt: input.prompt.clone(),
        origin: input.origin.clone(),
        client_request_id: input.client_request_id.clone(),
        model_selection: model.clone(),
        inference: serde_json::to_value(resolved.inference).ok(),
    };
    if let Err(e) = store::insert_turn(&state.db, &new).await {
        let _ = store::set_status(&state.db, conv.id, ConversationStatus::Idle).await;
        return Err(e.into());
    }
    if resolved.inference.origin == Origin::Platform {
        let charge = TurnRef { account_id: conv.account_id, conversation_id: conv.id, turn_id, sandbox_id };
        if let Err(e) = crate::credits::spend_platform_turn(state, charge).await {
            tracing::error!(turn = %turn_id, "platform turn not charged: {e}");
        }
    }
    crate::sandboxes::store::refresh_busy(&state.db, sandbox_id).await?;
    Ok(Opened { conv: conv.clone(), sandbox_id, turn_id, input, inference: resolved, model, session_config })
}

/// The credential a turn on `conv` runs on (with the agent as it is now).
async fn resolve_inference(state: &AppState, conv: &ConversationRow) -> ApiResult<Resolved> {
    let agent = crate::agents::get_agent(state, conv.account_id, conv.agent_id).await?;
    crate::inference::resolve(state, &conv.holder(), &agent).await
}

/// Runs a turn, then each prompt queued meanwhile, in this one task.
async fn run_turns(state: AppState, first: Opened) {
    let sandbox_id = first.sandbox_id;
    let mut next = Some(first);
    let mut last = None;
    while let Some(opened) = next.take() {
        let id = opened.conv.id;
        if !run_turn(&state, opened).await {
            return;
        }
        last = Some(id);
        next = claim_pending(&state, id).await;
    }
    open_waiting(state, sandbox_id, last).await;
}

/// Opens the prompts that waited on this machine for a turn of their runtime to end. Boxed: it
/// starts `run_turns`, which calls it.
fn open_waiting(
    state: AppState,
    sandbox_id: Uuid,
    except: Option<Uuid>,
) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        for id in store::waiting_on(&state.db, sandbox_id).await.unwrap_or_default() {
            if Some(id) != except {
                open_pending(&state, id).await;
            }
        }
    })
}

/// What an agent process started on `row` now gets on top of the supervisor's environment,
/// and the redactor of what it says. `credential`: the variable it reads its model access
/// from (redacted like the machine's secrets).
pub(super) async fn agent_material(
    state: &AppState,
    row: &SandboxRow,
    credential: Option<&(String, String)>,
) -> Result<machines::Material, String> {
    // The variables as the machine's selection has them now (a reapply may have changed them
    // since the machine started).
    let env = match row.environment_id {
        Some(e) => {
            Some(crate::environments::get_environment(state, row.account_id, e).await.map_err(machines::reason)?)
        }
        None => None,
    };
    let mut material = machines::material(state, row, env.as_ref()).await.map_err(machines::reason)?;
    // What the machine's own environment still holds beyond its selection is emptied.
    for key in super::reapply::removed_vars(state, row).await.map_err(machines::reason)? {
        material.env.entry(key).or_default();
    }
    if let Some((var, value)) = credential {
        material.env.insert(var.clone(), value.clone());
        material.redactor =
            crate::sandboxes::redact::Redactor::new(material.secrets.values().cloned().chain([value.clone()]));
    }
    Ok(material)
}

/// `credential`: the variable the turn's agent reads its model access from
/// (redacted from the log like the machine's secrets).
async fn turn_ctx(
    state: &AppState,
    conv: &ConversationRow,
    (sandbox_id, turn_id): (Uuid, Uuid),
    credential: Option<&(String, String)>,
) -> Result<TurnCtx, String> {
    let svc = machines::service(state).map_err(machines::reason)?;
    let row = crate::sandboxes::store::get(&state.db, sandbox_id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the machine is gone")?;
    let material = agent_material(state, &row, credential).await?;
    Ok(TurnCtx {
        state: state.clone(),
        scope: Scope {
            account_id: conv.account_id,
            sandbox_id: Some(sandbox_id),
            conversations: vec![conv.id],
            turn_id: Some(turn_id),
        },
        conversation_id: conv.id,
        sandbox_id,
        machine_started: row.last_resumed_at,
        turn_id,
        transcript: Transcript::new(material.redactor),
        machine_env: material.env,
        live: engine(state).live(conv.id),
        sup: svc.provider(&row).supervisor(sandbox_id),
        started: Instant::now(),
        config_options: None,
        policy: turn_policy(state, conv).await,
        usage_report: None,
    })
}

/// The policy a turn's permission requests are decided by: the agent's as it is now, narrowed
/// by the conversation's launch policy (the launch's alone if the agent is gone).
async fn turn_policy(state: &AppState, conv: &ConversationRow) -> Effective {
    let agent = crate::agents::get_agent(state, conv.account_id, conv.agent_id).await.ok();
    Effective {
        agent: Policy::from_map(agent.as_ref().and_then(|a| a.spec.permission_policy.as_ref())),
        launch: Policy::from_map(conv.permission_policy.as_ref()),
        global_timeout: state.config().conversations.permission_timeout_seconds,
    }
}

fn prompt_blocks(input: &PromptInput) -> Vec<ContentBlock> {
    let mut blocks = vec![ContentBlock::text(input.prompt.clone())];
    for image in &input.images {
        blocks.push(ContentBlock::Image(ImageContent {
            mime_type: image.media_type.clone(),
            data: image.data.clone(),
            extra: Default::default(),
        }));
    }
    blocks
}

/// One turn; false when the server is shutting down under it.
async fn run_turn(state: &AppState, opened: Opened) -> bool {
    let Opened { conv, sandbox_id, turn_id, input, inference, model, session_config } = opened;
    // The selection may have been deleted since the prompt was accepted (or while it waited for
    // the machine): the turn fails naming it, and a reapply or a new conversation goes on.
    let machine = crate::sandboxes::store::get(&state.db, sandbox_id).await.ok().flatten();
    if let Err(e) = super::selection::check(state, &conv, machine.as_ref()).await {
        let error = super::selection::turn_error(&e);
        fail_unstarted(state, &conv, (sandbox_id, turn_id), &input, error, ConversationStatus::Idle).await;
        return true;
    }
    let mut ctx = match turn_ctx(state, &conv, (sandbox_id, turn_id), inference.credential.as_ref()).await {
        Ok(ctx) => ctx,
        Err(error) => {
            tracing::error!(conversation = %conv.id, "turn could not start: {error}");
            fail_unstarted(state, &conv, (sandbox_id, turn_id), &input, error, ConversationStatus::Failed).await;
            return true;
        }
    };
    let live = ctx.live.clone();
    live.interrupted.store(false, Ordering::SeqCst);
    let mut prompt_event = NewEvent::output("prompt", ctx.transcript.redact_str(&input.prompt));
    let mut content = vec![json!({"type": "text", "text": prompt_event.data})];
    content.extend(input.images.iter().map(|i| json!({"type": "image", "media_type": i.media_type})));
    prompt_event.blocks = Some(Value::Array(content));
    let started = json!({"turn_id": turn_id, "client_request_id": input.client_request_id});
    let started = NewEvent::stage("turn", StageState::Started, &ctx.transcript.redact_value(&started));
    ctx.write(&[started, prompt_event], None).await;
    if let Some(reason) = inference.missing {
        ctx.stage("model", StageState::Failed, json!({"error": reason, "scope": "missing"})).await;
        turn::finish(&ctx, Outcome::Refused(reason)).await;
        return true;
    }

    let mut guard = live.session.lock().await;
    // A process started on another machine, or with another credential, is replaced; so is one
    // whose session was dropped meanwhile (a reapply, maybe on another replica, clears its id).
    let fingerprint = inference.fingerprint();
    if guard.as_ref().is_some_and(|s| {
        s.sandbox_id != sandbox_id
            || s.machine_started != ctx.machine_started
            || s.credential.as_ref().is_some_and(|c| *c != fingerprint)
            || conv.acp_session_id.is_none()
    }) {
        *guard = None;
    }
    if guard.is_none() {
        match start_session(&ctx, &conv, &inference).await {
            Ok(session) => *guard = Some(session),
            Err(error) => {
                turn::finish(&ctx, Outcome::Lost(error)).await;
                return true;
            }
        }
    }
    let Some(session) = guard.as_mut() else { return true };
    if let Some(refusal) = configure(&ctx, session, (&conv.runtime, model.as_deref()), session_config).await {
        turn::finish(&ctx, Outcome::Refused(refusal)).await;
        return true;
    }
    // The turn borrows the client; `drive` reads the offset through a second handle.
    let resume = session.resume.clone();
    let mut rpc_id = None;
    let outcome = match session.client.prompt(prompt_blocks(&input)) {
        Ok(t) => {
            rpc_id = t.rpc_id();
            if let Some(rpc) = rpc_id {
                let _ = store::set_turn_rpc(&state.db, turn_id, i64::try_from(rpc).unwrap_or(i64::MAX)).await;
            }
            *live.control.lock().unwrap_or_else(PoisonError::into_inner) = Some(t.control());
            if live.interrupted.load(Ordering::SeqCst) {
                let _ = t.control().cancel();
            }
            turn::drive(&mut ctx, &resume, t, Default::default()).await
        }
        Err(e) => Outcome::Lost(e.to_string()),
    };
    let outcome = connection::follow(&mut ctx, &mut guard, rpc_id, outcome).await;
    if let Some(options) = ctx.config_options.take()
        && let Some(session) = guard.as_mut()
    {
        session.options = Some(options);
    }
    finish_and_release(state, &ctx, &live, &mut guard, outcome).await
}

/// Brings the session to the turn's model and session config before its prompt: `model` and
/// `config` stage events, the turn's `config_selection`, and the options the conversation shows.
/// Returns the runtime's message when it refused the model or a value (the turn fails).
async fn configure(
    ctx: &TurnCtx,
    session: &mut Session,
    (runtime, model): (&str, Option<&str>),
    requested: Map<String, Value>,
) -> Option<String> {
    let applied = config::apply(session, runtime, model, requested).await;
    let events: Vec<NewEvent> = applied
        .reports
        .iter()
        .map(|r| {
            let st = if r.failed { StageState::Failed } else { StageState::Done };
            NewEvent::stage(r.stage, st, &ctx.transcript.redact_value(&r.data))
        })
        .collect();
    ctx.write(&events, None).await;
    let db = &ctx.state.db;
    if let Err(e) = store::set_turn_config_selection(db, ctx.turn_id, &applied.selection.to_value()).await {
        tracing::error!(turn = %ctx.turn_id, "config_selection not recorded: {e}");
    }
    if let Some(options) = session.options.as_ref().and_then(|o| serde_json::to_value(o).ok())
        && let Err(e) = store::set_config_options(db, ctx.conversation_id, &options).await
    {
        tracing::error!(conversation = %ctx.conversation_id, "session_config_options not recorded: {e}");
    }
    applied.refused
}

/// Records the turn's end; false on shutdown (the turn goes on in the machine).
async fn finish_and_release(
    state: &AppState,
    ctx: &TurnCtx,
    live: &Live,
    guard: &mut tokio::sync::MutexGuard<'_, Option<Session>>,
    outcome: Outcome,
) -> bool {
    *live.control.lock().unwrap_or_else(PoisonError::into_inner) = None;
    if matches!(outcome, Outcome::Shutdown) {
        return false;
    }
    if !turn::finish(ctx, outcome).await {
        **guard = None;
        let _ = store::set_session(&state.db, ctx.conversation_id, None, None).await;
    }
    true
}

/// The agent program a conversation of `agent` starts on a machine whose environment is
/// `machine_env` (`model`: the conversation's, else the agent's), and the variables it sees
/// (the runtime picks its ACP auth method by them).
pub(super) fn agent_program(
    state: &AppState,
    agent: &crate::agents::Agent,
    model: Option<&str>,
    machine_env: &BTreeMap<String, String>,
    inference: &Resolved,
) -> Result<(session::Program, BTreeMap<String, String>), String> {
    let launch = session::launch(agent, model.or(agent.spec.model.as_deref()), state.config())?;
    // The machine's variables as its selection has them now, then the runtime's own, then the
    // model credential.
    let mut env = machine_env.clone();
    env.extend(launch.env);
    env.extend(inference.env());
    let auth_env = env.clone();
    let setup = SessionSetup {
        mcp_servers: agent.spec.mcp_servers.iter().cloned().map(Value::Object).collect(),
        meta: launch.session_meta,
    };
    Ok((session::Program { argv: launch.argv, env, credential: inference.fingerprint(), setup }, auth_env))
}

/// Starts the agent (its model credential in its environment), or takes the one a warm pool
/// started ahead for this very program, and records its session (`session` stage `done`).
async fn start_session(ctx: &TurnCtx, conv: &ConversationRow, inference: &Resolved) -> Result<Session, String> {
    let agent = crate::agents::get_agent(&ctx.state, conv.account_id, conv.agent_id).await.map_err(machines::reason)?;
    let (program, auth_env) = agent_program(&ctx.state, &agent, conv.model.as_deref(), &ctx.machine_env, inference)?;
    let place = (ctx.sandbox_id, ctx.machine_started);
    let (session, session_id, options) = match warm::adopt(&ctx.state, &ctx.sup, conv.id, place, &program).await {
        Some(taken) => taken,
        None => {
            let (session, handshake) =
                session::open(&ctx.sup, &session::process_name(conv.id), place, program, &auth_env)
                    .await
                    .map_err(|e| ctx.transcript.redact_str(&e))?;
            let options =
                handshake.session.config_options.as_ref().map(|o| serde_json::to_value(o).unwrap_or(Value::Null));
            (session, handshake.session.session_id, options)
        }
    };
    store::set_session(&ctx.state.db, conv.id, Some(&session_id), options.as_ref()).await.map_err(|e| e.to_string())?;
    ctx.stage("session", StageState::Done, json!({"session_id": session_id})).await;
    Ok(session)
}

/// Wakes the conversation's machine (a new one when its ephemeral machine was reclaimed).
pub async fn wake(state: &AppState, conv: &ConversationRow) -> ApiResult<WakeStatus> {
    if conv.ended() {
        return Err(ended());
    }
    let machine = machine_of(state, conv).await?;
    super::selection::check(state, conv, machine.as_ref()).await?;
    if let Some(m) = machine.as_ref().filter(|m| m.status == SandboxState::Ready) {
        crate::sandboxes::store::touch(&state.db, m.id).await?;
        return Ok(WakeStatus::Awake);
    }
    bring_up(state, conv, machine.as_ref()).await?;
    Ok(WakeStatus::Waking)
}

/// Runs `change` while holding the conversation's agent session, so no turn starts an agent
/// meanwhile (409 `conversation_busy` when one holds it); once `change` succeeded, the agent
/// process is stopped and the next prompt starts one that reads what changed (reapply).
pub async fn with_agent_stopped<T>(
    state: &AppState,
    conv: &ConversationRow,
    change: impl Future<Output = ApiResult<T>>,
) -> ApiResult<T> {
    let live = engine(state).live(conv.id);
    let Ok(mut guard) = live.session.try_lock() else { return Err(busy()) };
    let out = change.await?;
    *guard = None;
    if let (Some(m), Ok(svc)) = (machine_of(state, conv).await?, machines::service(state))
        && m.status == SandboxState::Ready
    {
        session::kill(&svc.provider(&m).supervisor(m.id), &session::process_name(conv.id)).await;
    }
    store::set_session(&state.db, conv.id, None, None).await?;
    Ok(out)
}

/// Asks the running turn to stop; false when none runs. An agent that does
/// not end its turn within a grace period is stopped.
pub async fn interrupt(state: &AppState, conv: &ConversationRow) -> ApiResult<bool> {
    if conv.status != ConversationStatus::Running {
        return Ok(false);
    }
    if let Some(owner) = replicas::turn_elsewhere(state, conv.id).await? {
        replicas::forward(state, owner, &Control::Interrupt { conversation_id: conv.id }).await?;
        return Ok(true);
    }
    Ok(interrupt_here(state, conv))
}

/// Asks every running turn of an account to stop (an operator suspended it).
pub async fn interrupt_account(state: &AppState, account_id: Uuid) {
    let running = match store::in_statuses_of(&state.db, Some(account_id), &[ConversationStatus::Running]).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::error!(account = %account_id, "running turns not read: {e}");
            return;
        }
    };
    for conv in running {
        if let Err(e) = interrupt(state, &conv).await {
            tracing::warn!(conversation = %conv.id, "not interrupted: {e:?}");
        }
    }
}

/// Asks the running codex turns that took their credential from `set_id` to
/// stop: the set now names a subscription, so their source changed (their
/// next prompt answers 409 `inference_source_changed` until reapplied).
pub async fn interrupt_set_codex(state: &AppState, set_id: Uuid) {
    let running = match store::in_statuses_of(&state.db, None, &[ConversationStatus::Running]).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::error!(set = %set_id, "running turns not read: {e}");
            return;
        }
    };
    for conv in running.into_iter().filter(|c| c.runtime == "codex") {
        let bound = match store::applied(&state.db, conv.id).await {
            Ok(applied) => applied.and_then(|v| v.get("credential_set_id").and_then(|s| s.as_str()).map(str::to_owned)),
            Err(e) => {
                tracing::warn!(conversation = %conv.id, "its binding was not read: {e}");
                continue;
            }
        };
        if bound.as_deref() == Some(set_id.to_string().as_str())
            && let Err(e) = interrupt(state, &conv).await
        {
            tracing::warn!(conversation = %conv.id, "not interrupted: {e:?}");
        }
    }
}

/// Interrupts the turn this server runs.
fn interrupt_here(state: &AppState, conv: &ConversationRow) -> bool {
    let live = engine(state).live(conv.id);
    live.interrupted.store(true, Ordering::SeqCst);
    let control = live.control.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if let Some(control) = control {
        let _ = control.cancel();
    }
    if let (Some(sandbox_id), Ok(svc)) = (conv.sandbox_id, machines::service(state)) {
        let sup = svc.serving(sandbox_id).supervisor(sandbox_id);
        let (st, id) = (state.clone(), conv.id);
        tokio::spawn(async move {
            tokio::time::sleep(INTERRUPT_GRACE).await;
            if let Ok(Some(c)) = store::get(&st.db, id).await
                && c.status == ConversationStatus::Running
                && engine(&st).live(id).interrupted.load(Ordering::SeqCst)
            {
                session::kill(&sup, &session::process_name(id)).await;
            }
        });
    }
    true
}

/// How long (in 50 ms steps) a permission answer waits for a turn being taken over after a restart.
const TAKEOVER_WAIT_STEPS: u32 = 60;

/// The `request_id` of a permission request as the API shows it: the agent's JSON-RPC id.
pub(crate) fn request_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn no_request() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "No open permission request has this id: it was answered, or it ended with its turn.",
    )
}

/// Answers an open permission request of the running turn with one of the options it offered
/// (422 `unknown_option` otherwise); `request` stage `done` records the choice. The request is
/// taken from the open list before the answer goes out, so two answers cannot both be sent.
pub async fn answer_permission(
    state: &AppState,
    conv: &ConversationRow,
    request_id: &str,
    option_id: &str,
) -> ApiResult<()> {
    if conv.ended() {
        return Err(ended());
    }
    if let Some(owner) = replicas::turn_elsewhere(state, conv.id).await? {
        permissions::check_open(state, conv.id, request_id, option_id).await?;
        let control = Control::Answer {
            conversation_id: conv.id,
            request_id: request_id.to_owned(),
            option_id: option_id.to_owned(),
        };
        return replicas::forward(state, owner, &control).await;
    }
    answer_here(state, conv, request_id, option_id).await
}

/// Answers a permission request of the turn this server runs.
async fn answer_here(state: &AppState, conv: &ConversationRow, request_id: &str, option_id: &str) -> ApiResult<()> {
    let live = engine(state).live(conv.id);
    // Just after a restart the running turn is still being taken over: its open requests
    // arrive with its control.
    for _ in 0..TAKEOVER_WAIT_STEPS {
        if conv.status != ConversationStatus::Running
            || live.control.lock().unwrap_or_else(PoisonError::into_inner).is_some()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The turn that asked, read before the answer: once answered it may end at once.
    let turn = store::running_turn(&state.db, conv.id).await?;
    let raw_id = {
        let mut open = live.permissions.lock().unwrap_or_else(PoisonError::into_inner);
        let pos = open.iter().position(|(id, _)| request_key(id) == request_id).ok_or_else(no_request)?;
        permissions::check_option(&open[pos].1, option_id)?;
        open.remove(pos).0
    };
    let control = live.control.lock().unwrap_or_else(PoisonError::into_inner).clone().ok_or_else(no_request)?;
    control
        .answer_permission(&raw_id, PermissionOutcome::Selected { option_id: option_id.to_owned() })
        .map_err(|_| no_request())?;
    let scope = Scope {
        account_id: conv.account_id,
        sandbox_id: conv.sandbox_id,
        conversations: vec![conv.id],
        turn_id: turn.map(|t| t.id),
    };
    let data = json!({"request_id": request_id, "outcome": "selected", "option_id": option_id});
    events::stage(state, &scope, "request", StageState::Done, &data, None).await?;
    Ok(())
}

/// Carries out a control request another replica sent for a turn this server runs.
pub async fn apply(state: &AppState, control: Control) {
    let id = match &control {
        Control::Interrupt { conversation_id } | Control::Answer { conversation_id, .. } => *conversation_id,
    };
    let conv = match store::get(&state.db, id).await {
        Ok(Some(conv)) => conv,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(conversation = %id, "a forwarded request was not carried out: {e}");
            return;
        }
    };
    match control {
        Control::Interrupt { .. } => {
            if conv.status == ConversationStatus::Running {
                interrupt_here(state, &conv);
            }
        }
        Control::Answer { request_id, option_id, .. } => {
            // The replica that took the answer checked it against the log; one that went
            // meanwhile (answered twice, expired) is no longer open here.
            if let Err(e) = answer_here(state, &conv, &request_id, &option_id).await {
                tracing::info!(conversation = %id, "a forwarded answer to request {request_id} was not taken: {e:?}");
            }
        }
    }
}

/// Ends the conversation: stops its turn and agent, `terminate` stage
/// `done`; an ephemeral machine no other conversation holds is reclaimed.
pub async fn terminate(state: &AppState, conv: &ConversationRow) -> ApiResult<()> {
    if !store::terminate(&state.db, conv.id).await? {
        return Ok(());
    }
    let live = engine(state).live(conv.id);
    live.interrupted.store(true, Ordering::SeqCst);
    let control = live.control.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if let Some(control) = control {
        let _ = control.cancel();
    }
    let machine = machine_of(state, conv).await?;
    if let (Some(m), Ok(svc)) = (machine.as_ref(), machines::service(state))
        && m.status == SandboxState::Ready
    {
        session::kill(&svc.provider(m).supervisor(m.id), &session::process_name(conv.id)).await;
    }
    // The turn task (if any) ends with the process; its end is recorded interrupted.
    if let Ok(Some(t)) = store::running_turn(&state.db, conv.id).await {
        let end = store::TurnEnd { status: "interrupted", error: Some("terminated".into()), ..Default::default() };
        if store::finish_turn(&state.db, t.id, &end).await.unwrap_or(false) {
            let scope = Scope {
                account_id: conv.account_id,
                sandbox_id: conv.sandbox_id,
                conversations: vec![conv.id],
                turn_id: Some(t.id),
            };
            let _ =
                events::stage(state, &scope, "turn", StageState::Interrupted, &json!({"turn_id": t.id}), None).await;
        }
    }
    let scope =
        Scope { account_id: conv.account_id, sandbox_id: conv.sandbox_id, conversations: vec![conv.id], turn_id: None };
    events::stage(state, &scope, "terminate", StageState::Done, &json!({}), None).await?;
    if let Some(m) = machine {
        crate::sandboxes::store::refresh_busy(&state.db, m.id).await?;
        if !m.persistent() && crate::sandboxes::store::holders(&state.db, m.id).await?.is_empty() {
            machines::reclaim_for(state, m.id, Some(conv.id)).await?;
        }
    }
    engine(state).forget(conv.id);
    Ok(())
}

/// Ends every live conversation of an account ([`terminate`]) and waits, up to `within` each,
/// until this server's turns of them stopped writing (their task holds the agent session until
/// its last event): account deletion removes the log afterwards, so nothing may land later.
pub async fn end_all(state: &AppState, account_id: Uuid, within: Duration) -> ApiResult<()> {
    let ids: Vec<String> =
        sqlx::query_scalar("SELECT id FROM conversations WHERE account_id = $1 AND status <> 'terminated'")
            .bind(account_id.to_string())
            .fetch_all(&state.db.pool)
            .await?;
    for id in ids.iter().filter_map(|id| id.parse::<Uuid>().ok()) {
        let Some(conv) = store::get(&state.db, id).await?.filter(|c| !c.ended()) else { continue };
        // Taken before `terminate` forgets it: the running turn task holds this one.
        let live = engine(state).live(conv.id);
        terminate(state, &conv).await?;
        if tokio::time::timeout(within, live.session.lock()).await.is_err() {
            tracing::warn!(conversation = %conv.id, "a turn did not stop within {within:?}");
        }
        engine(state).forget(conv.id);
    }
    Ok(())
}

/// Called when a machine became ready: its conversations leave `pending`,
/// and the turns waiting for it open.
pub async fn machine_ready(state: &AppState, sandbox_id: Uuid) {
    let _ = store::mark_idle_on(&state.db, sandbox_id).await;
    for id in store::waiting_on(&state.db, sandbox_id).await.unwrap_or_default() {
        open_pending(state, id).await;
    }
}

/// Called when a machine failed to start: conversations waiting for it fail,
/// and the prompts they queued open no turn.
pub async fn machine_failed(state: &AppState, sandbox_id: Uuid) {
    if let Err(e) = store::fail_waiting_on(&state.db, sandbox_id).await {
        tracing::error!(sandbox = %sandbox_id, "conversations not marked failed: {e}");
    }
}

/// At start: prompts queued for machines that came up while no server ran.
pub async fn open_queued(state: &AppState) {
    if let Ok(pending) = store::in_statuses(&state.db, &[ConversationStatus::Pending, ConversationStatus::Idle]).await {
        for conv in pending.into_iter().filter(|c| c.pending_prompt.is_some()) {
            if let Ok(Some(m)) = machine_of(state, &conv).await
                && m.status == SandboxState::Ready
            {
                open_pending(state, conv.id).await;
            }
        }
    }
}

/// Follows the running turn of a conversation this server just took over
/// (`replicas`: after a restart, or from a replica that is gone).
pub async fn reattach(state: AppState, id: Uuid) {
    let conv = match store::get(&state.db, id).await {
        Ok(Some(conv)) if conv.status == ConversationStatus::Running => conv,
        Ok(_) => return,
        Err(e) => {
            tracing::error!(conversation = %id, "reattach: could not read the conversation: {e}");
            return;
        }
    };
    let turn = store::running_turn(&state.db, conv.id).await.ok().flatten();
    let (Some(sandbox_id), Some(turn)) = (conv.sandbox_id, turn) else {
        let _ = store::set_status(&state.db, conv.id, ConversationStatus::Idle).await;
        return;
    };
    // The process kept its credential; resolving again only tells the log what to redact.
    let credential = resolve_inference(&state, &conv).await.ok().and_then(|r| r.credential);
    let mut ctx = match turn_ctx(&state, &conv, (sandbox_id, turn.id), credential.as_ref()).await {
        Ok(ctx) => ctx,
        Err(error) => {
            tracing::warn!(conversation = %conv.id, "reattach: {error}");
            return;
        }
    };
    // The machine's own reattach stages (written to every conversation it holds) say it is back;
    // here only a turn that cannot be followed is told.
    let machine_up = machine_of(&state, &conv).await.ok().flatten().is_some_and(|m| m.status == SandboxState::Ready);
    let (Some(session_id), Some(rpc_id), true) = (conv.acp_session_id.clone(), turn.rpc_id, machine_up) else {
        // The machine is gone, or the turn had not reached the agent: it cannot be followed.
        if machine_up {
            ctx.stage("reattach", StageState::Interrupted, json!({"turn_id": turn.id})).await;
        }
        ctx.live.interrupted.store(machine_up, Ordering::SeqCst);
        turn::finish(&ctx, Outcome::Lost("the server restarted before the agent took the prompt".into())).await;
        return;
    };
    let offset = u64::try_from(conv.agent_offset).unwrap_or(0);
    let live = ctx.live.clone();
    let mut guard = live.session.lock().await;
    // The options shown on the conversation are the ones in force when the turn's prompt went out.
    let options = conv.session_config_options.clone().and_then(|o| serde_json::from_value(o).ok());
    let resumed = session::resume(&ctx.sup, conv.id, (sandbox_id, ctx.machine_started), session_id, offset, options);
    let mut session = match resumed.await {
        Ok(s) => s,
        Err(error) => {
            ctx.stage("reattach", StageState::Failed, json!({"turn_id": turn.id, "error": error})).await;
            turn::finish(&ctx, Outcome::Lost(error)).await;
            let _ = store::set_session(&state.db, conv.id, None, None).await;
            return;
        }
    };
    let resume = session.resume.clone();
    let outcome = match session.client.resume_turn(u64::try_from(rpc_id).unwrap_or(0)) {
        Ok(t) => {
            // Requests first: an answer waits for the control (see `answer_permission`).
            let open = permissions::reopen(&ctx, &t.control()).await;
            *live.control.lock().unwrap_or_else(PoisonError::into_inner) = Some(t.control());
            turn::drive(&mut ctx, &resume, t, open).await
        }
        Err(e) => Outcome::Lost(e.to_string()),
    };
    if let Some(options) = ctx.config_options.take() {
        session.options = Some(options);
    }
    *guard = Some(session);
    let rpc_id = u64::try_from(rpc_id).ok();
    let outcome = connection::follow(&mut ctx, &mut guard, rpc_id, outcome).await;
    if finish_and_release(&state, &ctx, &live, &mut guard, outcome).await
        && let Some(next) = claim_pending(&state, conv.id).await
    {
        drop(guard);
        run_turns(state, next).await;
    }
}
