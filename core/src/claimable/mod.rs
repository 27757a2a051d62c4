//! Claimable principals (DESIGN 9.3, spec 4.3, docs/claimable.md): an
//! account without email or password, opened by an application account
//! that owns it until a person claims it. The application gets keys that
//! act as the principal and may write the principal's model credentials;
//! the claim hands the principal (same id, same resources) to the claimer
//! and revokes every key the application held for it.

pub mod rules;

use std::collections::HashSet;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Serialize;
use sqlx::{Any, Row};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::audit::{self, Actor};
use crate::auth::{Principal, Scope};
use crate::credentials::{self, CredentialValue};
use crate::db::{Db, RowExt, is_unique_violation};
use crate::error::{ApiError, ApiResult};
use crate::http::{Data, Json, Path, ok};
use crate::keys;
use crate::state::AppState;
use crate::time_fmt::now_micros;

use rules::Grant;

/// Name of the keys minted for the application.
const APPLICATION_KEY_NAME: &str = "application";
/// Name of the key the claim gives the claimer.
const CLAIMED_KEY_NAME: &str = "claimed";

/// A principal as its application sees it on create.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClaimableUser {
    /// The claim grant id: used in this resource's paths and handed to the person who claims it.
    pub id: Uuid,
    /// The principal's account id (its tenant), kept by the claim.
    pub account_id: Uuid,
    /// A full-scope key that acts as the principal; shown once. Every create
    /// (repeats too) mints a new one; earlier ones keep working until the claim.
    pub api_key: String,
    /// Always false here: a claimed principal is no longer the application's.
    pub claimed: bool,
}

/// The response of `createClaimableUser` (spec 2.8).
#[derive(Debug, Serialize, ToSchema)]
pub struct ClaimableUserCreatedResponse {
    pub data: ClaimableUser,
}

/// What the claimer receives.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClaimedUser {
    /// The principal's account id, unchanged by the claim.
    pub account_id: Uuid,
    /// A new full-scope key of the principal, for the claimer; shown once.
    pub api_key: String,
}

const GRANT_COLUMNS: &str = "id, account_id, owner_id, claimed_at";

fn grant_from_row(row: &sqlx::any::AnyRow) -> Result<Grant, sqlx::Error> {
    Ok(Grant {
        id: row.uuid("id")?,
        account_id: row.uuid("account_id")?,
        owner_id: row.uuid("owner_id")?,
        claimed: row.try_get::<Option<i64>, _>("claimed_at")?.is_some(),
    })
}

async fn grant_by_id(ex: impl sqlx::Executor<'_, Database = Any>, id: Uuid) -> Result<Option<Grant>, sqlx::Error> {
    let sql = format!("SELECT {GRANT_COLUMNS} FROM claim_grants WHERE id = $1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id.to_string()).fetch_optional(ex).await?;
    row.as_ref().map(grant_from_row).transpose()
}

async fn grant_by_idempotency_key(db: &Db, application: Uuid, key: &str) -> Result<Option<Grant>, sqlx::Error> {
    let sql = format!("SELECT {GRANT_COLUMNS} FROM claim_grants WHERE application_id = $1 AND idempotency_key = $2");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(application.to_string())
        .bind(key.to_owned())
        .fetch_optional(&db.pool)
        .await?;
    row.as_ref().map(grant_from_row).transpose()
}

/// The grant `id` if `caller` owns it now; 404 otherwise.
async fn owned_grant(db: &Db, id: Uuid, caller: Uuid) -> ApiResult<Grant> {
    grant_by_id(&db.pool, id).await?.filter(|g| g.visible_to(caller)).ok_or_else(rules::not_found)
}

/// Whether the account is a claimable principal: an account without email.
async fn is_principal(db: &Db, account_id: Uuid) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM accounts WHERE id = $1 AND email IS NULL")
        .bind(account_id.to_string())
        .fetch_one(&db.pool)
        .await?;
    Ok(n > 0)
}

/// Principal account ids that `owner_account_id` still owns unclaimed:
/// account deletion deletes them with their owner.
pub async fn owned_unclaimed(db: &Db, owner_account_id: Uuid) -> Result<Vec<Uuid>, sqlx::Error> {
    let rows = sqlx::query("SELECT account_id FROM claim_grants WHERE owner_id = $1 AND claimed_at IS NULL")
        .bind(owner_account_id.to_string())
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(|r| r.uuid("account_id")).collect()
}

