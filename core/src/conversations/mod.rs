//! Conversations and their turns (spec 2.1, 2.2, 3.3, 4.1): the HTTP
//! surface, the rules of its bodies, the store, and the turn engine that
//! speaks ACP to the agent in the sandbox. Handlers are thin: the rules
//! live in `rules`, the machine work in `engine`.

pub mod attach;
pub mod engine;
pub mod feed;
pub mod model;
pub mod policy;
pub mod reapply;
pub mod rules;
pub mod selection;
pub mod store;

use std::collections::BTreeMap;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use self::engine::{MachineRequest, PromptInput};
use self::model::{
    Conversation, ConversationCreateRequest, ConversationWakeResponse, InterruptResponse, LabelsPatch, PromptRequest,
    PromptResponse, Turn, TurnListResponse,
};
use self::store::{ConversationRow, Labels, NewConversation};
use crate::agents::SandboxMode;
use crate::auth::{Principal, Scope};
use crate::error::{ApiError, ApiResult};
use crate::events::signal;
use crate::http::extract::Validator;
use crate::http::{Data, Json, Path, ok};
use crate::refusal::{Busy, Ended, Refusal};
use crate::sandboxes::model::ConversationStatus;
use crate::sandboxes::redact::Redactor;
use crate::state::AppState;
use crate::time_fmt::now_micros;

