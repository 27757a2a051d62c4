//! A conversation's transcript as blocks (`GET /api/conversations/{id}/history`):
//! the output events that carry blocks, grouped by turn and speaker, with
//! streamed pieces put back together. The prompt stream is the user's side;
//! every other output stream with blocks is the agent's.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{COLUMNS, Event, from_row, stream::blocks};
use crate::db::Db;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Agent,
}

/// One speaker's part of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct HistoryEntry {
    /// Null for output written outside any turn.
    pub turn_id: Option<Uuid>,
    pub role: Role,
    /// Blocks as the event log holds them (`text`, `image`, `thinking`,
    /// `tool_call`, `plan`, `permission_request`, ...), streamed pieces merged.
    #[schema(value_type = Vec<super::stream::Block>)]
    pub blocks: Vec<Value>,
}

/// The whole transcript of a conversation, oldest first.
pub async fn history(db: &Db, conversation: Uuid) -> Result<Vec<HistoryEntry>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM events WHERE conversation_id = $1 AND kind = 'output' AND blocks IS NOT NULL ORDER BY id"
    ));
    let rows = sqlx::query(sql).bind(conversation.to_string()).fetch_all(&db.pool).await?;
    let events: Vec<Event> = rows.iter().map(from_row).collect::<Result<_, _>>()?;
    Ok(transcript(events.iter().map(|e| {
        let role = if e.stream == "prompt" { Role::User } else { Role::Agent };
        (e.turn_id, role, blocks(e))
    })))
}

/// Groups blocks, in log order, into entries: a new entry whenever the turn
/// or the speaker changes. Within an entry, consecutive `text` blocks are
/// one block, and so are consecutive `thinking` blocks; a `tool_call_update`
/// is folded into the `tool_call` of the same `tool_call_id` (its fields,
/// the status among them, replace the earlier ones), or stands as that tool
/// call when the call itself is missing. Every other block is kept as is.
pub fn transcript(items: impl IntoIterator<Item = (Option<Uuid>, Role, Vec<Value>)>) -> Vec<HistoryEntry> {
    let mut out: Vec<HistoryEntry> = Vec::new();
    for (turn_id, role, blocks) in items {
        let same = out.last().is_some_and(|e| e.turn_id == turn_id && e.role == role);
        if !same {
            out.push(HistoryEntry { turn_id, role, blocks: Vec::new() });
        }
        let Some(entry) = out.last_mut() else { continue };
        for block in blocks {
            add(&mut entry.blocks, block);
        }
    }
    out.retain(|e| !e.blocks.is_empty());
    out
}

