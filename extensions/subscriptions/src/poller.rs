//! The one poller: every second it expires what ran out, fails open new-link
//! attempts when linking was turned off, and polls the vendor's token
//! endpoint for each due pending attempt (claimed with a conditional UPDATE,
//! so several replicas never poll one attempt at once). An approved sign-in
//! is stored and its attempt completed in one transaction. It also runs the
//! daily renewal of idle subscriptions.

use std::time::{Duration, Instant};

use futures::StreamExt;

use acs_platform::AppState;
use acs_platform::audit::{self, Actor};
use acs_platform::time_fmt::now_micros;
use uuid::Uuid;

use crate::error::VendorError;
use crate::rules::{self, PollAnswer, PollMove, Request};
use crate::store::{self, AttemptRow, End, NewSub};
use crate::{config, tokens, vendor};

/// How long one poll may hold an attempt (the vendor's answer, the completion).
const LEASE_MICROS: i64 = 30_000_000;
/// Ended attempts are kept this long (readable by their owner; the hourly
/// start limit needs one hour of them), then removed by the renewal pass.
const KEEP_ENDED_MICROS: i64 = 7 * 86_400 * 1_000_000;

pub async fn run(state: AppState) {
    let mut last_renewal: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {},
        }
        if let Err(e) = pass(&state).await {
            tracing::warn!(error = %e, "openai link attempt pass failed");
        }
        let every = Duration::from_secs(config::of(&state).renew_every_seconds.max(1));
        if last_renewal.is_none_or(|at| at.elapsed() >= every) {
            last_renewal = Some(Instant::now());
            if let Err(e) = renew_idle(&state).await {
                tracing::warn!(error = %e, "openai subscription renewal failed");
            }
        }
    }
}

async fn pass(state: &AppState) -> Result<(), sqlx::Error> {
    let now = now_micros();
    store::expire_due(state, now).await?;
    if !crate::linking_enabled(state) {
        let failed = store::disable_links(state, now).await?;
        if failed > 0 {
            tracing::info!(count = failed, "openai link attempts failed: linking is off");
        }
    }
    // Batches until none is due, each polled POLLS_AT_ONCE at a time: a
    // thousand open sign-ins are each polled at their interval, by one task.
    let started = Instant::now();
    loop {
        let due = store::due(state, now, DUE_BATCH).await?;
        let full = due.len() == DUE_BATCH as usize;
        let polled: Vec<Result<(), sqlx::Error>> = futures::stream::iter(due)
            .map(|id| poll_due(state, id, now))
            .buffer_unordered(POLLS_AT_ONCE)
            .collect()
            .await;
        polled.into_iter().collect::<Result<(), _>>()?;
        if !full || started.elapsed() >= Duration::from_secs(1) {
            return Ok(());
        }
    }
}

/// Attempts read per batch, and polls in flight at once.
const DUE_BATCH: i64 = 200;
const POLLS_AT_ONCE: usize = 32;

async fn poll_due(state: &AppState, id: Uuid, now: i64) -> Result<(), sqlx::Error> {
    let Some(attempt) = store::claim(state, id, now, now + LEASE_MICROS).await? else { return Ok(()) };
    if let Err(e) = poll_one(state, &attempt).await {
        tracing::warn!(attempt = %id, error = %e, "openai link attempt failed");
        let end = End {
            state: "failed",
            failure_reason: Some("internal_error"),
            failure_grant_id: None,
            result_grant_id: None,
        };
        store::end_attempt(&state.db.pool, id, &end).await?;
    }
    Ok(())
}

async fn poll_one(state: &AppState, a: &AttemptRow) -> Result<(), VendorError> {
    let Some(sealed) = a.sealed_device_code.as_deref() else {
        return Err(VendorError::Unreachable("the attempt holds no device code".into()));
    };
    let device_code = state.crypto.decrypt(&state.db, a.account_id, &store::device_code_aad(a.id), sealed).await?;
    let interval = u64::try_from(a.poll_interval).unwrap_or(5);
    let result = vendor::poll(state, &device_code).await;
    let answer = match &result {
        Ok(_) => PollAnswer::Approved,
        Err(VendorError::Unreachable(e)) => {
            tracing::info!(attempt = %a.id, error = %e, "the vendor's sign-in service did not answer");
            PollAnswer::Unreachable
        }
        Err(VendorError::OAuth { error, .. }) => match error.as_str() {
            "authorization_pending" => PollAnswer::Pending,
            "slow_down" => PollAnswer::SlowDown,
            "expired_token" => PollAnswer::Expired,
            "access_denied" => PollAnswer::Denied,
            other => PollAnswer::OAuthError(other.to_owned()),
        },
        Err(VendorError::Db(_) | VendorError::Crypto(_)) => return result.map(|_| ()),
    };
    let fail = |reason| End {
        state: "failed",
        failure_reason: Some(reason),
        failure_grant_id: a.grant_id,
        result_grant_id: None,
    };
    match rules::after_poll(&answer, interval) {
        PollMove::Wait { interval, unreachable } => store::wait(state, a.id, interval, unreachable).await?,
        PollMove::Expire => {
            let end = End { state: "expired", failure_reason: None, failure_grant_id: None, result_grant_id: None };
            store::end_attempt(&state.db.pool, a.id, &end).await?;
        }
        PollMove::Fail(reason) => {
            store::end_attempt(&state.db.pool, a.id, &fail(reason)).await?;
        }
        PollMove::Complete => match result {
            Ok(tokens) => complete(state, a, &tokens).await?,
            Err(e) => return Err(e),
        },
    }
    Ok(())
}

