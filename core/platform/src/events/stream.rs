//! Following the event log live (spec 6.2): what the log holds after a
//! cursor, then what the bus brings, each event once and in id order.
//! `GET /api/events/stream` serves it as SSE for all the caller's
//! conversations, resuming after `Last-Event-ID`, with `conversations`
//! signals between the events; the per-conversation stream (in `feed`)
//! follows one conversation the same way. Prompt-stream events are never
//! on a stream.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::signal::{self, Signal, SignalKind};
use super::{COLUMNS, Event, from_row};
use crate::auth::{Principal, Scope};
use crate::error::{ApiError, ApiResult};
use crate::http::Query;
use crate::state::AppState;

/// Rows read from the log per catch-up query.
const BATCH: i64 = 1000;

/// Which events a stream shows: conversation events of one account,
/// narrowed to one machine's for a sandbox key, or to one conversation.
#[derive(Debug, Clone)]
pub struct Filter {
    pub account_id: Uuid,
    pub sandbox_id: Option<Uuid>,
    pub conversation_id: Option<Uuid>,
}

impl Filter {
    pub fn matches(&self, e: &Event) -> bool {
        e.account_id == self.account_id
            && e.conversation_id.is_some()
            && self.sandbox_id.is_none_or(|s| e.sandbox_id == Some(s))
            && self.conversation_id.is_none_or(|c| e.conversation_id == Some(c))
            && !(e.kind == "output" && e.stream == "prompt")
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
/// last id, so nothing is lost and nothing repeats. It ends when the server
/// shuts down. Ids are assumed to commit in order (SQLite writes one at a
/// time; a conversation's events are written by one task).
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
            // A stream ends with the server, or a graceful shutdown would wait on it forever;
            // the client resumes elsewhere with Last-Event-ID.
            let received = tokio::select! {
                _ = f.state.shutdown.cancelled() => return None,
                r = f.rx.recv() => r,
            };
            match received {
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
    // One conversation reads through its index; all of them by id range.
    let which = if f.filter.conversation_id.is_some() {
        "conversation_id = $5"
    } else {
        "conversation_id IS NOT NULL AND $5 = ''"
    };
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM events WHERE {which} AND account_id = $1 AND id > $2 \
         AND ($3 = '' OR sandbox_id = $3) AND (kind <> 'output' OR stream <> 'prompt') ORDER BY id LIMIT $4"
    ));
    let rows = sqlx::query(sql)
        .bind(f.filter.account_id.to_string())
        .bind(f.last)
        .bind(f.filter.sandbox_id.map(|s| s.to_string()).unwrap_or_default())
        .bind(BATCH)
        .bind(f.filter.conversation_id.map(|c| c.to_string()).unwrap_or_default())
        .fetch_all(&f.state.db.pool)
        .await?;
    let more = rows.len() as i64 == BATCH;
    Ok((rows.iter().map(from_row).collect::<Result<_, _>>()?, more))
}

/// The body of the `/stream` operations, for the document: not one JSON
/// value but a `text/event-stream` that stays open. A generator hands back
/// the raw stream; the SDKs' stream helpers parse it (docs/clients.md).
pub struct EventStream;

impl utoipa::PartialSchema for EventStream {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let string = || ObjectBuilder::new().schema_type(Type::String);
        // Described per event, as SSE-aware readers (schemathesis, the SDKs'
        // followers) take a `text/event-stream` schema to be.
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "id",
                string().pattern(Some("^[0-9]+$")).description(Some(
                    "The event id (`id:` line): send the last one seen as `Last-Event-ID` to resume. \
                     Absent on signal frames.",
                )),
            )
            .property(
                "event",
                string().description(Some(
                    "The frame's name (`event:` line): absent for a log event; a signal's kind \
                     (`conversations`, `team`, `schedule`) whose data is `{\"reason\": \"changed\"}`.",
                )),
            )
            .property(
                "data",
                string().content_media_type("application/json").description(Some(
                    "JSON: a `StreamLogEvent` for a log event, `{\"reason\": \"changed\"}` for a signal.",
                )),
            )
            .property("retry", ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)))
            .description(Some(
                "Server-sent events (text/event-stream), open until the client leaves; this schema \
                 describes one event. Lines starting with `:` keep the connection alive.",
            ))
            .into()
    }
}

