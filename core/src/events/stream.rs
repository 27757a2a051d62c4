//! Following the event log live (spec 6.2): what the log holds after a
//! cursor, then what the bus brings, each event once and in id order.
//! `GET /api/events/stream` serves it as SSE for all the caller's
//! conversations, resuming after `Last-Event-ID`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use serde::Serialize;
use tokio::sync::broadcast;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::{COLUMNS, Event, from_row};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Rows read from the log per catch-up query.
const BATCH: i64 = 1000;

/// Which events a stream shows: conversation events of one account,
/// narrowed to one machine's for a sandbox key.
#[derive(Debug, Clone)]
pub struct Filter {
    pub account_id: Uuid,
    pub sandbox_id: Option<Uuid>,
}

impl Filter {
    pub fn matches(&self, e: &Event) -> bool {
        e.account_id == self.account_id
            && e.conversation_id.is_some()
            && self.sandbox_id.is_none_or(|s| e.sandbox_id == Some(s))
    }
}

struct Follow {
    state: AppState,
    filter: Filter,
    rx: broadcast::Receiver<std::sync::Arc<Event>>,
    last: i64,
    backlog: VecDeque<Event>,
    catching_up: bool,
}

/// Every matching event with an id above `after`: first from the log, then
/// live. A subscriber that falls behind the bus reads the log again from its
/// last id, so nothing is lost and nothing repeats. Ids are assumed to
/// commit in order (SQLite writes one at a time; a conversation's events
/// are written by one task).
pub fn follow(state: AppState, filter: Filter, after: i64) -> impl Stream<Item = Event> + Send + 'static {
    // Subscribe before reading the log, so nothing written meanwhile slips between.
    let rx = state.events.subscribe();
    let start = Follow { state, filter, rx, last: after, backlog: VecDeque::new(), catching_up: true };
    futures::stream::unfold(start, |mut f| async move {
        loop {
            if let Some(e) = f.backlog.pop_front() {
                f.last = e.id;
                return Some((e, f));
            }
            if f.catching_up {
                match catch_up(&f).await {
                    Ok((events, more)) => {
                        f.catching_up = more;
                        f.backlog.extend(events);
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!("event stream: reading the log failed: {e}");
                        return None;
                    }
                }
            }
            match f.rx.recv().await {
                Ok(e) if e.id > f.last && f.filter.matches(&e) => {
                    f.last = e.id;
                    return Some(((*e).clone(), f));
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => f.catching_up = true,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

async fn catch_up(f: &Follow) -> Result<(Vec<Event>, bool), sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM events WHERE account_id = $1 AND conversation_id IS NOT NULL AND id > $2 \
         AND ($3 = '' OR sandbox_id = $3) ORDER BY id LIMIT $4"
    ));
    let rows = sqlx::query(sql)
        .bind(f.filter.account_id.to_string())
        .bind(f.last)
        .bind(f.filter.sandbox_id.map(|s| s.to_string()).unwrap_or_default())
        .bind(BATCH)
        .fetch_all(&f.state.db.pool)
        .await?;
    let more = rows.len() as i64 == BATCH;
    Ok((rows.iter().map(from_row).collect::<Result<_, _>>()?, more))
}

/// A frame of the all-conversations stream (its id travels in the `id:` line).
#[derive(Debug, Serialize, ToSchema)]
pub struct StreamLogEvent {
    /// `output` or `stage`.
    pub kind: String,
    #[serde(with = "time::serde::rfc3339")]
    pub ts: time::OffsetDateTime,
    /// Output text, or JSON-encoded metadata for stage events; secrets read `[REDACTED]`.
    pub data: String,
    /// `stdout`/`stderr` for output; empty for stage.
    pub stream: String,
    pub stage: Option<String>,
    pub state: Option<String>,
    pub turn_id: Option<Uuid>,
    pub duration_ms: Option<i64>,
    pub conversation_id: Option<Uuid>,
}

impl From<&Event> for StreamLogEvent {
    fn from(e: &Event) -> Self {
        StreamLogEvent {
            kind: e.kind.clone(),
            ts: e.ts,
            data: e.data.clone(),
            stream: e.stream.clone(),
            stage: e.stage.clone(),
            state: e.state.clone(),
            turn_id: e.turn_id,
            duration_ms: e.duration_ms,
            conversation_id: e.conversation_id,
        }
    }
}

/// The cursor a reconnecting client sends; 422 when it is not an event id.
pub fn last_event_id(headers: &HeaderMap) -> ApiResult<i64> {
    match headers.get("last-event-id") {
        None => Ok(0),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .filter(|id| *id >= 0)
            .ok_or_else(|| ApiError::invalid("Last-Event-ID", "must be an event id from this stream")),
    }
}

/// Live events of all the caller's conversations (SSE). Each frame is a
/// `StreamLogEvent` with the event id in its `id:` line; reconnect with
/// `Last-Event-ID` to resume with nothing lost or repeated. Comment frames
/// keep idle connections open.
#[utoipa::path(get, path = "/api/events/stream", tag = "events",
    params(("Last-Event-ID" = Option<i64>, Header, description = "Resume after this event id")),
    responses((status = 200, description = "text/event-stream of StreamLogEvent frames", body = StreamLogEvent,
        content_type = "text/event-stream")))]
async fn all_conversations(
    State(state): State<AppState>,
    p: Principal,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let after = last_event_id(&headers)?;
    let filter = Filter { account_id: p.account_id, sandbox_id: p.sandbox_id };
    let frames = futures::StreamExt::map(follow(state, filter, after), |e| {
        let frame = SseEvent::default().id(e.id.to_string());
        Ok(frame.json_data(StreamLogEvent::from(&e)).unwrap_or_else(|_| SseEvent::default().comment("unencodable")))
    });
    Ok(Sse::new(frames).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(all_conversations))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_event_id_is_an_event_id() {
        let mut h = HeaderMap::new();
        assert_eq!(last_event_id(&h).unwrap(), 0);
        h.insert("last-event-id", "42".parse().unwrap());
        assert_eq!(last_event_id(&h).unwrap(), 42);
        for bad in ["x", "-1", "4.2"] {
            h.insert("last-event-id", bad.parse().unwrap());
            assert!(last_event_id(&h).is_err(), "{bad}");
        }
    }
}
