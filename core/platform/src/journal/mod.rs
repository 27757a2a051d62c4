//! The event log's records and their live fan-out: what an event is, how a
//! stored one reads back, stream signals, and the in-process bus (with the
//! payloads other replicas' notifications carry). Plain types and storage,
//! below the server state; appending lives in `events`, above it.

pub mod bus;
pub mod signal;

use serde_json::Value;
use sqlx::Row;
use sqlx::any::AnyRow;
use uuid::Uuid;

use crate::db::{Db, RowExt};
use crate::time_fmt::from_micros;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageState {
    Started,
    Done,
    Failed,
    Interrupted,
}

impl StageState {
    pub const ALL: [StageState; 4] =
        [StageState::Started, StageState::Done, StageState::Failed, StageState::Interrupted];

    pub fn as_str(self) -> &'static str {
        match self {
            StageState::Started => "started",
            StageState::Done => "done",
            StageState::Failed => "failed",
            StageState::Interrupted => "interrupted",
        }
    }
}

/// Where an event belongs.
#[derive(Debug, Clone)]
pub struct Scope {
    pub account_id: Uuid,
    pub sandbox_id: Option<Uuid>,
    /// Conversations the event is written to; empty writes one row without.
    pub conversations: Vec<Uuid>,
    pub turn_id: Option<Uuid>,
}

/// The columns `from_row` reads.
pub const COLUMNS: &str =
    "id, account_id, conversation_id, sandbox_id, turn_id, kind, stream, stage, state, data, blocks, duration_ms, ts";

/// A stored event as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: i64,
    pub account_id: Uuid,
    pub conversation_id: Option<Uuid>,
    pub sandbox_id: Option<Uuid>,
    pub turn_id: Option<Uuid>,
    pub kind: String,
    pub stream: String,
    pub stage: Option<String>,
    pub state: Option<String>,
    pub data: String,
    /// Structured content of an output event (a JSON array of blocks), when it has any.
    pub blocks: Option<String>,
    pub duration_ms: Option<i64>,
    pub ts: time::OffsetDateTime,
}

/// An event to append; `data` and `blocks` already redacted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewEvent {
    pub kind: &'static str,
    pub stream: &'static str,
    pub stage: Option<String>,
    pub state: Option<StageState>,
    pub data: String,
    pub blocks: Option<Value>,
    pub duration_ms: Option<i64>,
    /// Overrides the scope's turn.
    pub turn_id: Option<Uuid>,
}

impl NewEvent {
    pub fn stage(stage: &str, state: StageState, data: &Value) -> NewEvent {
        NewEvent {
            kind: "stage",
            stage: Some(stage.to_owned()),
            state: Some(state),
            data: data.to_string(),
            ..NewEvent::default()
        }
    }

    pub fn output(stream: &'static str, text: impl Into<String>) -> NewEvent {
        NewEvent { kind: "output", stream, data: text.into(), ..NewEvent::default() }
    }

    pub fn with_blocks(mut self, blocks: Value) -> NewEvent {
        self.blocks = Some(blocks);
        self
    }

    pub fn with_duration(mut self, ms: Option<i64>) -> NewEvent {
        self.duration_ms = ms;
        self
    }
}

/// Where an agent's output was read up to, saved with the events read from it, so a reattach after a
/// crash neither repeats nor loses any.
#[derive(Debug, Clone, Copy)]
pub struct ReadMark {
    pub conversation_id: Uuid,
    pub agent_offset: i64,
}

/// Every event of a sandbox in order (the conversations issue adds the paged feeds).
pub async fn for_sandbox(db: &Db, sandbox_id: Uuid) -> Result<Vec<Event>, sqlx::Error> {
    let rows =
        sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM events WHERE sandbox_id = $1 ORDER BY id")))
            .bind(sandbox_id.to_string())
            .fetch_all(&db.pool)
            .await?;
    rows.iter().map(from_row).collect()
}

pub fn from_row(r: &AnyRow) -> Result<Event, sqlx::Error> {
    Ok(Event {
        id: r.try_get("id")?,
        account_id: r.uuid("account_id")?,
        conversation_id: r.opt_uuid("conversation_id")?,
        sandbox_id: r.opt_uuid("sandbox_id")?,
        turn_id: r.opt_uuid("turn_id")?,
        kind: r.try_get("kind")?,
        stream: r.try_get("stream")?,
        stage: r.try_get("stage")?,
        state: r.try_get("state")?,
        data: r.try_get("data")?,
        blocks: r.try_get("blocks")?,
        duration_ms: r.try_get("duration_ms")?,
        ts: from_micros(r.try_get("ts")?),
    })
}
