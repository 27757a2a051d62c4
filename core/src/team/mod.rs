//! Teammates (spec 2.6, 4.5): an agent on the account's team has a stable
//! conversation (its newest live team conversation), receives team
//! messages, and runs cron schedules (`schedules`, fired by `scheduler`).
//! Its events and the `team` and `schedule` signals are on the team stream.
//! See docs/team.md.

pub mod cron;
pub mod model;
pub mod rules;
pub mod scheduler;
pub mod schedules;
pub mod store;
pub mod stream;

use std::collections::BTreeMap;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use self::model::{TeamMessageRequest, TeamMessageResponse, Teammate, TeammateRequest};
use self::store::MemberRow;
use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::conversations::OpenHow;
use crate::conversations::engine::{self, Delivery, PromptInput};
use crate::conversations::model::{Conversation, ConversationCreateRequest, Turn};
use crate::conversations::rules as conv_rules;
use crate::conversations::store::{ConversationRow, Labels};
use crate::error::{ApiError, ApiResult};
use crate::events::signal::{self, SignalKind};
use crate::http::extract::Validator;
use crate::http::{Data, Json, Path, ok};
use crate::queue::model::SandboxRequest;
use crate::queue::{self, Submit, Submitted};
use crate::refusal::{Busy, Refusal};
use crate::sandboxes::model::ConversationStatus;
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

/// A message for a teammate.
#[derive(Debug, Clone)]
pub struct Message {
    pub prompt: String,
    pub labels: BTreeMap<String, String>,
    pub client_request_id: Option<String>,
    /// `api`, or `autonomous` for a schedule's run.
    pub origin: String,
    /// The schedule whose run this is.
    pub schedule_id: Option<Uuid>,
    /// A schedule run's id: the id of the turn it opens, or of the
    /// conversation when it must open one (see `scheduler`).
    pub run_id: Option<Uuid>,
    /// The sender's machine when it is a sandbox key: it may label only its own conversation.
    pub sandbox_id: Option<Uuid>,
}

/// Where a team message went.
#[derive(Debug, Clone)]
pub enum MessageOutcome {
    /// Delivered to the teammate's conversation: the turn opened, or opens once the machine is up.
    Delivered { conversation_id: Uuid, status: Delivery },
    /// A new team conversation waits in the sandbox queue.
    Queued(SandboxRequest),
}

fn busy() -> ApiError {
    Refusal::Busy(Busy::Teammate).into()
}

fn may_not_label() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "machine_may_not_label_another_conversation",
        "A machine's key may label only its own conversation.",
    )
}

/// Sends a message into the teammate's own conversation (its newest live
/// team conversation, or a new one, through the queue at a ceiling). Labels
/// are merged into it before the turn is queued. 404 `not_found` when
/// `agent_id` is not on the team; 409 `conversation_busy` while the
/// teammate's turn runs.
pub async fn message(state: &AppState, account_id: Uuid, agent_id: Uuid, msg: Message) -> ApiResult<MessageOutcome> {
    let m = member(state, account_id, agent_id).await?;
    conv_rules::check_prompt(&msg.prompt)?;
    let mut v = Validator::default();
    if let Some(c) = &msg.client_request_id {
        conv_rules::check_client_request_id(&mut v, c);
    }
    v.finish()?;
    let changes: BTreeMap<String, Option<String>> =
        msg.labels.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
    // Bad labels are refused before anything is opened or merged.
    conv_rules::merge_labels(&Labels::new(), &changes)?;
    let autonomous = msg.origin == "autonomous";

    if let Some(conv) = own_conversation(state, account_id, agent_id).await? {
        if !changes.is_empty() && msg.sandbox_id.is_some_and(|s| conv.sandbox_id != Some(s)) {
            return Err(may_not_label());
        }
        if conv.status == ConversationStatus::Running {
            return Err(busy());
        }
        if !changes.is_empty() {
            crate::conversations::merge_labels(state, conv.id, &changes).await?;
        }
        let input = PromptInput {
            prompt: msg.prompt,
            client_request_id: msg.client_request_id,
            session_config: None,
            images: Vec::new(),
            origin: msg.origin,
            turn_id: msg.run_id,
        };
        let status = engine::deliver(state, &conv, input).await?;
        return Ok(MessageOutcome::Delivered { conversation_id: conv.id, status });
    }

    // A new conversation is nobody's own machine's yet.
    if !changes.is_empty() && msg.sandbox_id.is_some() {
        return Err(may_not_label());
    }
    let request = ConversationCreateRequest {
        agent_id,
        prompt: Some(msg.prompt),
        labels: (!msg.labels.is_empty()).then_some(msg.labels),
        client_request_id: msg.client_request_id,
        environment_id: m.environment_id,
        vault_id: m.vault_id,
        ..ConversationCreateRequest::default()
    };
    let how = OpenHow { team: true, queued: false, autonomous };
    let submit = Submit {
        account_id,
        request,
        how,
        schedule_id: msg.schedule_id,
        force_queue: true,
        conversation_id: msg.run_id,
    };
    Ok(match queue::submit(state, submit).await? {
        Submitted::Opened(opened) => {
            let row = opened.row();
            // The first prompt waits on the conversation while its machine is built.
            let status = if row.pending_prompt.is_some() { Delivery::Queued } else { Delivery::Accepted };
            MessageOutcome::Delivered { conversation_id: row.id, status }
        }
        Submitted::Queued(request) => MessageOutcome::Queued(request),
    })
}

