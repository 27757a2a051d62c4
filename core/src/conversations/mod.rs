//! Conversations and their turns (spec 2.1, 2.2, 3.3, 4.1): the HTTP
//! surface, the rules of its bodies, the store, and the turn engine that
//! speaks ACP to the agent in the sandbox. Handlers are thin: the rules
//! live in `rules`, the machine work in `engine`.

pub mod engine;
pub mod model;
pub mod rules;
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
    ApiError::new(StatusCode::GONE, "conversation_ended", "The conversation has ended.")
}

/// Merges label changes under a row lock, so concurrent changes each count
/// the other's keys against the limit.
async fn merge_labels(state: &AppState, id: Uuid, changes: &BTreeMap<String, Option<String>>) -> ApiResult<()> {
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

/// The caller must own an override vault (404 otherwise).
async fn check_vault(state: &AppState, account_id: Uuid, id: Uuid) -> ApiResult<()> {
    sqlx::query("SELECT id FROM vaults WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?
        .map(drop)
        .ok_or_else(|| ApiError::not_found("Vault"))
}

async fn reread(state: &AppState, id: Uuid) -> ApiResult<ConversationRow> {
    store::get(&state.db, id).await?.ok_or_else(ApiError::internal)
}

/// Opens a conversation, optionally with a first prompt; with `channel_id`
/// (and not `fresh`) the channel's latest live conversation is resumed
/// instead (200, labels merged, the prompt not delivered).
#[utoipa::path(post, path = "/api/conversations", tag = "conversations", request_body = ConversationCreateRequest,
    responses((status = 201, description = "A new conversation", body = Data<Conversation>),
        (status = 200, description = "The channel's conversation, resumed", body = Data<Conversation>),
        (status = 404, description = "An agent, environment or vault the caller does not own", body = crate::error::ErrorBody),
        (status = 409, description = "`conversation_model_differs` or `conversation_session_config_differs` (channel resume)", body = crate::error::ErrorBody),
        (status = 422, description = "`invalid_prompt`, `invalid_images`, `validation_failed`, `session_config_invalid`, `model_invalid`, `invalid_machine_name`, `environment_not_allowed`, `vault_not_allowed`", body = crate::error::ErrorBody),
        (status = 503, description = "`provisioning`: the agent's persistent machine is still being built", body = crate::error::ErrorBody)))]
async fn create(
    State(state): State<AppState>,
    p: Principal,
    body: Result<Json<ConversationCreateRequest>, ApiError>,
) -> ApiResult<(StatusCode, Data<Conversation>)> {
    // A machine's callback key acts on its own conversations; it does not open new ones.
    if p.scope == Scope::Sandbox {
        return Err(ApiError::insufficient_scope());
    }
    let Json(req) = body.map_err(rules::label_errors_by_key)?;
    let images = rules::check_first_prompt(req.prompt.as_deref(), req.images.as_deref().unwrap_or_default())?;
    let mut v = Validator::default();
    rules::check_create_fields(&mut v, &req);
    v.finish()?;
    let sent_labels: BTreeMap<String, Option<String>> =
        req.labels.clone().unwrap_or_default().into_iter().map(|(k, v)| (k, Some(v))).collect();
    let labels = rules::merge_labels(&Labels::new(), &sent_labels)?;
    let session_config = rules::session_config(req.session_config.clone())?;
    let machine_name = rules::machine_name(p.account_id, req.machine_name.as_deref())?;

    let agent = crate::agents::get_agent(&state, p.account_id, req.agent_id).await?;
    rules::check_model(agent.spec.runtime, req.model.as_deref())?;
    if let Some(env) = req.environment_id {
        crate::environments::get_environment(&state, p.account_id, env).await?;
        rules::check_allowed(agent.spec.allowed_environment_ids.as_deref(), env, "environment")?;
    }
    if let Some(vault) = req.vault_id {
        check_vault(&state, p.account_id, vault).await?;
        rules::check_allowed(agent.spec.allowed_vault_ids.as_deref(), vault, "vault")?;
    }

    if let Some(channel) = &req.channel_id
        && !req.fresh.unwrap_or(false)
        && let Some(existing) =
            store::channel_latest(&state.db, p.account_id, agent.id, req.environment_id, req.vault_id, channel).await?
    {
        rules::check_resume(&existing, req.model.as_deref(), session_config.as_ref())?;
        if !sent_labels.is_empty() {
            merge_labels(&state, existing.id, &sent_labels).await?;
        }
        return Ok((StatusCode::OK, ok(Conversation::from(&reread(&state, existing.id).await?))));
    }

    let new = NewConversation {
        id: Uuid::now_v7(),
        account_id: p.account_id,
        agent_id: agent.id,
        runtime: agent.spec.runtime.as_str().to_owned(),
        title: req.title,
        labels,
        model: req.model,
        session_config,
        environment_id: req.environment_id,
        vault_id: req.vault_id,
        channel_id: req.channel_id,
        permission_policy: req.permission_policy,
        sandbox_mode: req.sandbox_mode.map(|m| match m {
            SandboxMode::Ephemeral => "ephemeral".to_owned(),
            SandboxMode::Persistent => "persistent".to_owned(),
        }),
        machine_name: machine_name.clone(),
        api_access: req.sandbox_api_access.unwrap_or_default().as_str().to_owned(),
        ..NewConversation::default()
    };
    let row = engine::create(&state, &agent, new, MachineRequest { mode: req.sandbox_mode, machine_name }).await?;
    signal::conversations_changed(&state, p.account_id).await;
    if let Some(prompt) = req.prompt {
        let input = PromptInput {
            prompt,
            client_request_id: req.client_request_id,
            session_config: None,
            images,
            origin: "api".into(),
        };
        engine::deliver(&state, &row, input).await?;
    }
    Ok((StatusCode::CREATED, ok(Conversation::from(&reread(&state, row.id).await?))))
}

