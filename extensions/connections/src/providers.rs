//! `/api/connection-providers`: an account's OAuth providers (full-scope
//! key). Creating, changing and discovering need the flag; reading and
//! deleting stay open with it off (checked here, the group is ungated).

use acs_platform::audit::{self, Actor};
use acs_platform::auth::Principal;
use acs_platform::db::is_unique_violation;
use acs_platform::http::{Data, Json, Path, created, ok};
use acs_platform::time_fmt::now_micros;
use acs_platform::{ApiError, ApiResult, AppState};
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::model::{ConnectionProvider, ConnectionProviderCreate, ConnectionProviderUpdate};
use crate::store::{self, ProviderRow};
use crate::{config, rules, upstream};

/// 404 `connections_not_enabled` while the flag is off.
pub fn require_enabled(state: &AppState) -> ApiResult<()> {
    if state.feature_enabled(crate::NAME) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "connections_not_enabled",
            "The connections feature is not enabled on this instance.",
        ))
    }
}

fn slug_taken() -> ApiError {
    ApiError::conflict(
        "connection_provider_slug_taken",
        "The account already has a connection provider with this slug.",
    )
}

async fn find(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<ProviderRow> {
    store::provider(state, p.account_id, id).await?.ok_or_else(|| ApiError::not_found("Connection provider"))
}

fn fields(row: &ProviderRow) -> rules::Fields<'_> {
    rules::Fields {
        slug: &row.slug,
        name: &row.name,
        issuer: row.issuer.as_deref(),
        authorization_endpoint: row.authorization_endpoint.as_deref(),
        token_endpoint: row.token_endpoint.as_deref(),
        revocation_endpoint: row.revocation_endpoint.as_deref(),
        token_auth_method: &row.token_auth_method,
        client_id: &row.client_id,
        client_secret: None,
        scopes: &row.scopes,
        hosts: &row.hosts,
    }
}

/// Writes a provider and its audit row in one transaction; a slug the
/// account already uses is 409.
async fn save(state: &AppState, p: &Principal, row: &ProviderRow, action: &str, insert: bool) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    let written =
        if insert { store::insert_provider(&mut tx, row).await } else { store::update_provider(&mut tx, row).await };
    match written {
        Err(e) if is_unique_violation(&e) => return Err(slug_taken()),
        other => other?,
    }
    audit::record(&mut *tx, &Actor::key(p), action, Some(("connection_provider", row.id))).await?;
    tx.commit().await?;
    Ok(())
}

/// The account's connection providers (never a client secret).
#[utoipa::path(get, path = "/api/connection-providers", operation_id = "listConnectionProviders", tag = "connections",
    responses((status = 200, body = Data<Vec<ConnectionProvider>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<ConnectionProvider>>> {
    p.require_full()?;
    Ok(ok(store::providers(&state, p.account_id).await?.iter().map(ProviderRow::view).collect()))
}

/// Adds a connection provider. The client secret is sealed at rest and
/// never returned. Needs the `connections` flag; full-scope key.
#[utoipa::path(post, path = "/api/connection-providers", operation_id = "createConnectionProvider", tag = "connections",
    request_body = ConnectionProviderCreate,
    responses((status = 201, description = "Added", body = Data<ConnectionProvider>),
        (status = 404, description = "`connections_not_enabled`", body = acs_platform::error::ErrorBody),
        (status = 409, description = "`connection_provider_slug_taken`", body = acs_platform::error::ErrorBody),
        (status = 422, description = "`validation_failed`", body = acs_platform::error::ErrorBody)))]
async fn create(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<ConnectionProviderCreate>,
) -> ApiResult<(StatusCode, Data<ConnectionProvider>)> {
    p.require_full()?;
    require_enabled(&state)?;
    let hosts: Vec<String> = req.hosts.iter().map(|h| h.trim().to_owned()).collect();
    let token_auth_method = req.token_endpoint_auth_method.unwrap_or_else(|| "client_secret_basic".into());
    rules::check(
        &rules::Fields {
            slug: &req.slug,
            name: &req.name,
            issuer: req.issuer.as_deref(),
            authorization_endpoint: req.authorization_endpoint.as_deref(),
            token_endpoint: req.token_endpoint.as_deref(),
            revocation_endpoint: req.revocation_endpoint.as_deref(),
            token_auth_method: &token_auth_method,
            client_id: &req.client_id,
            client_secret: Some(&req.client_secret),
            scopes: &req.scopes,
            hosts: &hosts,
        },
        config::of(&state).allow_http,
    )?;
    let id = Uuid::now_v7();
    let now = now_micros();
    let row = ProviderRow {
        id,
        account_id: p.account_id,
        slug: req.slug,
        name: req.name.trim().to_owned(),
        issuer: req.issuer,
        authorization_endpoint: req.authorization_endpoint,
        token_endpoint: req.token_endpoint,
        revocation_endpoint: req.revocation_endpoint,
        token_auth_method,
        client_id: req.client_id,
        sealed_client_secret: state
            .crypto
            .encrypt(&state.db, p.account_id, &store::secret_aad(id), &req.client_secret)
            .await?,
        scopes: req.scopes,
        hosts,
        created_at: now,
        updated_at: now,
    };
    save(&state, &p, &row, "connection_provider.created", true).await?;
    Ok(created(find(&state, &p, id).await?.view()))
}

