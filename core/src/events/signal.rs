//! Stream signals (spec 6.2): `conversations` tells a client of the
//! all-conversations stream that its list changed; the body says only
//! `{reason: "changed"}`. A signal is not a log event: it has no id and is
//! not replayed on resume (a resuming client re-lists anyway). Signals fan
//! out through the bus in-process and, on PostgreSQL, to other replicas
//! with `NOTIFY acs_signals '<server>:<account>'`.

use axum::response::sse::Event as SseEvent;
use uuid::Uuid;

use crate::state::AppState;

/// The SSE event name of a conversation-list signal.
pub const CONVERSATIONS: &str = "conversations";

/// The caller's conversation list changed (created, titled, finished, deleted).
/// Never fails its caller: a signal that cannot reach other replicas is logged.
pub async fn conversations_changed(state: &AppState, account_id: Uuid) {
    state.events.publish_signal(account_id);
    if let Err(e) = state.events.notify_signal(&state.db, account_id).await {
        tracing::warn!("conversations signal not sent to other replicas: {e}");
    }
}

/// The frame of a `conversations` signal.
pub fn frame() -> SseEvent {
    SseEvent::default().event(CONVERSATIONS).data(r#"{"reason":"changed"}"#)
}