/// The caller's conversations, newest first, filtered by labels.
#[utoipa::path(get, path = "/api/conversations", tag = "conversations",
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
#[utoipa::path(get, path = "/api/conversations/{id}", tag = "conversations", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The conversation", body = Data<Conversation>)))]
async fn get_one(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<Conversation>> {
    Ok(ok(Conversation::from(&owned(&state, &p, id).await?)))
}

/// Changes labels: a null value removes the key, keys not named stay; the
/// limits count after the merge.
#[utoipa::path(patch, path = "/api/conversations/{id}/labels", tag = "conversations", params(("id" = Uuid, Path)),
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
    merge_labels(&state, id, &patch.labels).await?;
    Ok(ok(Conversation::from(&reread(&state, id).await?)))
}

/// Sends a prompt. `accepted`: the turn opened; `queued`: the machine must
/// wake first and the turn opens once it is ready. The answer precedes the
/// turn: read the turns to find the one carrying `client_request_id`.
#[utoipa::path(post, path = "/api/conversations/{id}/prompts", tag = "conversations", params(("id" = Uuid, Path)),
    request_body = PromptRequest,
    responses((status = 202, description = "Accepted or queued", body = Data<PromptResponse>),
        (status = 409, description = "`conversation_busy`: a turn is running", body = crate::error::ErrorBody),
        (status = 410, description = "`conversation_ended`", body = crate::error::ErrorBody),
        (status = 422, description = "`invalid_prompt`, `validation_failed` or `session_config_invalid`", body = crate::error::ErrorBody)))]
async fn prompt(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<PromptRequest>,
) -> ApiResult<(StatusCode, Data<PromptResponse>)> {
    let row = owned(&state, &p, id).await?;
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
    let input = PromptInput {
        prompt: req.prompt,
        client_request_id: req.client_request_id.clone(),
        session_config,
        images: Vec::new(),
        origin: "api".into(),
    };
    let status = engine::deliver(&state, &row, input).await?;
    let answer = PromptResponse { status, conversation_id: id, client_request_id: req.client_request_id };
    Ok((StatusCode::ACCEPTED, ok(answer)))
}

/// The conversation's turns, oldest first.
#[utoipa::path(get, path = "/api/conversations/{id}/turns", tag = "conversations", params(("id" = Uuid, Path)),
    responses((status = 200, description = "Turns, oldest first", body = TurnListResponse)))]
async fn turns(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<TurnListResponse> {
    owned(&state, &p, id).await?;
    let rows = store::turns(&state.db, id).await?;
    Ok(TurnListResponse { data: rows.iter().map(Turn::from).collect() })
}

/// Wakes the conversation's machine: `awake` when it is up, `waking` while it starts.
#[utoipa::path(post, path = "/api/conversations/{id}/wake", tag = "conversations", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The machine's state", body = Data<ConversationWakeResponse>),
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
#[utoipa::path(post, path = "/api/conversations/{id}/interrupt", tag = "conversations", params(("id" = Uuid, Path)),
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
#[utoipa::path(post, path = "/api/conversations/{id}/permissions/{request_id}", tag = "conversations",
    params(("id" = Uuid, Path), ("request_id" = String, Path)), request_body = PermissionAnswerRequest,
    responses((status = 204, description = "Answered"),
        (status = 404, description = "No open request with this id", body = crate::error::ErrorBody),
        (status = 422, description = "`unknown_option`: not an offered `optionId`", body = crate::error::ErrorBody)))]
async fn answer_permission(
    State(state): State<AppState>,
    p: Principal,
    Path((id, request_id)): Path<(Uuid, String)>,
    Json(req): Json<PermissionAnswerRequest>,
) -> ApiResult<StatusCode> {
    let row = owned(&state, &p, id).await?;
    engine::answer_permission(&state, &row, &request_id, &req.option_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Ends the conversation (its turn and agent stop; an ephemeral machine no
/// other conversation holds is reclaimed). An ended one answers as it is.
#[utoipa::path(post, path = "/api/conversations/{id}/terminate", tag = "conversations", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The conversation, ended", body = Data<Conversation>)))]
async fn terminate(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<Conversation>> {
    let row = owned(&state, &p, id).await?;
    if row.ended() {
        return Ok(ok(Conversation::from(&row)));
    }
    engine::terminate(&state, &row).await?;
    signal::conversations_changed(&state, p.account_id).await;
    Ok(ok(Conversation::from(&reread(&state, id).await?)))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one))
        .routes(routes!(set_labels))
        .routes(routes!(prompt))
        .routes(routes!(turns))
        .routes(routes!(wake))
        .routes(routes!(interrupt))
        .routes(routes!(terminate))
        .routes(routes!(answer_permission))
}
