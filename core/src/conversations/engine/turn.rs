//! One turn: the prompt goes to the agent, its updates become events (in
//! batches, saved with how far the agent's output was read), and the end is
//! recorded on the turn, the conversation and the log.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use futures::FutureExt;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Live;
use super::blocks::Transcript;
use super::permissions::Requests;
use super::session;
use crate::acp::attach::ResumeOffset;
use crate::acp::client::{Turn, TurnEvent};
use crate::acp::rpc::RpcError;
use crate::acp::types::{ConfigOption, PromptResponse, SessionUpdate, UsageUpdate};
use crate::conversations::policy::Effective;
use crate::conversations::store::{self, TurnEnd};
use crate::events::{self, NewEvent, ReadMark, Scope, StageState};
use crate::provider::Supervisor;
use crate::sandboxes::model::ConversationStatus;
use crate::state::AppState;

/// Everything a running turn writes with.
pub struct TurnCtx {
    pub state: AppState,
    pub scope: Scope,
    pub conversation_id: Uuid,
    pub sandbox_id: Uuid,
    /// When the machine last started (a session from before is gone with it).
    pub machine_started: Option<i64>,
    pub turn_id: Uuid,
    pub transcript: Transcript,
    /// The machine's environment (the agent's auth method depends on which keys it holds).
    pub machine_env: std::collections::BTreeMap<String, String>,
    pub live: Arc<Live>,
    pub sup: Supervisor,
    pub started: Instant,
    /// The option list of the turn's last `config_option_update`, for the session (the
    /// conversation shows it from the next prompt on).
    pub config_options: Option<Vec<ConfigOption>>,
    /// The agent's permission policy narrowed by the launch's.
    pub policy: Effective,
    /// The turn's last `usage_update` (its cost makes the usage report qualified).
    pub usage_report: Option<UsageUpdate>,
}

/// How a turn left the loop.
pub enum Outcome {
    Ended(PromptResponse),
    /// The agent failed the prompt (a JSON-RPC error).
    Refused(String),
    /// The agent's connection ended without an answer (it exited or the machine went away).
    Lost(String),
    /// The server is shutting down: the turn keeps running in the machine and is taken over at start.
    Shutdown,
}

impl TurnCtx {
    pub async fn write(&self, events: &[NewEvent], resume: Option<i64>) {
        if events.is_empty() && resume.is_none() {
            return;
        }
        let mark = resume.map(|agent_offset| ReadMark { conversation_id: self.conversation_id, agent_offset });
        if let Err(e) = events::append(&self.state, &self.scope, events, mark).await {
            tracing::error!(conversation = %self.conversation_id, "turn events not written: {e}");
        }
    }

    pub async fn stage(&self, stage: &str, st: StageState, data: Value) {
        self.write(&[NewEvent::stage(stage, st, &self.transcript.redact_value(&data))], None).await;
    }
}

/// Reads the turn to its end. Events that are ready together are written
/// together (one transaction), which is what keeps the append rate up.
/// `requests`: the permission requests already open (taken on after a restart).
pub async fn drive(ctx: &mut TurnCtx, resume: &ResumeOffset, mut turn: Turn<'_>, mut requests: Requests) -> Outcome {
    let outcome = loop {
        let first = tokio::select! {
            _ = ctx.state.shutdown.cancelled() => break Outcome::Shutdown,
            () = requests.next_expiry() => {
                let expired = requests.expire(ctx, &turn.control());
                ctx.write(&expired, None).await;
                continue;
            }
            next = turn.next() => next,
        };
        let mut batch = Vec::new();
        let mut end = None;
        let mut next = first;
        loop {
            match next {
                None => {
                    end = Some(Outcome::Lost("the turn ended without an answer".into()));
                }
                Some(Ok(TurnEvent::End(response))) => end = Some(Outcome::Ended(response)),
                Some(Ok(TurnEvent::Update(update))) => {
                    if let SessionUpdate::ConfigOptionUpdate(u) = &update {
                        ctx.config_options = Some(u.config_options.clone());
                    }
                    if let SessionUpdate::UsageUpdate(u) = &update {
                        ctx.usage_report = Some(u.clone());
                    }
                    requests.saw(&update);
                    batch.extend(ctx.transcript.update(&update));
                }
                Some(Ok(TurnEvent::PermissionRequest { request_id, request })) => {
                    batch.extend(requests.arrived(ctx, &turn.control(), request_id, request));
                }
                Some(Ok(TurnEvent::Ext { method, params })) if method == super::labels::METHOD => {
                    super::labels::stamp(ctx, &params).await;
                }
                // Other extension notifications are not ours.
                Some(Ok(TurnEvent::Ext { .. })) => {}
                Some(Err(RpcError::Remote { message, .. })) => end = Some(Outcome::Refused(message)),
                Some(Err(e)) => end = Some(Outcome::Lost(e.to_string())),
            }
            if end.is_some() {
                break;
            }
            match turn.next().now_or_never() {
                Some(more) => next = more,
                None => break,
            }
        }
        if end.is_some() {
            batch.extend(ctx.transcript.flush());
        }
        let offset = i64::try_from(resume.get()).ok();
        ctx.write(&batch, offset).await;
        if let Some(end) = end {
            break end;
        }
    };
    if !matches!(outcome, Outcome::Shutdown) {
        // Requests nobody answered (an answered one left the list) ended with their turn.
        let unanswered: Vec<String> = ctx
            .live
            .permissions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .map(|(id, _)| super::request_key(&id))
            .collect();
        for id in unanswered {
            ctx.stage("request", StageState::Done, json!({"request_id": id, "outcome": "cancelled"})).await;
        }
    }
    outcome
}

