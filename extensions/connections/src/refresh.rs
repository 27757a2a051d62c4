//! Keeping tokens fresh: the worker refreshes every active connection whose
//! access token expires within `refresh_before_seconds`, and the binding
//! source refreshes one on demand. Either claims the row first with a
//! conditional UPDATE (a lease), so replicas never spend one refresh token
//! twice (a provider that rotates refresh tokens would revoke the grant).

use std::time::Duration;

use acs_platform::AppState;
use acs_platform::time_fmt::now_micros;
use uuid::Uuid;

use crate::error::UpstreamError;
use crate::store::{self, ConnectionRow, SealedTokens};
use crate::{config, upstream};

/// How long one refresh may hold a connection.
const LEASE_MICROS: i64 = 60_000_000;
/// After a failure that may pass (the provider unreachable), the next try waits this long.
const RETRY_MICROS: i64 = 30_000_000;

/// What a refresh came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Refreshed,
    /// The provider refused the grant (`invalid_grant`): the connection is `revoked`.
    Revoked,
    /// Nothing to refresh with: the connection is `expired` once its token ran out.
    NoRefreshToken,
    /// Another worker holds it.
    Busy,
    /// It failed in a way that may pass; retried later.
    Failed,
}

pub async fn run(state: AppState) {
    loop {
        let poll = Duration::from_secs(config::of(&state).poll_seconds.max(1));
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = tokio::time::sleep(poll) => {},
        }
        // Idle while the flag is off: tokens wait, and are refreshed (or found revoked) once it is on.
        if !state.feature_enabled(crate::NAME) {
            continue;
        }
        if let Err(e) = pass(&state).await {
            tracing::warn!(error = %e, "connections refresh pass failed");
        }
    }
}

async fn pass(state: &AppState) -> Result<(), sqlx::Error> {
    let now = now_micros();
    let expired = store::expire_unrefreshable(state, now).await?;
    if expired > 0 {
        tracing::info!(count = expired, "connections expired without a refresh token");
    }
    let before = now + i64::try_from(config::of(state).refresh_before_seconds).unwrap_or(i64::MAX / 2) * 1_000_000;
    for id in store::due(state, before, now).await? {
        let Some(conn) = store::connection_any(state, id).await? else { continue };
        if conn.sealed_refresh_token.is_none() {
            continue;
        }
        refresh(state, &conn).await?;
    }
    Ok(())
}

/// Refreshes `conn` if this caller wins its claim.
pub async fn refresh(state: &AppState, conn: &ConnectionRow) -> Result<Outcome, sqlx::Error> {
    if conn.sealed_refresh_token.is_none() {
        return Ok(Outcome::NoRefreshToken);
    }
    let now = now_micros();
    if !store::claim(state, conn.id, now, now + LEASE_MICROS).await? {
        return Ok(Outcome::Busy);
    }
    // Read again under the claim: another caller may have refreshed since
    // `conn` was read, and its refresh token is then spent (a rotating
    // provider takes a reuse for theft and revokes the grant).
    let current = match store::connection_any(state, conn.id).await? {
        Some(c) if c.status == "active" => c,
        _ => return Ok(Outcome::Failed),
    };
    if current.last_refreshed_at != conn.last_refreshed_at || current.expires_at != conn.expires_at {
        store::unlease(state, conn.id).await?;
        return Ok(Outcome::Refreshed);
    }
    let Some(sealed_refresh) = current.sealed_refresh_token.as_deref() else {
        store::unlease(state, conn.id).await?;
        return Ok(Outcome::NoRefreshToken);
    };
    match attempt(state, &current, sealed_refresh).await {
        Ok(tokens) => {
            store::refreshed(state, conn.id, &tokens).await?;
            tracing::info!(connection = %conn.id, "connection refreshed");
            Ok(Outcome::Refreshed)
        }
        Err(e) if e.is_invalid_grant() => {
            tracing::info!(connection = %conn.id, error = %e, "connection revoked by its provider");
            store::end(state, conn.id, "revoked", &e.to_string()).await?;
            Ok(Outcome::Revoked)
        }
        Err(e) => {
            tracing::warn!(connection = %conn.id, error = %e, "connection refresh failed; retried later");
            store::release(state, conn.id, now_micros() + RETRY_MICROS, &e.to_string()).await?;
            Ok(Outcome::Failed)
        }
    }
}

async fn attempt(state: &AppState, conn: &ConnectionRow, sealed_refresh: &str) -> Result<SealedTokens, UpstreamError> {
    let provider = conn
        .provider(state)
        .await?
        .ok_or_else(|| UpstreamError::NotConfigured("the connection's provider is gone".into()))?;
    let refresh_token = conn.open(state, "refresh", sealed_refresh).await?;
    let answer = upstream::refresh(state, &provider, &refresh_token).await?;
    let scopes = answer.scope.as_deref().map(split_scopes).unwrap_or_else(|| conn.scopes.clone());
    seal(state, conn.account_id, conn.id, &answer, scopes).await
}

/// Seals a token answer for connection `id`.
pub async fn seal(
    state: &AppState,
    account_id: Uuid,
    id: Uuid,
    answer: &upstream::TokenResponse,
    scopes: Vec<String>,
) -> Result<SealedTokens, UpstreamError> {
    let access =
        state.crypto.encrypt(&state.db, account_id, &store::token_aad(id, "access"), &answer.access_token).await?;
    let refresh = match &answer.refresh_token {
        Some(r) => Some(state.crypto.encrypt(&state.db, account_id, &store::token_aad(id, "refresh"), r).await?),
        None => None,
    };
    Ok(SealedTokens {
        access,
        refresh,
        expires_at: answer.expires_in.map(|s| now_micros() + s.max(0).saturating_mul(1_000_000)),
        scopes,
    })
}

pub fn split_scopes(scope: &str) -> Vec<String> {
    scope.split_whitespace().map(str::to_owned).collect()
}
