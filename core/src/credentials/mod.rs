//! Inference credential sets (spec 2.5 and 4.3): named groups of model
//! provider credentials, exactly one of them the account's default. Values
//! are write-only and encrypted; lists name the providers held, never values.
//! Every route needs a full-scope key.

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
use crate::auth::Principal;
use crate::db::{RowExt, is_unique_violation};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Validator;
use crate::http::{Data, Json, Path, created, ok};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

/// Provider credential kinds (DESIGN section 1).
pub const PROVIDERS: [&str; 4] = ["anthropic_api_key", "claude_code_oauth_token", "openai_api_key", "gemini_api_key"];
pub const MAX_NAME: usize = 200;
pub const MAX_VALUE: usize = 16 * 1024;
/// Name of the set made by the first write through `/api/account/inference-credentials`.
pub const DEFAULT_SET_NAME: &str = "Default";

/// A linked subscription named by a set (`{id, name, status}`).
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenaiGrant {
    pub id: Uuid,
    pub name: String,
    /// `active`, `revoked`, `expired` or `disconnected`.
    #[schema(value_type = GrantStatus)]
    pub status: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InferenceCredentialSet {
    pub id: Uuid,
    pub name: String,
    /// Exactly one set per account is the default; it cannot be deleted.
    pub is_default: bool,
    /// Provider credentials held, never their values.
    pub providers: Vec<String>,
    pub openai_grant_id: Option<Uuid>,
    pub openai_grant: Option<OpenaiGrant>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InferenceCredentialStatus {
    pub provider: String,
    pub set: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CredentialSetCreate {
    /// 1 to 200 characters, unique in the account.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CredentialSetUpdate {
    pub name: Option<String>,
    /// Only `true` is accepted: promote this set to default.
    pub is_default: Option<bool>,
    /// A linked subscription this set runs `codex` on; null clears it.
    #[serde(default, deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub openai_grant_id: Option<Option<Uuid>>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CredentialValue {
    /// The credential; write-only.
    pub value: String,
}

fn aad(set_id: Uuid, provider: &str) -> String {
    format!("inference_credential:{set_id}:{provider}")
}

/// A provider kind this service knows; any other is 404 (it names no credential).
fn check_provider(provider: &str) -> ApiResult<()> {
    if PROVIDERS.contains(&provider) { Ok(()) } else { Err(ApiError::not_found("Provider")) }
}

/// Checks a set name: 1 to 200 characters, not blank.
pub fn check_name(v: &mut Validator, name: &str) {
    v.check(!name.trim().is_empty(), "name", "can't be blank");
    v.check(name.chars().count() <= MAX_NAME, "name", "should be at most 200 character(s)");
}

/// Checks a credential value: not blank, at most 16 KB.
pub fn check_value(value: &str) -> ApiResult<()> {
    let mut v = Validator::default();
    v.check(!value.trim().is_empty(), "value", "can't be blank");
    v.check(value.len() <= MAX_VALUE, "value", "should be at most 16384 bytes");
    v.finish()
}

/// The account's sets (or one of them), default first then by name, with providers filled in.
async fn load_sets(
    state: &AppState,
    account_id: Uuid,
    one: Option<Uuid>,
) -> Result<Vec<InferenceCredentialSet>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, name, is_default, openai_grant_id, created_at, updated_at FROM inference_credential_sets \
         WHERE account_id = $1 AND ($2 = '' OR id = $2) ORDER BY is_default DESC, name ASC",
    )
    .bind(account_id.to_string())
    .bind(one.map(|i| i.to_string()).unwrap_or_default())
    .fetch_all(&state.db.pool)
    .await?;
    let mut sets = rows.iter().map(set_from_row).collect::<Result<Vec<_>, _>>()?;
    for set in sets.iter_mut() {
        if let Some(grant_id) = set.openai_grant_id {
            set.openai_grant = grant_summary(state, account_id, grant_id).await.map(|g| OpenaiGrant {
                id: g.id,
                name: g.name,
                status: g.status,
            });
        }
    }
    let held =
        sqlx::query("SELECT set_id, provider FROM inference_credentials WHERE account_id = $1 ORDER BY provider")
            .bind(account_id.to_string())
            .fetch_all(&state.db.pool)
            .await?;
    for row in held {
        let set_id = row.uuid("set_id")?;
        if let Some(set) = sets.iter_mut().find(|s| s.id == set_id) {
            set.providers.push(row.try_get("provider")?);
        }
    }
    Ok(sets)
}

fn set_from_row(row: &AnyRow) -> Result<InferenceCredentialSet, sqlx::Error> {
    Ok(InferenceCredentialSet {
        id: row.uuid("id")?,
        name: row.try_get("name")?,
        is_default: row.flag("is_default")?,
        providers: Vec::new(),
        openai_grant_id: row.opt_uuid("openai_grant_id")?,
        openai_grant: None,
        inserted_at: from_micros(row.try_get("created_at")?),
        updated_at: from_micros(row.try_get("updated_at")?),
    })
}

async fn find_set(state: &AppState, account_id: Uuid, id: Uuid) -> ApiResult<InferenceCredentialSet> {
    load_sets(state, account_id, Some(id)).await?.pop().ok_or_else(|| ApiError::not_found("Inference credential set"))
}

/// The extension that links openai subscriptions, when one is compiled in.
pub fn openai_grants(state: &AppState) -> Option<std::sync::Arc<dyn crate::extension::GrantSource>> {
    state.extensions.grant_sources.iter().find(|g| g.vendor() == "openai").cloned()
}

/// A named subscription as a set shows it; `None` when it is gone (or its
/// extension is not compiled in, or failed to answer: logged).
async fn grant_summary(state: &AppState, account_id: Uuid, grant_id: Uuid) -> Option<crate::extension::GrantSummary> {
    let source = openai_grants(state)?;
    match source.grant(state, account_id, grant_id).await {
        Ok(summary) => summary,
        Err(e) => {
            tracing::warn!(grant = %grant_id, "the subscription was not read: {e}");
            None
        }
    }
}

/// What the server assembly registers to run when a set starts naming a
/// subscription: its running codex turns end (their source changed).
pub struct OnGrantNamed(pub for<'a> fn(&'a AppState, Uuid) -> crate::boxed::BoxFuture<'a, ()>);

/// The account's default set, if it has one.
pub async fn default_set_id(
    ex: impl sqlx::Executor<'_, Database = Any>,
    account_id: Uuid,
) -> Result<Option<Uuid>, sqlx::Error> {
    let row = sqlx::query("SELECT id FROM inference_credential_sets WHERE account_id = $1 AND is_default = 1")
        .bind(account_id.to_string())
        .fetch_optional(ex)
        .await?;
    row.map(|r| r.uuid("id")).transpose()
}

/// Serialises set creation per account (a row lock on PostgreSQL; SQLite
/// transactions already hold the write lock), so two first sets cannot
/// both become the default.
async fn lock_account(tx: &mut sqlx::Transaction<'_, Any>, account_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE accounts SET updated_at = updated_at WHERE id = $1")
        .bind(account_id.to_string())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Inserts a set; the account's first set becomes its default.
async fn insert_set(tx: &mut sqlx::Transaction<'_, Any>, account_id: Uuid, name: &str) -> ApiResult<Uuid> {
    lock_account(tx, account_id).await?;
    let is_default = default_set_id(&mut **tx, account_id).await?.is_none();
    let id = Uuid::now_v7();
    let now = now_micros();
    let inserted = sqlx::query(
        "INSERT INTO inference_credential_sets (id, account_id, name, is_default, revision, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, 1, $5, $5)",
    )
    .bind(id.to_string())
    .bind(account_id.to_string())
    .bind(name.to_owned())
    .bind(is_default as i32)
    .bind(now)
    .execute(&mut **tx)
    .await;
    match inserted {
        Err(e) if is_unique_violation(&e) => Err(ApiError::invalid("name", "has already been taken")),
        other => other.map(|_| id).map_err(ApiError::from),
    }
}

/// Bumps a set's revision: running conversations compare it to notice a changed source.
async fn touch(tx: &mut sqlx::Transaction<'_, Any>, set_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE inference_credential_sets SET revision = revision + 1, updated_at = $1 WHERE id = $2")
        .bind(now_micros())
        .bind(set_id.to_string())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Writes a value of `account_id`'s set, sealed under that account's data
/// key; `actor` is who did it (the account's own key, or the owner of a
/// claimable principal).
async fn put_value(
    state: &AppState,
    actor: &Actor,
    account_id: Uuid,
    set_id: Uuid,
    provider: &str,
    value: &str,
) -> ApiResult<()> {
    let sealed = state.crypto.encrypt(&state.db, account_id, &aad(set_id, provider), value).await?;
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    sqlx::query(
        "INSERT INTO inference_credentials (set_id, account_id, provider, ciphertext, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $5) \
         ON CONFLICT (set_id, provider) DO UPDATE SET ciphertext = excluded.ciphertext, updated_at = excluded.updated_at",
    )
    .bind(set_id.to_string())
    .bind(account_id.to_string())
    .bind(provider.to_owned())
    .bind(sealed)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    touch(&mut tx, set_id).await?;
    audit::record(&mut *tx, actor, "inference_credential.set", Some(("inference_credential_set", set_id))).await?;
    tx.commit().await?;
    Ok(())
}

async fn clear_value(state: &AppState, actor: &Actor, account_id: Uuid, set_id: Uuid, provider: &str) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    let done = sqlx::query("DELETE FROM inference_credentials WHERE set_id = $1 AND provider = $2 AND account_id = $3")
        .bind(set_id.to_string())
        .bind(provider.to_owned())
        .bind(account_id.to_string())
        .execute(&mut *tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(ApiError::not_found("Credential"));
    }
    touch(&mut tx, set_id).await?;
    audit::record(&mut *tx, actor, "inference_credential.deleted", Some(("inference_credential_set", set_id))).await?;
    tx.commit().await?;
    Ok(())
}

/// A decrypted provider credential of a set, for starting a runtime.
pub async fn credential_value(
    state: &AppState,
    account_id: Uuid,
    set_id: Uuid,
    provider: &str,
) -> Result<Option<String>, crate::secrets::CryptoError> {
    let row = sqlx::query(
        "SELECT ciphertext FROM inference_credentials WHERE set_id = $1 AND provider = $2 AND account_id = $3",
    )
    .bind(set_id.to_string())
    .bind(provider.to_owned())
    .bind(account_id.to_string())
    .fetch_optional(&state.db.pool)
    .await?;
    match row {
        Some(r) => {
            let sealed: String = r.try_get("ciphertext")?;
            Ok(Some(state.crypto.decrypt(&state.db, account_id, &aad(set_id, provider), &sealed).await?))
        }
        None => Ok(None),
    }
}

/// 409 `credential_set_is_default`: the default set cannot be deleted.
fn is_default_error() -> ApiError {
    ApiError::conflict("credential_set_is_default", "The default set cannot be deleted; promote another set first.")
        .with("reason", "is_default")
}

fn statuses(held: &[String]) -> Vec<InferenceCredentialStatus> {
    PROVIDERS
        .iter()
        .map(|p| InferenceCredentialStatus { provider: (*p).into(), set: held.iter().any(|h| h == p) })
        .collect()
}

/// The account's credential sets, default first then by name.
#[utoipa::path(get, path = "/api/account/inference-credential-sets", operation_id = "listCredentialSets", tag = "inference-credentials",
    responses((status = 200, body = Data<Vec<InferenceCredentialSet>>)))]
