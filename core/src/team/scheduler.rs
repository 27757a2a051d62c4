//! The scheduler: every `team.tick_seconds` it fires each due schedule once.
//! A replica fires a run only when its compare-and-set moving `next_run_at`
//! from the due time to the next one after now wins, so replicas and a
//! restarted server never fire a due time twice, and runs missed while no
//! server ran fire once (the next time is counted from now, not from the
//! missed slot). A claimed run is started at once, each in its own task.
//!
//! The claim also puts the run in hand under a fresh run id, which becomes
//! the id of the turn the run opens (or of the conversation, when it must
//! open one), until the run has been handed on. A server that dies in
//! between leaves the run in hand; once its lease runs out another pass
//! looks for what the run left behind under that id and finishes it (no
//! silent skip), sending nothing that was already sent (no double fire).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use uuid::Uuid;

use super::store::{self, ScheduleRow, Trace};
use super::{Message, MessageOutcome, cron, member, message, now, rules};
use crate::conversations::engine::{self, PromptInput};
use crate::conversations::model::ConversationCreateRequest;
use crate::conversations::{OpenHow, store as conversations};
use crate::error::ApiError;
use crate::queue::{self, Submit, Submitted};
use crate::refusal::Refusal;
use crate::state::AppState;

/// Due schedules read per query.
const BATCH: i64 = 2000;
/// Runs in flight per server; more wait for a slot (each opens a turn or a machine).
const CONCURRENCY: usize = 64;
/// How long a run stays in one server's hands before another may take it
/// up: far longer than handing a run on takes (a launch is answered before
/// its machine is built; a prompt before its turn runs).
const LEASE_MICROS: i64 = 120_000_000;

/// Claimed runs and the slots they run in. Claiming never waits for a slot
/// (a due time is claimed on time however many runs are ahead of it); a run
/// that waited for its slot renews its lease before it starts.
struct Runs {
    tasks: JoinSet<()>,
    slots: Arc<Semaphore>,
}

/// Fires due schedules until the server shuts down; runs in flight then finish.
pub async fn run(state: AppState) {
    let tick = Duration::from_secs_f64(state.config().team.tick_seconds);
    let mut runs = Runs { tasks: JoinSet::new(), slots: Arc::new(Semaphore::new(CONCURRENCY)) };
    loop {
        if let Err(e) = fire_due(&state, &mut runs).await {
            tracing::warn!("scheduler: {e}");
        }
        if let Err(e) = take_up_stale(&state, &mut runs).await {
            tracing::warn!("scheduler: {e}");
        }
        while runs.tasks.try_join_next().is_some() {}
        // Wake at the soonest due time when it comes before the next tick.
        let pause = match store::soonest(&state.db).await {
            // At least a moment: a run that cannot be claimed must not spin the loop.
            Ok(Some(at)) => Duration::from_micros(u64::try_from(at - now(&state)).unwrap_or(0))
                .clamp(Duration::from_millis(10).min(tick), tick),
            _ => tick,
        };
        tokio::select! {
            _ = state.shutdown.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
        }
    }
    while runs.tasks.join_next().await.is_some() {}
}

/// Starts a run in hand (under `run_id`, leased until `lease`) once a slot is free.
fn spawn_run(state: &AppState, runs: &mut Runs, s: ScheduleRow, run_id: Uuid, lease: i64, trace: Trace) {
    let (st, slots) = (state.clone(), runs.slots.clone());
    runs.tasks.spawn(async move {
        let Ok(_slot) = slots.acquire_owned().await else { return };
        // Past half its lease, the run is renewed first, so nobody takes it up while it runs.
        let now = crate::time_fmt::now_micros();
        if lease - now < LEASE_MICROS / 2 {
            match store::retake(&st.db, s.id, run_id, lease, now + LEASE_MICROS).await {
                Ok(true) => {}
                Ok(false) => return, // taken up elsewhere meanwhile
                Err(e) => {
                    tracing::warn!(schedule = %s.id, "renewing a run: {e}");
                    return;
                }
            }
        }
        fire(&st, s, run_id, trace).await
    });
}

/// Claims and starts every schedule due now, a batch per statement.
async fn fire_due(state: &AppState, runs: &mut Runs) -> Result<(), sqlx::Error> {
    let mut claimed = Vec::new();
    loop {
        let at = now(state);
        let due = store::due(&state.db, at, BATCH).await?;
        let full = due.len() as i64 == BATCH;
        let claims: Vec<store::Claim> = due
            .iter()
            .filter_map(|s| {
                let due_at = s.next_run_at?;
                let next = cron::parse(&s.cron).ok().and_then(|c| rules::next_run(true, &c, at));
                Some(store::Claim { id: s.id, due: due_at, next, run_id: Uuid::now_v7() })
            })
            .collect();
        // The lease is on the real clock: the test clock moves schedule times only.
        let lease = crate::time_fmt::now_micros() + LEASE_MICROS;
        // Those another replica fired, or that were changed meanwhile, are not won.
        let won = store::claim(&state.db, &claims, at, lease).await?;
        for (s, c) in due.into_iter().zip(&claims).filter(|(_, c)| won.contains(&c.id)) {
            claimed.push((s, c.run_id, lease));
        }
        if !full {
            break;
        }
    }
    // Runs start once every due time is claimed: their writes would otherwise
    // hold up the claims behind them (SQLite has one writer).
    for (s, run_id, lease) in claimed {
        spawn_run(state, runs, s, run_id, lease, Trace::None);
    }
    Ok(())
}

