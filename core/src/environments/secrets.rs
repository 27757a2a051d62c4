//! An environment's secrets: write-only values, sealed with the account's
//! data key and bound to their row by `environment_secret:{environment_id}:{key}`.

use std::collections::BTreeSet;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;
use sqlx::{Any, Row};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{load, lock, rules};
use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::db::RowExt;
use crate::error::{ApiError, ApiResult};
use crate::http::{Data, Json, Path, ok};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

/// An environment secret; its value is never returned.
#[derive(Debug, Serialize, ToSchema)]
pub struct Secret {
    pub id: Uuid,
    pub key: String,
    pub environment_id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct EnvironmentSecretValue {
    /// The secret, 1 byte to 64 KB; write-only.
    pub value: String,
}

fn aad(environment_id: Uuid, key: &str) -> String {
    format!("environment_secret:{environment_id}:{key}")
}

fn from_row(row: &AnyRow) -> Result<Secret, sqlx::Error> {
    Ok(Secret {
        id: row.uuid("id")?,
        key: row.try_get("key")?,
        environment_id: row.uuid("environment_id")?,
        inserted_at: from_micros(row.try_get("created_at")?),
        updated_at: from_micros(row.try_get("updated_at")?),
    })
}

/// The names of an environment's secrets.
pub(super) async fn keys<'e, E: sqlx::Executor<'e, Database = Any>>(
    ex: E,
    environment_id: Uuid,
) -> Result<BTreeSet<String>, sqlx::Error> {
    let rows = sqlx::query("SELECT key FROM environment_secrets WHERE environment_id = $1")
        .bind(environment_id.to_string())
        .fetch_all(ex)
        .await?;
    rows.iter().map(|r| r.try_get("key")).collect()
}

/// The decrypted secrets of an environment as (key, value), by key; for
/// starting a sandbox. 404 when the account has no such environment.
pub async fn secret_values(
    state: &AppState,
    account_id: Uuid,
    environment_id: Uuid,
) -> ApiResult<Vec<(String, String)>> {
    load(&state.db.pool, account_id, environment_id).await?;
    let rows = sqlx::query(
        "SELECT key, ciphertext FROM environment_secrets WHERE environment_id = $1 AND account_id = $2 ORDER BY key",
    )
    .bind(environment_id.to_string())
    .bind(account_id.to_string())
    .fetch_all(&state.db.pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let key: String = row.try_get("key")?;
        let sealed: String = row.try_get("ciphertext")?;
        let value = state.crypto.decrypt(&state.db, account_id, &aad(environment_id, &key), &sealed).await?;
        out.push((key, value));
    }
    Ok(out)
}

/// One decrypted secret of an environment, `None` when it has no such key
/// (the egress broker's binding source).
pub async fn secret_value(
    state: &AppState,
    account_id: Uuid,
    environment_id: Uuid,
    key: &str,
) -> ApiResult<Option<String>> {
    let row = sqlx::query(
        "SELECT ciphertext FROM environment_secrets WHERE environment_id = $1 AND account_id = $2 AND key = $3",
    )
    .bind(environment_id.to_string())
    .bind(account_id.to_string())
    .bind(key.to_owned())
    .fetch_optional(&state.db.pool)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let sealed: String = row.try_get("ciphertext")?;
    Ok(Some(state.crypto.decrypt(&state.db, account_id, &aad(environment_id, key), &sealed).await?))
}

/// The environment's secrets by key, without values.
#[utoipa::path(get, path = "/api/environments/{id}/secrets", operation_id = "listEnvironmentSecrets", tag = "environments", params(("id" = Uuid, Path)),
    responses((status = 200, description = "Secrets by key; values are never returned", body = Data<Vec<Secret>>)))]
