//! A vault's secrets: write-only values, optionally expiring, sealed with the
//! account's data key and bound to their row by `vault_secret:{vault_id}:{key}`.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;
use sqlx::{Any, Row};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{find, lock};
use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::db::RowExt;
use crate::environments::rules::{MAX_SECRET_VALUE, check_secret};
use crate::error::{ApiError, ApiResult};
use crate::http::{Data, Json, Path, ok};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros, to_micros};

/// A vault secret; its value is never returned.
#[derive(Debug, Serialize, ToSchema)]
pub struct VaultSecret {
    pub id: Uuid,
    pub key: String,
    pub vault_id: Uuid,
    /// After this time the secret is no longer injected; still listed.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct VaultSecretValue {
    /// The secret, 1 byte to 64 KB; write-only.
    pub value: String,
    /// RFC 3339 time in the future; absent means the secret does not expire.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
}

fn aad(vault_id: Uuid, key: &str) -> String {
    format!("vault_secret:{vault_id}:{key}")
}

fn from_row(row: &AnyRow) -> Result<VaultSecret, sqlx::Error> {
    Ok(VaultSecret {
        id: row.uuid("id")?,
        key: row.try_get("key")?,
        vault_id: row.uuid("vault_id")?,
        expires_at: row.try_get::<Option<i64>, _>("expires_at")?.map(from_micros),
        inserted_at: from_micros(row.try_get("created_at")?),
        updated_at: from_micros(row.try_get("updated_at")?),
    })
}

/// The decrypted secrets of a vault that have not expired at `now`
/// (microseconds), as (key, value) by key: an expired secret is not
/// injected. 404 when the account has no such vault.
pub async fn live_secret_values(
    state: &AppState,
    account_id: Uuid,
    vault_id: Uuid,
    now: i64,
) -> ApiResult<Vec<(String, String)>> {
    find(&state.db.pool, account_id, vault_id).await?;
    let rows = sqlx::query(
        "SELECT key, ciphertext FROM vault_secrets WHERE vault_id = $1 AND account_id = $2 \
         AND (expires_at IS NULL OR expires_at > $3) ORDER BY key",
    )
    .bind(vault_id.to_string())
    .bind(account_id.to_string())
    .bind(now)
    .fetch_all(&state.db.pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let key: String = row.try_get("key")?;
        let sealed: String = row.try_get("ciphertext")?;
        let value = state.crypto.decrypt(&state.db, account_id, &aad(vault_id, &key), &sealed).await?;
        out.push((key, value));
    }
    Ok(out)
}

/// One decrypted vault secret that has not expired at `now`, `None` when
/// there is none (the egress broker's binding source).
pub async fn live_secret_value(
    state: &AppState,
    account_id: Uuid,
    vault_id: Uuid,
    key: &str,
    now: i64,
) -> ApiResult<Option<String>> {
    let row = sqlx::query(
        "SELECT ciphertext FROM vault_secrets WHERE vault_id = $1 AND account_id = $2 AND key = $3 \
         AND (expires_at IS NULL OR expires_at > $4)",
    )
    .bind(vault_id.to_string())
    .bind(account_id.to_string())
    .bind(key.to_owned())
    .bind(now)
    .fetch_optional(&state.db.pool)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let sealed: String = row.try_get("ciphertext")?;
    Ok(Some(state.crypto.decrypt(&state.db, account_id, &aad(vault_id, key), &sealed).await?))
}

/// A sealed secret ready to be written into a vault.
pub(super) struct Sealed {
    key: String,
    sealed: String,
    expires_at: Option<i64>,
}

/// Opens every secret of `from` and seals it again for `to`, expired ones included.
pub(super) async fn reseal_all(state: &AppState, account_id: Uuid, from: Uuid, to: Uuid) -> ApiResult<Vec<Sealed>> {
    let rows = sqlx::query(
        "SELECT key, ciphertext, expires_at FROM vault_secrets WHERE vault_id = $1 AND account_id = $2 ORDER BY key",
    )
    .bind(from.to_string())
    .bind(account_id.to_string())
    .fetch_all(&state.db.pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let key: String = row.try_get("key")?;
        let sealed: String = row.try_get("ciphertext")?;
        let value = state.crypto.decrypt(&state.db, account_id, &aad(from, &key), &sealed).await?;
        let sealed = state.crypto.encrypt(&state.db, account_id, &aad(to, &key), &value).await?;
        out.push(Sealed { key, sealed, expires_at: row.try_get("expires_at")? });
    }
    Ok(out)
}

