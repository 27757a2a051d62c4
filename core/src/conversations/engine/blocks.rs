//! What an agent's session updates become in the event log: output events
//! whose `data` is the text the agent printed and whose blocks keep the
//! structure (thoughts, tool calls, plans, permission requests). Text
//! arrives in chunks, so it goes through the streaming redactor: a secret
//! split across two chunks is still never shown.

use serde_json::{Value, json};

use crate::acp::types::{ContentBlock, RequestPermissionRequest, SessionUpdate, ToolCallUpdate};
use crate::events::NewEvent;
use crate::sandboxes::redact::Redactor;

/// Which running text a chunk continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextKind {
    Message,
    Thought,
}

/// Turns one turn's updates into events; keeps the tail of streamed text
/// that could begin a secret until the next chunk shows it is not one.
#[derive(Debug)]
pub struct Transcript {
    redactor: Redactor,
    held: Option<(TextKind, String)>,
}

fn text_event(kind: TextKind, text: String) -> NewEvent {
    match kind {
        TextKind::Message => {
            NewEvent::output("stdout", text.clone()).with_blocks(json!([{"type": "text", "text": text}]))
        }
        TextKind::Thought => NewEvent::output("stdout", "").with_blocks(json!([{"type": "thinking", "text": text}])),
    }
}

/// The text of a content block; other kinds (images, resources) carry none.
fn chunk_text(block: &ContentBlock) -> Option<&str> {
    match block {
        ContentBlock::Text(t) => Some(&t.text),
        _ => None,
    }
}

impl Transcript {
    pub fn new(redactor: Redactor) -> Self {
        Transcript { redactor, held: None }
    }

    /// Redacts JSON metadata (every string in it, keys included).
    pub fn redact_value(&self, v: &Value) -> Value {
        self.redactor.redact_json(v)
    }

    pub fn redact_str(&self, s: &str) -> String {
        self.redactor.redact_str(s)
    }

    /// The turn's redactor: the machine's secrets and the turn's model credential.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Text held back so far, shown now (before any other event, and at the end of the turn).
    pub fn flush(&mut self) -> Option<NewEvent> {
        let (kind, text) = self.held.take()?;
        (!text.is_empty()).then(|| text_event(kind, self.redactor.redact_str(&text)))
    }

    fn text(&mut self, kind: TextKind, chunk: &str, out: &mut Vec<NewEvent>) {
        let mut pending = match self.held.take() {
            Some((k, held)) if k == kind => held,
            Some(other) => {
                self.held = Some(other);
                out.extend(self.flush());
                String::new()
            }
            None => String::new(),
        };
        pending.push_str(chunk);
        let (shown, held) = self.redactor.redact_stream(&pending);
        if !shown.is_empty() || chunk.is_empty() {
            out.push(text_event(kind, shown));
        }
        if !held.is_empty() {
            self.held = Some((kind, held));
        }
    }

    fn structured(&mut self, block: Value, out: &mut Vec<NewEvent>) {
        out.extend(self.flush());
        out.push(NewEvent::output("stdout", "").with_blocks(Value::Array(vec![self.redact_value(&block)])));
    }

    /// The events an update adds to the transcript (none for bookkeeping
    /// updates such as usage, commands and modes).
    pub fn update(&mut self, update: &SessionUpdate) -> Vec<NewEvent> {
        let mut out = Vec::new();
        match update {
            SessionUpdate::AgentMessageChunk(c) => {
                if let Some(t) = chunk_text(&c.content) {
                    self.text(TextKind::Message, t, &mut out);
                }
            }
            SessionUpdate::AgentThoughtChunk(c) => {
                if let Some(t) = chunk_text(&c.content) {
                    self.text(TextKind::Thought, t, &mut out);
                }
            }
            SessionUpdate::ToolCall(t) => self.structured(tool_block("tool_call", t), &mut out),
            SessionUpdate::ToolCallUpdate(t) => self.structured(tool_block("tool_call_update", t), &mut out),
            SessionUpdate::Plan(p) => self.structured(json!({"type": "plan", "entries": p.entries}), &mut out),
            _ => {}
        }
        out
    }