/// A message sent with a machine's callback key, its text, `client_request_id`
/// and labels redacted with the machine's secrets (docs/conversations.md,
/// "Labels from the agent"); any other message as it is.
async fn redacted_for_sender(state: &AppState, mut msg: Message) -> ApiResult<Message> {
    let Some(machine) = msg.sandbox_id else { return Ok(msg) };
    let r = crate::conversations::machine_redactor(state, machine).await?;
    msg.prompt = r.redact_str(&msg.prompt);
    msg.client_request_id = msg.client_request_id.map(|c| r.redact_str(&c));
    msg.labels = msg.labels.into_iter().map(|(k, v)| (r.redact_str(&k), r.redact_str(&v))).collect();
    Ok(msg)
}

/// A teammate's bindings.
#[derive(Debug, Clone)]
pub struct Member {
    pub agent_id: Uuid,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
}

/// The teammate `agent_id` of the account (404 `not_found` when not on the team).
pub async fn member(state: &AppState, account_id: Uuid, agent_id: Uuid) -> ApiResult<Member> {
    let m = store::member(&state.db, account_id, agent_id).await?.ok_or_else(|| ApiError::not_found("Teammate"))?;
    Ok(Member { agent_id: m.agent_id, environment_id: m.environment_id, vault_id: m.vault_id })
}

/// The conversation team messages go to: the teammate's newest live team
/// conversation, one-off runs aside (each is opened on its schedule's channel).
async fn own_conversation(state: &AppState, account_id: Uuid, agent_id: Uuid) -> ApiResult<Option<ConversationRow>> {
    let live = store::team_conversations(&state.db, account_id, agent_id, true, None).await?;
    Ok(live.into_iter().find(|c| c.channel_id.is_none()))
}

/// The channel of a schedule's one-off runs: it keeps them apart from the
/// teammate's own conversation and tells which schedule opened each.
pub fn schedule_channel(schedule_id: Uuid) -> String {
    format!("schedule:{schedule_id}")
}

/// The clock of schedule times: the wall clock plus `team.clock_offset_seconds` (a test switch).
pub fn now(state: &AppState) -> i64 {
    now_micros() + (state.config().team.clock_offset_seconds * 1e6) as i64
}

/// Sends a `team` or `schedule` signal to the account's team streams.
pub(crate) async fn changed(state: &AppState, account_id: Uuid, kind: SignalKind) {
    signal::send(state, account_id, kind).await
}

async fn teammate(state: &AppState, account_id: Uuid, m: &MemberRow) -> ApiResult<Teammate> {
    let agent = crate::agents::get_agent(state, account_id, m.agent_id).await?;
    let conversation = store::shown_conversation(&state.db, account_id, m.agent_id).await?;
    let last_turn = match &conversation {
        Some(c) => crate::conversations::store::last_turn(&state.db, c.id).await?,
        None => None,
    };
    Ok(Teammate {
        agent,
        agent_id: m.agent_id,
        environment_id: m.environment_id,
        vault_id: m.vault_id,
        conversation: conversation.as_ref().map(Conversation::from),
        last_turn: last_turn.as_ref().map(Turn::from),
        inserted_at: from_micros(m.inserted_at),
        updated_at: from_micros(m.updated_at),
    })
}

/// The account's teammates, in the order they joined.
#[utoipa::path(get, path = "/api/team", operation_id = "listTeammates", tag = "team",
    responses((status = 200, description = "The roster", body = Data<Vec<Teammate>>)))]
