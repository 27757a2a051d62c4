//! Teammate cron schedules (spec 2.6): the API, and how a run's outcome is
//! recorded (directly by the scheduler, or later through [`run_settled`]
//! when the run waited in the sandbox queue).

use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::model::{TeamSchedule, TeamScheduleCreateRequest, TeamScheduleUpdateRequest};
use super::store::{self, ScheduleRow};
use super::{changed, member, now, rules};
use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::events::signal::SignalKind;
use crate::http::{Data, Json, Path, created, ok};
use crate::state::AppState;

/// A queued run of `schedule_id` started (`Ok(conversation_id)`) or ended
/// without a conversation (`Err(error)`); recorded on the schedule.
pub async fn run_settled(state: &AppState, schedule_id: Uuid, outcome: Result<Uuid, String>) {
    record(state, schedule_id, &outcome).await
}

/// Records a run's outcome on the schedule (gone meanwhile: nothing to do)
/// and tells the team streams.
pub(super) async fn record(state: &AppState, schedule_id: Uuid, outcome: &Result<Uuid, String>) {
    match store::schedule(&state.db, schedule_id).await {
        Ok(Some(s)) => {
            if let Err(e) = store::record_run(&state.db, schedule_id, outcome).await {
                tracing::warn!(schedule = %schedule_id, "recording a run: {e}");
            }
            changed(state, s.account_id, SignalKind::Schedule).await;
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(schedule = %schedule_id, "recording a run: {e}"),
    }
}

/// The schedule `id` of this teammate of the caller's account; 404 otherwise.
async fn find(state: &AppState, p: &Principal, agent_id: Uuid, id: Uuid) -> ApiResult<ScheduleRow> {
    store::schedule(&state.db, id)
        .await?
        .filter(|s| s.account_id == p.account_id && s.agent_id == agent_id)
        .ok_or_else(|| ApiError::not_found("Schedule"))
}

/// The teammate's schedules, oldest first.
#[utoipa::path(get, path = "/api/team/{agent_id}/schedules", operation_id = "listSchedules", tag = "team", params(("agent_id" = Uuid, Path)),
    responses((status = 200, description = "Schedules, oldest first", body = Data<Vec<TeamSchedule>>)))]
async fn list(
    State(state): State<AppState>,
    p: Principal,
    Path(agent_id): Path<Uuid>,
) -> ApiResult<Data<Vec<TeamSchedule>>> {
    member(&state, p.account_id, agent_id).await?;
    let rows = store::schedules(&state.db, p.account_id, agent_id).await?;
    Ok(ok(rows.iter().map(TeamSchedule::from).collect()))
}

/// Creates a schedule: `cron` is five fields in UTC or a name such as
/// `@daily` (`@reboot` is refused); `next_run_at` is null while disabled.
#[utoipa::path(post, path = "/api/team/{agent_id}/schedules", operation_id = "createSchedule", tag = "team", params(("agent_id" = Uuid, Path)),
    request_body = TeamScheduleCreateRequest,
    responses((status = 201, description = "Created", body = Data<TeamSchedule>),
        (status = 422, description = "`validation_failed` naming `cron`, `prompt` or `name`", body = crate::error::ErrorBody)))]
async fn create(
    State(state): State<AppState>,
    p: Principal,
    Path(agent_id): Path<Uuid>,
    Json(req): Json<TeamScheduleCreateRequest>,
) -> ApiResult<(StatusCode, Data<TeamSchedule>)> {
    let row = rules::new_schedule(req, (p.account_id, agent_id), now(&state))?;
    member(&state, p.account_id, agent_id).await?;
    let mut tx = state.db.begin().await?;
    store::save_schedule(&mut tx, &row, true).await?;
    audit::record(&mut *tx, &Actor::key(&p), "team.schedule.created", Some(("team_schedule", row.id))).await?;
    tx.commit().await?;
    changed(&state, p.account_id, SignalKind::Schedule).await;
    Ok(created(TeamSchedule::from(&find(&state, &p, agent_id, row.id).await?)))
}

/// Changes a schedule (an omitted field is unchanged); `next_run_at` is
/// worked out again from now.
#[utoipa::path(patch, path = "/api/team/{agent_id}/schedules/{id}", operation_id = "updateSchedule", tag = "team",
    params(("agent_id" = Uuid, Path), ("id" = Uuid, Path)), request_body = TeamScheduleUpdateRequest,
    responses((status = 200, description = "The schedule", body = Data<TeamSchedule>),
        (status = 422, description = "`validation_failed` naming `cron`, `prompt` or `name`", body = crate::error::ErrorBody)))]
async fn update(
    State(state): State<AppState>,
    p: Principal,
    Path((agent_id, id)): Path<(Uuid, Uuid)>,
    Json(req): Json<TeamScheduleUpdateRequest>,
) -> ApiResult<Data<TeamSchedule>> {
    let current = find(&state, &p, agent_id, id).await?;
    let row = rules::updated_schedule(current, req, now(&state))?;
    let mut tx = state.db.begin().await?;
    store::save_schedule(&mut tx, &row, false).await?;
    audit::record(&mut *tx, &Actor::key(&p), "team.schedule.updated", Some(("team_schedule", id))).await?;
    tx.commit().await?;
    changed(&state, p.account_id, SignalKind::Schedule).await;
    Ok(ok(TeamSchedule::from(&find(&state, &p, agent_id, id).await?)))
}

/// Deletes a schedule; a run already started goes on.
#[utoipa::path(delete, path = "/api/team/{agent_id}/schedules/{id}", operation_id = "deleteSchedule", tag = "team",
    params(("agent_id" = Uuid, Path), ("id" = Uuid, Path)), responses((status = 204, description = "Deleted")))]
async fn delete(
    State(state): State<AppState>,
    p: Principal,
    Path((agent_id, id)): Path<(Uuid, Uuid)>,
) -> ApiResult<StatusCode> {
    find(&state, &p, agent_id, id).await?;
    let mut tx = state.db.begin().await?;
    store::delete_schedule(&mut tx, id).await?;
    audit::record(&mut *tx, &Actor::key(&p), "team.schedule.deleted", Some(("team_schedule", id))).await?;
    tx.commit().await?;
    changed(&state, p.account_id, SignalKind::Schedule).await;
    Ok(StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(update, delete))
}