async fn list_sets(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<InferenceCredentialSet>>> {
    p.require_full()?;
    Ok(ok(load_sets(&state, p.account_id, None).await?))
}

/// Creates an empty set (the account's first set becomes its default).
#[utoipa::path(post, path = "/api/account/inference-credential-sets", operation_id = "createCredentialSet", tag = "inference-credentials",
    request_body = CredentialSetCreate, responses((status = 201, body = Data<InferenceCredentialSet>)))]
async fn create_set(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<CredentialSetCreate>,
) -> ApiResult<(StatusCode, Data<InferenceCredentialSet>)> {
    p.require_full()?;
    let mut v = Validator::default();
    check_name(&mut v, &req.name);
    v.finish()?;
    let mut tx = state.db.begin().await?;
    let id = insert_set(&mut tx, p.account_id, req.name.trim()).await?;
    audit::record(
        &mut *tx,
        &Actor::key(&p),
        "inference_credential_set.created",
        Some(("inference_credential_set", id)),
    )
    .await?;
    tx.commit().await?;
    Ok(created(find_set(&state, p.account_id, id).await?))
}

/// Renames, promotes to default, or names a subscription; omitted fields are unchanged.
#[utoipa::path(patch, path = "/api/account/inference-credential-sets/{id}", operation_id = "updateCredentialSet", tag = "inference-credentials",
    params(("id" = Uuid, Path)), request_body = CredentialSetUpdate,
    responses((status = 200, body = Data<InferenceCredentialSet>)))]
