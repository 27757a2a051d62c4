//! `/api/connections`: the account's connections (never a token) and where
//! to start new ones. Readable and deletable with the flag off.

use acs_platform::audit::{self, Actor};
use acs_platform::auth::Principal;
use acs_platform::http::{Data, Path, ok};
use acs_platform::{ApiError, ApiResult, AppState};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::model::{Connection, ConnectionProviderLink};
use crate::store::{self, ConnectionRow};
use crate::upstream;

/// This instance's address as people reach it: `public_url`, else the
/// address this request came to (as the device login's page does).
pub fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    match &state.config().public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => {
            let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
            format!("http://{host}")
        }
    }
}

/// The page a sign-in to provider `slug` starts at.
pub fn start_url(base: &str, slug: &str) -> String {
    format!("{base}/connections/{slug}/start")
}

/// The page a provider sends the person back to; registered with the provider as the redirect URI.
pub fn callback_url(base: &str, slug: &str) -> String {
    format!("{base}/connections/{slug}/callback")
}

/// Where to send an owner to connect each of the account's providers.
#[utoipa::path(get, path = "/api/connections/providers", operation_id = "listConnectionProviderLinks", tag = "connections",
    responses((status = 200, description = "Each provider's sign-in page, opened in a signed-in browser", body = Data<Vec<ConnectionProviderLink>>)))]
async fn provider_links(
    State(state): State<AppState>,
    p: Principal,
    headers: HeaderMap,
) -> ApiResult<Data<Vec<ConnectionProviderLink>>> {
    let base = base_url(&state, &headers);
    let providers = store::providers(&state, p.account_id).await?;
    Ok(ok(providers
        .into_iter()
        .map(|row| ConnectionProviderLink { start_url: start_url(&base, &row.slug), slug: row.slug, name: row.name })
        .collect()))
}

/// The account's connections, newest first (never a token).
#[utoipa::path(get, path = "/api/connections", operation_id = "listConnections", tag = "connections",
    responses((status = 200, body = Data<Vec<Connection>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<Connection>>> {
    Ok(ok(store::connections(&state, p.account_id).await?.iter().map(ConnectionRow::view).collect()))
}

/// Deletes a connection; its token is revoked at the provider when the
/// provider has a revocation endpoint (best effort). Full-scope key.
#[utoipa::path(delete, path = "/api/connections/{id}", operation_id = "deleteConnection", tag = "connections",
    params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "`not_found`", body = acs_platform::error::ErrorBody)))]
async fn delete(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<StatusCode> {
    p.require_full()?;
    let conn = store::connection(&state, p.account_id, id).await?.ok_or_else(|| ApiError::not_found("Connection"))?;
    let mut tx = state.db.begin().await?;
    store::delete_connection(&mut tx, id).await?;
    audit::record(&mut *tx, &Actor::key(&p), "connection.deleted", Some(("connection", id))).await?;
    tx.commit().await?;
    revoke_upstream(&state, &conn).await;
    Ok(StatusCode::NO_CONTENT)
}

/// Tells the provider the grant is no longer wanted (RFC 7009): the refresh
/// token when there is one (revoking it ends the grant), else the access
/// token. Best effort: the connection is gone here whatever it answers.
async fn revoke_upstream(state: &AppState, conn: &ConnectionRow) {
    let provider = match conn.provider(state).await {
        Ok(Some(provider)) => provider,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(connection = %conn.id, error = %e, "revoking a deleted connection: reading its provider");
            return;
        }
    };
    if provider.revocation_endpoint.is_none() {
        return;
    }
    let (kind, sealed) = match (&conn.sealed_refresh_token, &conn.sealed_access_token) {
        (Some(r), _) => ("refresh", r),
        (None, Some(a)) => ("access", a),
        (None, None) => return,
    };
    let outcome = match conn.open(state, kind, sealed).await {
        Ok(token) => upstream::revoke(state, &provider, &token, &format!("{kind}_token")).await,
        Err(e) => Err(e.into()),
    };
    match outcome {
        Ok(()) => tracing::info!(connection = %conn.id, "connection revoked at its provider"),
        Err(e) => {
            tracing::warn!(connection = %conn.id, error = %e, "revoking a deleted connection at its provider failed")
        }
    }
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(provider_links)).routes(routes!(delete))
}
