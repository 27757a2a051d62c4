//! Who is an operator: an operator key, or an account in `admin.operators`
//! calling with a full-scope key.

use std::net::IpAddr;

use acs_platform::AppState;
use acs_platform::auth::{Operator, OperatorVia, Scope, lookup, token};
use acs_platform::db::{Db, RowExt};
use acs_platform::error::{ApiError, ApiResult};
use acs_platform::time_fmt::now_micros;
use sqlx::Row;
use uuid::Uuid;

/// Operator keys carry this prefix: recognisable, and never an account key.
pub const KEY_PREFIX: &str = "acs_op_";

pub(crate) async fn admit(state: &AppState, bearer: &str, ip: IpAddr) -> ApiResult<Operator> {
    if bearer.starts_with(KEY_PREFIX) {
        return by_key(&state.db, bearer, ip).await;
    }
    let key = lookup::authenticate(state, bearer).await?;
    let listed = match state.get::<crate::Runtime>() {
        Some(rt) if key.scope == Scope::Full => {
            let email: Option<String> = sqlx::query_scalar("SELECT email FROM accounts WHERE id = $1")
                .bind(key.account_id.to_string())
                .fetch_optional(&state.db.pool)
                .await?;
            email.filter(|e| rt.operators.contains(&e.to_lowercase()))
        }
        _ => None,
    };
    match listed {
        Some(email) => Ok(Operator { id: key.account_id, name: email, via: OperatorVia::Account(key.account_id), ip }),
        None => Err(ApiError::insufficient_scope()),
    }
}

async fn by_key(db: &Db, bearer: &str, ip: IpAddr) -> ApiResult<Operator> {
    let row = sqlx::query("SELECT id, name FROM operator_keys WHERE key_hash = $1 AND revoked_at IS NULL")
        .bind(token::digest(bearer))
        .fetch_optional(&db.pool)
        .await?;
    let Some(row) = row else { return Err(ApiError::unauthenticated("api_key_invalid")) };
    let id = row.uuid("id")?;
    sqlx::query("UPDATE operator_keys SET last_used_at = $2 WHERE id = $1")
        .bind(id.to_string())
        .bind(now_micros())
        .execute(&db.pool)
        .await?;
    Ok(Operator { id, name: row.try_get("name")?, via: OperatorVia::Key, ip })
}

/// A new operator key: its id and the key itself, which only this answer shows.
pub async fn create_key(db: &Db, name: &str) -> Result<(Uuid, String), sqlx::Error> {
    let secret = token::generate(KEY_PREFIX);
    let id = Uuid::now_v7();
    sqlx::query("INSERT INTO operator_keys (id, name, prefix, key_hash, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(id.to_string())
        .bind(name.to_owned())
        .bind(secret.chars().take(KEY_PREFIX.len() + 8).collect::<String>())
        .bind(token::digest(&secret))
        .bind(now_micros())
        .execute(&db.pool)
        .await?;
    Ok((id, secret))
}

/// Revokes a key; `false` when no live key has that id.
pub async fn revoke_key(db: &Db, id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("UPDATE operator_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
        .bind(id.to_string())
        .bind(now_micros())
        .execute(&db.pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// `(id, name, prefix, created_at, last_used_at, revoked)` of every key, oldest first.
pub async fn keys(db: &Db) -> Result<Vec<(Uuid, String, String, i64, Option<i64>, bool)>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, name, prefix, created_at, last_used_at, revoked_at FROM operator_keys ORDER BY created_at, id",
    )
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.uuid("id")?,
                r.try_get("name")?,
                r.try_get("prefix")?,
                r.try_get("created_at")?,
                r.try_get("last_used_at")?,
                r.try_get::<Option<i64>, _>("revoked_at")?.is_some(),
            ))
        })
        .collect()
}
