//! Public health probes.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

#[derive(Serialize, ToSchema)]
pub struct ReadinessResponse {
    /// `ok` when every check passes, else `error`.
    #[schema(value_type = ReadinessStatus)]
    pub status: &'static str,
    /// Dependency -> `ok` or `error`.
    pub checks: BTreeMap<&'static str, &'static str>,
}

#[derive(Serialize, ToSchema)]
pub struct LivenessResponse {
    #[schema(value_type = LivenessStatus)]
    pub status: &'static str,
}

fn word(ok: bool) -> &'static str {
    if ok { "ok" } else { "error" }
}

/// Ready to serve: every dependency answers (503 otherwise).
#[utoipa::path(get, path = "/api/health/ready", operation_id = "getReadiness", tag = "health",
    responses((status = 200, body = ReadinessResponse), (status = 503, description = "A check failed", body = ReadinessResponse)))]
async fn ready(State(state): State<AppState>) -> (StatusCode, axum::Json<ReadinessResponse>) {
    let db = state.db.ping().await;
    let checks = BTreeMap::from([("database", word(db))]);
    let all = checks.values().all(|v| *v == "ok");
    let status = if all { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, axum::Json(ReadinessResponse { status: word(all), checks }))
}

/// The process is up.
#[utoipa::path(get, path = "/api/health/live", operation_id = "getLiveness", tag = "health", responses((status = 200, body = LivenessResponse)))]
async fn live() -> axum::Json<LivenessResponse> {
    axum::Json(LivenessResponse { status: "ok" })
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(ready)).routes(routes!(live))
}

acs_platform::string_enum!(ReadinessStatus, "`ok` when every check passes, else `error`.", ["ok", "error"]);
acs_platform::string_enum!(LivenessStatus, "Always `ok`.", ["ok"]);
