//! The bounded sandbox queue (spec 4.2): starts that hit the tenant or
//! fleet concurrency ceiling wait here and are started in FIFO order per
//! tenant, round robin across tenants, claimed safely by several replicas
//! (docs/queue.md). `submit` is the door (the create route, team messages,
//! schedules), `worker` starts what waits, the routes show and cancel it.

pub mod model;
pub mod rules;
pub mod store;
pub mod worker;

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use self::model::SandboxRequest;
use self::store::{NewRequest, RequestRow};
use crate::auth::{Principal, Scope};
use crate::boxed::BoxFuture;
use crate::conversations::model::{Conversation, ConversationCreateRequest};
use crate::conversations::{self, OpenHow, Opened, StartError, StartOptions};
use crate::error::{ApiError, ApiResult};
use crate::http::{Data, Json, Path, ok};
use crate::state::AppState;

/// Told when a queued run of a schedule settles (started, expired or
/// cancelled): the team layer above records the run; the server assembly
/// puts it in the state's slots.
pub struct OnSettled(pub for<'a> fn(&'a AppState, Uuid, Result<Uuid, String>) -> BoxFuture<'a, ()>);

/// Tells the schedule layer, if one is registered, how a run settled.
pub(crate) async fn settled(state: &AppState, schedule_id: Uuid, outcome: Result<Uuid, String>) {
    if let Some(on) = state.get::<OnSettled>() {
        (on.0)(state, schedule_id, outcome).await;
    }
}

/// A start to run now or, at a ceiling, to queue.
#[derive(Debug, Clone)]
pub struct Submit {
    pub account_id: Uuid,
    pub request: ConversationCreateRequest,
    pub how: OpenHow,
    /// The schedule whose run this is; told of the outcome when it is settled.
    pub schedule_id: Option<Uuid>,
    /// Queue at a ceiling even without `queue: true` (teammate schedules).
    pub force_queue: bool,
    /// The id a new conversation gets, when the submitter chose it (a
    /// schedule's run, to recognise it after a crash); else a new one.
    pub conversation_id: Option<Uuid>,
}

/// The outcome of a submit.
// One value per submit, moved once: boxing the conversation would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Submitted {
    /// Started now.
    Opened(Opened),
    /// Waiting in the queue (202 with a `SandboxRequest`).
    Queued(SandboxRequest),
}

/// Starts now, or at a ceiling (when `request.queue` is true or
/// `force_queue`) queues the start. Images or `sandbox_id` never queue; a
/// full queue keeps the immediate error. While the account already has
/// requests waiting, a start that needs a new machine goes behind them
/// (fair FIFO) instead of taking a place that frees first; a channel resume
/// needs no machine and answers at once.
pub async fn submit(state: &AppState, s: Submit) -> ApiResult<Submitted> {
    let may_queue = rules::may_queue(&s.request, s.force_queue);
    let behind = may_queue && store::has_line(&state.db, s.account_id).await?;
    let fresh_conversation_id = s.conversation_id.unwrap_or_else(Uuid::now_v7);
    let opts = StartOptions { conversation_id: fresh_conversation_id, may_launch: !behind };
    let refusal = match conversations::start(state, s.account_id, &s.request, s.how, opts).await {
        Ok(opened) => return Ok(Submitted::Opened(opened)),
        Err(StartError::LaunchDeclined) => None,
        Err(StartError::Refused(e)) if may_queue && rules::ceiling(&e).is_some() => Some(e),
        Err(e) => return Err(e.into()),
    };
    let new = NewRequest {
        account_id: s.account_id,
        request: &s.request,
        team: s.how.team,
        autonomous: s.how.autonomous,
        schedule_id: s.schedule_id,
        fresh_conversation_id,
    };
    let cfg = &state.config().queue;
    match store::enqueue(&state.db, &new, cfg.max_per_account, cfg.max_wait_seconds).await? {
        Some(row) => {
            state.queue.wake();
            Ok(Submitted::Queued(view(state, &row).await?))
        }
        None => match refusal {
            Some(e) => Err(e),
            // The line is full: start now if a place is free, else answer with the ceiling.
            None => Ok(Submitted::Opened(conversations::open(state, s.account_id, &s.request, s.how).await?)),
        },
    }
}

/// Requests that left the queue shown after the waiting ones.
const LISTED_SETTLED: i64 = 100;
/// A cancel that finds its request being started waits this long, at most, for the outcome.
const CANCEL_WAIT: Duration = Duration::from_secs(5);
const CANCEL_POLL: Duration = Duration::from_millis(50);

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(get_one, cancel)).routes(routes!(create))
}

async fn find(state: &AppState, account_id: Uuid, id: Uuid) -> ApiResult<RequestRow> {
    store::get(&state.db, account_id, id).await?.ok_or_else(|| ApiError::not_found("Sandbox request"))
}

/// The API object of one request, its position counted in its account's line.
async fn view(state: &AppState, row: &RequestRow) -> ApiResult<SandboxRequest> {
    let line = if row.queued() { store::line(&state.db, row.account_id).await? } else { Vec::new() };
    let places: Vec<_> = line.iter().map(RequestRow::place).collect();
    Ok(row.to_api(&places))
}

