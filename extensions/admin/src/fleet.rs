//! `GET /api/admin/fleet`: the deployment at a glance (DESIGN 9.4): live
//! machines by provider and state, the sandbox queue, and the replicas with
//! their heartbeats and the machines each serves. Read from the tables core
//! keeps (sandboxes, sandbox_requests, servers), so it needs no server state
//! and answers the same on every replica.

use acs_platform::AppState;
use acs_platform::auth::Operator;
use acs_platform::db::RowExt;
use acs_platform::error::ApiResult;
use acs_platform::http::{Data, ok};
use acs_platform::time_fmt::{from_micros, now_micros};
use axum::extract::State;
use serde::Serialize;
use sqlx::Row;
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// A replica silent this long is gone (core's `replicas::SILENCE`): another takes its work over.
const SILENCE_MICROS: i64 = 15_000_000;

#[derive(Debug, Serialize, ToSchema)]
pub struct AdminFleet {
    /// Machines not terminated, counted by provider and state.
    pub machines: Vec<AdminMachineCount>,
    pub queue: AdminQueue,
    /// Servers on this database, newest heartbeat first.
    pub replicas: Vec<AdminReplica>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AdminMachineCount {
    pub provider: String,
    pub status: String,
    pub count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AdminQueue {
    /// Starts waiting for capacity, every account.
    pub depth: i64,
    /// When the longest-waiting one was queued.
    #[serde(with = "time::serde::rfc3339::option")]
    pub oldest_queued_at: Option<OffsetDateTime>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AdminReplica {
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    /// Its last heartbeat (every 3 s while it runs).
    #[serde(with = "time::serde::rfc3339")]
    pub seen_at: OffsetDateTime,
    /// Heard from within 15 s; a silent one's machines and turns are taken over.
    pub alive: bool,
    /// Machines not terminated that it serves.
    pub machines: i64,
}

/// Machines by provider and state, the queue, and the replicas.
#[utoipa::path(get, path = "/api/admin/fleet", operation_id = "getAdminFleet", tag = "admin",
    responses((status = 200, description = "The fleet now", body = Data<AdminFleet>)))]
async fn get_admin_fleet(State(state): State<AppState>, _op: Operator) -> ApiResult<Data<AdminFleet>> {
    let pool = &state.db.pool;
    let machines = machines(pool, None).await?;
    let queue =
        sqlx::query("SELECT COUNT(*) AS n, MIN(inserted_at) AS oldest FROM sandbox_requests WHERE status = 'queued'")
            .fetch_one(pool)
            .await?;
    let queue = AdminQueue {
        depth: queue.try_get("n")?,
        oldest_queued_at: queue.try_get::<Option<i64>, _>("oldest")?.map(from_micros),
    };
    let now = now_micros();
    let replicas = sqlx::query(
        "SELECT s.id, s.started_at, s.seen_at, \
         (SELECT COUNT(*) FROM sandboxes m WHERE m.server_id = s.id AND m.status <> 'terminated') AS machines \
         FROM servers s ORDER BY s.seen_at DESC",
    )
    .fetch_all(pool)
    .await?
    .iter()
    .map(|r| {
        let seen: i64 = r.try_get("seen_at")?;
        Ok(AdminReplica {
            id: r.uuid("id")?,
            started_at: from_micros(r.try_get("started_at")?),
            seen_at: from_micros(seen),
            alive: now - seen < SILENCE_MICROS,
            machines: r.try_get("machines")?,
        })
    })
    .collect::<Result<Vec<_>, sqlx::Error>>()?;
    Ok(ok(AdminFleet { machines, queue, replicas }))
}

/// Machines not terminated by provider and state: every account's, or one's.
pub(crate) async fn machines(
    pool: &sqlx::AnyPool,
    account: Option<Uuid>,
) -> Result<Vec<AdminMachineCount>, sqlx::Error> {
    sqlx::query(
        "SELECT provider, status, COUNT(*) AS n FROM sandboxes WHERE status <> 'terminated' \
         AND ($1 = '' OR account_id = $1) GROUP BY provider, status ORDER BY provider, status",
    )
    .bind(account.map(|a| a.to_string()).unwrap_or_default())
    .fetch_all(pool)
    .await?
    .iter()
    .map(|r| {
        Ok(AdminMachineCount { provider: r.try_get("provider")?, status: r.try_get("status")?, count: r.try_get("n")? })
    })
    .collect()
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_admin_fleet))
}