/// Stores an approved sign-in and completes the attempt, in one transaction
/// with its audit row; or fails the attempt with what forbids it. An
/// attempt no longer pending (cancelled meanwhile) stores nothing.
async fn complete(state: &AppState, a: &AttemptRow, t: &vendor::Tokens) -> Result<(), VendorError> {
    let request = a.request();
    let grant_id = match &request {
        Request::Link { .. } => Uuid::new_v4(),
        Request::Reconnect { grant_id } => *grant_id,
    };
    let who = vendor::identity(t.id_token.as_deref());
    // Sealed before the transaction: sealing may write the account's key.
    let sealed = tokens::seal(state, a.account_id, grant_id, t).await?;
    let mut tx = state.db.begin().await?;
    let completed =
        End { state: "completed", failure_reason: None, failure_grant_id: None, result_grant_id: Some(grant_id) };
    if !store::end_attempt(&mut *tx, a.id, &completed).await? {
        tx.rollback().await?;
        tracing::info!(attempt = %a.id, "a sign-in finished after its attempt ended: nothing stored");
        return Ok(());
    }
    let grant = match request {
        Request::Reconnect { .. } => store::subscription(&mut *tx, a.account_id, grant_id).await?,
        Request::Link { .. } => None,
    };
    let reconnected = grant.as_ref().map(|g| g.id);
    let holder = match who.subject.as_deref() {
        Some(subject) => store::holding(&mut *tx, a.account_id, subject, reconnected).await?,
        None => None,
    };
    let name_taken = match &request {
        Request::Link { name } => store::name_taken(&mut *tx, a.account_id, name).await?,
        Request::Reconnect { .. } => false,
    };
    let facts = rules::CompletionFacts {
        request: &request,
        grant: grant.as_ref().map(|g| (g.revision, g.status.as_str())),
        revision_at_start: a.grant_revision,
        linked_elsewhere: holder.as_ref().map(|(id, _)| *id),
        name_taken,
        grants: store::count(&mut *tx, a.account_id).await?,
        limit: config::of(state).max_grants,
        linking_enabled: crate::linking_enabled(state),
        owner_suspended: store::suspended(&mut *tx, a.account_id).await?,
    };
    match rules::complete(&facts) {
        Ok(()) => {
            let new = NewSub {
                id: grant_id,
                account_id: a.account_id,
                name: a.name.as_deref().unwrap_or_default(),
                vendor_account: who.subject.as_deref(),
                account_email: who.email.as_deref(),
                plan: who.plan.as_deref(),
            };
            let action = match request {
                Request::Link { .. } => {
                    store::insert(&mut tx, &new, &sealed).await?;
                    "openai_subscription.linked"
                }
                Request::Reconnect { .. } => {
                    store::reconnect(&mut tx, &new, &sealed).await?;
                    "openai_subscription.reconnected"
                }
            };
            let actor = Actor { account_id: a.account_id, kind: "service", id: None, ip: None };
            audit::record(&mut *tx, &actor, action, Some(("openai_subscription", grant_id))).await?;
            tx.commit().await?;
            tracing::info!(attempt = %a.id, subscription = %grant_id, action, "openai sign-in stored");
        }
        Err(refused) => {
            let end = End {
                state: "failed",
                failure_reason: Some(refused.reason),
                failure_grant_id: refused.grant_id,
                result_grant_id: None,
            };
            store::refail(&mut tx, a.id, &end).await?;
            tx.commit().await?;
            tracing::info!(attempt = %a.id, reason = refused.reason, "openai sign-in not stored");
        }
    }
    Ok(())
}

/// The daily job: ended attempts older than a week go, and subscriptions unused for `idle_renew_seconds` (6 days)
/// are refreshed, so their refresh token does not lapse unseen.
async fn renew_idle(state: &AppState) -> Result<(), sqlx::Error> {
    store::prune(state, now_micros() - KEEP_ENDED_MICROS).await?;
    let idle = i64::try_from(config::of(state).idle_renew_seconds).unwrap_or(i64::MAX / 2_000_000);
    for (id, account_id) in store::idle(state, now_micros() - idle * 1_000_000).await? {
        let Some(sub) = store::subscription(&state.db.pool, account_id, id).await? else { continue };
        let outcome = tokens::refresh(state, &sub).await?;
        tracing::info!(subscription = %id, ?outcome, "idle openai subscription renewed");
    }
    Ok(())
}