/// The conversation of `id` if the caller may see it (a sandbox key: only
/// those on its own machine); 404 `not_found` otherwise.
pub async fn owned(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<ConversationRow> {
    match store::get(&state.db, id).await? {
        Some(r) if r.account_id == p.account_id && p.sandbox_id.is_none_or(|s| r.sandbox_id == Some(s)) => Ok(r),
        _ => Err(ApiError::not_found("Conversation")),
    }
}

fn ended() -> ApiError {
    Refusal::Ended(Ended::Other).into()
}

/// Merges label changes under a row lock, so concurrent changes each count
/// the other's keys against the limit.
pub(crate) async fn merge_labels(
    state: &AppState,
    id: Uuid,
    changes: &BTreeMap<String, Option<String>>,
) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    sqlx::query("UPDATE conversations SET updated_at = updated_at WHERE id = $1")
        .bind(id.to_string())
        .execute(&mut *tx)
        .await?;
    let text: String = sqlx::query_scalar("SELECT labels FROM conversations WHERE id = $1")
        .bind(id.to_string())
        .fetch_one(&mut *tx)
        .await?;
    let existing: Labels = serde_json::from_str(&text).unwrap_or_default();
    let merged = rules::merge_labels(&existing, changes)?;
    if merged != existing {
        sqlx::query("UPDATE conversations SET labels = $2, updated_at = $3 WHERE id = $1")
            .bind(id.to_string())
            .bind(serde_json::to_string(&merged).unwrap_or_else(|_| "{}".into()))
            .bind(now_micros())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Redacts what a machine sends with its callback key (labels, a prompt and
/// its `client_request_id`, a team message) with the machine's secrets, like
/// its output: it lands in lists, webhook payloads, and maybe another
/// conversation's log, whose own redactor does not know this machine's
/// secrets.
pub(crate) async fn machine_redactor(state: &AppState, machine: Uuid) -> ApiResult<Redactor> {
    let row = crate::sandboxes::store::get(&state.db, machine).await?.ok_or_else(ApiError::internal)?;
    crate::sandboxes::service::machine_redactor(state, &row).await
}

/// The caller must own an override vault (404 otherwise).
pub(crate) async fn check_vault(state: &AppState, account_id: Uuid, id: Uuid) -> ApiResult<()> {
    sqlx::query("SELECT id FROM vaults WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?
        .map(drop)
        .ok_or_else(|| ApiError::not_found("Vault"))
}

/// Environment and vault overrides: the caller's own (404) and permitted by
/// the agent's allow-lists (422 `environment_not_allowed`/`vault_not_allowed`).
/// Shared by create and reapply.
pub(crate) async fn check_overrides(
    state: &AppState,
    account_id: Uuid,
    agent: &crate::agents::Agent,
    environment_id: Option<Uuid>,
    vault_id: Option<Uuid>,
) -> ApiResult<()> {
    if let Some(env) = environment_id {
        crate::environments::get_environment(state, account_id, env).await?;
        rules::check_allowed(agent.spec.allowed_environment_ids.as_deref(), env, "environment")?;
    }
    if let Some(vault) = vault_id {
        check_vault(state, account_id, vault).await?;
        rules::check_allowed(agent.spec.allowed_vault_ids.as_deref(), vault, "vault")?;
    }
    Ok(())
}

async fn reread(state: &AppState, id: Uuid) -> ApiResult<ConversationRow> {
    store::get(&state.db, id).await?.ok_or_else(ApiError::internal)
}

/// How a conversation is being opened, beyond its create body.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenHow {
    /// A teammate's conversation (opened by a team message or schedule).
    pub team: bool,
    /// A schedule's run: the first prompt's turn has `origin` `autonomous`.
    pub autonomous: bool,
    /// Started from the sandbox queue: a channel resume also delivers the
    /// prompt, and refuses a prompt with a permission policy (spec 4.2).
    pub queued: bool,
}

/// What [`open`] did.
#[derive(Debug)]
pub enum Opened {
    /// A new conversation (201).
    Created(ConversationRow),
    /// The channel's latest live conversation, labels merged (200).
    Resumed(ConversationRow),
}

impl Opened {
    pub fn row(&self) -> &ConversationRow {
        match self {
            Opened::Created(r) | Opened::Resumed(r) => r,
        }
    }
}

/// Opens a conversation for `account_id` from a create body: every check
/// of spec 4.1, then a channel resume or a new conversation on its machine,
/// then the first prompt. Nothing is stored when a check or the launch is
/// refused. Shared by the create route, the sandbox queue and the team.
pub async fn open(
    state: &AppState,
    account_id: Uuid,
    req: &ConversationCreateRequest,
    how: OpenHow,
) -> ApiResult<Opened> {
    let opts = StartOptions { conversation_id: Uuid::now_v7(), may_launch: true };
    Ok(start(state, account_id, req, how, opts).await?)
}

/// What [`start`] may do beyond [`open`].
#[derive(Debug, Clone, Copy)]
pub struct StartOptions {
    /// The id a new conversation gets (the sandbox queue chooses it up front
    /// to recognise a start whose server died before recording it).
    pub conversation_id: Uuid,
    /// False: a start that needs a new conversation stops before its launch
    /// with [`StartError::LaunchDeclined`]; a channel resume goes ahead.
    pub may_launch: bool,
}

/// Why [`start`] did not open a conversation with its first prompt delivered.
#[derive(Debug)]
pub enum StartError {
    /// Refused: nothing was created and nothing sent.
    Refused(ApiError),
    /// A new conversation was needed and `may_launch` was false.
    LaunchDeclined,
    /// The conversation exists (created, or resumed with its labels merged)
    /// but delivering the first prompt failed: the agent may or may not have it.
    Undelivered { conversation_id: Uuid, resumed: bool, error: ApiError },
}

impl From<ApiError> for StartError {
    fn from(e: ApiError) -> Self {
        StartError::Refused(e)
    }
}

impl From<sqlx::Error> for StartError {
    fn from(e: sqlx::Error) -> Self {
        StartError::Refused(e.into())
    }
}

impl From<StartError> for ApiError {
    fn from(e: StartError) -> ApiError {
        match e {
            StartError::Refused(e) | StartError::Undelivered { error: e, .. } => e,
            // Only a caller that declines launches can see it.
            StartError::LaunchDeclined => ApiError::internal(),
        }
    }
}

/// How long a queued start's first prompt may take to be taken before its
/// outcome counts as unknown.
const QUEUED_DELIVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// [`open`], with the new conversation's id chosen by the caller, an optional
/// stop before a launch, and a failed first-prompt delivery told apart from
/// a refusal: what the sandbox queue needs.
pub async fn start(
    state: &AppState,
    account_id: Uuid,
    req: &ConversationCreateRequest,
    how: OpenHow,
    opts: StartOptions,
) -> Result<Opened, StartError> {
    let images = rules::check_first_prompt(req.prompt.as_deref(), req.images.as_deref().unwrap_or_default())?;
    let mut v = Validator::default();
    rules::check_create_fields(&mut v, req);
    v.finish()?;
    let sent_labels: BTreeMap<String, Option<String>> =
        req.labels.clone().unwrap_or_default().into_iter().map(|(k, v)| (k, Some(v))).collect();
    let labels = rules::merge_labels(&Labels::new(), &sent_labels)?;
    let session_config = rules::session_config(req.session_config.clone())?;
    let machine_name = rules::machine_name(account_id, req.machine_name.as_deref())?;

    let agent = crate::agents::get_agent(state, account_id, req.agent_id).await?;
    rules::check_model(agent.spec.runtime, req.model.as_deref())?;
    let mut effective_config = agent.spec.session_config.clone().unwrap_or_default();
    effective_config.extend(session_config.clone().unwrap_or_default());
    policy::check_launch(
        agent.spec.permission_policy.as_ref(),
        req.permission_policy.as_ref(),
        &effective_config,
        state.config().conversations.permission_timeout_seconds,
    )?;
    check_overrides(state, account_id, &agent, req.environment_id, req.vault_id).await?;
    if let Some(set) = req.inference_credential_id {
        crate::inference::check_selection(state, account_id, &agent, set).await?;
    }
    crate::inference::check_grant(state, account_id, &agent, req.inference_credential_id).await?;
    crate::agents::limits::check_launch(&state.config().limits.execution, agent.spec.execution_limits.as_ref())?;

    if let Some(channel) = &req.channel_id
        && !req.fresh.unwrap_or(false)
        && let Some(existing) =
            store::channel_latest(&state.db, account_id, agent.id, req.environment_id, req.vault_id, channel).await?
    {
        rules::check_resume(&existing, req.model.as_deref(), session_config.as_ref())?;
        if how.queued && req.prompt.is_some() && req.permission_policy.as_ref().is_some_and(|m| !m.is_empty()) {
            return Err(ApiError::conflict(
                "permission_policy_requires_fresh_conversation",
                "A prompt with a permission policy cannot go to a resumed channel conversation; send `fresh: true`.",
            )
            .into());
        }
        // An immediate resume does not deliver the prompt (spec 4.1, create rule 6); a queued one does.
        let first = req.prompt.as_deref().filter(|_| how.queued).map(|p| first_prompt(req, p, images, how));
        if let Some(input) = &first
            && busy_for(&existing, input)
        {
            return Err(ApiError::from(Refusal::Busy(Busy::Resume)).into());
        }
        if !sent_labels.is_empty() {
            merge_labels(state, existing.id, &sent_labels).await?;
        }
        let undelivered = |error| StartError::Undelivered { conversation_id: existing.id, resumed: true, error };
        if let Some(input) = first {
            deliver_queued(state, &existing, input).await.map_err(undelivered)?;
        }
        return reread(state, existing.id).await.map(Opened::Resumed).map_err(undelivered);
    }
    if !opts.may_launch {
        return Err(StartError::LaunchDeclined);
    }
    let attached = match req.sandbox_id {
        Some(_) => Some(attach::check(state, account_id, &agent, req).await?.sandbox),
        None => None,
    };
    if let (Some(machine), Some(_)) = (&attached, &req.prompt) {
        attach::check_capacity(state, machine.id, agent.spec.runtime.as_str(), opts.conversation_id).await?;
    }

    let new = NewConversation {
        id: opts.conversation_id,
        account_id,
        agent_id: agent.id,
        runtime: agent.spec.runtime.as_str().to_owned(),
        title: req.title.clone(),
        labels,
        model: req.model.clone(),
        session_config,
        environment_id: req.environment_id,
        vault_id: req.vault_id,
        channel_id: req.channel_id.clone(),
        permission_policy: req.permission_policy.clone(),
        // An attached conversation takes the machine's mode and access (`sandbox_mode` is ignored).
        sandbox_mode: attached.as_ref().map(|m| m.mode).or(req.sandbox_mode).map(|m| match m {
            SandboxMode::Ephemeral => "ephemeral".to_owned(),
            SandboxMode::Persistent => "persistent".to_owned(),
        }),
        machine_name: machine_name.clone(),
        api_access: match &attached {
            Some(m) => m.api_access.as_str().to_owned(),
            None => req.sandbox_api_access.unwrap_or_default().as_str().to_owned(),
        },
        team: how.team,
        inference_credential_id: req.inference_credential_id,
        ..NewConversation::default()
    };
    let machine = MachineRequest { mode: req.sandbox_mode, machine_name, attach: attached };
    let row = engine::create(state, &agent, new, machine).await?;
    signal::conversations_changed(state, account_id, row.sandbox_id).await;
    let undelivered = |error| StartError::Undelivered { conversation_id: row.id, resumed: false, error };
    if let Some(prompt) = &req.prompt {
        let input = first_prompt(req, prompt, images, how);
        if how.queued {
            deliver_queued(state, &row, input).await.map_err(undelivered)?;
        } else {
            engine::deliver(state, &row, input).await.map_err(undelivered)?;
        }
    }
    reread(state, row.id).await.map(Opened::Created).map_err(undelivered)
}

/// Whether a queued prompt must wait for the conversation: a turn runs, or
/// another prompt waits for the machine (a prompt of this request left
/// waiting by a pass cut short at a ceiling is its own, and goes on).
fn busy_for(conv: &ConversationRow, input: &PromptInput) -> bool {
    conv.status == ConversationStatus::Running
        || conv.pending_prompt.as_ref().is_some_and(|p| serde_json::to_value(input).ok().as_ref() != Some(p))
}

/// Delivers a queued start's first prompt within [`QUEUED_DELIVERY_TIMEOUT`].
async fn deliver_queued(state: &AppState, conv: &ConversationRow, input: PromptInput) -> ApiResult<()> {
    match tokio::time::timeout(QUEUED_DELIVERY_TIMEOUT, engine::deliver(state, conv, input)).await {
        Ok(delivered) => delivered.map(drop),
        Err(_) => Err(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "prompt_delivery_timeout",
            "Delivering the prompt took too long.",
        )),
    }
}

fn first_prompt(
    req: &ConversationCreateRequest,
    prompt: &str,
    images: Vec<engine::Image>,
    how: OpenHow,
) -> PromptInput {
    PromptInput {
        prompt: prompt.to_owned(),
        client_request_id: req.client_request_id.clone(),
        session_config: None,
        images,
        origin: if how.autonomous { "autonomous" } else { "api" }.into(),
        turn_id: None,
    }
}

/// The caller's conversations, newest first, filtered by labels.
#[utoipa::path(get, path = "/api/conversations", operation_id = "listConversations", tag = "conversations",
    params(("label" = Option<Vec<String>>, Query,
        description = "`key:value`, repeatable (also as `label[]`), AND-ed; split at the first colon")),
    responses((status = 200, description = "Conversations, newest first", body = Data<Vec<Conversation>>),
        (status = 400, description = "`invalid_label_filter`: no colon or an empty key", body = crate::error::ErrorBody)))]
