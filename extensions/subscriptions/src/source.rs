//! The platform's `GrantSource` for the `openai` vendor: core asks here
//! what a credential set's `openai_grant_id` names, whether a turn may run
//! on it, and what the broker attaches to requests to the vendor's API.

use acs_platform::AppState;
use acs_platform::extension::{BoxError, BoxFuture, GrantAttachment, GrantSource, GrantSummary, GrantUse};
use acs_platform::time_fmt::{from_micros, now_micros};
use uuid::Uuid;

use crate::{config, store, tokens, vendor};

/// The vendor's word for exhaustion checks: at most one per this long per subscription.
const USAGE_CHECK_MICROS: i64 = 5 * 60 * 1_000_000;

pub struct Subscriptions;

impl GrantSource for Subscriptions {
    fn vendor(&self) -> &'static str {
        "openai"
    }

    fn grant<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        grant_id: Uuid,
    ) -> BoxFuture<'a, Result<Option<GrantSummary>, BoxError>> {
        Box::pin(async move {
            let row = store::subscription(&state.db.pool, account_id, grant_id).await?;
            Ok(row.map(|s| GrantSummary {
                id: s.id,
                name: s.name.clone(),
                status: s.status_now(now_micros()).to_owned(),
            }))
        })
    }

    fn usable<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        grant_id: Uuid,
    ) -> BoxFuture<'a, Result<GrantUse, BoxError>> {
        Box::pin(usable(state, account_id, grant_id))
    }

    fn hosts(&self, state: &AppState) -> Vec<String> {
        config::of(state).api_hosts.clone()
    }

    fn attach<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        grant_id: Uuid,
    ) -> BoxFuture<'a, Result<GrantAttachment, BoxError>> {
        Box::pin(async move {
            let value = match tokens::fresh(state, account_id, grant_id).await? {
                Some(sub) => match sub.sealed_access_token.as_deref() {
                    Some(sealed) => {
                        let token = sub.open(state, "access", sealed).await?;
                        store::touch(state, sub.id).await?;
                        Some(format!("Bearer {token}"))
                    }
                    None => None,
                },
                None => None,
            };
            Ok(GrantAttachment { header: "authorization".into(), value, key: "openai_subscription".into() })
        })
    }
}

fn unusable(reason: &'static str) -> GrantUse {
    GrantUse::Unusable { reason, until: None }
}

async fn usable(state: &AppState, account_id: Uuid, grant_id: Uuid) -> Result<GrantUse, BoxError> {
    let Some(sub) = store::subscription(&state.db.pool, account_id, grant_id).await? else {
        return Ok(unusable("not_found"));
    };
    if store::suspended(&state.db.pool, account_id).await? {
        return Ok(unusable("owner_ineligible"));
    }
    let now = now_micros();
    match sub.status_now(now) {
        "active" => {}
        "disconnected" => return Ok(unusable("disconnected")),
        "revoked" => return Ok(unusable("revoked")),
        _ => return Ok(unusable("expired")),
    }
    if let Some(until) = sub.exhausted_until.filter(|at| *at > now) {
        return Ok(GrantUse::Unusable { reason: "exhausted", until: Some(from_micros(until)) });
    }
    // Ask the vendor at most once per 5 minutes (whoever wins the claim asks).
    if !store::claim_usage_check(state, sub.id, now, now - USAGE_CHECK_MICROS).await? {
        return Ok(GrantUse::Usable);
    }
    let Some(fresh) = tokens::fresh(state, account_id, grant_id).await? else {
        // The token could not be refreshed: the status says why, if it changed.
        return Ok(match store::subscription(&state.db.pool, account_id, grant_id).await?.map(|s| s.status) {
            Some(s) if s == "revoked" => unusable("revoked"),
            _ => GrantUse::Usable,
        });
    };
    let Some(sealed) = fresh.sealed_access_token.as_deref() else { return Ok(GrantUse::Usable) };
    let token = fresh.open(state, "access", sealed).await?;
    match vendor::usage(state, &token).await {
        Ok(u) if u.exhausted => {
            let until = u.resets_at.map(|at| i64::try_from(at.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX));
            match until.filter(|at| *at > now) {
                Some(at) => {
                    store::set_exhausted(state, sub.id, Some(at)).await?;
                    Ok(GrantUse::Unusable { reason: "exhausted", until: Some(from_micros(at)) })
                }
                // Spent, with no reset time given: unusable until the next check.
                None => Ok(GrantUse::Unusable { reason: "exhausted", until: None }),
            }
        }
        Ok(_) => {
            store::set_exhausted(state, sub.id, None).await?;
            Ok(GrantUse::Usable)
        }
        // A failed check leaves the subscription usable.
        Err(e) => {
            tracing::info!(subscription = %sub.id, error = %e, "openai usage check failed; usable");
            Ok(GrantUse::Usable)
        }
    }
}
