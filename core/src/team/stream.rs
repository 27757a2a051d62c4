//! `GET /api/team/stream` (spec 4.5, 6.2): the events of the account's team
//! conversations, each with `conversation_id` and `agent_id` (no
//! `duration_ms`), resumable with `Last-Event-ID`, and `team` and
//! `schedule` signal frames between them.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, Sse};
use futures::Stream;
use uuid::Uuid;

use super::store;
use crate::auth::Principal;
use crate::error::ApiResult;
use crate::events::Event;
use crate::events::signal::SignalKind;
use crate::events::stream::{
    EventStream, Filter, Shape, StreamLogEvent, StreamQuery, follow, frame_of, last_event_id, sse, with_signals,
};
use crate::http::Query;
use crate::state::AppState;

/// Team conversations seen so far and their agent (None: not a team
/// conversation). Whether a conversation is a team one never changes.
type Seen = Arc<Mutex<HashMap<Uuid, Option<Uuid>>>>;

/// The agent of a team conversation, None for another; looked up once per conversation.
async fn team_agent(state: &AppState, seen: &Seen, conversation: Uuid) -> Option<Uuid> {
    if let Some(known) = seen.lock().unwrap_or_else(PoisonError::into_inner).get(&conversation) {
        return *known;
    }
    // A new conversation's first machine events are written a moment before its row.
    for _ in 0..ROW_WAITS {
        match store::team_of(&state.db, conversation).await {
            Ok(Some((agent, team))) => {
                let agent = team.then_some(agent);
                seen.lock().unwrap_or_else(PoisonError::into_inner).insert(conversation, agent);
                return agent;
            }
            Ok(None) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(err) => {
                tracing::warn!("team stream: looking up conversation {conversation}: {err}");
                return None;
            }
        }
    }
    None
}

/// How many times (50 ms apart) an event's conversation row is looked for.
const ROW_WAITS: usize = 40;

async fn team_frame(state: &AppState, seen: &Seen, e: &Event, blocks: bool) -> Option<SseEvent> {
    let conversation = e.conversation_id?;
    let agent = team_agent(state, seen, conversation).await?;
    let mut body = StreamLogEvent::new(e, Shape { blocks, all: false });
    body.conversation_id = Some(conversation);
    body.agent_id = Some(agent);
    Some(frame_of(e.id, &body))
}

/// Live events of the account's team conversations (SSE). Each frame is a
/// `StreamLogEvent` with `conversation_id` and `agent_id`, the event id in
/// its `id:` line; reconnect with `Last-Event-ID` to resume with nothing
/// lost or repeated. Between them, frames named `team` (the roster changed)
/// and `schedule` (a schedule was created, updated, deleted or fired) with
/// data `{"reason": "changed"}` and no id.
#[utoipa::path(get, path = "/api/team/stream", operation_id = "streamTeamEvents", tag = "team",
    params(StreamQuery, ("Last-Event-ID" = Option<String>, Header, nullable = false, pattern = "^[0-9]+$", description = "Resume after this event id (the `id:` of the last frame seen)")),
    responses((status = 200, description = "text/event-stream of StreamLogEvent frames, and `team` and `schedule` \
        signal frames (`{\"reason\": \"changed\"}`, no id)", body = EventStream, content_type = "text/event-stream")))]
pub(super) async fn team_stream(
    State(state): State<AppState>,
    p: Principal,
    headers: HeaderMap,
    Query(q): Query<StreamQuery>,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let after = last_event_id(&headers)?;
    // Subscribed before the log is read, so no change slips by unannounced.
    let signals = state.events.subscribe_signals();
    let filter = Filter { account_id: p.account_id, sandbox_id: p.sandbox_id, conversation_id: None };
    let seen: Seen = Arc::default();
    let st = state.clone();
    let events = futures::StreamExt::filter_map(follow(state, filter, after), move |e| {
        let (st, seen) = (st.clone(), seen.clone());
        async move { team_frame(&st, &seen, &e, q.blocks).await }
    });
    Ok(sse(with_signals(events, signals, (p.account_id, None), &[SignalKind::Team, SignalKind::Schedule])))
}