fn kind(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

fn tool_call_id(block: &Value) -> Option<&str> {
    block.get("tool_call_id").and_then(Value::as_str)
}

fn add(blocks: &mut Vec<Value>, block: Value) {
    match kind(&block) {
        k @ ("text" | "thinking") => {
            if let Some(last) = blocks.last_mut().filter(|b| kind(b) == k) {
                let more = block.get("text").and_then(Value::as_str).unwrap_or("");
                let joined = format!("{}{more}", last.get("text").and_then(Value::as_str).unwrap_or(""));
                last["text"] = Value::String(joined);
            } else {
                blocks.push(block);
            }
        }
        "tool_call" | "tool_call_update" => {
            let Value::Object(fields) = block else { return };
            let id = fields.get("tool_call_id").and_then(Value::as_str).map(str::to_owned);
            let earlier = id
                .as_deref()
                .and_then(|id| blocks.iter_mut().find(|b| kind(b) == "tool_call" && tool_call_id(b) == Some(id)));
            match earlier {
                Some(Value::Object(call)) => fold(call, fields),
                _ => {
                    let mut call = Map::new();
                    call.insert("type".into(), Value::String("tool_call".into()));
                    fold(&mut call, fields);
                    blocks.push(Value::Object(call));
                }
            }
        }
        _ => blocks.push(block),
    }
}

/// Later fields of a tool call replace earlier ones; an absent or null one keeps what was known.
fn fold(call: &mut Map<String, Value>, update: Map<String, Value>) {
    for (k, v) in update {
        if k != "type" && !v.is_null() {
            call.insert(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(turn: Option<Uuid>, role: Role, blocks: Value) -> (Option<Uuid>, Role, Vec<Value>) {
        (turn, role, serde_json::from_value(blocks).unwrap())
    }

    #[test]
    fn streamed_text_and_thoughts_are_joined_until_something_else_comes() {
        let t = Some(Uuid::now_v7());
        let got = transcript([
            entry(
                t,
                Role::User,
                json!([{"type": "text", "text": "fix it"}, {"type": "image", "media_type": "image/png"}]),
            ),
            entry(t, Role::Agent, json!([{"type": "thinking", "text": "Let me "}])),
            entry(t, Role::Agent, json!([{"type": "thinking", "text": "look."}])),
            entry(t, Role::Agent, json!([{"type": "text", "text": "Hel"}])),
            entry(t, Role::Agent, json!([{"type": "text", "text": "lo"}])),
            entry(
                t,
                Role::Agent,
                json!([{"type": "tool_call", "tool_call_id": "c1", "title": "ls", "kind": "execute",
                "status": "pending"}]),
            ),
            entry(t, Role::Agent, json!([{"type": "text", "text": "Done"}])),
            entry(t, Role::Agent, json!([{"type": "text", "text": "."}])),
        ]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].role, Role::User);
        assert_eq!(got[0].blocks.len(), 2, "the prompt's text and image");
        assert_eq!(
            got[1].blocks,
            vec![
                json!({"type": "thinking", "text": "Let me look."}),
                json!({"type": "text", "text": "Hello"}),
                json!({"type": "tool_call", "tool_call_id": "c1", "title": "ls", "kind": "execute", "status": "pending"}),
                json!({"type": "text", "text": "Done."}),
            ]
        );
    }

    #[test]
    fn a_tool_call_takes_its_updates_and_keeps_its_place() {
        let t = Some(Uuid::now_v7());
        let got = transcript([
            entry(
                t,
                Role::Agent,
                json!([{"type": "tool_call", "tool_call_id": "c1", "title": "ls", "kind": "execute",
                "status": "pending"}]),
            ),
            entry(t, Role::Agent, json!([{"type": "text", "text": "running"}])),
            entry(t, Role::Agent, json!([{"type": "tool_call_update", "tool_call_id": "c1", "status": "in_progress"}])),
            entry(t, Role::Agent, json!([{"type": "text", "text": " still"}])),
            entry(
                t,
                Role::Agent,
                json!([{"type": "tool_call_update", "tool_call_id": "c1", "status": "completed",
                "title": null, "content": [{"type": "content"}]}]),
            ),
            entry(t, Role::Agent, json!([{"type": "tool_call_update", "tool_call_id": "c9", "status": "failed"}])),
            entry(
                t,
                Role::Agent,
                json!([{"type": "permission_request", "request_id": "7", "tool_call": {},
                "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}]),
            ),
        ]);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].blocks,
            vec![
                json!({"type": "tool_call", "tool_call_id": "c1", "title": "ls", "kind": "execute",
                    "status": "completed", "content": [{"type": "content"}]}),
                json!({"type": "text", "text": "running still"}),
                json!({"type": "tool_call", "tool_call_id": "c9", "status": "failed"}),
                json!({"type": "permission_request", "request_id": "7", "tool_call": {},
                    "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}),
            ]
        );
    }

    #[test]
    fn entries_follow_turns_and_speakers() {
        let (t1, t2) = (Some(Uuid::now_v7()), Some(Uuid::now_v7()));
        let got = transcript([
            entry(t1, Role::User, json!([{"type": "text", "text": "one"}])),
            entry(t1, Role::Agent, json!([{"type": "text", "text": "a"}])),
            entry(t2, Role::User, json!([{"type": "text", "text": "two"}])),
            entry(t2, Role::Agent, json!([{"type": "text", "text": "b"}])),
            entry(t2, Role::Agent, json!([])),
            entry(None, Role::Agent, json!([{"type": "plan", "entries": []}])),
        ]);
        let shape: Vec<(Option<Uuid>, Role, usize)> = got.iter().map(|e| (e.turn_id, e.role, e.blocks.len())).collect();
        assert_eq!(
            shape,
            vec![
                (t1, Role::User, 1),
                (t1, Role::Agent, 1),
                (t2, Role::User, 1),
                (t2, Role::Agent, 1),
                (None, Role::Agent, 1)
            ]
        );
        // Text of two turns is never joined.
        assert_eq!(got[3].blocks[0]["text"], "b");
        assert!(transcript([entry(t1, Role::Agent, json!([]))]).is_empty());
    }
}
