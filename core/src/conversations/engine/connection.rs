//! A turn on a runner's machine whose socket dropped under it (spec 6.1,
//! `connection`): the agent keeps running on the runner, so the turn waits
//! for the runner to dial again (`sandbox.runner_reconnect_seconds`), then
//! follows the agent's output from where the log stopped, as a server does
//! after a restart. `connection` `done` says how it ended: `recovered`,
//! `interrupted` (the runner did not return in time, or the turn was
//! interrupted meanwhile), or `failed` (it returned without the agent).

use std::sync::PoisonError;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;

use super::session::{self, Session};
use super::turn::{self, Outcome, TurnCtx};
use crate::events::StageState;

/// How often the wait looks at an interrupt.
const POLL: Duration = Duration::from_millis(250);

/// Follows the turn across lost connections to its runner; any other end passes through.
pub async fn follow(ctx: &mut TurnCtx, slot: &mut Option<Session>, rpc_id: Option<u64>, first: Outcome) -> Outcome {
    let mut outcome = first;
    loop {
        if !matches!(outcome, Outcome::Lost(_)) {
            return outcome;
        }
        let Some(remote) = crate::runners::remote(&ctx.state) else { return outcome };
        let Some(runner) = remote.runner_of(ctx.sandbox_id) else { return outcome };
        // The runner still there: the agent itself ended.
        if remote.online(runner) || ctx.live.interrupted.load(Ordering::SeqCst) {
            return outcome;
        }
        let (Some(rpc_id), Some(held)) = (rpc_id, slot.as_ref()) else { return outcome };
        let session_id = held.client.session_id().to_owned();
        let (offset, options) = (held.resume.get(), held.options.clone());
        let turn_id = ctx.turn_id;
        ctx.stage("connection", StageState::Started, json!({"turn_id": turn_id, "runner_id": runner})).await;
        let within = Duration::from_secs(ctx.state.config().sandbox.runner_reconnect_seconds);
        let deadline = Instant::now() + within;
        let back = loop {
            if remote.wait_online(runner, POLL).await {
                break true;
            }
            let cancelled = ctx.live.interrupted.load(Ordering::SeqCst) || ctx.state.shutdown.is_cancelled();
            if cancelled || Instant::now() >= deadline {
                break false;
            }
        };
        if !back {
            let error = format!("the runner did not reconnect within {} s", within.as_secs());
            ctx.stage(
                "connection",
                StageState::Done,
                json!({"turn_id": turn_id, "outcome": "interrupted", "error": error}),
            )
            .await;
            ctx.live.interrupted.store(true, Ordering::SeqCst);
            *slot = None;
            return Outcome::Lost(error);
        }
        let machine = (ctx.sandbox_id, ctx.machine_started);
        match session::resume(&ctx.sup, ctx.conversation_id, machine, session_id, offset, options).await {
            Ok(resumed) => {
                ctx.stage("connection", StageState::Done, json!({"turn_id": turn_id, "outcome": "recovered"})).await;
                *slot = Some(resumed);
            }
            Err(error) => {
                let data = json!({"turn_id": turn_id, "outcome": "failed", "error": error});
                ctx.stage("connection", StageState::Done, data).await;
                *slot = None;
                return Outcome::Lost(error);
            }
        }
        let Some(held) = slot.as_mut() else { return outcome };
        let resume = held.resume.clone();
        outcome = match held.client.resume_turn(rpc_id) {
            Ok(t) => {
                *ctx.live.control.lock().unwrap_or_else(PoisonError::into_inner) = Some(t.control());
                turn::drive(ctx, &resume, t, Default::default()).await
            }
            Err(e) => Outcome::Lost(e.to_string()),
        };
    }
}
