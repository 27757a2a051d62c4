//! Vaults (spec 2.4): named sets of write-only secrets that override an
//! environment's baseline at spawn. A vault can be copied server-side, so
//! its values never cross the API.

pub mod secrets;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::any::AnyRow;
use sqlx::{Any, Row};
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::db::RowExt;
use crate::environments::rules::{MAX_NAME, check_name};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Validator;
use crate::http::{Data, Json, Path, created, ok};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};
pub use secrets::live_secret_values;

pub const MAX_DESCRIPTION: usize = 2000;
const COPY_SUFFIX: &str = " (copy)";

#[derive(Debug, Serialize, ToSchema)]
pub struct Vault {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub metadata: Map<String, Value>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// Body of create (`name` required) and update (omitted fields unchanged).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct VaultUpdate {
    /// 1 to 200 characters; required on create.
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// At most 2000 characters; null clears it.
    #[serde(default, deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    pub metadata: Option<Map<String, Value>>,
}

acs_platform::create_body!(
    /// The documented body of a vault create (the handler reads a `VaultUpdate`).
    VaultCreate from VaultUpdate, required ["name"],
    "Body of create: `name` is required; the rest as in an update."
);

/// Body of a copy; both fields optional.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct VaultCopyRequest {
    /// Default: the source's name followed by ` (copy)`, within 200 characters.
    pub name: Option<String>,
    /// Default: the source's description; null leaves the copy without one.
    #[serde(default, deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
}

const COLUMNS: &str = "id, name, description, metadata, created_at, updated_at";

fn from_row(row: &AnyRow) -> Result<Vault, sqlx::Error> {
    let metadata = match row.json("metadata")? {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    Ok(Vault {
        id: row.uuid("id")?,
        name: row.try_get("name")?,
        description: row.try_get("description")?,
        metadata,
        inserted_at: from_micros(row.try_get("created_at")?),
        updated_at: from_micros(row.try_get("updated_at")?),
    })
}

async fn find<'e, E: sqlx::Executor<'e, Database = Any>>(ex: E, account_id: Uuid, id: Uuid) -> ApiResult<Vault> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM vaults WHERE id = $1 AND account_id = $2"));
    let row = sqlx::query(sql)
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(ex)
        .await?
        .ok_or_else(|| ApiError::not_found("Vault"))?;
    Ok(from_row(&row)?)
}

/// Takes the vault's row lock first thing in a transaction (a no-op write);
/// 404 when the account has no such vault.
async fn lock(tx: &mut sqlx::Transaction<'_, Any>, account_id: Uuid, id: Uuid) -> ApiResult<()> {
    let done = sqlx::query("UPDATE vaults SET updated_at = updated_at WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(account_id.to_string())
        .execute(&mut **tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(ApiError::not_found("Vault"));
    }
    Ok(())
}

/// Checks a vault's name and description.
pub fn validate(name: &str, description: Option<&str>) -> ApiResult<()> {
    let mut v = Validator::default();
    check_name(&mut v, "name", name);
    if let Some(d) = description {
        v.check(d.chars().count() <= MAX_DESCRIPTION, "description", "should be at most 2000 character(s)");
    }
    v.finish()
}

/// The default name of a copy: the source's name, shortened so ` (copy)` still fits in 200 characters.
pub fn copy_name(source: &str) -> String {
    let keep = MAX_NAME - COPY_SUFFIX.chars().count();
    let base: String = source.chars().take(keep).collect();
    format!("{}{COPY_SUFFIX}", base.trim_end())
}

fn metadata_json(m: &Map<String, Value>) -> String {
    Value::Object(m.clone()).to_string()
}

async fn insert<'e, E: sqlx::Executor<'e, Database = Any>>(ex: E, account_id: Uuid, vault: &Vault) -> ApiResult<()> {
    sqlx::query(
        "INSERT INTO vaults (id, account_id, name, description, metadata, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
    )
    .bind(vault.id.to_string())
    .bind(account_id.to_string())
    .bind(vault.name.clone())
    .bind(vault.description.clone())
    .bind(metadata_json(&vault.metadata))
    .bind(crate::time_fmt::to_micros(vault.inserted_at))
    .execute(ex)
    .await?;
    Ok(())
}

/// The account's vaults, newest first.
#[utoipa::path(get, path = "/api/vaults", operation_id = "listVaults", tag = "vaults",
    responses((status = 200, description = "The account's vaults, newest first", body = Data<Vec<Vault>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<Vault>>> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM vaults WHERE account_id = $1 ORDER BY created_at DESC, id DESC"
    ));
    let rows = sqlx::query(sql).bind(p.account_id.to_string()).fetch_all(&state.db.pool).await?;
    Ok(ok(rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// Creates a vault; `name` is required.
#[utoipa::path(post, path = "/api/vaults", operation_id = "createVault", tag = "vaults", request_body = VaultCreate,
    responses((status = 201, description = "Created", body = Data<Vault>)))]
async fn create_vault(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<VaultUpdate>,
) -> ApiResult<(StatusCode, Data<Vault>)> {
    let name = req.name.unwrap_or_default();
    let description = req.description.flatten();
    validate(&name, description.as_deref())?;
    let at = from_micros(now_micros());
    let vault = Vault {
        id: Uuid::now_v7(),
        name: name.trim().to_owned(),
        description,
        metadata: req.metadata.unwrap_or_default(),
        inserted_at: at,
        updated_at: at,
    };
    let mut tx = state.db.begin().await?;
    insert(&mut *tx, p.account_id, &vault).await?;
    audit::record(&mut *tx, &Actor::key(&p), "vault.created", Some(("vault", vault.id))).await?;
    tx.commit().await?;
    Ok(created(vault))
}

/// One vault.
#[utoipa::path(get, path = "/api/vaults/{id}", operation_id = "getVault", tag = "vaults", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The vault", body = Data<Vault>)))]
async fn get_one(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<Vault>> {
    Ok(ok(find(&state.db.pool, p.account_id, id).await?))
}

/// Updates a vault; omitted fields are unchanged, a null `description` clears it.
#[utoipa::path(patch, path = "/api/vaults/{id}", operation_id = "updateVault", tag = "vaults", params(("id" = Uuid, Path)),
    request_body = VaultUpdate, responses((status = 200, description = "The updated vault", body = Data<Vault>)))]
