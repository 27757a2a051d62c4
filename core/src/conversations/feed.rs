//! A conversation's event log over HTTP: the paged feed (spec 2.2
//! `LogEventListResponse`, 4.1 events query rules), its SSE stream, and the
//! transcript built from it. A conversation is visible to its account's
//! keys, and to a sandbox key only while it runs on that key's machine;
//! otherwise it is 404 as if absent.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, Sse};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::Principal;
use crate::conversations::store::{self, ConversationRow};
use crate::error::{ApiError, ApiResult};
use crate::events::Event;
use crate::events::history::{HistoryEntry, history as transcript};
use crate::events::page::{Output, PageQuery, page};
use crate::events::stream::{
    EventStream, Filter, Shape, StreamQuery, blocks, follow, frame, last_event_id, sse, while_callback_key_lives,
};
use crate::http::{Data, PageMeta, Path, Query, ok};
use crate::state::AppState;

/// The conversation `id` if the caller may see it; 404 otherwise.
async fn visible(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<ConversationRow> {
    match store::get(&state.db, id).await? {
        Some(c) if c.account_id == p.account_id && p.sandbox_id.is_none_or(|s| c.sandbox_id == Some(s)) => Ok(c),
        _ => Err(ApiError::not_found("Conversation")),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Events after this id (a cursor from a page); the default direction.
    pub after: Option<i64>,
    /// Events before this id: the older page with `order=desc`, an upper bound on forward pages.
    pub before: Option<i64>,
    /// `asc` (default) or `desc` (newest first).
    pub order: Option<String>,
    /// 1 to 5000, default 100.
    pub limit: Option<i64>,
    /// With `order=desc` only: extend the page back to the first event of the turn it ends in.
    #[serde(default)]
    pub whole_turns: bool,
    /// Add `blocks` to each event (`[]` for non-output events).
    #[serde(default)]
    pub blocks: bool,
    /// Include the `prompt`-stream output events (each turn's prompt as sent).
    #[serde(default)]
    pub prompts: bool,
    /// Comma-separated output streams to keep (`stdout`, `stderr`); stage events are always kept.
    pub streams: Option<String>,
}

/// One event of the log.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogEvent {
    /// Global to the server, so a conversation's ids have gaps.
    pub id: i64,
    /// `output` or `stage`.
    #[schema(value_type = crate::events::stream::EventKind)]
    pub kind: String,
    #[serde(with = "time::serde::rfc3339")]
    pub ts: time::OffsetDateTime,
    /// Output text, or JSON-encoded metadata for stage events; secrets read `[REDACTED]`.
    pub data: String,
    /// `stdout`/`stderr` (or `prompt`, with `prompts=true`) for output; empty for stage.
    pub stream: String,
    pub stage: Option<String>,
    #[schema(value_type = Option<crate::events::stream::StageStateName>)]
    pub state: Option<String>,
    pub turn_id: Option<Uuid>,
    /// Only with `blocks=true`; empty for non-output events.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<crate::events::stream::Block>>)]
    pub blocks: Option<Vec<Value>>,
}

impl LogEvent {
    fn new(e: &Event, with_blocks: bool) -> LogEvent {
        LogEvent {
            id: e.id,
            kind: e.kind.clone(),
            ts: e.ts,
            data: e.data.clone(),
            stream: e.stream.clone(),
            stage: e.stage.clone(),
            state: e.state.clone(),
            turn_id: e.turn_id,
            blocks: with_blocks.then(|| blocks(e)),
        }
    }
}

/// Where a page sits in the log.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogEventPage {
    /// `asc` or `desc`.
    #[schema(value_type = crate::events::stream::PageOrder)]
    pub order: String,
    pub oldest_cursor: Option<i64>,
    /// On the first `desc` page: the `Last-Event-ID` to follow the stream from.
    pub newest_cursor: Option<i64>,
    /// A turn longer than 5000 events was cut at the page's end.
    pub turn_split: bool,
}

