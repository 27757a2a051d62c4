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
use tokio::sync::Notify;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use self::model::SandboxRequest;
use self::store::{NewRequest, RequestRow};
use crate::auth::Principal;
use crate::conversations::model::ConversationCreateRequest;
use crate::conversations::{self, OpenHow, Opened, StartError, StartOptions};
use crate::error::{ApiError, ApiResult};
use crate::http::{Data, Path, ok};
use crate::state::AppState;

/// Per-server queue state: the worker's doorbell.
#[derive(Default)]
pub struct Queue {
    wake: Notify,
}

impl Queue {
    /// Tells this server's worker to look at the queue now (a machine left the
    /// active states, a request was queued or cancelled).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    pub(crate) async fn notified(&self) {
        self.wake.notified().await
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
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(get_one, cancel))
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
#[utoipa::path(get, path = "/api/sandbox-queue", tag = "sandbox-queue",
    responses((status = 200, description = "Waiting requests by position, then settled ones", body = Data<Vec<SandboxRequest>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<SandboxRequest>>> {
    let line = store::line(&state.db, p.account_id).await?;
    let places: Vec<_> = line.iter().map(RequestRow::place).collect();
    let settled = store::settled(&state.db, p.account_id, LISTED_SETTLED).await?;
    Ok(ok(line.iter().chain(&settled).map(|r| r.to_api(&places)).collect()))
}

/// One request; `conversation_id` is set once it started, and on `prompt_delivery_unknown`.
#[utoipa::path(get, path = "/api/sandbox-queue/{id}", tag = "sandbox-queue", params(("id" = Uuid, Path)),
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
#[utoipa::path(delete, path = "/api/sandbox-queue/{id}", tag = "sandbox-queue", params(("id" = Uuid, Path)),
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
                crate::team::schedules::run_settled(&state, schedule, Err(rules::CANCELLED.to_owned())).await;
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