async fn update_set(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<CredentialSetUpdate>,
) -> ApiResult<Data<InferenceCredentialSet>> {
    p.require_full()?;
    let mut v = Validator::default();
    if let Some(name) = &req.name {
        check_name(&mut v, name);
    }
    v.check(req.is_default != Some(false), "is_default", "can only be set to true: promote another set instead");
    v.finish()?;
    find_set(&state, p.account_id, id).await?;
    if let Some(Some(grant_id)) = req.openai_grant_id
        && grant_summary(&state, p.account_id, grant_id).await.is_none()
    {
        return Err(ApiError::not_found("Subscription"));
    }
    let mut tx = state.db.begin().await?;
    if let Some(name) = &req.name {
        let renamed = sqlx::query("UPDATE inference_credential_sets SET name = $1, updated_at = $2 WHERE id = $3")
            .bind(name.trim().to_owned())
            .bind(now_micros())
            .bind(id.to_string())
            .execute(&mut *tx)
            .await;
        match renamed {
            Err(e) if is_unique_violation(&e) => return Err(ApiError::invalid("name", "has already been taken")),
            other => other?,
        };
    }
    if req.is_default == Some(true) {
        sqlx::query(
            "UPDATE inference_credential_sets SET is_default = 0 WHERE account_id = $1 AND is_default = 1 AND id <> $2",
        )
        .bind(p.account_id.to_string())
        .bind(id.to_string())
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE inference_credential_sets SET is_default = 1, updated_at = $1 WHERE id = $2")
            .bind(now_micros())
            .bind(id.to_string())
            .execute(&mut *tx)
            .await?;
    }
    let named = match req.openai_grant_id {
        Some(grant) => {
            sqlx::query("UPDATE inference_credential_sets SET openai_grant_id = $1 WHERE id = $2")
                .bind(grant.map(|g| g.to_string()))
                .bind(id.to_string())
                .execute(&mut *tx)
                .await?;
            touch(&mut tx, id).await?;
            grant.is_some()
        }
        None => false,
    };
    audit::record(
        &mut *tx,
        &Actor::key(&p),
        "inference_credential_set.updated",
        Some(("inference_credential_set", id)),
    )
    .await?;
    tx.commit().await?;
    if named && let Some(hook) = state.get::<OnGrantNamed>() {
        (hook.0)(&state, id).await;
    }
    Ok(ok(find_set(&state, p.account_id, id).await?))
}

