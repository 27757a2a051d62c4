//! OAuth 2.0 for browser apps (spec 4.4, 5.4, 5.6; DESIGN 9.2; docs/oauth.md):
//! an account registers clients (public clients: PKCE, no secret) with
//! exact redirect URIs; a signed-in person approves at `/oauth/authorize`;
//! the app exchanges the code and its PKCE verifier at `/api/oauth/token`
//! for an API key. A new client signs in only its own account until an
//! operator publishes it; after that only an operator changes or removes it.
//! Registered redirect origins may call `/api` from a browser (`cors`).

pub mod authorize;
pub mod cors;
pub mod rules;
pub mod token;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::db::{Db, RowExt};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Validator;
use crate::http::{Data, Json, Path, created, ok};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

/// A registered OAuth client (a public client: it proves itself with PKCE, not a secret).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OAuthClient {
    pub id: Uuid,
    /// The `client_id` of the authorization request (the same value as `id`).
    pub client_id: Uuid,
    pub name: String,
    /// Exact redirect URIs.
    pub redirect_uris: Vec<String>,
    /// Published by an operator: any account may sign in with it, and only an
    /// operator changes or removes it. Until then it signs in only this account.
    pub published: bool,
    #[serde(with = "time::serde::rfc3339::option")]
    pub published_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(skip)]
    pub account_id: Uuid,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct OAuthClientCreateRequest {
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// `https` URLs, or `http` on `localhost` / `127.0.0.1` (any port); no fragment.
    #[schema(min_items = 1, max_items = 20)]
    pub redirect_uris: Vec<String>,
}

/// An omitted field is unchanged; `redirect_uris` replaces the list.
#[derive(Debug, Deserialize, ToSchema)]
pub struct OAuthClientUpdateRequest {
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    #[schema(min_items = 1, max_items = 20)]
    pub redirect_uris: Option<Vec<String>>,
}

fn from_row(row: &AnyRow) -> Result<OAuthClient, sqlx::Error> {
    let id = row.uuid("id")?;
    let uris: String = row.try_get("redirect_uris")?;
    Ok(OAuthClient {
        id,
        client_id: id,
        name: row.try_get("name")?,
        redirect_uris: serde_json::from_str(&uris).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        published: row.try_get::<Option<i64>, _>("published_at")?.is_some(),
        published_at: row.try_get::<Option<i64>, _>("published_at")?.map(from_micros),
        inserted_at: from_micros(row.try_get("created_at")?),
        updated_at: from_micros(row.try_get("updated_at")?),
        account_id: row.uuid("account_id")?,
    })
}

const COLUMNS: &str = "id, account_id, name, redirect_uris, published_at, created_at, updated_at";

/// A client by id, whoever owns it.
pub async fn find(db: &Db, id: Uuid) -> Result<Option<OAuthClient>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM oauth_clients WHERE id = $1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id.to_string()).fetch_optional(&db.pool).await?;
    row.as_ref().map(from_row).transpose()
}