pub(super) async fn insert_copies(
    tx: &mut sqlx::Transaction<'_, Any>,
    account_id: Uuid,
    vault_id: Uuid,
    copies: Vec<Sealed>,
) -> Result<(), sqlx::Error> {
    let now = now_micros();
    for c in copies {
        insert(&mut **tx, account_id, vault_id, c, now).await?;
    }
    Ok(())
}

/// Writes a new secret row; returns its id.
async fn insert<'e, E: sqlx::Executor<'e, Database = Any>>(
    ex: E,
    account_id: Uuid,
    vault_id: Uuid,
    s: Sealed,
    now: i64,
) -> Result<Uuid, sqlx::Error> {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO vault_secrets (id, vault_id, account_id, key, ciphertext, expires_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
    )
    .bind(id.to_string())
    .bind(vault_id.to_string())
    .bind(account_id.to_string())
    .bind(s.key)
    .bind(s.sealed)
    .bind(s.expires_at)
    .bind(now)
    .execute(ex)
    .await?;
    Ok(id)
}

/// The vault's secrets by key, without values; expired ones are listed with `expires_at`.
#[utoipa::path(get, path = "/api/vaults/{id}/secrets", operation_id = "listVaultSecrets", tag = "vaults", params(("id" = Uuid, Path)),
    responses((status = 200, description = "Secrets by key; values are never returned", body = Data<Vec<VaultSecret>>)))]
