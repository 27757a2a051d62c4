//! Stream signals (spec 6.2): `conversations` tells a client of the
//! all-conversations stream that its list changed; `team` (the roster
//! changed) and `schedule` (a schedule was created, updated, deleted or
//! fired) go to the team stream. The body says only `{reason: "changed"}`.
//! A signal is not a log event: it has no id and is not replayed on resume
//! (a resuming client re-lists anyway). Signals fan out through the bus
//! in-process and, on PostgreSQL, to other replicas with
//! `NOTIFY acs_signals '<server>:<account>[:<kind>[:<machine>]]'`.
//!
//! A `conversations` signal names the machine of the conversation that
//! changed when there is one: a sandbox's callback key sees only its own
//! machine's conversations, so its stream is told only of those (another
//! conversation's changes would tell it when the owner is at work).

use axum::response::sse::Event as SseEvent;
use uuid::Uuid;

use crate::state::AppState;

pub use crate::journal::signal::{Signal, SignalKind};

/// Sends a signal to this server's streams and the other replicas'. Never
/// fails its caller: a signal that cannot reach other replicas is logged.
pub async fn send(state: &AppState, account_id: Uuid, kind: SignalKind) {
    publish(state, Signal { account_id, kind, sandbox_id: None }).await
}

async fn publish(state: &AppState, signal: Signal) {
    let kind = signal.kind;
    state.events.publish_signal(signal);
    if let Err(e) = state.events.notify_signal(&state.db, signal).await {
        tracing::warn!("{} signal not sent to other replicas: {e}", kind.as_str());
    }
}

/// The caller's conversation list changed (created, titled, finished, deleted): a conversation
/// on `sandbox_id`, or several.
pub async fn conversations_changed(state: &AppState, account_id: Uuid, sandbox_id: Option<Uuid>) {
    publish(state, Signal { account_id, kind: SignalKind::Conversations, sandbox_id }).await
}

/// The frame of a signal.
pub fn frame(kind: SignalKind) -> SseEvent {
    SseEvent::default().event(kind.as_str()).data(r#"{"reason":"changed"}"#)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callback_key_stream_is_told_only_of_its_machine() {
        let (account, machine) = (Uuid::new_v4(), Uuid::new_v4());
        let kinds = [SignalKind::Conversations];
        let on = |sandbox_id| Signal { account_id: account, kind: SignalKind::Conversations, sandbox_id };
        for s in [on(Some(machine)), on(Some(Uuid::new_v4())), on(None)] {
            assert!(s.is_for(account, None, &kinds), "an account key hears every change");
        }
        assert!(on(Some(machine)).is_for(account, Some(machine), &kinds));
        assert!(!on(Some(Uuid::new_v4())).is_for(account, Some(machine), &kinds));
        assert!(!on(None).is_for(account, Some(machine), &kinds));
        assert!(!on(Some(machine)).is_for(Uuid::new_v4(), None, &kinds), "another account");
        assert!(!on(Some(machine)).is_for(account, None, &[SignalKind::Team]), "another kind");
    }
}