async fn roster(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<Teammate>>> {
    let mut out = Vec::new();
    for m in store::members(&state.db, p.account_id).await? {
        out.push(teammate(&state, p.account_id, &m).await?);
    }
    Ok(ok(out))
}

/// Retires the machine of a team conversation whose bindings change: the
/// conversation ends, and its machine is reclaimed unless another live
/// conversation holds it.
async fn retire(state: &AppState, conv: &ConversationRow) -> ApiResult<()> {
    engine::terminate(state, conv).await?;
    if let Some(machine) = conv.sandbox_id
        && crate::sandboxes::store::holders(&state.db, machine).await?.is_empty()
    {
        crate::sandboxes::service::reclaim_for(state, machine, Some(conv.id)).await?;
    }
    Ok(())
}

/// Adds the agent to the team (201) or replaces its bindings (200); an
/// omitted binding is cleared (the agent's own is used). Rebinding ends the
/// teammate's conversations and retires their machines; it is refused while
/// a turn runs on one (409 `conversation_busy`) and when the agent already
/// has a persistent machine for the new bindings (409 `teammate_machine_exists`).
#[utoipa::path(put, path = "/api/team/{agent_id}", operation_id = "putTeammate", tag = "team", params(("agent_id" = Uuid, Path)),
    request_body = TeammateRequest,
    responses((status = 201, description = "Added", body = Data<Teammate>),
        (status = 200, description = "Updated", body = Data<Teammate>),
        (status = 404, description = "An agent, environment or vault the caller does not own", body = crate::error::ErrorBody),
        (status = 409, description = "`conversation_busy` or `teammate_machine_exists`", body = crate::error::ErrorBody),
        (status = 422, description = "`environment_not_allowed`, `vault_not_allowed`", body = crate::error::ErrorBody)))]
async fn put_teammate(
    State(state): State<AppState>,
    p: Principal,
    Path(agent_id): Path<Uuid>,
    Json(req): Json<TeammateRequest>,
) -> ApiResult<(StatusCode, Data<Teammate>)> {
    let agent = crate::agents::get_agent(&state, p.account_id, agent_id).await?;
    if let Some(env) = req.environment_id {
        crate::environments::get_environment(&state, p.account_id, env).await?;
        conv_rules::check_allowed(agent.spec.allowed_environment_ids.as_deref(), env, "environment")?;
    }
    if let Some(vault) = req.vault_id {
        crate::conversations::check_vault(&state, p.account_id, vault).await?;
        conv_rules::check_allowed(agent.spec.allowed_vault_ids.as_deref(), vault, "vault")?;
    }
    let existing = store::member(&state.db, p.account_id, agent_id).await?;
    if let Some(m) = &existing
        && (m.environment_id, m.vault_id) == (req.environment_id, req.vault_id)
    {
        return Ok((StatusCode::OK, ok(teammate(&state, p.account_id, m).await?)));
    }
    // Live team conversations pinned to other bindings (a rebinding, or a re-added teammate).
    let stale: Vec<ConversationRow> = store::team_conversations(&state.db, p.account_id, agent_id, true, None)
        .await?
        .into_iter()
        .filter(|c| (c.environment_id, c.vault_id) != (req.environment_id, req.vault_id))
        .collect();
    let mut machines = Vec::new();
    for c in &stale {
        let machine = match c.sandbox_id {
            Some(id) => crate::sandboxes::store::get(&state.db, id).await?,
            None => None,
        };
        if c.status == ConversationStatus::Running || machine.as_ref().is_some_and(|m| m.busy) {
            return Err(busy());
        }
        machines.extend(machine.map(|m| m.id));
    }
    if existing.is_some() && agent.spec.sandbox_mode == crate::agents::SandboxMode::Persistent {
        let env = req.environment_id.or(agent.spec.environment_id);
        let vault = req.vault_id.or(agent.spec.vault_id);
        if let Some(home) = crate::sandboxes::store::find_home(&state.db, p.account_id, agent_id, env, vault).await?
            && !machines.contains(&home.id)
        {
            return Err(ApiError::conflict(
                "teammate_machine_exists",
                "The agent already has a machine for these bindings; reset it first or keep the teammate's bindings.",
            )
            .with("sandbox_id", home.id.to_string()));
        }
    }
    for c in &stale {
        retire(&state, c).await?;
    }
    let now = now_micros();
    let row = MemberRow {
        agent_id,
        environment_id: req.environment_id,
        vault_id: req.vault_id,
        inserted_at: now,
        updated_at: now,
    };
    let mut tx = state.db.begin().await?;
    let added = store::put_member(&mut tx, p.account_id, &row).await?;
    let action = if added { "team.member.added" } else { "team.updated" };
    audit::record(&mut *tx, &Actor::key(&p), action, Some(("agent", agent_id))).await?;
    tx.commit().await?;
    changed(&state, p.account_id, SignalKind::Team).await;
    if !stale.is_empty() {
        signal::conversations_changed(&state, p.account_id, None).await;
    }
    let m = store::member(&state.db, p.account_id, agent_id).await?.ok_or_else(ApiError::internal)?;
    let status = if added { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, ok(teammate(&state, p.account_id, &m).await?)))
}