impl ToSchema for EventStream {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        // The frames' payload is documented beside the stream for the SDKs' types.
        schemas.push((StreamLogEvent::name().into_owned(), <StreamLogEvent as utoipa::PartialSchema>::schema()));
    }
}

/// One block of an output event (ACP content as the log keeps it), for the
/// document: its `type` names which fields it carries (docs/conversations.md).
pub struct Block;

impl utoipa::PartialSchema for Block {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "type",
                ObjectBuilder::new().schema_type(Type::String).description(Some(
                    "`text`, `image`, `thinking`, `tool_call`, `tool_call_update`, `plan`, \
                     `permission_request`, or another kind the runtime reports",
                )),
            )
            .required("type")
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .description(Some("A content block: `type` and the fields of that kind, as the runtime reported them."))
            .into()
    }
}

impl ToSchema for Block {}

/// A frame of an event stream (its id travels in the `id:` line).
#[derive(Debug, Serialize, ToSchema)]
pub struct StreamLogEvent {
    /// `output` or `stage`.
    #[schema(value_type = EventKind)]
    pub kind: String,
    #[serde(with = "time::serde::rfc3339")]
    pub ts: time::OffsetDateTime,
    /// Output text, or JSON-encoded metadata for stage events; secrets read `[REDACTED]`.
    pub data: String,
    /// `stdout`/`stderr` for output; empty for stage.
    pub stream: String,
    pub stage: Option<String>,
    #[schema(value_type = Option<StageStateName>)]
    pub state: Option<String>,
    pub turn_id: Option<Uuid>,
    /// Only with `?blocks=true`; empty for non-output events.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Block>>)]
    pub blocks: Option<Vec<Value>>,
    /// On the all-conversations stream only (null when the stage took no measured time).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    pub duration_ms: Option<Option<i64>>,
    /// On the all-conversations and team streams only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<Uuid>,
    /// On the team stream only: the teammate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<Uuid>,
}

/// Which optional fields a stream's frames carry.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub blocks: bool,
    /// The all-conversations stream: `duration_ms` and `conversation_id` too.
    pub all: bool,
}

impl StreamLogEvent {
    pub fn new(e: &Event, shape: Shape) -> StreamLogEvent {
        StreamLogEvent {
            kind: e.kind.clone(),
            ts: e.ts,
            data: e.data.clone(),
            stream: e.stream.clone(),
            stage: e.stage.clone(),
            state: e.state.clone(),
            turn_id: e.turn_id,
            blocks: shape.blocks.then(|| blocks(e)),
            duration_ms: shape.all.then_some(e.duration_ms),
            conversation_id: if shape.all { e.conversation_id } else { None },
            agent_id: None,
        }
    }
}

/// The blocks of an event as sent: those of an output event, `[]` otherwise
/// (or when the stored text is not an array, which the writer never makes).
pub fn blocks(e: &Event) -> Vec<Value> {
    match (&*e.kind, &e.blocks) {
        ("output", Some(text)) => serde_json::from_str(text).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The SSE frame of an event.
pub fn frame(e: &Event, shape: Shape) -> SseEvent {
    frame_of(e.id, &StreamLogEvent::new(e, shape))
}

/// The SSE frame of event `id` with this body.
pub fn frame_of(id: i64, body: &StreamLogEvent) -> SseEvent {
    SseEvent::default()
        .id(id.to_string())
        .json_data(body)
        .unwrap_or_else(|_| SseEvent::default().comment("unencodable"))
}

/// An event stream as SSE, with keep-alive comments.
pub fn sse<S>(frames: S) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>>
where
    S: Stream<Item = SseEvent> + Send + 'static,
{
    Sse::new(futures::StreamExt::map(frames, Ok)).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}

/// A comment frame this often keeps idle connections (and proxies) open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

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

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Add `blocks` (structured content) to each frame.
    #[serde(default)]
    pub blocks: bool,
}

/// Live events of all the caller's conversations (SSE). Each frame is a
/// `StreamLogEvent` with the event id in its `id:` line; reconnect with
/// `Last-Event-ID` to resume with nothing lost or repeated. Between them,
/// frames named `conversations` with data `{"reason": "changed"}` (no id)
/// say the conversation list changed. Comment frames keep idle connections open.
#[utoipa::path(get, path = "/api/events/stream", operation_id = "streamEvents", tag = "events",
    params(StreamQuery, ("Last-Event-ID" = Option<String>, Header, nullable = false, pattern = "^[0-9]+$", description = "Resume after this event id (the `id:` of the last frame seen)")),
    responses((status = 200, description = "text/event-stream of StreamLogEvent frames, and `conversations` \
        signal frames (`{\"reason\": \"changed\"}`, no id)", body = EventStream, content_type = "text/event-stream")))]