/// An audit row in the principal's own log, done by the owner's key.
fn in_principal_log(p: &Principal, principal: Uuid) -> Actor {
    Actor { account_id: principal, ..Actor::key(p) }
}

/// Mints a full-scope key of the principal for its application, recorded
/// as the application's (the claim deletes it).
async fn mint_for_application(
    tx: &mut sqlx::Transaction<'static, Any>,
    p: &Principal,
    grant: &Grant,
) -> Result<String, sqlx::Error> {
    let key = keys::create(&mut **tx, grant.account_id, APPLICATION_KEY_NAME, Scope::Full, None).await?;
    sqlx::query("INSERT INTO claimable_keys (key_id, grant_id) VALUES ($1, $2)")
        .bind(key.key.id.to_string())
        .bind(grant.id.to_string())
        .execute(&mut **tx)
        .await?;
    audit::record(&mut **tx, &in_principal_log(p, grant.account_id), "api_key.created", Some(("api_key", key.key.id)))
        .await?;
    Ok(key.api_key)
}

/// Opens a principal, or `None` when another request with the same
/// idempotency key opened it first (the caller then takes the repeat path).
async fn open(state: &AppState, p: &Principal, idempotency_key: &str) -> ApiResult<Option<ClaimableUser>> {
    let now = now_micros();
    let grant = Grant { id: Uuid::new_v4(), account_id: Uuid::now_v7(), owner_id: p.account_id, claimed: false };
    let mut tx = state.db.begin().await?;
    sqlx::query(
        "INSERT INTO accounts (id, email, password_hash, email_verified, created_at, updated_at) \
         VALUES ($1, NULL, NULL, 0, $2, $2)",
    )
    .bind(grant.account_id.to_string())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    let inserted = sqlx::query(
        "INSERT INTO claim_grants (id, account_id, owner_id, application_id, idempotency_key, created_at, updated_at) \
         VALUES ($1, $2, $3, $3, $4, $5, $5)",
    )
    .bind(grant.id.to_string())
    .bind(grant.account_id.to_string())
    .bind(p.account_id.to_string())
    .bind(idempotency_key.to_owned())
    .bind(now)
    .execute(&mut *tx)
    .await;
    match inserted {
        // The unique (application, key) pair lost a race: nothing of this attempt stays.
        Err(e) if is_unique_violation(&e) => return Ok(None),
        other => other?,
    };
    let target = Some(("claimable_user", grant.id));
    audit::record(&mut *tx, &Actor::key(p), "claimable_user.created", target).await?;
    audit::record(&mut *tx, &in_principal_log(p, grant.account_id), "claimable_user.created", target).await?;
    let api_key = mint_for_application(&mut tx, p, &grant).await?;
    tx.commit().await?;
    Ok(Some(ClaimableUser { id: grant.id, account_id: grant.account_id, api_key, claimed: false }))
}

/// A repeat: a fresh key for the principal the idempotency key opened,
/// unless it was claimed meanwhile.
async fn repeat(state: &AppState, p: &Principal, grant: Grant) -> ApiResult<ClaimableUser> {
    rules::check_repeat(&grant)?;
    let mut tx = state.db.begin().await?;
    // Rechecked under the write lock: a claim committed since the read wins.
    let still_open =
        sqlx::query("UPDATE claim_grants SET updated_at = $1 WHERE id = $2 AND owner_id = $3 AND claimed_at IS NULL")
            .bind(now_micros())
            .bind(grant.id.to_string())
            .bind(p.account_id.to_string())
            .execute(&mut *tx)
            .await?;
    if still_open.rows_affected() == 0 {
        return Err(rules::claimed_since_opened());
    }
    let api_key = mint_for_application(&mut tx, p, &grant).await?;
    audit::record(&mut *tx, &Actor::key(p), "claimable_user.key_issued", Some(("claimable_user", grant.id))).await?;
    tx.commit().await?;
    Ok(ClaimableUser { id: grant.id, account_id: grant.account_id, api_key, claimed: false })
}