pub(super) async fn list_secrets(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<Vec<VaultSecret>>> {
    find(&state.db.pool, p.account_id, id).await?;
    let rows = sqlx::query(
        "SELECT id, key, vault_id, expires_at, created_at, updated_at FROM vault_secrets \
         WHERE vault_id = $1 AND account_id = $2 ORDER BY key",
    )
    .bind(id.to_string())
    .bind(p.account_id.to_string())
    .fetch_all(&state.db.pool)
    .await?;
    Ok(ok(rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// Creates or replaces a secret (201 created, 200 replaced). A replacement
/// without `expires_at` no longer expires.
#[utoipa::path(put, path = "/api/vaults/{id}/secrets/{key}", operation_id = "putVaultSecret", tag = "vaults",
    params(("id" = Uuid, Path), ("key" = String, Path, description = "`[A-Za-z_][A-Za-z0-9_]*`, max 256")),
    request_body = VaultSecretValue,
    responses((status = 201, description = "Created", body = Data<VaultSecret>),
        (status = 200, description = "Replaced", body = Data<VaultSecret>)))]
pub(super) async fn put_secret(
    State(state): State<AppState>,
    p: Principal,
    Path((id, key)): Path<(Uuid, String)>,
    Json(req): Json<VaultSecretValue>,
) -> ApiResult<(StatusCode, Data<VaultSecret>)> {
    find(&state.db.pool, p.account_id, id).await?;
    check_secret(&key, &req.value, MAX_SECRET_VALUE)?;
    let now = now_micros();
    let expires_at = req.expires_at.map(to_micros);
    if expires_at.is_some_and(|e| e <= now) {
        return Err(ApiError::invalid("expires_at", "must be in the future"));
    }
    // Sealed before the transaction: a first seal may write the account's
    // data key on another connection, which SQLite's single writer would block.
    let sealed = state.crypto.encrypt(&state.db, p.account_id, &aad(id, &key), &req.value).await?;
    let mut tx = state.db.begin().await?;
    lock(&mut tx, p.account_id, id).await?;
    let existing = sqlx::query("SELECT id, created_at FROM vault_secrets WHERE vault_id = $1 AND key = $2")
        .bind(id.to_string())
        .bind(key.clone())
        .fetch_optional(&mut *tx)
        .await?;
    let (status, secret_id, created_at) = match existing {
        Some(row) => {
            let secret_id = row.uuid("id")?;
            sqlx::query("UPDATE vault_secrets SET ciphertext = $1, expires_at = $2, updated_at = $3 WHERE id = $4")
                .bind(sealed)
                .bind(expires_at)
                .bind(now)
                .bind(secret_id.to_string())
                .execute(&mut *tx)
                .await?;
            (StatusCode::OK, secret_id, row.try_get("created_at")?)
        }
        None => {
            let secret_id =
                insert(&mut *tx, p.account_id, id, Sealed { key: key.clone(), sealed, expires_at }, now).await?;
            (StatusCode::CREATED, secret_id, now)
        }
    };
    audit::record(&mut *tx, &Actor::key(&p), "vault.secret.set", Some(("vault_secret", secret_id))).await?;
    tx.commit().await?;
    let secret = VaultSecret {
        id: secret_id,
        key,
        vault_id: id,
        expires_at: expires_at.map(from_micros),
        inserted_at: from_micros(created_at),
        updated_at: from_micros(now),
    };
    Ok((status, ok(secret)))
}

/// Deletes a secret.
#[utoipa::path(delete, path = "/api/vaults/{id}/secrets/{key}", operation_id = "deleteVaultSecret", tag = "vaults",
    params(("id" = Uuid, Path), ("key" = String, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such vault or secret", body = crate::error::ErrorBody)))]
pub(super) async fn delete_secret(
    State(state): State<AppState>,
    p: Principal,
    Path((id, key)): Path<(Uuid, String)>,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    lock(&mut tx, p.account_id, id).await?;
    let secret_id = sqlx::query("SELECT id FROM vault_secrets WHERE vault_id = $1 AND key = $2")
        .bind(id.to_string())
        .bind(key)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| ApiError::not_found("Secret"))?
        .uuid("id")?;
    sqlx::query("DELETE FROM vault_secrets WHERE id = $1").bind(secret_id.to_string()).execute(&mut *tx).await?;
    audit::record(&mut *tx, &Actor::key(&p), "vault.secret.deleted", Some(("vault_secret", secret_id))).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environments::testing;

    async fn vault(state: &AppState, account_id: Uuid) -> Uuid {
        let id = Uuid::now_v7();
        sqlx::query("INSERT INTO vaults (id, account_id, name, created_at, updated_at) VALUES ($1, $2, 'v', 0, 0)")
            .bind(id.to_string())
            .bind(account_id.to_string())
            .execute(&state.db.pool)
            .await
            .unwrap();
        id
    }

    async fn put(state: &AppState, account_id: Uuid, vault_id: Uuid, key: &str, value: &str, expires_at: Option<i64>) {
        let sealed = state.crypto.encrypt(&state.db, account_id, &aad(vault_id, key), value).await.unwrap();
        insert(&state.db.pool, account_id, vault_id, Sealed { key: key.to_owned(), sealed, expires_at }, 0)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn expired_secrets_are_not_injected() {
        let t = testing::state().await;
        let (state, account) = (&t.state, t.account_id);
        let v = vault(state, account).await;
        let now = 1_000_000;
        put(state, account, v, "FOREVER", "f", None).await;
        put(state, account, v, "LATER", "l", Some(now + 1)).await;
        put(state, account, v, "EXACTLY_NOW", "n", Some(now)).await;
        put(state, account, v, "GONE", "g", Some(now - 1)).await;
        let live = live_secret_values(state, account, v, now).await.unwrap();
        assert_eq!(live, [("FOREVER".into(), "f".into()), ("LATER".into(), "l".into())]);
        let later = live_secret_values(state, account, v, now + 1).await.unwrap();
        assert_eq!(later, [("FOREVER".into(), "f".into())]);
        assert!(live_secret_values(state, Uuid::now_v7(), v, now).await.is_err(), "another account's id is not found");
    }

    #[tokio::test]
    async fn copies_are_resealed_for_the_new_vault() {
        let t = testing::state().await;
        let (state, account) = (&t.state, t.account_id);
        let from = vault(state, account).await;
        let to = vault(state, account).await;
        put(state, account, from, "A", "alpha", None).await;
        put(state, account, from, "OLD", "old", Some(5)).await;
        let copies = reseal_all(state, account, from, to).await.unwrap();
        let mut tx = state.db.begin().await.unwrap();
        insert_copies(&mut tx, account, to, copies).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(live_secret_values(state, account, to, 10).await.unwrap(), [("A".into(), "alpha".into())]);
        assert_eq!(live_secret_values(state, account, to, 1).await.unwrap().len(), 2, "the expiry came along");
        assert_eq!(live_secret_values(state, account, from, 1).await.unwrap().len(), 2, "the source is untouched");
    }
}