async fn all_conversations(
    State(state): State<AppState>,
    p: Principal,
    headers: HeaderMap,
    Query(q): Query<StreamQuery>,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let after = last_event_id(&headers)?;
    // Subscribed before the log is read, so no change slips by unannounced.
    let signals = state.events.subscribe_signals();
    let filter = Filter { account_id: p.account_id, sandbox_id: p.sandbox_id, conversation_id: None };
    let shape = Shape { blocks: q.blocks, all: true };
    let events = futures::StreamExt::map(follow(state.clone(), filter, after), move |e| frame(&e, shape));
    let frames = with_signals(events, signals, (p.account_id, p.sandbox_id), &[SignalKind::Conversations]);
    Ok(sse(while_callback_key_lives(state, &p, frames)))
}

/// How often a stream opened with a sandbox's callback key checks that the key still stands.
const KEY_CHECK: Duration = Duration::from_secs(2);

/// Ends a stream opened with a sandbox's callback key once the key is
/// revoked (at every stop of its machine), so a stream held open past a
/// park or reset (from outside, with a key that left the machine) does not
/// go on to show the machine's next run. Other keys' streams pass as they are.
pub fn while_callback_key_lives<S>(
    state: AppState,
    p: &Principal,
    frames: S,
) -> impl Stream<Item = SseEvent> + Send + use<S>
where
    S: Stream<Item = SseEvent> + Send + 'static,
{
    let key = (p.scope == Scope::Sandbox).then_some(p.key_id);
    let revoked = async move {
        let Some(key) = key else { return futures::future::pending().await };
        loop {
            tokio::time::sleep(KEY_CHECK).await;
            match crate::auth::lookup::stands(&state.db, key).await {
                Ok(true) => {}
                Ok(false) => return,
                // The database answers again later; meanwhile the key is taken as it was.
                Err(e) => tracing::warn!(key = %key, "stream: could not check its key: {e}"),
            }
        }
    };
    futures::StreamExt::take_until(frames, Box::pin(revoked))
}

/// Interleaves the signal frames of `account` of these `kinds` with the
/// event frames; ends when the events end. With a machine (a callback key's
/// stream) only the signals of that machine's conversations are sent.
pub fn with_signals<S>(
    events: S,
    signals: broadcast::Receiver<Signal>,
    (account, machine): (Uuid, Option<Uuid>),
    kinds: &'static [SignalKind],
) -> impl Stream<Item = SseEvent> + Send + 'static
where
    S: Stream<Item = SseEvent> + Send + 'static,
{
    let events = Box::pin(events);
    // Frames owed after a lag: one of each kind says as much as any number of missed signals.
    let owed: VecDeque<SignalKind> = VecDeque::new();
    futures::stream::unfold((events, signals, owed), move |(mut events, mut signals, mut owed)| async move {
        loop {
            if let Some(kind) = owed.pop_front() {
                return Some((signal::frame(kind), (events, signals, owed)));
            }
            // Signals first: one sent before an event was written is sent before it.
            tokio::select! {
                biased;
                s = signals.recv() => match s {
                    Ok(s) if s.is_for(account, machine, kinds) =>
                        return Some((signal::frame(s.kind), (events, signals, owed))),
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => owed.extend(kinds.iter().copied()),
                    // The bus lives in the state this stream's events hold: not while they flow.
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                e = futures::StreamExt::next(&mut events) => return e.map(|e| (e, (events, signals, owed))),
            }
        }
    })
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(all_conversations))
}

crate::string_enum!(
    EventKind,
    "`output` (text the agent or machine wrote) or `stage` (a step began or ended).",
    ["output", "stage"]
);
crate::string_enum!(
    PageOrder,
    "The page's order by event id.",
    super::page::Order::ALL.map(super::page::Order::as_str)
);
crate::string_enum!(
    StageStateName,
    "A stage event's state.",
    crate::journal::StageState::ALL.map(crate::journal::StageState::as_str)
);

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