/// The caller's client, or 404 (another account's is 404 too).
async fn owned(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<OAuthClient> {
    find(&state.db, id)
        .await?
        .filter(|c| c.account_id == p.account_id)
        .ok_or_else(|| ApiError::not_found("OAuth client"))
}

fn published_refusal() -> ApiError {
    ApiError::conflict(
        "oauth_client_published",
        "The client is published; only an operator can change or remove it now.",
    )
}

/// Publishes a client (an operator's act: `acs oauth-clients publish`, the
/// admin extension): any account may sign in with it from now on. `false`
/// when no such client exists.
pub async fn publish(db: &Db, id: Uuid) -> Result<bool, sqlx::Error> {
    let now = now_micros();
    let mut tx = db.begin().await?;
    let done = sqlx::query(
        "UPDATE oauth_clients SET published_at = COALESCE(published_at, $1), updated_at = $1 WHERE id = $2",
    )
    .bind(now)
    .bind(id.to_string())
    .execute(&mut *tx)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    let owner: String = sqlx::query_scalar("SELECT account_id FROM oauth_clients WHERE id = $1")
        .bind(id.to_string())
        .fetch_one(&mut *tx)
        .await?;
    let owner: Uuid = owner.parse().map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    let operator = Actor { account_id: owner, kind: "service", id: None, ip: None };
    audit::record(&mut *tx, &operator, "oauth_client.published", Some(("oauth_client", id))).await?;
    tx.commit().await?;
    Ok(true)
}

/// Lists the account's OAuth clients, oldest first.
#[utoipa::path(get, path = "/api/oauth/clients", operation_id = "listOAuthClients", tag = "oauth",
    responses((status = 200, description = "The account's clients", body = Data<Vec<OAuthClient>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<OAuthClient>>> {
    p.require_full()?;
    let sql = format!("SELECT {COLUMNS} FROM oauth_clients WHERE account_id = $1 ORDER BY created_at, id");
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(p.account_id.to_string()).fetch_all(&state.db.pool).await?;
    Ok(ok(rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// Registers an OAuth client (25 per account); it starts in development mode.
#[utoipa::path(post, path = "/api/oauth/clients", operation_id = "createOAuthClient", tag = "oauth",
    request_body = OAuthClientCreateRequest,
    responses((status = 201, description = "Registered", body = Data<OAuthClient>),
        (status = 409, description = "`oauth_client_limit_reached` with `count` and `limit`", body = crate::error::ErrorBody)))]
async fn create(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<OAuthClientCreateRequest>,
) -> ApiResult<(StatusCode, Data<OAuthClient>)> {
    p.require_full()?;
    let name = req.name.trim().to_owned();
    let mut v = Validator::default();
    rules::check_name(&mut v, &name);
    rules::check_redirect_uris(&mut v, &req.redirect_uris);
    v.finish()?;
    let now = now_micros();
    let id = Uuid::now_v7();
    let mut tx = state.db.begin().await?;
    // Counted inside the transaction that inserts; on PostgreSQL the
    // account's row lock makes two racing creates count one after the other.
    if state.db.backend == crate::db::Backend::Postgres {
        sqlx::query("SELECT id FROM accounts WHERE id = $1 FOR UPDATE")
            .bind(p.account_id.to_string())
            .execute(&mut *tx)
            .await?;
    }
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oauth_clients WHERE account_id = $1")
        .bind(p.account_id.to_string())
        .fetch_one(&mut *tx)
        .await?;
    if count >= rules::MAX_CLIENTS {
        return Err(ApiError::conflict(
            "oauth_client_limit_reached",
            format!("An account may register at most {} OAuth clients.", rules::MAX_CLIENTS),
        )
        .with("count", count)
        .with("limit", rules::MAX_CLIENTS));
    }
    sqlx::query(
        "INSERT INTO oauth_clients (id, account_id, name, redirect_uris, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)",
    )
    .bind(id.to_string())
    .bind(p.account_id.to_string())
    .bind(name)
    .bind(serde_json::to_string(&req.redirect_uris).unwrap_or_default())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    audit::record(&mut *tx, &Actor::key(&p), "oauth_client.created", Some(("oauth_client", id))).await?;
    tx.commit().await?;
    cors::changed(&state);
    let client = find(&state.db, id).await?.ok_or_else(ApiError::internal)?;
    Ok(created(client))
}

/// Reads one of the account's OAuth clients.
#[utoipa::path(get, path = "/api/oauth/clients/{id}", operation_id = "getOAuthClient", tag = "oauth",
    params(("id" = Uuid, Path)),
    responses((status = 200, description = "The client", body = Data<OAuthClient>),
        (status = 404, description = "`not_found`", body = crate::error::ErrorBody)))]
async fn get(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<OAuthClient>> {
    p.require_full()?;
    Ok(ok(owned(&state, &p, id).await?))
}

/// Renames a client or replaces its redirect URIs (refused once published).
#[utoipa::path(patch, path = "/api/oauth/clients/{id}", operation_id = "updateOAuthClient", tag = "oauth",
    params(("id" = Uuid, Path)), request_body = OAuthClientUpdateRequest,
    responses((status = 200, description = "Updated", body = Data<OAuthClient>),
        (status = 404, description = "`not_found`", body = crate::error::ErrorBody),
        (status = 409, description = "`oauth_client_published`", body = crate::error::ErrorBody)))]
async fn update(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<OAuthClientUpdateRequest>,
) -> ApiResult<Data<OAuthClient>> {
    p.require_full()?;
    let name = req.name.as_deref().map(str::trim);
    let mut v = Validator::default();
    if let Some(name) = name {
        rules::check_name(&mut v, name);
    }
    if let Some(uris) = &req.redirect_uris {
        rules::check_redirect_uris(&mut v, uris);
    }
    v.finish()?;
    let client = owned(&state, &p, id).await?;
    if client.published {
        return Err(published_refusal());
    }
    let mut tx = state.db.begin().await?;
    // The publish check is repeated in the write (see commit_owner_change).
    let done = sqlx::query(
        "UPDATE oauth_clients SET name = $1, redirect_uris = $2, updated_at = $3 \
         WHERE id = $4 AND account_id = $5 AND published_at IS NULL",
    )
    .bind(name.unwrap_or(&client.name).to_owned())
    .bind(serde_json::to_string(req.redirect_uris.as_ref().unwrap_or(&client.redirect_uris)).unwrap_or_default())
    .bind(now_micros())
    .bind(id.to_string())
    .bind(p.account_id.to_string())
    .execute(&mut *tx)
    .await?;
    commit_owner_change(&state, &p, tx, done.rows_affected(), "oauth_client.updated", id).await?;
    Ok(ok(owned(&state, &p, id).await?))
}

/// Commits an owner's write to an unpublished client with its audit row. A
/// write that touched no row met a publish made since the client was read:
/// the publish wins.
async fn commit_owner_change(
    state: &AppState,
    p: &Principal,
    mut tx: sqlx::Transaction<'static, sqlx::Any>,
    rows_affected: u64,
    action: &str,
    id: Uuid,
) -> ApiResult<()> {
    if rows_affected == 0 {
        return Err(published_refusal());
    }
    audit::record(&mut *tx, &Actor::key(p), action, Some(("oauth_client", id))).await?;
    tx.commit().await?;
    cors::changed(state);
    Ok(())
}

/// Removes a client (refused once published); its pending codes go with it.
#[utoipa::path(delete, path = "/api/oauth/clients/{id}", operation_id = "deleteOAuthClient", tag = "oauth",
    params(("id" = Uuid, Path)),
    responses((status = 204, description = "Removed"),
        (status = 404, description = "`not_found`", body = crate::error::ErrorBody),
        (status = 409, description = "`oauth_client_published`", body = crate::error::ErrorBody)))]
async fn delete(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<StatusCode> {
    p.require_full()?;
    let client = owned(&state, &p, id).await?;
    if client.published {
        return Err(published_refusal());
    }
    let mut tx = state.db.begin().await?;
    let done = sqlx::query("DELETE FROM oauth_clients WHERE id = $1 AND account_id = $2 AND published_at IS NULL")
        .bind(id.to_string())
        .bind(p.account_id.to_string())
        .execute(&mut *tx)
        .await?;
    commit_owner_change(&state, &p, tx, done.rows_affected(), "oauth_client.deleted", id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Client registration (full-scope key).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(get, update, delete))
}

/// The token exchange (public: the code and verifier are the credential).
pub fn public_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(token::exchange))
}
