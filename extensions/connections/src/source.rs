//! The connections' tokens as secret-binding values (`{"connection_id": ...}`):
//! core's broker asks here for the token to attach, refreshed first when it
//! is about to expire.

use std::time::Duration;

use acs_platform::AppState;
use acs_platform::extension::{BindingSource, BoxError, BoxFuture, SourceValue};
use acs_platform::time_fmt::now_micros;
use uuid::Uuid;

use crate::refresh::{self, Outcome};
use crate::store::{self, ConnectionRow};

/// A token expiring within this many microseconds is refreshed before it is given out.
const FRESH_FOR_MICROS: i64 = 60_000_000;

pub struct Connections;

impl BindingSource for Connections {
    fn key(&self) -> &'static str {
        "connection_id"
    }

    fn exists<'a>(&'a self, state: &'a AppState, account_id: Uuid, id: Uuid) -> BoxFuture<'a, Result<bool, BoxError>> {
        Box::pin(async move { Ok(store::connection(state, account_id, id).await?.is_some()) })
    }

    fn value<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        id: Uuid,
    ) -> BoxFuture<'a, Result<Option<SourceValue>, BoxError>> {
        Box::pin(value(state, account_id, id))
    }
}

async fn value(state: &AppState, account_id: Uuid, id: Uuid) -> Result<Option<SourceValue>, BoxError> {
    let Some(conn) = fresh(state, account_id, id).await? else { return Ok(None) };
    let Some(sealed) = conn.sealed_access_token.as_deref() else { return Ok(None) };
    let Some(provider) = conn.provider(state).await? else { return Ok(None) };
    Ok(Some(SourceValue {
        key: provider.slug.clone(),
        value: conn.open(state, "access", sealed).await?,
        hosts: provider.hosts.clone(),
    }))
}

/// The connection with a token good for at least a minute, refreshing it
/// (or waiting for whoever is) when needed; `None` when it is gone, not
/// active, or its token ran out and could not be refreshed.
async fn fresh(state: &AppState, account_id: Uuid, id: Uuid) -> Result<Option<ConnectionRow>, BoxError> {
    // A refresh another replica holds is waited for, a few seconds at most.
    let mut just_refreshed = false;
    for _ in 0..50 {
        let Some(conn) = store::connection(state, account_id, id).await? else { return Ok(None) };
        let now = now_micros();
        if conn.status_now(now) != "active" {
            return Ok(None);
        }
        let good_until = conn.expires_at.unwrap_or(i64::MAX);
        // A token just refreshed is as fresh as the provider makes them
        // (some live less than a minute).
        if good_until > now + FRESH_FOR_MICROS || (just_refreshed && good_until > now) {
            return Ok(Some(conn));
        }
        match refresh::refresh(state, &conn).await? {
            Outcome::Refreshed => just_refreshed = true,
            // Still good for a little while (another replica is refreshing it,
            // or the provider could not be reached and the worker retries):
            // the request made now may use it.
            Outcome::Busy | Outcome::Failed | Outcome::NoRefreshToken if good_until > now => return Ok(Some(conn)),
            Outcome::Busy => tokio::time::sleep(Duration::from_millis(100)).await,
            Outcome::Failed | Outcome::NoRefreshToken | Outcome::Revoked => return Ok(None),
        }
    }
    Ok(None)
}