/// The caller's requests: the waiting ones in position order, then those that left the
/// queue (most recent first, at most 100, kept `queue.retention_seconds`).
#[utoipa::path(get, path = "/api/sandbox-queue", operation_id = "listSandboxRequests", tag = "sandbox-queue",
    responses((status = 200, description = "Waiting requests by position, then settled ones", body = Data<Vec<SandboxRequest>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<SandboxRequest>>> {
    let line = store::line(&state.db, p.account_id).await?;
    let places: Vec<_> = line.iter().map(RequestRow::place).collect();
    let settled = store::settled(&state.db, p.account_id, LISTED_SETTLED).await?;
    Ok(ok(line.iter().chain(&settled).map(|r| r.to_api(&places)).collect()))
}

/// One request; `conversation_id` is set once it started, and on `prompt_delivery_unknown`.
#[utoipa::path(get, path = "/api/sandbox-queue/{id}", operation_id = "getSandboxRequest", tag = "sandbox-queue", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The request", body = Data<SandboxRequest>)))]
async fn get_one(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<SandboxRequest>> {
    let row = find(&state, p.account_id, id).await?;
    Ok(ok(view(&state, &row).await?))
}

fn not_queued(status: &str) -> ApiError {
    ApiError::conflict(
        "sandbox_request_not_queued",
        format!("The request is {status}; only a queued one is cancelled."),
    )
    .with("status", status)
}

/// Cancels a request still `queued`; it never starts. One being started this very moment is
/// waited for briefly and then answered by its outcome.
#[utoipa::path(delete, path = "/api/sandbox-queue/{id}", operation_id = "cancelSandboxRequest", tag = "sandbox-queue", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The request, now `cancelled`", body = Data<SandboxRequest>),
        (status = 409, description = "`sandbox_request_not_queued` (with its `status`), or `sandbox_request_starting` \
            when a start holding it has not ended within a few seconds", body = crate::error::ErrorBody)))]
async fn cancel(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<SandboxRequest>> {
    let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
    loop {
        if store::cancel(&state.db, p.account_id, id).await? {
            state.queue.wake();
            let row = find(&state, p.account_id, id).await?;
            if let Some(schedule) = row.schedule_id {
                settled(&state, schedule, Err(rules::CANCELLED.to_owned())).await;
            }
            return Ok(ok(row.to_api(&[])));
        }
        let row = find(&state, p.account_id, id).await?;
        if !row.queued() {
            return Err(not_queued(&row.status));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "sandbox_request_starting",
                "The request is being started; read it again in a moment.",
            ));
        }
        tokio::time::sleep(CANCEL_POLL).await;
    }
}

// Starting a conversation is a route of the queue, which sits above the
// conversations it starts: a start at a ceiling waits here.

/// Opens a conversation, optionally with a first prompt; with `channel_id`
/// (and not `fresh`) the channel's latest live conversation is resumed
/// instead (200, labels merged, the prompt not delivered). A fresh start at
/// a concurrency ceiling with `queue: true` waits in the sandbox queue (202).
/// With `sandbox_id` it opens idle on that existing sandbox (attach).
#[utoipa::path(post, path = "/api/conversations", operation_id = "createConversation", tag = "conversations", request_body = ConversationCreateRequest,
    responses((status = 201, description = "A new conversation", body = Data<Conversation>),
        (status = 200, description = "The channel's conversation, resumed", body = Data<Conversation>),
        (status = 202, description = "At a ceiling with `queue: true`: waiting in the sandbox queue, with a one-based `position`", body = Data<SandboxRequest>),
        (status = 402, description = "`insufficient_credits` (with `upgrade_url`)", body = crate::error::ErrorBody),
        (status = 403, description = "`guest_attach_requires_full_scope` (with `reason: insufficient_scope`): a guest attach, or a `fresh` rotation of a guest, with a restricted key", body = crate::error::ErrorBody),
        (status = 404, description = "An agent, environment or vault the caller does not own; `inference_credential_not_found`; `sandbox_not_found`", body = crate::error::ErrorBody),
        (status = 409, description = "`conversation_model_differs` or `conversation_session_config_differs` (channel resume); `sandbox_not_attachable`, `sandbox_at_capacity`, `codex_inference_conflict` (attach)", body = crate::error::ErrorBody),
        (status = 422, description = "`invalid_prompt`, `invalid_images`, `validation_failed`, `session_config_invalid`, `model_invalid`, `invalid_machine_name`, `environment_not_allowed`, `vault_not_allowed`, `inference_credential_not_allowed`, `inference_credential_unusable`, `sandbox_identity_mismatch`, `sandbox_runtime_mismatch`, `execution_limits_invalid`, `execution_limits_widen`, `execution_limits_unsupported`", body = crate::error::ErrorBody),
        (status = 429, description = "`sandbox_quota_exceeded` (with `active_sandboxes` and `limit`): the account's concurrent-sandbox cap, without `queue: true` or with the account's queue full", body = crate::error::ErrorBody),
        (status = 503, description = "`fleet_at_capacity`: the service-wide ceiling (same conditions); `provisioning`: the agent's persistent machine is still being built", body = crate::error::ErrorBody)))]
async fn create(
    State(state): State<AppState>,
    p: Principal,
    body: Result<Json<ConversationCreateRequest>, ApiError>,
) -> ApiResult<Response> {
    // A machine's callback key acts on its own conversations; it does not open new ones.
    if p.scope == Scope::Sandbox {
        return Err(ApiError::insufficient_scope());
    }
    let Json(req) = body.map_err(conversations::rules::label_errors_by_key)?;
    conversations::attach::check_scope(&state, &p, &req).await?;
    let start = Submit {
        account_id: p.account_id,
        request: req,
        how: OpenHow::default(),
        schedule_id: None,
        force_queue: false,
        conversation_id: None,
    };
    Ok(match submit(&state, start).await? {
        Submitted::Opened(Opened::Created(row)) => (StatusCode::CREATED, ok(Conversation::from(&row))).into_response(),
        Submitted::Opened(Opened::Resumed(row)) => (StatusCode::OK, ok(Conversation::from(&row))).into_response(),
        Submitted::Queued(request) => (StatusCode::ACCEPTED, ok(request)).into_response(),
    })
}
