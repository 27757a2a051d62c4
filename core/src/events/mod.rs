//! The event log: stage and output events of conversations and their
//! sandboxes (spec 2.2, 6.1). Ids are global to the server. A stage of a
//! sandbox is written once per conversation holding it, or once with no
//! conversation when none does (a machine being built ahead of its first).

pub mod bus;
pub mod page;
pub mod stream;

use serde_json::Value;
use sqlx::Row;
use sqlx::any::AnyRow;
use uuid::Uuid;

use crate::db::{Db, RowExt};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageState {
    Started,
    Done,
    Failed,
    Interrupted,
}

impl StageState {
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
pub(crate) const COLUMNS: &str =
    "id, account_id, conversation_id, sandbox_id, turn_id, kind, stream, stage, state, data, duration_ms, ts";

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
    pub duration_ms: Option<i64>,
    pub ts: time::OffsetDateTime,
}

/// Appends a stage event; `data` is JSON metadata, already redacted.
pub async fn stage(
    app: &AppState,
    scope: &Scope,
    stage: &str,
    state: StageState,
    data: &Value,
    duration_ms: Option<i64>,
) -> Result<(), sqlx::Error> {
    insert(app, scope, "stage", "", Some(stage), Some(state.as_str()), &data.to_string(), duration_ms).await
}

/// Appends output text of a stream (`stdout`/`stderr`), already redacted.
pub async fn output(app: &AppState, scope: &Scope, stream: &str, text: &str) -> Result<(), sqlx::Error> {
    insert(app, scope, "output", stream, None, None, text, None).await
}

#[allow(clippy::too_many_arguments)]
async fn insert(
    app: &AppState,
    scope: &Scope,
    kind: &str,
    stream: &str,
    stage: Option<&str>,
    state: Option<&str>,
    data: &str,
    duration_ms: Option<i64>,
) -> Result<(), sqlx::Error> {
    let now = now_micros();
    let targets: Vec<Option<Uuid>> = if scope.conversations.is_empty() {
        vec![None]
    } else {
        scope.conversations.iter().copied().map(Some).collect()
    };
    for conversation in targets {
        let row = sqlx::query(
            "INSERT INTO events (account_id, conversation_id, sandbox_id, turn_id, kind, stream, stage, state, data, \
             duration_ms, ts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
        )
        .bind(scope.account_id.to_string())
        .bind(conversation.map(|c| c.to_string()))
        .bind(scope.sandbox_id.map(|s| s.to_string()))
        .bind(scope.turn_id.map(|t| t.to_string()))
        .bind(kind.to_owned())
        .bind(stream.to_owned())
        .bind(stage.map(str::to_owned))
        .bind(state.map(str::to_owned))
        .bind(data.to_owned())
        .bind(duration_ms)
        .bind(now)
        .fetch_one(&app.db.pool)
        .await?;
        let id: i64 = row.try_get("id")?;
        app.events.publish(Event {
            id,
            account_id: scope.account_id,
            conversation_id: conversation,
            sandbox_id: scope.sandbox_id,
            turn_id: scope.turn_id,
            kind: kind.to_owned(),
            stream: stream.to_owned(),
            stage: stage.map(str::to_owned),
            state: state.map(str::to_owned),
            data: data.to_owned(),
            duration_ms,
            ts: from_micros(now),
        });
        app.events.notify(&app.db, id).await?;
    }
    Ok(())
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

pub(crate) fn from_row(r: &AnyRow) -> Result<Event, sqlx::Error> {
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
        duration_ms: r.try_get("duration_ms")?,
        ts: from_micros(r.try_get("ts")?),
    })
}