/// Takes up runs whose server died with them in hand, and finishes each
/// from what it left behind.
async fn take_up_stale(state: &AppState, runs: &mut Runs) -> Result<(), sqlx::Error> {
    let at = crate::time_fmt::now_micros();
    for (id, run_id, lease) in store::stale_runs(&state.db, at, BATCH).await? {
        let renewed = at + LEASE_MICROS;
        if !store::retake(&state.db, id, run_id, lease, renewed).await? {
            continue;
        }
        let Some(s) = store::schedule(&state.db, id).await? else { continue };
        let trace = store::trace(&state.db, s.agent_id, run_id).await?;
        tracing::info!(schedule = %id, run = %run_id, ?trace, "taking up a run cut short");
        spawn_run(state, runs, s, run_id, renewed, trace);
    }
    Ok(())
}

/// What a failed run records: `teammate was busy`, or the error's code and message.
fn describe(e: &ApiError) -> String {
    if matches!(e.refusal(), Some(Refusal::Busy(_))) {
        return rules::BUSY.to_owned();
    }
    match &e.message {
        Some(m) => format!("{}: {m}", e.error),
        None => e.error.clone(),
    }
}

/// One run: into the teammate's own conversation, or (`one_off`) a fresh
/// conversation through the sandbox queue; `trace` is what an earlier
/// attempt at the same run left behind. A run that waits in the queue is
/// recorded when it settles (`schedules::run_settled`).
async fn fire(state: &AppState, s: ScheduleRow, run_id: Uuid, trace: Trace) {
    let outcome = match trace {
        Trace::None if s.one_off => fresh_conversation(state, &s, run_id).await,
        Trace::None => own_conversation(state, &s, run_id).await,
        Trace::Opened(conversation) => first_prompt(state, &s, run_id, conversation).await,
        Trace::Delivered(conversation) => Ok(Some(conversation)),
        Trace::Queued => Ok(None),
    };
    match outcome {
        Ok(None) => super::changed(state, s.account_id, crate::events::signal::SignalKind::Schedule).await,
        Ok(Some(conversation)) => super::schedules::record(state, s.id, &Ok(conversation)).await,
        Err(e) => {
            tracing::info!(schedule = %s.id, "scheduled run failed: {} {:?}", e.error, e.message);
            super::schedules::record(state, s.id, &Err(describe(&e))).await
        }
    }
    if let Err(e) = store::release(&state.db, s.id, run_id).await {
        tracing::warn!(schedule = %s.id, "releasing a run: {e}");
    }
}

async fn own_conversation(state: &AppState, s: &ScheduleRow, run_id: Uuid) -> Result<Option<Uuid>, ApiError> {
    let msg = Message {
        prompt: s.prompt.clone(),
        labels: Default::default(),
        client_request_id: None,
        origin: "autonomous".into(),
        schedule_id: Some(s.id),
        run_id: Some(run_id),
        sandbox_id: None,
    };
    Ok(match message(state, s.account_id, s.agent_id, msg).await? {
        MessageOutcome::Delivered { conversation_id, .. } => Some(conversation_id),
        MessageOutcome::Queued(_) => None,
    })
}

async fn fresh_conversation(state: &AppState, s: &ScheduleRow, run_id: Uuid) -> Result<Option<Uuid>, ApiError> {
    let m = member(state, s.account_id, s.agent_id).await?;
    let request = ConversationCreateRequest {
        agent_id: s.agent_id,
        prompt: Some(s.prompt.clone()),
        channel_id: Some(super::schedule_channel(s.id)),
        fresh: Some(true),
        environment_id: m.environment_id,
        vault_id: m.vault_id,
        ..ConversationCreateRequest::default()
    };
    let how = OpenHow { team: true, queued: false, autonomous: true };
    let submit = Submit {
        account_id: s.account_id,
        request,
        how,
        schedule_id: Some(s.id),
        force_queue: true,
        conversation_id: Some(run_id),
    };
    Ok(match queue::submit(state, submit).await? {
        Submitted::Opened(opened) => Some(opened.row().id),
        Submitted::Queued(_) => None,
    })
}

/// The run opened its conversation but died before its prompt went in.
async fn first_prompt(
    state: &AppState,
    s: &ScheduleRow,
    run_id: Uuid,
    conversation: Uuid,
) -> Result<Option<Uuid>, ApiError> {
    let row = conversations::get(&state.db, conversation).await?.ok_or_else(|| ApiError::not_found("Conversation"))?;
    let input = PromptInput {
        prompt: s.prompt.clone(),
        client_request_id: None,
        session_config: None,
        images: Vec::new(),
        origin: "autonomous".into(),
        turn_id: Some(run_id),
    };
    engine::deliver(state, &row, input).await?;
    Ok(Some(conversation))
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;
    use crate::refusal::Busy;

    #[test]
    fn a_busy_teammate_reads_as_the_spec_says_and_other_errors_keep_their_code() {
        let busy = Refusal::Busy(Busy::Teammate).into();
        assert_eq!(describe(&busy), "teammate was busy");
        let quota = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "sandbox_quota_exceeded", "Too many sandboxes.");
        assert_eq!(describe(&quota), "sandbox_quota_exceeded: Too many sandboxes.");
    }
}