/// Removes the agent from the team with its schedules; its conversations stay.
#[utoipa::path(delete, path = "/api/team/{agent_id}", operation_id = "removeTeammate", tag = "team", params(("agent_id" = Uuid, Path)),
    responses((status = 204, description = "Removed")))]
async fn remove_teammate(
    State(state): State<AppState>,
    p: Principal,
    Path(agent_id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    if !store::delete_member(&mut tx, p.account_id, agent_id).await? {
        return Err(ApiError::not_found("Teammate"));
    }
    audit::record(&mut *tx, &Actor::key(&p), "team.member.removed", Some(("agent", agent_id))).await?;
    tx.commit().await?;
    changed(&state, p.account_id, SignalKind::Team).await;
    changed(&state, p.account_id, SignalKind::Schedule).await;
    Ok(StatusCode::NO_CONTENT)
}

/// Sends a message to the teammate: into its newest live team conversation,
/// or a new one opened with its agent, environment and vault (waiting in
/// the sandbox queue at a ceiling). `labels` are merged into that
/// conversation before the turn is queued.
#[utoipa::path(post, path = "/api/team/{agent_id}/messages", operation_id = "sendTeammateMessage", tag = "team", params(("agent_id" = Uuid, Path)),
    request_body = TeamMessageRequest,
    responses((status = 202, description = "Accepted or queued", body = Data<TeamMessageResponse>),
        (status = 403, description = "`machine_may_not_label_another_conversation`", body = crate::error::ErrorBody),
        (status = 409, description = "`conversation_busy`: the teammate's turn is running; `selection_deleted` (with `field`): the agent, environment or vault of the teammate's conversation was deleted", body = crate::error::ErrorBody),
        (status = 422, description = "`invalid_prompt` or `validation_failed` (labels under `errors.labels`)",
            body = crate::error::ErrorBody)))]
async fn send_message(
    State(state): State<AppState>,
    p: Principal,
    Path(agent_id): Path<Uuid>,
    body: Result<Json<TeamMessageRequest>, ApiError>,
) -> ApiResult<(StatusCode, Data<TeamMessageResponse>)> {
    let Json(req) = body.map_err(conv_rules::label_errors_by_key)?;
    let msg = Message {
        prompt: req.prompt,
        labels: req.labels.unwrap_or_default(),
        client_request_id: req.client_request_id,
        origin: "api".into(),
        schedule_id: None,
        run_id: None,
        sandbox_id: p.sandbox_id,
    };
    let msg = redacted_for_sender(&state, msg).await?;
    let client_request_id = msg.client_request_id.clone();
    let answer = match message(&state, p.account_id, agent_id, msg).await? {
        MessageOutcome::Delivered { conversation_id, status } => TeamMessageResponse {
            status,
            conversation_id: Some(conversation_id),
            client_request_id,
            sandbox_request: None,
        },
        MessageOutcome::Queued(request) => TeamMessageResponse {
            status: Delivery::Queued,
            conversation_id: None,
            client_request_id,
            sandbox_request: Some(request),
        },
    };
    Ok((StatusCode::ACCEPTED, ok(answer)))
}

/// The teammate's team conversations, newest first, filtered by labels.
#[utoipa::path(get, path = "/api/team/{agent_id}/conversations", operation_id = "listTeammateConversations", tag = "team",
    params(("agent_id" = Uuid, Path), ("label" = Option<Vec<String>>, Query,
        description = "`key:value`, repeatable (also as `label[]`), AND-ed; split at the first colon")),
    responses((status = 200, description = "Conversations, newest first", body = Data<Vec<Conversation>>),
        (status = 400, description = "`invalid_label_filter`: no colon or an empty key", body = crate::error::ErrorBody)))]
async fn conversations(
    State(state): State<AppState>,
    p: Principal,
    Path(agent_id): Path<Uuid>,
    RawQuery(q): RawQuery,
) -> ApiResult<Data<Vec<Conversation>>> {
    let filters = conv_rules::label_filters(q.as_deref())?;
    member(&state, p.account_id, agent_id).await?;
    let rows = store::team_conversations(&state.db, p.account_id, agent_id, false, p.sandbox_id).await?;
    Ok(ok(rows.iter().filter(|r| conv_rules::matches_filters(&r.labels, &filters)).map(Conversation::from).collect()))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(roster))
        .routes(routes!(put_teammate, remove_teammate))
        .routes(routes!(send_message))
        .routes(routes!(conversations))
        .routes(routes!(stream::team_stream))
        .merge(schedules::router())
}
