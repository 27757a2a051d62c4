//! The event log: stage and output events of conversations and their
//! sandboxes (spec 2.2, 6.1). Ids are global to the server. A stage of a
//! sandbox is written once per conversation holding it, or once with no
//! conversation when none does (a machine being built ahead of its first).

pub mod history;
pub mod page;
pub mod relay;
pub mod signal;
pub mod stream;

pub use crate::journal::{COLUMNS, Event, NewEvent, ReadMark, Scope, StageState, bus, for_sandbox, from_row};

use serde_json::Value;
use sqlx::Row;
use uuid::Uuid;

use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

/// Appends a stage event; `data` is JSON metadata, already redacted.
pub async fn stage(
    app: &AppState,
    scope: &Scope,
    stage: &str,
    state: StageState,
    data: &Value,
    duration_ms: Option<i64>,
) -> Result<(), sqlx::Error> {
    append(app, scope, &[NewEvent::stage(stage, state, data).with_duration(duration_ms)], None).await.map(drop)
}

/// Appends output text of a stream (`stdout`/`stderr`), already redacted.
pub async fn output(app: &AppState, scope: &Scope, stream: &'static str, text: &str) -> Result<(), sqlx::Error> {
    append(app, scope, &[NewEvent::output(stream, text)], None).await.map(drop)
}

/// Rows per INSERT statement (12 parameters each stays under SQLite's 32766).
const ROWS_PER_INSERT: usize = 500;

/// Appends events in one transaction (multi-row INSERTs), to every conversation of the scope, and
/// publishes them. Returns the stored events in id order. Within one statement the database draws ids
/// in row order on both backends, so sorting the returned ids gives each row its id.
pub async fn append(
    app: &AppState,
    scope: &Scope,
    events: &[NewEvent],
    mark: Option<ReadMark>,
) -> Result<Vec<Event>, sqlx::Error> {
    let now = now_micros();
    let targets: Vec<Option<Uuid>> = if scope.conversations.is_empty() {
        vec![None]
    } else {
        scope.conversations.iter().copied().map(Some).collect()
    };
    let mut rows: Vec<Event> = Vec::with_capacity(events.len() * targets.len());
    for conversation in &targets {
        for e in events {
            rows.push(Event {
                id: 0,
                account_id: scope.account_id,
                conversation_id: *conversation,
                sandbox_id: scope.sandbox_id,
                turn_id: e.turn_id.or(scope.turn_id),
                kind: e.kind.to_owned(),
                stream: e.stream.to_owned(),
                stage: e.stage.clone(),
                state: e.state.map(|s| s.as_str().to_owned()),
                data: e.data.clone(),
                blocks: e.blocks.as_ref().map(Value::to_string),
                duration_ms: e.duration_ms,
                ts: from_micros(now),
            });
        }
    }
    let sqlite = app.db.backend == crate::db::Backend::Sqlite;
    // Ids commit in order (the database's lock); publishing them in that order too needs the
    // appends of this server to take turns until they are published.
    let turn = app.events.appending().await;
    let mut tx = app.db.begin().await?;
    if !sqlite {
        // One appender at a time, so ids commit in order: a stream that has sent id n never later
        // meets a smaller id committed after it (SQLite's write lock gives the same).
        sqlx::query("SELECT pg_advisory_xact_lock(7283001)").execute(&mut *tx).await?;
    }
    for chunk in rows.chunks_mut(ROWS_PER_INSERT) {
        let values: Vec<String> = (0..chunk.len())
            .map(|i| {
                let b = i * 12;
                // Plain `?` on SQLite: sqlx looks up each named `$N` there, quadratic in a long statement.
                let p: Vec<String> =
                    (1..=12).map(|k| if sqlite { "?".to_owned() } else { format!("${}", b + k) }).collect();
                format!("({})", p.join(", "))
            })
            .collect();
        let sql = format!(
            "INSERT INTO events (account_id, conversation_id, sandbox_id, turn_id, kind, stream, stage, state, data, \
             blocks, duration_ms, ts) VALUES {} RETURNING id",
            values.join(", ")
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for e in chunk.iter() {
            q = q
                .bind(e.account_id.to_string())
                .bind(e.conversation_id.map(|c| c.to_string()))
                .bind(e.sandbox_id.map(|s| s.to_string()))
                .bind(e.turn_id.map(|t| t.to_string()))
                .bind(e.kind.clone())
                .bind(e.stream.clone())
                .bind(e.stage.clone())
                .bind(e.state.clone())
                .bind(e.data.clone())
                .bind(e.blocks.clone())
                .bind(e.duration_ms)
                .bind(now);
        }
        let mut ids: Vec<i64> =
            q.fetch_all(&mut *tx).await?.iter().map(|r| r.try_get("id")).collect::<Result<_, _>>()?;
        ids.sort_unstable();
        for (e, id) in chunk.iter_mut().zip(ids) {
            e.id = id;
        }
    }
    let after = app.event_hooks.appended(&mut tx, &rows).await?;
    if let Some(mark) = mark {
        sqlx::query("UPDATE conversations SET agent_offset = $2 WHERE id = $1")
            .bind(mark.conversation_id.to_string())
            .bind(mark.agent_offset)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    rows.sort_by_key(|e| e.id);
    for e in &rows {
        app.events.publish(e.clone());
    }
    drop(turn);
    for hook in after {
        hook.committed(app);
    }
    let ids: Vec<i64> = rows.iter().map(|e| e.id).collect();
    app.events.notify(&app.db, &ids).await?;
    Ok(rows)
}