async fn list(
    State(state): State<AppState>,
    p: Principal,
    RawQuery(q): RawQuery,
) -> ApiResult<Data<Vec<Conversation>>> {
    let filters = rules::label_filters(q.as_deref())?;
    let rows = store::list(&state.db, p.account_id, p.sandbox_id).await?;
    Ok(ok(rows.iter().filter(|r| rules::matches_filters(&r.labels, &filters)).map(Conversation::from).collect()))
}

/// One conversation.
#[utoipa::path(get, path = "/api/conversations/{id}", operation_id = "getConversation", tag = "conversations", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The conversation", body = Data<Conversation>)))]
async fn get_one(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<Conversation>> {
    Ok(ok(Conversation::from(&owned(&state, &p, id).await?)))
}

/// Changes labels: a null value removes the key, keys not named stay; the
/// limits count after the merge.
#[utoipa::path(patch, path = "/api/conversations/{id}/labels", operation_id = "updateConversationLabels", tag = "conversations", params(("id" = Uuid, Path)),
    request_body = LabelsPatch,
    responses((status = 200, description = "The conversation", body = Data<Conversation>),
        (status = 403, description = "`machine_may_not_label_another_conversation`", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed` with `errors.labels` naming a key sent", body = crate::error::ErrorBody)))]
async fn set_labels(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    body: Result<Json<LabelsPatch>, ApiError>,
) -> ApiResult<Data<Conversation>> {
    let row = store::get(&state.db, id)
        .await?
        .filter(|r| r.account_id == p.account_id)
        .ok_or_else(|| ApiError::not_found("Conversation"))?;
    if let Some(machine) = p.sandbox_id
        && row.sandbox_id != Some(machine)
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "machine_may_not_label_another_conversation",
            "A machine's key may label only its own conversation.",
        ));
    }
    let Json(patch) = body.map_err(rules::label_errors_by_key)?;
    let changes = match p.sandbox_id {
        Some(machine) => rules::redact_labels(patch.labels, &machine_redactor(&state, machine).await?),
        None => patch.labels,
    };
    merge_labels(&state, id, &changes).await?;
    Ok(ok(Conversation::from(&reread(&state, id).await?)))
}

/// Sends a prompt. `accepted`: the turn opened; `queued`: the machine must
/// wake first and the turn opens once it is ready. The answer precedes the
/// turn: read the turns to find the one carrying `client_request_id`.
#[utoipa::path(post, path = "/api/conversations/{id}/prompts", operation_id = "sendPrompt", tag = "conversations", params(("id" = Uuid, Path)),
    request_body = PromptRequest,
    responses((status = 202, description = "Accepted or queued", body = Data<PromptResponse>),
        (status = 409, description = "`conversation_busy`: a turn is running; `sandbox_at_capacity`: another conversation on the machine runs a turn of the same runtime (not for claude and codex); `inference_source_changed`: the agent's model changed since the conversation (without its own model) was applied: reapply it; `selection_deleted` (with `field`: `agent`, `environment` or `vault`): that part of the conversation's selection was deleted", body = crate::error::ErrorBody),
        (status = 410, description = "`conversation_ended`", body = crate::error::ErrorBody),
        (status = 422, description = "`invalid_prompt`, `validation_failed` or `session_config_invalid`", body = crate::error::ErrorBody)))]
async fn prompt(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(mut req): Json<PromptRequest>,
) -> ApiResult<(StatusCode, Data<PromptResponse>)> {
    let row = owned(&state, &p, id).await?;
    if let Some(machine) = p.sandbox_id {
        let r = machine_redactor(&state, machine).await?;
        req.prompt = r.redact_str(&req.prompt);
        req.client_request_id = req.client_request_id.map(|c| r.redact_str(&c));
    }
    rules::check_prompt(&req.prompt)?;
    let mut v = Validator::default();
    if let Some(c) = &req.client_request_id {
        rules::check_client_request_id(&mut v, c);
    }
    v.finish()?;
    let session_config = rules::session_config(req.session_config)?;
    if row.ended() {
        return Err(ended());
    }
    reapply::check_prompt(&state, &row).await?;
    let input = PromptInput {
        prompt: req.prompt,
        client_request_id: req.client_request_id.clone(),
        session_config,
        images: Vec::new(),
        origin: "api".into(),
        turn_id: None,
    };
    let status = engine::deliver(&state, &row, input).await?;
    let answer = PromptResponse { status, conversation_id: id, client_request_id: req.client_request_id };
    Ok((StatusCode::ACCEPTED, ok(answer)))
}

/// The conversation's turns, oldest first.
#[utoipa::path(get, path = "/api/conversations/{id}/turns", operation_id = "listConversationTurns", tag = "conversations", params(("id" = Uuid, Path)),
    responses((status = 200, description = "Turns, oldest first", body = TurnListResponse)))]
async fn turns(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<TurnListResponse> {
    owned(&state, &p, id).await?;
    let rows = store::turns(&state.db, id).await?;
    Ok(TurnListResponse { data: rows.iter().map(Turn::from).collect() })
}

/// Wakes the conversation's machine: `awake` when it is up, `waking` while it starts.
#[utoipa::path(post, path = "/api/conversations/{id}/wake", operation_id = "wakeConversation", tag = "conversations", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The machine's state", body = Data<ConversationWakeResponse>),
        (status = 409, description = "`selection_deleted` (with `field`): the conversation's agent, environment or vault was deleted", body = crate::error::ErrorBody),
        (status = 410, description = "`conversation_ended`", body = crate::error::ErrorBody)))]
async fn wake(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<ConversationWakeResponse>> {
    let row = owned(&state, &p, id).await?;
    if row.ended() {
        return Err(ended());
    }
    Ok(ok(ConversationWakeResponse { status: engine::wake(&state, &row).await? }))
}

/// Asks the running turn to stop; `interrupted` is false when none runs.
#[utoipa::path(post, path = "/api/conversations/{id}/interrupt", operation_id = "interruptConversation", tag = "conversations", params(("id" = Uuid, Path)),
    responses((status = 200, description = "Whether a turn was asked to stop", body = Data<InterruptResponse>)))]
async fn interrupt(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<InterruptResponse>> {
    let row = owned(&state, &p, id).await?;
    let interrupted = !row.ended() && engine::interrupt(&state, &row).await?;
    Ok(ok(InterruptResponse { interrupted }))
}

/// `PermissionAnswerRequest`: one of the `optionId` values offered on the `permission_request` block.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionAnswerRequest {
    pub option_id: String,
}

/// Answers a permission request of the running turn (`request_id` from the
/// `permission_request` block); the agent goes on with the chosen option.
#[utoipa::path(post, path = "/api/conversations/{id}/permissions/{request_id}", operation_id = "answerPermissionRequest", tag = "conversations",
    params(("id" = Uuid, Path), ("request_id" = String, Path)), request_body = PermissionAnswerRequest,
    responses((status = 204, description = "Answered"),
        (status = 404, description = "No open request with this id", body = crate::error::ErrorBody),
        (status = 410, description = "`conversation_ended`", body = crate::error::ErrorBody),
        (status = 422, description = "`unknown_option`: not an offered `optionId`", body = crate::error::ErrorBody)))]
async fn answer_permission(
    State(state): State<AppState>,
    p: Principal,
    Path((id, request_id)): Path<(Uuid, String)>,
    Json(req): Json<PermissionAnswerRequest>,
) -> ApiResult<StatusCode> {
    // An `ask` is for a person: the agent may not answer its own requests with its machine's key.
    if p.scope == Scope::Sandbox {
        return Err(ApiError::insufficient_scope());
    }
    let row = owned(&state, &p, id).await?;
    engine::answer_permission(&state, &row, &request_id, &req.option_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Ends the conversation (its turn and agent stop; an ephemeral machine no
/// other conversation holds is reclaimed). An ended one answers as it is.
#[utoipa::path(post, path = "/api/conversations/{id}/terminate", operation_id = "terminateConversation", tag = "conversations", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The conversation, ended", body = Data<Conversation>)))]
async fn terminate(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<Conversation>> {
    let row = owned(&state, &p, id).await?;
    if row.ended() {
        return Ok(ok(Conversation::from(&row)));
    }
    engine::terminate(&state, &row).await?;
    signal::conversations_changed(&state, p.account_id, row.sandbox_id).await;
    Ok(ok(Conversation::from(&reread(&state, id).await?)))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(get_one))
        .routes(routes!(set_labels))
        .routes(routes!(prompt))
        .routes(routes!(turns))
        .routes(routes!(wake))
        .routes(routes!(interrupt))
        .routes(routes!(terminate))
        .routes(routes!(answer_permission))
        .routes(routes!(reapply::reapply))
}