/// Stop reasons that mean a limit cut the turn short.
fn limit_reason(stop_reason: &str) -> Option<String> {
    matches!(stop_reason, "max_tokens" | "max_turn_requests").then(|| stop_reason.to_owned())
}

/// Records how the turn ended: the turn row, the `turn` stage, the
/// conversation's status. Returns whether the agent session is still usable.
pub async fn finish(ctx: &TurnCtx, outcome: Outcome) -> bool {
    let interrupted = ctx.live.interrupted.load(Ordering::SeqCst);
    let ms = i64::try_from(ctx.started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let (end, keep, conv_status) = match outcome {
        Outcome::Ended(response) => {
            let stop = response.stop_reason.clone();
            let status = if stop == "cancelled" || interrupted { "interrupted" } else { "done" };
            let end = TurnEnd {
                status,
                limit_reason: limit_reason(&stop),
                stop_reason: Some(stop),
                usage: super::usage::of(&response, ctx.usage_report.as_ref()),
                ..TurnEnd::default()
            };
            (end, true, ConversationStatus::Idle)
        }
        Outcome::Refused(message) => {
            let error = ctx.transcript.redact_str(&message);
            (TurnEnd { status: "failed", error: Some(error), ..TurnEnd::default() }, true, ConversationStatus::Idle)
        }
        Outcome::Lost(reason) => {
            let exit_code = session::exit_code(&ctx.sup, ctx.conversation_id).await;
            let status = if interrupted { "interrupted" } else { "failed" };
            let error = match exit_code {
                Some(code) => format!("the agent exited with status {code}"),
                None => ctx.transcript.redact_str(&reason),
            };
            let conv = if interrupted { ConversationStatus::Idle } else { ConversationStatus::Failed };
            (TurnEnd { status, exit_code, error: Some(error), ..TurnEnd::default() }, false, conv)
        }
        Outcome::Shutdown => return true,
    };
    let state = match end.status {
        "done" => StageState::Done,
        "interrupted" => StageState::Interrupted,
        _ => StageState::Failed,
    };
    let mut data = json!({"turn_id": ctx.turn_id, "stop_reason": end.stop_reason});
    for (key, value) in [("limit_reason", &end.limit_reason), ("error", &end.error)] {
        if let Some(v) = value {
            data[key] = json!(v);
        }
    }
    if let Some(code) = end.exit_code {
        data["exit_code"] = json!(code);
    }
    // The turn and the conversation move first, the log last: whoever reads the `turn` stage finds both.
    if let Err(e) =
        store::end_turn(&ctx.state.db, ctx.turn_id, (ctx.conversation_id, ctx.sandbox_id), &end, conv_status).await
    {
        tracing::error!(turn = %ctx.turn_id, "turn end not recorded: {e}");
    }
    let event = NewEvent::stage("turn", state, &ctx.transcript.redact_value(&data)).with_duration(Some(ms));
    ctx.write(&[event], None).await;
    crate::events::signal::conversations_changed(&ctx.state, ctx.scope.account_id, Some(ctx.sandbox_id)).await;
    keep
}
