//! The queue's loop: each pass fails the requests past their deadline, then
//! claims the heads of the accounts' lines and starts them one by one in
//! round-robin order, until a pass starts nothing more (or the fleet is
//! full). One loop per server; replicas share the queue through claims.

use std::time::{Duration, Instant};

use uuid::Uuid;

use super::model::Status;
use super::rules::{self, Recovery, Verdict};
use super::store::{self, Claimed};
use crate::conversations::{self, OpenHow, StartOptions};
use crate::state::AppState;
use crate::time_fmt::now_micros;

/// Heads claimed by one statement.
const BATCH: usize = 32;
/// How long a claim reserves a request to one worker. A start takes well under a second
/// (machines build in the background) and a queued prompt delivery gives up after 30 s.
const LEASE_MICROS: i64 = 120_000_000;
/// Pause between two runs of the retention cleanup.
const CLEANUP_EVERY: Duration = Duration::from_secs(60);

pub async fn run(state: AppState) {
    let cfg = state.config().queue.clone();
    let every = Duration::from_secs_f64(cfg.poll_interval_seconds);
    let mut last_cleanup: Option<Instant> = None;
    loop {
        if let Err(e) = pass(&state).await {
            tracing::warn!(error = %e, "sandbox queue pass failed");
        }
        if last_cleanup.is_none_or(|t| t.elapsed() >= CLEANUP_EVERY) {
            last_cleanup = Some(Instant::now());
            match store::clean_up(&state.db, cfg.retention_seconds).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "settled sandbox requests trimmed"),
                Err(e) => tracing::warn!(error = %e, "sandbox queue cleanup failed"),
            }
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => break,
            _ = state.queue.notified() => {}
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// One pass: expiries, then rounds of heads until none moves.
async fn pass(state: &AppState) -> sqlx::Result<()> {
    for schedule in store::expire(&state.db).await? {
        super::settled(state, schedule, Err(rules::WAIT_EXPIRED.to_owned())).await;
    }
    loop {
        let heads = store::claim_heads(&state.db, BATCH, LEASE_MICROS).await?;
        if heads.is_empty() {
            return Ok(());
        }
        let mut moved = false;
        let mut stop = false;
        for head in &heads {
            if stop || state.shutdown.is_cancelled() {
                store::release(&state.db, head).await?;
                continue;
            }
            let verdict = match attempt(state, head).await {
                Ok(verdict) => verdict,
                Err(e) => {
                    tracing::warn!(request = %head.row.id, error = %e, "queued start not attempted");
                    store::release(&state.db, head).await?;
                    stop = true;
                    continue;
                }
            };
            match verdict {
                None => {}
                Some(Verdict::Wait { ends_pass }) => {
                    store::release(&state.db, head).await?;
                    stop = ends_pass;
                }
                Some(verdict) => moved |= settle(state, head, verdict).await?,
            }
        }
        if stop || !moved || state.shutdown.is_cancelled() {
            return Ok(());
        }
    }
}

/// Starts one claimed head; `None` when the claim was lost before the start began.
async fn attempt(state: &AppState, head: &Claimed) -> sqlx::Result<Option<Verdict>> {
    let row = &head.row;
    let Ok(req) = row.request() else {
        tracing::error!(request = %row.id, "queued create body unreadable");
        return Ok(Some(Verdict::Failed { error: "internal_error".into(), conversation_id: None }));
    };
    if row.began_at.is_some() {
        // The server that began this start died before recording it.
        let left = conversations::store::get(&state.db, row.fresh_conversation_id).await?;
        let may_resume = req.channel_id.is_some() && !req.fresh.unwrap_or(false);
        match rules::recover(left.is_some(), req.prompt.is_some(), may_resume) {
            Recovery::Started => return Ok(Some(Verdict::Started(row.fresh_conversation_id))),
            Recovery::Unknown => {
                let conversation_id = match (left, &req.channel_id) {
                    (Some(c), _) => Some(c.id),
                    (None, Some(channel)) => conversations::store::channel_latest(
                        &state.db,
                        row.account_id,
                        req.agent_id,
                        req.environment_id,
                        req.vault_id,
                        channel,
                    )
                    .await?
                    .map(|c| c.id),
                    (None, None) => None,
                };
                let error = rules::PROMPT_DELIVERY_UNKNOWN.to_owned();
                return Ok(Some(Verdict::Failed { error, conversation_id }));
            }
            Recovery::Retry if rules::expired(row.expires_at, now_micros()) => {
                return Ok(Some(Verdict::Failed { error: rules::WAIT_EXPIRED.into(), conversation_id: None }));
            }
            Recovery::Retry => {}
        }
    }
    if !store::begin(&state.db, head).await? {
        return Ok(None);
    }
    let how = OpenHow { team: row.team, autonomous: row.autonomous, queued: true };
    let opts = StartOptions { conversation_id: row.fresh_conversation_id, may_launch: true };
    let outcome = conversations::start(state, row.account_id, &req, how, opts).await.map(|o| o.row().id);
    Ok(Some(rules::verdict(&outcome)))
}

/// Records a start or a failure; true when this claim still held the request.
async fn settle(state: &AppState, head: &Claimed, verdict: Verdict) -> sqlx::Result<bool> {
    let (status, conversation_id, error, outcome): (_, _, _, Result<Uuid, String>) = match verdict {
        Verdict::Started(id) => (Status::Started, Some(id), None, Ok(id)),
        Verdict::Failed { error, conversation_id } => {
            (Status::Failed, conversation_id, Some(error.clone()), Err(error))
        }
        Verdict::Wait { .. } => return Ok(false),
    };
    if !store::settle(&state.db, head, status, conversation_id, error.as_deref()).await? {
        tracing::warn!(request = %head.row.id, "a queued start outlived its claim; its outcome was not recorded");
        return Ok(false);
    }
    tracing::info!(request = %head.row.id, status = status.as_str(), error = error.as_deref(), "queued start settled");
    if let Some(schedule) = head.row.schedule_id {
        super::settled(state, schedule, outcome).await;
    }
    Ok(true)
}
