//! The audit log: one row per mutation of account state (actor, action,
//! target, request address, time), readable newest first with a cursor.

use std::net::IpAddr;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use sqlx::{Any, Row};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::Principal;
use crate::db::RowExt;
use crate::error::ApiResult;
use crate::http::{PageMeta, Paged, Query};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

/// Who did it: an API key, the account itself (password sign-in, email
/// token), or the service.
#[derive(Debug, Clone)]
pub struct Actor {
    pub account_id: Uuid,
    pub kind: &'static str,
    pub id: Option<Uuid>,
    pub ip: Option<IpAddr>,
}

impl Actor {
    pub fn key(p: &Principal) -> Actor {
        let kind = match p.via {
            crate::principal::Via::Key => "api_key",
            crate::principal::Via::BrowserSession => "browser_session",
        };
        Actor { account_id: p.account_id, kind, id: Some(p.key_id), ip: Some(p.ip) }
    }

    /// An operator acting on `account_id` (the admin extension).
    pub fn operator(account_id: Uuid, op: &crate::principal::Operator) -> Actor {
        Actor { account_id, kind: "operator", id: Some(op.id), ip: Some(op.ip) }
    }

    pub fn account(account_id: Uuid, ip: Option<IpAddr>) -> Actor {
        Actor { account_id, kind: "account", id: Some(account_id), ip }
    }
}

/// Writes one audit row, on the caller's connection or transaction so the
/// record and the change it describes commit together.
pub async fn record<'e, E: sqlx::Executor<'e, Database = Any>>(
    ex: E,
    actor: &Actor,
    action: &str,
    target: Option<(&str, Uuid)>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit_events (account_id, actor_type, actor_id, action, target_type, target_id, ip, at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(actor.account_id.to_string())
    .bind(actor.kind)
    .bind(actor.id.map(|i| i.to_string()))
    .bind(action.to_owned())
    .bind(target.map(|t| t.0.to_owned()))
    .bind(target.map(|t| t.1.to_string()))
    .bind(actor.ip.map(|i| i.to_string()))
    .bind(now_micros())
    .execute(ex)
    .await?;
    Ok(())
}

#[derive(Serialize, ToSchema)]
pub struct AuditActor {
    /// `api_key`, `browser_session`, `account`, `operator` (an operator of the deployment) or `service`.
    #[serde(rename = "type")]
    #[schema(value_type = ActorType)]
    pub kind: String,
    pub id: Option<Uuid>,
}

#[derive(Serialize, ToSchema)]
pub struct AuditTarget {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: Uuid,
}

/// One audit record.
#[derive(Serialize, ToSchema)]
pub struct AuditEvent {
    pub id: i64,
    /// Such as `api_key.created` or `account.password_changed`.
    pub action: String,
    pub actor: AuditActor,
    pub target: Option<AuditTarget>,
    /// The client address of the request.
    pub ip: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Return records older than this cursor (`meta.next_cursor` of the previous page).
    pub before: Option<i64>,
    /// Page size, 1 to 500 (default 50).
    pub limit: Option<i64>,
}

pub const MAX_PAGE: i64 = 500;

/// Lists the account's audit records, newest first.
#[utoipa::path(get, path = "/api/audit", operation_id = "listAuditEvents", tag = "audit", params(AuditQuery),
    responses((status = 200, description = "Audit records, newest first", body = Paged<AuditEvent>)))]
async fn list(
    State(state): State<AppState>,
    p: Principal,
    Query(q): Query<AuditQuery>,
) -> ApiResult<Paged<AuditEvent>> {
    let limit = crate::http::extract::page_limit(q.limit, 50, MAX_PAGE)?;
    let rows = sqlx::query(
        "SELECT id, actor_type, actor_id, action, target_type, target_id, ip, at FROM audit_events \
         WHERE account_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3",
    )
    .bind(p.account_id.to_string())
    .bind(q.before.unwrap_or(i64::MAX))
    .bind(limit + 1)
    .fetch_all(&state.db.pool)
    .await?;
    let has_more = rows.len() as i64 > limit;
    let mut data = Vec::with_capacity(rows.len());
    for row in rows.iter().take(limit as usize) {
        let target_type: Option<String> = row.try_get("target_type")?;
        let target = match (target_type, row.opt_uuid("target_id")?) {
            (Some(kind), Some(id)) => Some(AuditTarget { kind, id }),
            _ => None,
        };
        data.push(AuditEvent {
            id: row.try_get("id")?,
            action: row.try_get("action")?,
            actor: AuditActor { kind: row.try_get("actor_type")?, id: row.opt_uuid("actor_id")? },
            target,
            ip: row.try_get("ip")?,
            at: from_micros(row.try_get("at")?),
        });
    }
    let next_cursor = data.last().map(|e| e.id);
    Ok(Paged { data, meta: PageMeta { limit, has_more, next_cursor } })
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

crate::string_enum!(ActorType, "Who acted.", ["api_key", "browser_session", "account", "operator", "service"]);