async fn update_vault(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<VaultUpdate>,
) -> ApiResult<Data<Vault>> {
    let mut tx = state.db.begin().await?;
    lock(&mut tx, p.account_id, id).await?;
    let current = find(&mut *tx, p.account_id, id).await?;
    let name = req.name.unwrap_or(current.name);
    let description = req.description.unwrap_or(current.description);
    validate(&name, description.as_deref())?;
    let vault = Vault {
        name: name.trim().to_owned(),
        description,
        metadata: req.metadata.unwrap_or(current.metadata),
        updated_at: from_micros(now_micros()),
        ..current
    };
    sqlx::query(
        "UPDATE vaults SET name = $1, description = $2, metadata = $3, updated_at = $4 WHERE id = $5 AND account_id = $6",
    )
    .bind(vault.name.clone())
    .bind(vault.description.clone())
    .bind(metadata_json(&vault.metadata))
    .bind(crate::time_fmt::to_micros(vault.updated_at))
    .bind(id.to_string())
    .bind(p.account_id.to_string())
    .execute(&mut *tx)
    .await?;
    audit::record(&mut *tx, &Actor::key(&p), "vault.updated", Some(("vault", id))).await?;
    tx.commit().await?;
    Ok(ok(vault))
}

/// Deletes a vault and its secrets.
#[utoipa::path(delete, path = "/api/vaults/{id}", operation_id = "deleteVault", tag = "vaults", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such vault", body = crate::error::ErrorBody)))]
async fn delete_vault(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    // Secrets go with it (ON DELETE CASCADE).
    let done = sqlx::query("DELETE FROM vaults WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(p.account_id.to_string())
        .execute(&mut *tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(ApiError::not_found("Vault"));
    }
    audit::record(&mut *tx, &Actor::key(&p), "vault.deleted", Some(("vault", id))).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Copies a vault into a new one, secret values included (expired ones keep
/// their expiry). The values are re-sealed on the server and never returned.
#[utoipa::path(post, path = "/api/vaults/{id}/copy", operation_id = "copyVault", tag = "vaults", params(("id" = Uuid, Path)),
    request_body = VaultCopyRequest, responses((status = 201, description = "The new vault", body = Data<Vault>)))]
async fn copy_vault(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<VaultCopyRequest>,
) -> ApiResult<(StatusCode, Data<Vault>)> {
    let source = find(&state.db.pool, p.account_id, id).await?;
    let name = req.name.unwrap_or_else(|| copy_name(&source.name));
    let description = req.description.unwrap_or(source.description);
    validate(&name, description.as_deref())?;
    let at = from_micros(now_micros());
    let vault = Vault {
        id: Uuid::now_v7(),
        name: name.trim().to_owned(),
        description,
        metadata: source.metadata,
        inserted_at: at,
        updated_at: at,
    };
    // Re-sealed before the transaction (see `secrets::put_secret`).
    let copies = secrets::reseal_all(&state, p.account_id, id, vault.id).await?;
    let mut tx = state.db.begin().await?;
    insert(&mut *tx, p.account_id, &vault).await?;
    secrets::insert_copies(&mut tx, p.account_id, vault.id, copies).await?;
    audit::record(&mut *tx, &Actor::key(&p), "vault.copied", Some(("vault", vault.id))).await?;
    tx.commit().await?;
    Ok(created(vault))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create_vault))
        .routes(routes!(get_one, update_vault, delete_vault))
        .routes(routes!(copy_vault))
        .routes(routes!(secrets::list_secrets))
        .routes(routes!(secrets::put_secret, secrets::delete_secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_descriptions_are_bounded() {
        assert!(validate("v", None).is_ok());
        assert!(validate(&"x".repeat(200), Some(&"d".repeat(2000))).is_ok());
        assert!(validate(&"x".repeat(201), None).is_err());
        assert!(validate("", None).is_err());
        assert!(validate("v", Some(&"d".repeat(2001))).is_err());
    }

    #[test]
    fn copies_keep_the_suffix_within_200() {
        assert_eq!(copy_name("prod"), "prod (copy)");
        let long = copy_name(&"é".repeat(200));
        assert_eq!(long.chars().count(), 200);
        assert!(long.ends_with(" (copy)"));
        assert_eq!(copy_name(&format!("{} tail", "a".repeat(192))), format!("{} (copy)", "a".repeat(192)));
    }

    #[test]
    fn absent_and_null_description_differ() {
        let absent: VaultUpdate = serde_json::from_str("{}").unwrap();
        assert!(absent.description.is_none());
        let null: VaultUpdate = serde_json::from_str(r#"{"description": null}"#).unwrap();
        assert_eq!(null.description, Some(None));
    }
}