#[derive(Serialize, ToSchema)]
pub struct LogEventListResponse {
    pub data: Vec<LogEvent>,
    pub meta: PageMeta,
    pub page: LogEventPage,
}

/// A page of the conversation's event log. Cursors are event ids taken
/// from a page: `meta.next_cursor` is the last id of the page (the oldest
/// with `order=desc`, passed as `before` for the older page).
#[utoipa::path(get, path = "/api/conversations/{id}/events", operation_id = "listConversationEvents", tag = "conversations",
    params(("id" = Uuid, Path), EventsQuery),
    responses((status = 200, description = "A page of events", body = LogEventListResponse),
        (status = 404, description = "`not_found`", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed` naming the parameter", body = crate::error::ErrorBody)))]
async fn events(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Query(q): Query<EventsQuery>,
) -> ApiResult<axum::Json<LogEventListResponse>> {
    let conversation = visible(&state, &p, id).await?;
    let query = PageQuery::new(q.after, q.before, q.order.as_deref(), q.limit, q.whole_turns)?
        .with_output(Output::new(q.prompts, q.streams.as_deref())?);
    let pg = page(&state.db, conversation.id, &query).await?;
    Ok(axum::Json(LogEventListResponse {
        data: pg.events.iter().map(|e| LogEvent::new(e, q.blocks)).collect(),
        meta: PageMeta { limit: query.limit, has_more: pg.has_more, next_cursor: pg.next_cursor },
        page: LogEventPage {
            order: pg.order.as_str().to_owned(),
            oldest_cursor: pg.oldest_cursor,
            newest_cursor: pg.newest_cursor,
            turn_split: pg.turn_split,
        },
    }))
}

/// The conversation's events as SSE: the log after `Last-Event-ID` (from the
/// start without it), then live. Frames are `StreamLogEvent` without
/// `duration_ms` and `conversation_id`, the event id in the `id:` line;
/// prompts are not sent. Comment frames keep idle connections open.
#[utoipa::path(get, path = "/api/conversations/{id}/stream", operation_id = "streamConversationEvents", tag = "conversations",
    params(("id" = Uuid, Path), StreamQuery,
        ("Last-Event-ID" = Option<String>, Header, nullable = false, pattern = "^[0-9]+$", description = "Resume after this event id (the `id:` of the last frame seen)")),
    responses((status = 200, description = "text/event-stream of StreamLogEvent frames", body = EventStream,
        content_type = "text/event-stream"),
        (status = 404, description = "`not_found`", body = crate::error::ErrorBody)))]
async fn stream(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    headers: HeaderMap,
    Query(q): Query<StreamQuery>,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let conversation = visible(&state, &p, id).await?;
    let after = last_event_id(&headers)?;
    // The conversation was checked once; its events stay its account's whatever machine it moves to.
    let filter =
        Filter { account_id: conversation.account_id, sandbox_id: None, conversation_id: Some(conversation.id) };
    let shape = Shape { blocks: q.blocks, all: false };
    let frames = futures::StreamExt::map(follow(state.clone(), filter, after), move |e| frame(&e, shape));
    Ok(sse(while_callback_key_lives(state, &p, frames)))
}

/// The transcript: per turn, the user's prompt and the agent's reply as
/// blocks. Streamed text and thoughts are joined, and a tool call carries
/// its latest status.
#[utoipa::path(get, path = "/api/conversations/{id}/history", operation_id = "getConversationHistory", tag = "conversations",
    params(("id" = Uuid, Path)),
    responses((status = 200, description = "The transcript, oldest first", body = Data<Vec<HistoryEntry>>),
        (status = 404, description = "`not_found`", body = crate::error::ErrorBody)))]
async fn history(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<Vec<HistoryEntry>>> {
    let conversation = visible(&state, &p, id).await?;
    Ok(ok(transcript(&state.db, conversation.id).await?))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(events)).routes(routes!(stream)).routes(routes!(history))
}