/// One connection provider.
#[utoipa::path(get, path = "/api/connection-providers/{id}", operation_id = "getConnectionProvider", tag = "connections",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = Data<ConnectionProvider>),
        (status = 404, description = "`not_found`", body = acs_platform::error::ErrorBody)))]
async fn get_one(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<ConnectionProvider>> {
    p.require_full()?;
    Ok(ok(find(&state, &p, id).await?.view()))
}

/// Changes a connection provider; fields not named keep their value.
/// Needs the `connections` flag; full-scope key.
#[utoipa::path(patch, path = "/api/connection-providers/{id}", operation_id = "updateConnectionProvider", tag = "connections",
    params(("id" = Uuid, Path)), request_body = ConnectionProviderUpdate,
    responses((status = 200, body = Data<ConnectionProvider>),
        (status = 404, description = "`not_found`, `connections_not_enabled`", body = acs_platform::error::ErrorBody),
        (status = 409, description = "`connection_provider_slug_taken`", body = acs_platform::error::ErrorBody),
        (status = 422, description = "`validation_failed`", body = acs_platform::error::ErrorBody)))]
async fn update(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<ConnectionProviderUpdate>,
) -> ApiResult<Data<ConnectionProvider>> {
    p.require_full()?;
    require_enabled(&state)?;
    let mut row = find(&state, &p, id).await?;
    row.slug = req.slug.unwrap_or(row.slug);
    row.name = req.name.map(|n| n.trim().to_owned()).unwrap_or(row.name);
    row.issuer = req.issuer.unwrap_or(row.issuer);
    row.authorization_endpoint = req.authorization_endpoint.unwrap_or(row.authorization_endpoint);
    row.token_endpoint = req.token_endpoint.unwrap_or(row.token_endpoint);
    row.revocation_endpoint = req.revocation_endpoint.unwrap_or(row.revocation_endpoint);
    row.token_auth_method = req.token_endpoint_auth_method.unwrap_or(row.token_auth_method);
    row.client_id = req.client_id.unwrap_or(row.client_id);
    row.scopes = req.scopes.unwrap_or(row.scopes);
    row.hosts = req.hosts.map(|h| h.iter().map(|h| h.trim().to_owned()).collect()).unwrap_or(row.hosts);
    let mut checked = fields(&row);
    checked.client_secret = req.client_secret.as_deref();
    rules::check(&checked, config::of(&state).allow_http)?;
    if let Some(secret) = &req.client_secret {
        row.sealed_client_secret =
            state.crypto.encrypt(&state.db, p.account_id, &store::secret_aad(id), secret).await?;
    }
    row.updated_at = now_micros();
    save(&state, &p, &row, "connection_provider.updated", false).await?;
    Ok(ok(find(&state, &p, id).await?.view()))
}

/// Reads the issuer's metadata (RFC 8414 `/.well-known/oauth-authorization-server`,
/// then OpenID `/.well-known/openid-configuration`), checks it names this
/// issuer, and fills the authorization, token and revocation endpoints.
/// Needs the `connections` flag; full-scope key.
#[utoipa::path(post, path = "/api/connection-providers/{id}/discover", operation_id = "discoverConnectionProvider", tag = "connections",
    params(("id" = Uuid, Path)),
    responses((status = 200, description = "The provider with its endpoints filled", body = Data<ConnectionProvider>),
        (status = 404, description = "`not_found`, `connections_not_enabled`", body = acs_platform::error::ErrorBody),
        (status = 422, description = "`validation_failed`: no issuer, or a discovered endpoint this instance may not use", body = acs_platform::error::ErrorBody),
        (status = 502, description = "`connection_provider_unavailable`: no discovery document, or one for another issuer", body = acs_platform::error::ErrorBody)))]
async fn discover(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<ConnectionProvider>> {
    p.require_full()?;
    require_enabled(&state)?;
    let mut row = find(&state, &p, id).await?;
    let issuer = row.issuer.clone().ok_or_else(|| ApiError::invalid("issuer", "can't be blank for discovery"))?;
    let found = upstream::discover(&state, &issuer).await?;
    row.authorization_endpoint = Some(found.authorization_endpoint);
    row.token_endpoint = Some(found.token_endpoint);
    row.revocation_endpoint = found.revocation_endpoint;
    row.token_auth_method = found.token_auth_method;
    // The document's endpoints obey the same rules as typed ones (https).
    rules::check(&fields(&row), config::of(&state).allow_http)?;
    row.updated_at = now_micros();
    save(&state, &p, &row, "connection_provider.discovered", false).await?;
    Ok(ok(find(&state, &p, id).await?.view()))
}

/// Deletes a connection provider with its connections. Full-scope key.
#[utoipa::path(delete, path = "/api/connection-providers/{id}", operation_id = "deleteConnectionProvider", tag = "connections",
    params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "`not_found`", body = acs_platform::error::ErrorBody)))]
async fn delete(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<StatusCode> {
    p.require_full()?;
    find(&state, &p, id).await?;
    let mut tx = state.db.begin().await?;
    store::delete_provider(&mut tx, id).await?;
    audit::record(&mut *tx, &Actor::key(&p), "connection_provider.deleted", Some(("connection_provider", id))).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(discover))
}