/// Opens a claimable principal (an account without email or password) owned by the calling application.
///
/// The `Idempotency-Key` header reconciles a lost response: a repeat with the
/// same key returns the same principal (200) with a fresh `api_key`; earlier
/// keys keep working.
#[utoipa::path(post, path = "/api/claimable-users", operation_id = "createClaimableUser", tag = "claimable-users",
    params(("Idempotency-Key" = String, Header, min_length = 1, max_length = 200, description = "1 to 200 characters, no NUL; required")),
    responses(
        (status = 201, description = "Opened", body = ClaimableUserCreatedResponse),
        (status = 200, description = "A repeat: the principal this key opened, with a fresh `api_key`", body = ClaimableUserCreatedResponse),
        (status = 403, description = "`insufficient_scope`, or `principal_not_allowed` for a principal's key", body = crate::error::ErrorBody),
        (status = 409, description = "`already_claimed`: the principal of this key was claimed", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed` on `Idempotency-Key`", body = crate::error::ErrorBody)))]
async fn create_claimable_user(
    State(state): State<AppState>,
    p: Principal,
    headers: HeaderMap,
) -> ApiResult<(StatusCode, axum::Json<ClaimableUserCreatedResponse>)> {
    p.require_full()?;
    let key = rules::idempotency_key(headers.get(rules::HEADER))?;
    if is_principal(&state.db, p.account_id).await? {
        return Err(rules::principal_not_allowed());
    }
    // Two rounds at most: a create that loses the race finds the winner's row.
    for _ in 0..2 {
        if let Some(grant) = grant_by_idempotency_key(&state.db, p.account_id, &key).await? {
            let data = repeat(&state, &p, grant).await?;
            return Ok((StatusCode::OK, axum::Json(ClaimableUserCreatedResponse { data })));
        }
        if let Some(data) = open(&state, &p, &key).await? {
            return Ok((StatusCode::CREATED, axum::Json(ClaimableUserCreatedResponse { data })));
        }
    }
    Err(ApiError::internal())
}

/// Sets a provider credential on the principal's default set (the current owner's full-scope key).
///
/// Creates a `Default` set when the principal has none. The value is
/// encrypted under the principal's own data key and not checked with the provider.
#[utoipa::path(put, path = "/api/claimable-users/{id}/inference-credentials/{provider}", operation_id = "putClaimableUserCredential", tag = "claimable-users",
    params(("id" = Uuid, Path, description = "The claim grant id"),
        ("provider" = String, Path, description = "anthropic_api_key, claude_code_oauth_token, openai_api_key or gemini_api_key")),
    request_body = CredentialValue,
    responses((status = 204, description = "Set"),
        (status = 404, description = "No such grant owned by the caller, or an unknown provider", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed` on `value`", body = crate::error::ErrorBody)))]
async fn put_claimable_user_credential(
    State(state): State<AppState>,
    p: Principal,
    Path((id, provider)): Path<(Uuid, String)>,
    Json(req): Json<CredentialValue>,
) -> ApiResult<StatusCode> {
    p.require_full()?;
    let grant = owned_grant(&state.db, id, p.account_id).await?;
    let actor = in_principal_log(&p, grant.account_id);
    credentials::put_default_value(&state, &actor, grant.account_id, &provider, &req.value).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Clears a provider credential of the principal's default set (the current owner's full-scope key).
#[utoipa::path(delete, path = "/api/claimable-users/{id}/inference-credentials/{provider}", operation_id = "deleteClaimableUserCredential", tag = "claimable-users",
    params(("id" = Uuid, Path, description = "The claim grant id"), ("provider" = String, Path)),
    responses((status = 204, description = "Cleared"),
        (status = 404, description = "No such grant owned by the caller, an unknown provider, or no value held", body = crate::error::ErrorBody)))]
