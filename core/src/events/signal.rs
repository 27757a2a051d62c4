//! Stream signals (spec 6.2): `conversations` tells a client of the
//! all-conversations stream that its list changed; `team` (the roster
//! changed) and `schedule` (a schedule was created, updated, deleted or
//! fired) go to the team stream. The body says only `{reason: "changed"}`.
//! A signal is not a log event: it has no id and is not replayed on resume
//! (a resuming client re-lists anyway). Signals fan out through the bus
//! in-process and, on PostgreSQL, to other replicas with
//! `NOTIFY acs_signals '<server>:<account>[:<kind>]'`.

use axum::response::sse::Event as SseEvent;
use uuid::Uuid;

use crate::state::AppState;

/// What changed; also the SSE event name of its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalKind {
    Conversations,
    Team,
    Schedule,
}

impl SignalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SignalKind::Conversations => "conversations",
            SignalKind::Team => "team",
            SignalKind::Schedule => "schedule",
        }
    }

    pub fn parse(s: &str) -> Option<SignalKind> {
        [SignalKind::Conversations, SignalKind::Team, SignalKind::Schedule].into_iter().find(|k| k.as_str() == s)
    }
}

/// One account's list of `kind` changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signal {
    pub account_id: Uuid,
    pub kind: SignalKind,
}

/// Sends a signal to this server's streams and the other replicas'. Never
/// fails its caller: a signal that cannot reach other replicas is logged.
pub async fn send(state: &AppState, account_id: Uuid, kind: SignalKind) {
    let signal = Signal { account_id, kind };
    state.events.publish_signal(signal);
    if let Err(e) = state.events.notify_signal(&state.db, signal).await {
        tracing::warn!("{} signal not sent to other replicas: {e}", kind.as_str());
    }
}

/// The caller's conversation list changed (created, titled, finished, deleted).
pub async fn conversations_changed(state: &AppState, account_id: Uuid) {
    send(state, account_id, SignalKind::Conversations).await
}

/// The frame of a signal.
pub fn frame(kind: SignalKind) -> SseEvent {
    SseEvent::default().event(kind.as_str()).data(r#"{"reason":"changed"}"#)
}
