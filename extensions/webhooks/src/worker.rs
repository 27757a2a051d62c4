//! The delivery loop: claims due deliveries, sends each on its own task
//! (bounded by `webhooks.concurrency`), settles them, and runs the retention
//! cleanup. One loop per server; replicas share the queue.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use acs_platform::mail::Mail;
use acs_platform::state::AppState;

use super::queue::{self, Effect, Job, Ready, Settled};
use super::send::{Outgoing, Sender};
use super::store;

/// Most deliveries claimed by one statement.
const BATCH: usize = 64;
/// Longest sleep between looks at the queue (other replicas' events wake nobody here).
const IDLE: Duration = Duration::from_secs(1);

pub async fn run(state: AppState) {
    let cfg = crate::config::of(&state);
    let sender = match Sender::new(&cfg) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            tracing::error!(error = %e, "webhook delivery is off: the HTTP client could not be built");
            return;
        }
    };
    let lease = (cfg.lease_seconds * 1_000_000.0) as i64;
    let slots = Arc::new(Semaphore::new(cfg.concurrency));
    let cleanup_every = Duration::from_secs(cfg.cleanup_interval_seconds);
    let mut last_cleanup = Instant::now();
    let mut tasks = JoinSet::new();
    let doorbell = super::doorbell(&state);
    loop {
        while tasks.try_join_next().is_some() {}
        // While the flag is off, deliveries wait; they go out once it is back on.
        let free = if state.feature_enabled(crate::NAME) { slots.available_permits().min(BATCH) } else { 0 };
        let mut claimed_all = false;
        if free > 0 {
            match queue::claim(&state, free, lease).await {
                Ok(jobs) => {
                    claimed_all = jobs.len() == free;
                    for job in jobs {
                        let Ok(permit) = slots.clone().try_acquire_owned() else { break };
                        tasks.spawn(deliver(state.clone(), sender.clone(), job, permit));
                    }
                }
                Err(e) => tracing::warn!(error = %e, "claiming webhook deliveries failed"),
            }
        }
        if last_cleanup.elapsed() >= cleanup_every {
            last_cleanup = Instant::now();
            match queue::clean_up(&state).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "webhook delivery log trimmed"),
                Err(e) => tracing::warn!(error = %e, "webhook delivery log cleanup failed"),
            }
        }
        if claimed_all && slots.available_permits() > 0 {
            continue; // more may be due
        }
        // With every slot busy only a finished task (or shutdown) matters; otherwise sleep until
        // the next delivery is due, at most a second.
        let wait = if slots.available_permits() == 0 {
            Duration::MAX
        } else {
            match queue::next_due_in(&state).await {
                Ok(Some(us)) => Duration::from_micros(us.clamp(5_000, IDLE.as_micros() as i64) as u64),
                _ => IDLE,
            }
        };
        let wait = wait.min(cleanup_every);
        tokio::select! {
            _ = state.shutdown.cancelled() => break,
            _ = doorbell.0.notified() => {}
            _ = tokio::time::sleep(wait) => {}
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    // Attempts in flight may finish and be recorded; the rest are retried once their lease ends.
    let grace = Duration::from_secs_f64(cfg.timeout_seconds.min(5.0));
    let _ = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
}

async fn deliver(state: AppState, sender: Arc<Sender>, mut job: Job, _slot: OwnedSemaphorePermit) {
    match queue::complete_payload(&state, &mut job).await {
        Ok(Ready::Send) => {}
        Ok(Ready::Postponed) => return,
        Err(e) => {
            tracing::warn!(delivery = %job.id, error = %e, "completing a webhook payload failed");
            return;
        }
    }
    let secret =
        state.crypto.decrypt(&state.db, job.account_id, &store::secret_aad(job.endpoint_id), &job.sealed_secret).await;
    let settled = match secret {
        Ok(secret) => {
            let out = sender
                .send(&Outgoing {
                    url: &job.url,
                    secret: &secret,
                    event_id: &job.event_id,
                    event_type: &job.event_type,
                    attempt: job.attempt,
                    body: job.payload.as_bytes(),
                })
                .await;
            queue::settle(
                &state,
                &job,
                &Settled {
                    accepted: out.accepted(),
                    status: out.status,
                    body: out.body.as_deref(),
                    error: out.error.map(|(code, message)| format!("{code}: {message}")),
                    latency_ms: out.latency_ms,
                },
            )
            .await
        }
        Err(e) => {
            tracing::error!(endpoint = %job.endpoint_id, error = %e, "webhook secret could not be read");
            let error = Some("request_failed: the signing secret could not be read".to_owned());
            queue::settle(&state, &job, &Settled { accepted: false, status: None, body: None, error, latency_ms: 0 })
                .await
        }
    };
    match settled {
        Ok(Effect::Disabled) => email_owner(&state, &job).await,
        Ok(_) => {}
        // The lease runs out and the attempt is made again.
        Err(e) => tracing::warn!(delivery = %job.id, error = %e, "recording a webhook attempt failed"),
    }
}

/// Tells the owner that an endpoint was switched off (spec 3.2).
async fn email_owner(state: &AppState, job: &Job) {
    let to = sqlx::query_scalar::<_, String>("SELECT email FROM accounts WHERE id = $1")
        .bind(job.account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await;
    let Ok(Some(to)) = to else { return };
    tracing::warn!(endpoint = %job.endpoint_id, "webhook endpoint disabled after repeated failures");
    state.mailer.send(Mail {
        to,
        subject: "A webhook endpoint was disabled".into(),
        body: format!(
            "Deliveries to {url} failed for {n} events in a row, each after {m} attempts, so the endpoint \
             {id} is disabled and receives nothing new.\n\nFix the receiver, send a test event \
             (POST /api/webhooks/{id}/test), then resume it (POST /api/webhooks/{id}/resume).\n",
            url = job.url,
            n = super::rules::DISABLE_AFTER,
            m = super::rules::MAX_ATTEMPTS,
            id = job.endpoint_id,
        ),
    });
}
