//! Resolves a bearer token to its key: the key cache, then the database.

use sqlx::Row;
use uuid::Uuid;

use super::token;
use crate::db::RowExt;
use crate::error::{ApiError, ApiResult};
use crate::principal::{ResolvedKey, Scope};
use crate::state::AppState;
use crate::time_fmt::now_micros;

/// Resolves a bearer token to its key, or a 401 refusal.
pub async fn authenticate(state: &AppState, secret: &str) -> ApiResult<ResolvedKey> {
    if !secret.starts_with(token::KEY_PREFIX) {
        return Err(ApiError::unauthenticated("api_key_invalid"));
    }
    let digest = token::digest(secret);
    let key = match state.key_cache.get(&digest) {
        Some(k) => k,
        None => {
            let k = resolve(state, &digest).await?;
            state.key_cache.insert(digest, k.clone());
            k
        }
    };
    if key.expires_at.is_some_and(|e| e <= now_micros()) {
        return Err(ApiError::unauthenticated("api_key_expired"));
    }
    if key.suspended {
        return Err(ApiError::account_suspended());
    }
    Ok(key)
}

async fn resolve(state: &AppState, digest: &str) -> ApiResult<ResolvedKey> {
    let row = sqlx::query(
        "SELECT k.id, k.account_id, k.scope, k.sandbox_id, k.expires_at, k.last_used_at, s.suspended_at \
         FROM api_keys k LEFT JOIN account_suspensions s ON s.account_id = k.account_id WHERE k.key_hash = $1",
    )
    .bind(digest.to_owned())
    .fetch_optional(&state.db.pool)
    .await?
    .ok_or_else(|| ApiError::unauthenticated("api_key_invalid"))?;
    let now = now_micros();
    let key_id = row.uuid("id")?;
    let scope: String = row.try_get("scope")?;
    // Recording use at most once a minute keeps a write off most requests.
    if row.try_get::<Option<i64>, _>("last_used_at")?.is_none_or(|t| now - t > 60_000_000) {
        let pool = state.db.pool.clone();
        tokio::spawn(async move {
            let _ = sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2")
                .bind(now)
                .bind(key_id.to_string())
                .execute(&pool)
                .await;
        });
    }
    Ok(ResolvedKey {
        account_id: row.uuid("account_id")?,
        key_id,
        scope: Scope::parse(&scope).unwrap_or(Scope::Restricted),
        sandbox_id: row.opt_uuid("sandbox_id")?,
        expires_at: row.try_get("expires_at")?,
        suspended: row.try_get::<Option<i64>, _>("suspended_at")?.is_some(),
    })
}

/// Whether the key `id` still authenticates (not revoked, not expired).
pub async fn stands(db: &crate::db::Db, id: Uuid) -> Result<bool, sqlx::Error> {
    let expires: Option<Option<i64>> = sqlx::query_scalar("SELECT expires_at FROM api_keys WHERE id = $1")
        .bind(id.to_string())
        .fetch_optional(&db.pool)
        .await?;
    Ok(expires.is_some_and(|e| e.is_none_or(|e| e > now_micros())))
}
