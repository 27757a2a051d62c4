//! API keys: created by login or by another full-scope key, shown once,
//! stored as digests, optionally expiring, revocable.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;
use sqlx::{Any, Row};
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::audit::{self, Actor};
use crate::auth::{Principal, Scope, token};
use crate::db::RowExt;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Validator;
use crate::http::{Data, Json, Path, created, ok};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros, to_micros};

/// Longest lifetime a key may be given (ten years).
pub const MAX_EXPIRES_IN: i64 = 10 * 365 * 24 * 3600;
pub const MAX_NAME: usize = 200;

/// An API key as listed; never carries the key itself.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKey {
    pub id: Uuid,
    pub name: String,
    /// The key's first characters, to tell keys apart.
    pub prefix: String,
    pub scope: Scope,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
}

/// A key just made: `api_key` is shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedKey {
    pub api_key: String,
    pub key: ApiKey,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ApiKeyRequest {
    /// 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// `full` (default) or `restricted`; `sandbox` keys are made by the server only.
    pub scope: Option<Scope>,
    /// Seconds until the key expires (1 to 315360000); absent never expires.
    pub expires_in: Option<i64>,
}

fn from_row(row: &AnyRow) -> Result<ApiKey, sqlx::Error> {
    let scope: String = row.try_get("scope")?;
    Ok(ApiKey {
        id: row.uuid("id")?,
        name: row.try_get("name")?,
        prefix: row.try_get("prefix")?,
        scope: Scope::parse(&scope).unwrap_or(Scope::Restricted),
        expires_at: row.try_get::<Option<i64>, _>("expires_at")?.map(from_micros),
        last_used_at: row.try_get::<Option<i64>, _>("last_used_at")?.map(from_micros),
        inserted_at: from_micros(row.try_get("created_at")?),
    })
}

/// Creates a key for `account_id` on the caller's connection or transaction.
pub async fn create<'e, E: sqlx::Executor<'e, Database = Any>>(
    ex: E,
    account_id: Uuid,
    name: &str,
    scope: Scope,
    expires_at: Option<OffsetDateTime>,
) -> Result<CreatedKey, sqlx::Error> {
    insert(ex, account_id, name, scope, expires_at, None).await
}

/// Mints the callback key of one sandbox (scope `sandbox`).
pub async fn create_for_sandbox<'e, E: sqlx::Executor<'e, Database = Any>>(
    ex: E,
    account_id: Uuid,
    sandbox_id: Uuid,
    name: &str,
) -> Result<CreatedKey, sqlx::Error> {
    insert(ex, account_id, name, Scope::Sandbox, None, Some(sandbox_id)).await
}

async fn insert<'e, E: sqlx::Executor<'e, Database = Any>>(
    ex: E,
    account_id: Uuid,
    name: &str,
    scope: Scope,
    expires_at: Option<OffsetDateTime>,
    sandbox_id: Option<Uuid>,
) -> Result<CreatedKey, sqlx::Error> {
    let secret = token::generate(token::KEY_PREFIX);
    let now = now_micros();
    let key = ApiKey {
        id: Uuid::now_v7(),
        name: name.to_owned(),
        prefix: token::display_prefix(&secret),
        scope,
        expires_at,
        last_used_at: None,
        inserted_at: from_micros(now),
    };
    sqlx::query(
        "INSERT INTO api_keys (id, account_id, name, prefix, key_hash, scope, expires_at, created_at, sandbox_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(key.id.to_string())
    .bind(account_id.to_string())
    .bind(key.name.clone())
    .bind(key.prefix.clone())
    .bind(token::digest(&secret))
    .bind(scope.as_str())
    .bind(expires_at.map(to_micros))
    .bind(now)
    .bind(sandbox_id.map(|id| id.to_string()))
    .execute(ex)
    .await?;
    Ok(CreatedKey { api_key: secret, key })
}

/// Checks a key name: 1 to 200 characters, not blank.
pub fn check_name(v: &mut Validator, field: &str, name: &str) {
    v.check(!name.trim().is_empty(), field, "can't be blank");
    v.check(name.chars().count() <= MAX_NAME, field, "should be at most 200 character(s)");
}

/// Lists the account's keys, newest first.
#[utoipa::path(get, path = "/api/keys", operation_id = "listKeys", tag = "keys",
    responses((status = 200, description = "The account's keys", body = Data<Vec<ApiKey>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<ApiKey>>> {
    p.require_full()?;
    let rows = sqlx::query(
        "SELECT id, name, prefix, scope, expires_at, last_used_at, created_at FROM api_keys \
         WHERE account_id = $1 ORDER BY created_at DESC, id DESC",
    )
    .bind(p.account_id.to_string())
    .fetch_all(&state.db.pool)
    .await?;
    Ok(ok(rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// Creates a key; its value is in the response only.
#[utoipa::path(post, path = "/api/keys", operation_id = "createKey", tag = "keys", request_body = ApiKeyRequest,
    responses((status = 201, description = "The new key, shown once", body = Data<CreatedKey>)))]
async fn create_key(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<ApiKeyRequest>,
) -> ApiResult<(StatusCode, Data<CreatedKey>)> {
    p.require_full()?;
    let mut v = Validator::default();
    check_name(&mut v, "name", &req.name);
    v.check(req.scope != Some(Scope::Sandbox), "scope", "sandbox keys are made by the server for each machine");
    if let Some(secs) = req.expires_in {
        v.check((1..=MAX_EXPIRES_IN).contains(&secs), "expires_in", "must be between 1 and 315360000 seconds");
    }
    v.finish()?;
    let expires_at = req.expires_in.map(|s| OffsetDateTime::now_utc() + time::Duration::seconds(s));
    let mut tx = state.db.begin().await?;
    let created_key =
        create(&mut *tx, p.account_id, req.name.trim(), req.scope.unwrap_or(Scope::Full), expires_at).await?;
    audit::record(&mut *tx, &Actor::key(&p), "api_key.created", Some(("api_key", created_key.key.id))).await?;
    tx.commit().await?;
    Ok(created(created_key))
}

/// Revokes a key at once.
#[utoipa::path(delete, path = "/api/keys/{id}", operation_id = "revokeKey", tag = "keys", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Revoked"), (status = 404, description = "No such key", body = crate::error::ErrorBody)))]
async fn revoke(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<StatusCode> {
    p.require_full()?;
    let mut tx = state.db.begin().await?;
    let done = sqlx::query("DELETE FROM api_keys WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(p.account_id.to_string())
        .execute(&mut *tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(ApiError::not_found("API key"));
    }
    audit::record(&mut *tx, &Actor::key(&p), "api_key.revoked", Some(("api_key", id))).await?;
    tx.commit().await?;
    state.key_cache.remove_where(|k| k.key_id == id);
    Ok(StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create_key)).routes(routes!(revoke))
}