    /// The block of a permission request; `request_id` is what the answer names.
    pub fn permission(&mut self, request_id: &str, request: &RequestPermissionRequest) -> Vec<NewEvent> {
        let options: Vec<Value> =
            request.options.iter().map(|o| json!({"optionId": o.option_id, "name": o.name, "kind": o.kind})).collect();
        let block = json!({"type": "permission_request", "request_id": request_id, "tool_call": request.tool_call,
            "options": options});
        let mut out = Vec::new();
        self.structured(block, &mut out);
        out
    }
}

fn tool_block(kind: &str, t: &ToolCallUpdate) -> Value {
    let mut block = json!({"type": kind, "tool_call_id": t.tool_call_id});
    for (key, value) in [
        ("title", t.title.clone().map(Value::String)),
        ("kind", t.kind.clone().map(Value::String)),
        ("status", t.status.clone().map(Value::String)),
        ("raw_input", t.raw_input.clone()),
        ("raw_output", t.raw_output.clone()),
        ("content", t.content.clone()),
    ] {
        if let Some(v) = value {
            block[key] = v;
        }
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::types::ContentChunk;

    fn chunk(text: &str) -> SessionUpdate {
        SessionUpdate::AgentMessageChunk(ContentChunk { content: ContentBlock::text(text), extra: Default::default() })
    }

    fn thought(text: &str) -> SessionUpdate {
        SessionUpdate::AgentThoughtChunk(ContentChunk { content: ContentBlock::text(text), extra: Default::default() })
    }

    fn texts(events: &[NewEvent]) -> Vec<(String, Value)> {
        events.iter().map(|e| (e.data.clone(), e.blocks.clone().unwrap_or(Value::Null))).collect()
    }

    #[test]
    fn text_is_output_with_a_text_block_and_thoughts_print_nothing() {
        let mut t = Transcript::new(Redactor::default());
        let events = t.update(&chunk("Hello"));
        assert_eq!(texts(&events), [("Hello".to_owned(), json!([{"type": "text", "text": "Hello"}]))]);
        assert_eq!(events[0].stream, "stdout");
        let events = t.update(&thought("hmm"));
        assert_eq!(texts(&events), [(String::new(), json!([{"type": "thinking", "text": "hmm"}]))]);
        assert!(t.flush().is_none());
    }

    #[test]
    fn a_secret_split_across_chunks_is_redacted_and_held_text_comes_before_the_next_block() {
        let mut t = Transcript::new(Redactor::new(["topsecret".to_owned()]));
        let mut all = Vec::new();
        for c in ["key: top", "sec", "ret!"] {
            all.extend(t.update(&chunk(c)));
        }
        let shown: String = all.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(shown, "key: [REDACTED]!");
        // A tail that might begin the secret waits, and is shown before a tool call.
        let held = t.update(&chunk("see to"));
        assert_eq!(held[0].data, "see ");
        let tool =
            ToolCallUpdate { tool_call_id: "t1".into(), title: Some("cat topsecret".into()), ..Default::default() };
        let events = t.update(&SessionUpdate::ToolCall(tool));
        assert_eq!(events[0].data, "to");
        assert_eq!(
            events[1].blocks,
            Some(json!([{"type": "tool_call", "tool_call_id": "t1", "title": "cat [REDACTED]"}]))
        );
    }

    #[test]
    fn switching_between_text_and_thought_flushes_the_other() {
        let mut t = Transcript::new(Redactor::new(["abcdef".to_owned()]));
        let mut events = t.update(&chunk("x ab"));
        events.extend(t.update(&thought("y")));
        events.extend(t.flush());
        let got: Vec<_> = texts(&events);
        assert_eq!(got[0].0, "x ");
        assert_eq!(got[1].0, "ab");
        assert_eq!(got[2].1, json!([{"type": "thinking", "text": "y"}]));
    }
}
