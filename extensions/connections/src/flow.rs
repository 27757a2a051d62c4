//! The browser flow (DESIGN 9.5): `/connections/{slug}/start` sends a
//! signed-in person to the provider (authorization code with PKCE S256 and
//! a random `state`), `/connections/{slug}/callback` takes them back,
//! exchanges the code and stores the tokens sealed as a connection of the
//! account. Every failure is a page that says what happened, never a 500.

use std::collections::HashMap;

use acs_platform::AppState;
use acs_platform::audit::{self, Actor};
use acs_platform::auth::token;
use acs_platform::http::middleware::ClientIp;
use acs_platform::session::{Viewer, error_page, escape, page};
use acs_platform::time_fmt::now_micros;
use axum::Extension as Ext;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

use crate::connections::{base_url, callback_url};
use crate::error::UpstreamError;
use crate::store::{self, ProviderRow};
use crate::{config, refresh, upstream};

/// Why a page could not do its part; each is a page, never a 500.
#[derive(Debug, thiserror::Error)]
enum FlowError {
    #[error("no connection provider `{0}`")]
    NoProvider(String),
    #[error("this sign-in link expired or was already used")]
    BadState,
    #[error("the provider refused: {0}")]
    Refused(String),
    #[error("{0}")]
    Upstream(#[from] UpstreamError),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("sealed value: {0}")]
    Crypto(#[from] acs_platform::secrets::CryptoError),
}

impl IntoResponse for FlowError {
    fn into_response(self) -> Response {
        let (status, title) = match &self {
            FlowError::NoProvider(_) => (StatusCode::NOT_FOUND, "Unknown provider"),
            FlowError::BadState => (StatusCode::BAD_REQUEST, "Sign-in expired"),
            FlowError::Refused(_) => (StatusCode::BAD_REQUEST, "Not connected"),
            FlowError::Upstream(UpstreamError::NotConfigured(_)) => (StatusCode::CONFLICT, "Provider not ready"),
            FlowError::Upstream(UpstreamError::OAuth { .. }) => (StatusCode::BAD_GATEWAY, "Not connected"),
            FlowError::Upstream(_) => (StatusCode::BAD_GATEWAY, "Provider unavailable"),
            FlowError::Db(_) | FlowError::Crypto(_) => {
                tracing::error!(error = %self, "connection sign-in");
                return error_page(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Try again",
                    "The service could not answer just now; try again.",
                );
            }
        };
        let advice = match &self {
            FlowError::BadState => " Start again from the connect link.",
            FlowError::Upstream(UpstreamError::NotConfigured(_)) => {
                " Its owner sets its endpoints, or runs discovery (POST /api/connection-providers/{id}/discover)."
            }
            _ => "",
        };
        error_page(status, title, &format!("{self}.{advice}"))
    }
}

async fn provider(state: &AppState, viewer: &Viewer, slug: &str) -> Result<ProviderRow, FlowError> {
    store::provider_by_slug(state, viewer.account_id, slug).await?.ok_or_else(|| FlowError::NoProvider(slug.to_owned()))
}

/// Starts a sign-in: remembers the PKCE verifier under a digest of a fresh
/// `state`, and sends the browser to the provider's authorization endpoint.
async fn start(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(slug): Path<String>,
    headers: HeaderMap,
) -> Result<Response, FlowError> {
    let provider = provider(&state, &viewer, &slug).await?;
    let redirect_uri = callback_url(&base_url(&state, &headers), &provider.slug);
    let (verifier, challenge) = upstream::pkce();
    let state_value = upstream::random_token();
    let url = upstream::authorization_url(&provider, &redirect_uri, &state_value, &challenge)?;
    let id = Uuid::now_v7();
    let sealed = state.crypto.encrypt(&state.db, viewer.account_id, &store::verifier_aad(id), &verifier).await?;
    let ttl = i64::try_from(config::of(&state).attempt_ttl_seconds).unwrap_or(600);
    let state_hash = token::digest(&state_value);
    store::insert_attempt(
        &state,
        &store::NewAttempt {
            id,
            state_hash: &state_hash,
            account_id: viewer.account_id,
            provider_id: provider.id,
            sealed_verifier: &sealed,
            redirect_uri: &redirect_uri,
            expires_at: now_micros() + ttl * 1_000_000,
        },
    )
    .await?;
    Ok(Redirect::to(url.as_str()).into_response())
}

/// The provider's answer: checks `state`, exchanges the code, stores the connection.
async fn callback(
    State(state): State<AppState>,
    viewer: Viewer,
    ip: Option<Ext<ClientIp>>,
    Path(slug): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, FlowError> {
    let provider = provider(&state, &viewer, &slug).await?;
    // The state is checked before anything else the answer says: an answer
    // not to a sign-in this person started here is refused whatever it holds.
    let state_value = q.get("state").map(String::as_str).unwrap_or_default();
    let attempt = store::take_attempt(&state, &token::digest(state_value), viewer.account_id, provider.id)
        .await?
        .ok_or(FlowError::BadState)?;
    if let Some(error) = q.get("error") {
        let description = q.get("error_description").map(|d| format!(" ({d})")).unwrap_or_default();
        return Err(FlowError::Refused(format!("{error}{description}")));
    }
    // RFC 9207: a provider that names itself in its answer must be this one
    // (an answer from another server the person was sent to is a mix-up).
    if let (Some(iss), Some(issuer)) = (q.get("iss"), provider.issuer.as_deref())
        && iss != issuer
    {
        return Err(FlowError::Refused(format!("the answer came from {iss}, not {issuer}")));
    }
    let code = q.get("code").ok_or_else(|| FlowError::Refused("no authorization code came back".into()))?;
    let verifier = state
        .crypto
        .decrypt(&state.db, viewer.account_id, &store::verifier_aad(attempt.id), &attempt.sealed_verifier)
        .await?;
    let answer = upstream::exchange_code(&state, &provider, code, &attempt.redirect_uri, &verifier).await?;
    // A reconnect renews the account's connection to this provider in place,
    // so secret bindings naming it keep working.
    let existing = store::connection_of_provider(&state, viewer.account_id, provider.id).await?;
    let id = existing.map(|c| c.id).unwrap_or_else(Uuid::now_v7);
    let scopes = answer.scope.as_deref().map(refresh::split_scopes).unwrap_or_else(|| provider.scopes.clone());
    let sealed = refresh::seal(&state, viewer.account_id, id, &answer, scopes).await?;
    let mut tx = state.db.begin().await?;
    store::upsert_connection(&mut tx, id, viewer.account_id, provider.id, &sealed).await?;
    let actor = Actor::account(viewer.account_id, ip.map(|Ext(ClientIp(ip))| ip));
    audit::record(&mut *tx, &actor, "connection.connected", Some(("connection", id))).await?;
    tx.commit().await?;
    Ok(page(
        "Connected",
        &format!(
            "<h1>Connected</h1><p>Your {} account is connected. You can close this page.</p><p><a href=\"/\">Back to the console</a></p>",
            escape(&provider.name)
        ),
    ))
}

/// Gated pages of a signed-in browser (`RouteGroup::session`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .route("/connections/{slug}/start", get(start))
        .route("/connections/{slug}/callback", get(callback))
}