/// Deletes a set that is not the default.
#[utoipa::path(delete, path = "/api/account/inference-credential-sets/{id}", operation_id = "deleteCredentialSet", tag = "inference-credentials",
    params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 409, description = "`credential_set_is_default` (`reason: is_default`)", body = crate::error::ErrorBody)))]
async fn delete_set(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<StatusCode> {
    p.require_full()?;
    let set = find_set(&state, p.account_id, id).await?;
    if set.is_default {
        return Err(is_default_error());
    }
    let mut tx = state.db.begin().await?;
    // The default check is repeated in the statement: a concurrent promotion cannot slip between.
    let done =
        sqlx::query("DELETE FROM inference_credential_sets WHERE id = $1 AND account_id = $2 AND is_default = 0")
            .bind(id.to_string())
            .bind(p.account_id.to_string())
            .execute(&mut *tx)
            .await?;
    if done.rows_affected() == 0 {
        return Err(is_default_error());
    }
    audit::record(
        &mut *tx,
        &Actor::key(&p),
        "inference_credential_set.deleted",
        Some(("inference_credential_set", id)),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sets one provider credential of a set.
#[utoipa::path(put, path = "/api/account/inference-credential-sets/{id}/credentials/{provider}", operation_id = "putCredentialSetCredential", tag = "inference-credentials",
    params(("id" = Uuid, Path), ("provider" = String, Path, description = "anthropic_api_key, claude_code_oauth_token, openai_api_key or gemini_api_key")),
    request_body = CredentialValue, responses((status = 200, body = Data<InferenceCredentialStatus>)))]
async fn put_set_credential(
    State(state): State<AppState>,
    p: Principal,
    Path((id, provider)): Path<(Uuid, String)>,
    Json(req): Json<CredentialValue>,
) -> ApiResult<Data<InferenceCredentialStatus>> {
    p.require_full()?;
    check_provider(&provider)?;
    check_value(&req.value)?;
    find_set(&state, p.account_id, id).await?;
    put_value(&state, &Actor::key(&p), p.account_id, id, &provider, &req.value).await?;
    Ok(ok(InferenceCredentialStatus { provider, set: true }))
}

/// Clears one provider credential of a set.
#[utoipa::path(delete, path = "/api/account/inference-credential-sets/{id}/credentials/{provider}", operation_id = "deleteCredentialSetCredential", tag = "inference-credentials",
    params(("id" = Uuid, Path), ("provider" = String, Path)), responses((status = 204, description = "Cleared")))]
async fn delete_set_credential(
    State(state): State<AppState>,
    p: Principal,
    Path((id, provider)): Path<(Uuid, String)>,
) -> ApiResult<StatusCode> {
    p.require_full()?;
    check_provider(&provider)?;
    find_set(&state, p.account_id, id).await?;
    clear_value(&state, &Actor::key(&p), p.account_id, id, &provider).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Which provider credentials the default set holds.
#[utoipa::path(get, path = "/api/account/inference-credentials", operation_id = "listDefaultCredentials", tag = "inference-credentials",
    responses((status = 200, body = Data<Vec<InferenceCredentialStatus>>)))]
