//! Keeping a subscription's tokens fresh: refreshed when the broker asks for
//! one about to expire, and by the daily renewal of idle ones. A refresh
//! claims the row first (a lease), so replicas never spend one refresh
//! token twice (the vendor rotates them and would take a reuse for theft).

use std::time::Duration;

use acs_platform::AppState;
use acs_platform::secrets::CryptoError;
use acs_platform::time_fmt::now_micros;
use uuid::Uuid;

use crate::error::VendorError;
use crate::store::{self, SealedTokens, SubRow};
use crate::vendor;

/// How long one refresh may hold a subscription.
const LEASE_MICROS: i64 = 60_000_000;
/// After a failure that may pass (the vendor unreachable), the next try waits this long.
const RETRY_MICROS: i64 = 30_000_000;
/// A token expiring within this is refreshed before it is given out.
pub const FRESH_FOR_MICROS: i64 = 60_000_000;

/// Seals a token answer for subscription `id` (the aad names the row).
pub async fn seal(
    state: &AppState,
    account_id: Uuid,
    id: Uuid,
    t: &vendor::Tokens,
) -> Result<SealedTokens, CryptoError> {
    let access = state.crypto.encrypt(&state.db, account_id, &store::token_aad(id, "access"), &t.access_token).await?;
    let refresh = match &t.refresh_token {
        Some(r) => Some(state.crypto.encrypt(&state.db, account_id, &store::token_aad(id, "refresh"), r).await?),
        None => None,
    };
    Ok(SealedTokens {
        access,
        refresh,
        expires_at: t.expires_in.map(|s| now_micros() + s.max(0).saturating_mul(1_000_000)),
    })
}

#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Refreshed,
    /// The vendor refused the grant (`invalid_grant`): the subscription is `revoked`.
    Revoked,
    /// Nothing to refresh with.
    NoRefreshToken,
    /// Another caller holds it.
    Busy,
    /// It failed in a way that may pass; retried later.
    Failed,
}

/// Refreshes `sub` if this caller wins its claim.
pub async fn refresh(state: &AppState, sub: &SubRow) -> Result<Outcome, sqlx::Error> {
    if sub.sealed_refresh_token.is_none() {
        return Ok(Outcome::NoRefreshToken);
    }
    let now = now_micros();
    if !store::claim_refresh(state, sub.id, now, now + LEASE_MICROS).await? {
        return Ok(Outcome::Busy);
    }
    // Read again under the claim: another caller may have refreshed since
    // `sub` was read, and its refresh token is then spent.
    let current = match store::subscription(&state.db.pool, sub.account_id, sub.id).await? {
        Some(c) if c.status == "active" => c,
        _ => return Ok(Outcome::Failed),
    };
    if current.expires_at != sub.expires_at || current.revision != sub.revision {
        store::release_refresh(state, sub.id, None).await?;
        return Ok(Outcome::Refreshed);
    }
    let Some(sealed) = current.sealed_refresh_token.as_deref() else {
        store::release_refresh(state, sub.id, None).await?;
        return Ok(Outcome::NoRefreshToken);
    };
    match exchange(state, &current, sealed).await {
        Ok(tokens) => {
            // A reconnect or disconnect meanwhile wins: these tokens are dropped.
            store::refreshed(state, sub.id, current.revision, &tokens).await?;
            tracing::info!(subscription = %sub.id, "openai subscription refreshed");
            Ok(Outcome::Refreshed)
        }
        Err(e) if e.oauth_code() == Some("invalid_grant") => {
            tracing::info!(subscription = %sub.id, error = %e, "openai subscription revoked by the vendor");
            store::revoke(state, sub.id, current.revision).await?;
            Ok(Outcome::Revoked)
        }
        Err(e) => {
            tracing::warn!(subscription = %sub.id, error = %e, "openai subscription refresh failed; retried later");
            store::release_refresh(state, sub.id, Some(now_micros() + RETRY_MICROS)).await?;
            Ok(Outcome::Failed)
        }
    }
}

async fn exchange(state: &AppState, sub: &SubRow, sealed_refresh: &str) -> Result<SealedTokens, VendorError> {
    let refresh_token = sub.open(state, "refresh", sealed_refresh).await?;
    let answer = vendor::refresh(state, &refresh_token).await?;
    Ok(seal(state, sub.account_id, sub.id, &answer).await?)
}

/// The subscription with an access token good for at least a minute,
/// refreshing it (or waiting a little for whoever is) when needed; `None`
/// when it is gone, not active, or its token ran out and could not be refreshed.
pub async fn fresh(state: &AppState, account_id: Uuid, id: Uuid) -> Result<Option<SubRow>, sqlx::Error> {
    let mut just_refreshed = false;
    for _ in 0..50 {
        let Some(sub) = store::subscription(&state.db.pool, account_id, id).await? else { return Ok(None) };
        let now = now_micros();
        if sub.status_now(now) != "active" || sub.sealed_access_token.is_none() {
            return Ok(None);
        }
        let good_until = sub.expires_at.unwrap_or(i64::MAX);
        if good_until > now + FRESH_FOR_MICROS || (just_refreshed && good_until > now) {
            return Ok(Some(sub));
        }
        match refresh(state, &sub).await? {
            Outcome::Refreshed => just_refreshed = true,
            // Still good for a little while: the request made now may use it.
            Outcome::Busy | Outcome::Failed | Outcome::NoRefreshToken if good_until > now => return Ok(Some(sub)),
            Outcome::Busy => tokio::time::sleep(Duration::from_millis(100)).await,
            Outcome::Failed | Outcome::NoRefreshToken | Outcome::Revoked => return Ok(None),
        }
    }
    Ok(None)
}