pub(super) async fn list_secrets(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<Vec<Secret>>> {
    load(&state.db.pool, p.account_id, id).await?;
    let rows = sqlx::query(
        "SELECT id, key, environment_id, created_at, updated_at FROM environment_secrets \
         WHERE environment_id = $1 AND account_id = $2 ORDER BY key",
    )
    .bind(id.to_string())
    .bind(p.account_id.to_string())
    .fetch_all(&state.db.pool)
    .await?;
    Ok(ok(rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// Creates or replaces a secret: 201 when created, 200 when replaced.
#[utoipa::path(put, path = "/api/environments/{id}/secrets/{key}", operation_id = "putEnvironmentSecret", tag = "environments",
    params(("id" = Uuid, Path), ("key" = String, Path, description = "`[A-Za-z_][A-Za-z0-9_]*`, max 256")),
    request_body = EnvironmentSecretValue,
    responses((status = 201, description = "Created", body = Data<Secret>),
        (status = 200, description = "Replaced", body = Data<Secret>)))]
pub(super) async fn put_secret(
    State(state): State<AppState>,
    p: Principal,
    Path((id, key)): Path<(Uuid, String)>,
    Json(req): Json<EnvironmentSecretValue>,
) -> ApiResult<(StatusCode, Data<Secret>)> {
    load(&state.db.pool, p.account_id, id).await?;
    rules::check_secret(&key, &req.value, rules::MAX_SECRET_VALUE)?;
    // Sealed before the transaction: a first seal may write the account's
    // data key on another connection, which SQLite's single writer would block.
    let sealed = state.crypto.encrypt(&state.db, p.account_id, &aad(id, &key), &req.value).await?;
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    lock(&mut tx, p.account_id, id).await?;
    let existing = sqlx::query("SELECT id, created_at FROM environment_secrets WHERE environment_id = $1 AND key = $2")
        .bind(id.to_string())
        .bind(key.clone())
        .fetch_optional(&mut *tx)
        .await?;
    let (status, secret) = match existing {
        Some(row) => {
            let secret_id = row.uuid("id")?;
            sqlx::query("UPDATE environment_secrets SET ciphertext = $1, updated_at = $2 WHERE id = $3")
                .bind(sealed)
                .bind(now)
                .bind(secret_id.to_string())
                .execute(&mut *tx)
                .await?;
            let inserted_at = from_micros(row.try_get("created_at")?);
            (
                StatusCode::OK,
                Secret { id: secret_id, key, environment_id: id, inserted_at, updated_at: from_micros(now) },
            )
        }
        None => {
            let secret_id = Uuid::now_v7();
            sqlx::query(
                "INSERT INTO environment_secrets (id, environment_id, account_id, key, ciphertext, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $6)",
            )
            .bind(secret_id.to_string())
            .bind(id.to_string())
            .bind(p.account_id.to_string())
            .bind(key.clone())
            .bind(sealed)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let at = from_micros(now);
            (StatusCode::CREATED, Secret { id: secret_id, key, environment_id: id, inserted_at: at, updated_at: at })
        }
    };
    audit::record(&mut *tx, &Actor::key(&p), "environment.secret.set", Some(("environment_secret", secret.id))).await?;
    tx.commit().await?;
    Ok((status, ok(secret)))
}

/// Deletes a secret. A secret a repository clones with is refused (409 `secret_in_use`).
#[utoipa::path(delete, path = "/api/environments/{id}/secrets/{key}", operation_id = "deleteEnvironmentSecret", tag = "environments",
    params(("id" = Uuid, Path), ("key" = String, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such environment or secret", body = crate::error::ErrorBody),
        (status = 409, description = "`secret_in_use`: a repository's `secret_key` names it (`repository`, `mount_path`)",
            body = crate::error::ErrorBody)))]
pub(super) async fn delete_secret(
    State(state): State<AppState>,
    p: Principal,
    Path((id, key)): Path<(Uuid, String)>,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    lock(&mut tx, p.account_id, id).await?;
    let env = load(&mut *tx, p.account_id, id).await?;
    let secret_id = sqlx::query("SELECT id FROM environment_secrets WHERE environment_id = $1 AND key = $2")
        .bind(id.to_string())
        .bind(key.clone())
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| ApiError::not_found("Secret"))?
        .uuid("id")?;
    if let Some(repo) = env.spec.repositories.iter().find(|r| r.secret_key.as_deref() == Some(key.as_str())) {
        return Err(ApiError::conflict(
            "secret_in_use",
            format!("The repository {} (mounted at {}) clones with this secret.", repo.url, repo.mount_path),
        )
        .with("repository", repo.url.clone())
        .with("mount_path", repo.mount_path.clone()));
    }
    sqlx::query("DELETE FROM environment_secrets WHERE id = $1").bind(secret_id.to_string()).execute(&mut *tx).await?;
    audit::record(&mut *tx, &Actor::key(&p), "environment.secret.deleted", Some(("environment_secret", secret_id)))
        .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environments::testing;

    async fn environment(state: &AppState, account_id: Uuid) -> Uuid {
        let id = Uuid::now_v7();
        sqlx::query(
            "INSERT INTO environments (id, account_id, name, spec, build_fingerprint, fingerprint_at, created_at, updated_at) \
             VALUES ($1, $2, 'e', '{}', '', 0, 0, 0)",
        )
        .bind(id.to_string())
        .bind(account_id.to_string())
        .execute(&state.db.pool)
        .await
        .unwrap();
        id
    }

    async fn put(state: &AppState, account_id: Uuid, env: Uuid, key: &str, value: &str) {
        let sealed = state.crypto.encrypt(&state.db, account_id, &aad(env, key), value).await.unwrap();
        sqlx::query(
            "INSERT INTO environment_secrets (id, environment_id, account_id, key, ciphertext, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, 0, 0)",
        )
        .bind(Uuid::now_v7().to_string())
        .bind(env.to_string())
        .bind(account_id.to_string())
        .bind(key.to_owned())
        .bind(sealed)
        .execute(&state.db.pool)
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn secret_values_decrypts_the_environments_own_secrets() {
        let t = testing::state().await;
        let (state, account) = (&t.state, t.account_id);
        let env = environment(state, account).await;
        let other = environment(state, account).await;
        put(state, account, env, "TOKEN", "t-value").await;
        put(state, account, env, "API_KEY", "k-value").await;
        put(state, account, other, "TOKEN", "other").await;
        let values = secret_values(state, account, env).await.unwrap();
        assert_eq!(values, [("API_KEY".into(), "k-value".into()), ("TOKEN".into(), "t-value".into())]);
        assert!(secret_values(state, account, other).await.unwrap().len() == 1);
        assert!(secret_values(state, Uuid::now_v7(), env).await.is_err(), "another account's id is not found");
        assert!(secret_values(state, account, Uuid::now_v7()).await.is_err());
    }

    #[tokio::test]
    async fn a_value_moved_to_another_row_does_not_open() {
        let t = testing::state().await;
        let (state, account) = (&t.state, t.account_id);
        let env = environment(state, account).await;
        put(state, account, env, "A", "alpha").await;
        // Copy A's ciphertext under key B: the associated data no longer matches.
        sqlx::query(
            "INSERT INTO environment_secrets (id, environment_id, account_id, key, ciphertext, created_at, updated_at) \
             SELECT $1, environment_id, account_id, 'B', ciphertext, 0, 0 FROM environment_secrets WHERE key = 'A'",
        )
        .bind(Uuid::now_v7().to_string())
        .execute(&state.db.pool)
        .await
        .unwrap();
        assert!(secret_values(state, account, env).await.is_err());
    }
}