async fn list_default(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<InferenceCredentialStatus>>> {
    p.require_full()?;
    let sets = load_sets(&state, p.account_id, None).await?;
    let held = sets.into_iter().find(|s| s.is_default).map(|s| s.providers).unwrap_or_default();
    Ok(ok(statuses(&held)))
}

/// Sets a provider credential on the default set, creating a `Default` set when the account has none.
#[utoipa::path(put, path = "/api/account/inference-credentials/{provider}", operation_id = "putDefaultCredential", tag = "inference-credentials",
    params(("provider" = String, Path)), request_body = CredentialValue,
    responses((status = 200, body = Data<InferenceCredentialStatus>)))]
async fn put_default(
    State(state): State<AppState>,
    p: Principal,
    Path(provider): Path<String>,
    Json(req): Json<CredentialValue>,
) -> ApiResult<Data<InferenceCredentialStatus>> {
    p.require_full()?;
    put_default_value(&state, &Actor::key(&p), p.account_id, &provider, &req.value).await?;
    Ok(ok(InferenceCredentialStatus { provider, set: true }))
}

/// Checks and writes a provider value on `account_id`'s default set,
/// creating a `Default` set when the account has none (spec 4.3). Shared by
/// the account's own route and a claimable principal's owner.
pub async fn put_default_value(
    state: &AppState,
    actor: &Actor,
    account_id: Uuid,
    provider: &str,
    value: &str,
) -> ApiResult<()> {
    check_provider(provider)?;
    check_value(value)?;
    // Looked up under the account lock, so two first writes share one `Default` set.
    let mut tx = state.db.begin().await?;
    lock_account(&mut tx, account_id).await?;
    let set_id = match default_set_id(&mut *tx, account_id).await? {
        Some(id) => id,
        None => {
            let id = insert_set(&mut tx, account_id, DEFAULT_SET_NAME).await?;
            audit::record(&mut *tx, actor, "inference_credential_set.created", Some(("inference_credential_set", id)))
                .await?;
            id
        }
    };
    tx.commit().await?;
    put_value(state, actor, account_id, set_id, provider, value).await
}

/// Clears a provider value of `account_id`'s default set (404 when it holds none).
pub async fn clear_default_value(state: &AppState, actor: &Actor, account_id: Uuid, provider: &str) -> ApiResult<()> {
    check_provider(provider)?;
    let set_id = default_set_id(&state.db.pool, account_id).await?.ok_or_else(|| ApiError::not_found("Credential"))?;
    clear_value(state, actor, account_id, set_id, provider).await
}

/// Clears a provider credential of the default set.
#[utoipa::path(delete, path = "/api/account/inference-credentials/{provider}", operation_id = "deleteDefaultCredential", tag = "inference-credentials",
    params(("provider" = String, Path)), responses((status = 204, description = "Cleared")))]
async fn delete_default(
    State(state): State<AppState>,
    p: Principal,
    Path(provider): Path<String>,
) -> ApiResult<StatusCode> {
    p.require_full()?;
    clear_default_value(&state, &Actor::key(&p), p.account_id, &provider).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_sets, create_set))
        .routes(routes!(update_set, delete_set))
        .routes(routes!(put_set_credential, delete_set_credential))
        .routes(routes!(list_default))
        .routes(routes!(put_default, delete_default))
}

acs_platform::string_enum!(
    GrantStatus,
    "The subscription grant's state.",
    ["active", "revoked", "expired", "disconnected"]
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_list_every_provider_in_order() {
        let s = statuses(&["openai_api_key".to_owned()]);
        assert_eq!(s.len(), 4);
        assert_eq!(s[0].provider, "anthropic_api_key");
        assert!(!s[0].set);
        assert!(s[2].set);
    }

    #[test]
    fn values_are_bounded() {
        assert!(check_value("sk-1").is_ok());
        assert!(check_value(" ").is_err());
        assert!(check_value(&"x".repeat(MAX_VALUE)).is_ok());
        assert!(check_value(&"x".repeat(MAX_VALUE + 1)).is_err());
    }

    #[test]
    fn absent_and_null_grant_differ() {
        let absent: CredentialSetUpdate = serde_json::from_str("{}").unwrap();
        assert!(absent.openai_grant_id.is_none());
        let null: CredentialSetUpdate = serde_json::from_str(r#"{"openai_grant_id": null}"#).unwrap();
        assert_eq!(null.openai_grant_id, Some(None));
    }
}