async fn delete_claimable_user_credential(
    State(state): State<AppState>,
    p: Principal,
    Path((id, provider)): Path<(Uuid, String)>,
) -> ApiResult<StatusCode> {
    p.require_full()?;
    let grant = owned_grant(&state.db, id, p.account_id).await?;
    let actor = in_principal_log(&p, grant.account_id);
    credentials::clear_default_value(&state, &actor, grant.account_id, &provider).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes the keys of `principal` that anyone but a new claimer could
/// hold: every key except machines' callback keys and `keep`, made at or
/// before `until`. Returns the ids deleted.
async fn revoke_application_keys(
    ex: impl sqlx::Executor<'_, Database = Any>,
    principal: Uuid,
    keep: Uuid,
    until: i64,
) -> Result<Vec<Uuid>, sqlx::Error> {
    let rows = sqlx::query(
        "DELETE FROM api_keys WHERE account_id = $1 AND scope <> $2 AND id <> $3 AND created_at <= $4 RETURNING id",
    )
    .bind(principal.to_string())
    .bind(Scope::Sandbox.as_str())
    .bind(keep.to_string())
    .bind(until)
    .fetch_all(ex)
    .await?;
    rows.iter().map(|r| r.uuid("id")).collect()
}

/// Claims a principal for the calling account (the claiming person's full-scope key).
///
/// The principal keeps its account id, tenant and every resource; its owner
/// becomes the caller. Every key the application held for it stops working
/// at once, and the application's further calls on `{id}` are 404.
#[utoipa::path(post, path = "/api/claimable-users/{id}/claim", operation_id = "claimClaimableUser", tag = "claimable-users",
    params(("id" = Uuid, Path, description = "The claim grant id")),
    responses((status = 200, description = "Claimed: a new key of the principal for the claimer", body = Data<ClaimedUser>),
        (status = 403, description = "`insufficient_scope`, or `principal_not_allowed` for a principal's key", body = crate::error::ErrorBody),
        (status = 404, description = "No such grant, or claimed by another account", body = crate::error::ErrorBody),
        (status = 409, description = "`already_claimed` (by the caller) or `already_owner` (the application itself)", body = crate::error::ErrorBody)))]
async fn claim_claimable_user(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<ClaimedUser>> {
    p.require_full()?;
    if is_principal(&state.db, p.account_id).await? {
        return Err(rules::principal_not_allowed());
    }
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    let grant = grant_by_id(&mut *tx, id).await?;
    rules::check_claim(grant.as_ref(), p.account_id)?;
    let grant = grant.ok_or_else(rules::not_found)?;
    // Conditional, so of two claims racing on PostgreSQL exactly one moves the owner.
    let moved = sqlx::query(
        "UPDATE claim_grants SET owner_id = $1, claimed_at = $2, updated_at = $2 \
         WHERE id = $3 AND owner_id = $4 AND claimed_at IS NULL",
    )
    .bind(p.account_id.to_string())
    .bind(now)
    .bind(id.to_string())
    .bind(grant.owner_id.to_string())
    .execute(&mut *tx)
    .await?;
    if moved.rows_affected() == 0 {
        return Err(rules::not_found());
    }
    let principal = grant.account_id;
    // Keys made through the application's keys (POST /api/keys, a device
    // login) are the application's too: every key of the principal goes,
    // with its sessions, approved device logins and unspent OAuth codes,
    // each of which would mint more.
    let mut revoked = revoke_application_keys(&mut *tx, principal, Uuid::nil(), i64::MAX).await?;
    for table in ["browser_sessions", "device_logins", "oauth_codes"] {
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE account_id = $1")))
            .bind(principal.to_string())
            .execute(&mut *tx)
            .await?;
    }
    let key = keys::create(&mut *tx, principal, CLAIMED_KEY_NAME, Scope::Full, None).await?;
    let target = Some(("claimable_user", id));
    audit::record(&mut *tx, &Actor::key(&p), "claimable_user.claimed", target).await?;
    audit::record(&mut *tx, &in_principal_log(&p, principal), "claimable_user.claimed", target).await?;
    tx.commit().await?;
    // A request authenticated by an application key just before the commit
    // may still be minting a key on PostgreSQL; one more sweep takes it. No
    // other key of the principal can be legitimate yet: the claimer has not
    // seen its key.
    revoked.extend(revoke_application_keys(&state.db.pool, principal, key.key.id, now_micros()).await?);
    let revoked: HashSet<Uuid> = revoked.into_iter().collect();
    state.key_cache.remove_where(|k| revoked.contains(&k.key_id));
    Ok(ok(ClaimedUser { account_id: principal, api_key: key.api_key }))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_claimable_user))
        .routes(routes!(put_claimable_user_credential, delete_claimable_user_credential))
        .routes(routes!(claim_claimable_user))
}
