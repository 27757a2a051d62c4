//! One prompt turn: plays the directives on its own thread while stdin keeps being read.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Agent;
use crate::directive::{Directive, Usage};
use crate::rpc::{self, INTERNAL_ERROR, RpcError};

/// Agent text is streamed in chunks of at most this many bytes.
const CHUNK_BYTES: usize = 16;
/// Context window reported in `usage_update`.
const CONTEXT_SIZE: u64 = 200_000;

/// What the stdin thread tells a running turn.
pub enum TurnEvent {
    Cancel,
    /// The client's answer to our request: its `result`, or its `error` object.
    Answer(Result<Value, Value>),
}

enum End {
    Stop(String),
    Fail(RpcError),
}

pub struct Turn {
    agent: Agent,
    session_id: String,
    request_id: Value,
    events_tx: Sender<TurnEvent>,
    events: Receiver<TurnEvent>,
    cancelled: bool,
    usage: Option<Usage>,
}

impl Turn {
    pub fn new(
        agent: Agent,
        session_id: String,
        request_id: Value,
        events_tx: Sender<TurnEvent>,
        events: Receiver<TurnEvent>,
    ) -> Self {
        Turn { agent, session_id, request_id, events_tx, events, cancelled: false, usage: None }
    }

    pub fn run(mut self, directives: Vec<Directive>) {
        let end = self.play(directives);
        self.agent.finish_turn(&self.session_id);
        let result = match end {
            End::Stop(reason) => {
                let mut response = json!({"stopReason": reason});
                if let Some(usage) = self.usage {
                    response["usage"] = usage_json(&usage);
                }
                Ok(response)
            }
            End::Fail(e) => Err(e),
        };
        rpc::reply(&self.request_id, result);
    }

    fn play(&mut self, directives: Vec<Directive>) -> End {
        for directive in directives {
            if self.poll_cancel() {
                return cancelled();
            }
            if let Some(end) = self.step(directive) {
                return end;
            }
        }
        if self.poll_cancel() { cancelled() } else { End::Stop("end_turn".to_owned()) }
    }

    /// Runs one directive; `Some` ends the turn.
    fn step(&mut self, directive: Directive) -> Option<End> {
        match directive {
            Directive::Say(text) => self.say(&text),
            Directive::Think(text) => {
                for chunk in chunks(&text, CHUNK_BYTES) {
                    self.update(
                        json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": chunk}}),
                    );
                }
            }
            Directive::Tool { id, kind, title } => {
                self.update(json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": title, "kind": kind, "status": "pending"}));
                self.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed", "rawOutput": {"ok": true}}));
            }
            Directive::Permission { tool_id, title } => self.ask_permission(&tool_id, &title),
            Directive::Plan(entries) => {
                let entries: Vec<Value> =
                    entries.iter().map(|e| json!({"content": e, "priority": "medium", "status": "pending"})).collect();
                self.update(json!({"sessionUpdate": "plan", "entries": entries}));
            }
            Directive::Usage(usage) => {
                self.usage = Some(usage);
                self.update(json!({"sessionUpdate": "usage_update", "used": usage.total(), "size": CONTEXT_SIZE}));
            }
            Directive::Labels(labels) => {
                rpc::notify("_service/labels", json!({"sessionId": self.session_id, "labels": labels}));
            }
            Directive::Sleep(ms) => return self.sleep(Duration::from_millis(ms)),
            Directive::Stop(reason) => return Some(End::Stop(reason)),
            Directive::Error { code, message } => return Some(End::Fail(RpcError::new(code, message))),
            Directive::Stderr(text) => eprintln!("{text}"),
            Directive::Exit(code) => std::process::exit(code),
            Directive::EchoEnv(name) => self.say(&std::env::var(&name).unwrap_or_default()),
            Directive::Write { path, text } => {
                if let Err(e) = std::fs::write(&path, text) {
                    return Some(End::Fail(RpcError::new(INTERNAL_ERROR, format!("write {path}: {e}"))));
                }
            }
            Directive::Run(command) => match std::process::Command::new("bash").args(["-c", &command]).output() {
                Ok(out) => {
                    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
                    text.push_str(&String::from_utf8_lossy(&out.stderr));
                    self.say(&format!("{text}[exit {}]\n", out.status.code().unwrap_or(-1)));
                }
                Err(e) => return Some(End::Fail(RpcError::new(INTERNAL_ERROR, format!("run: {e}")))),
            },
        }
        None
    }

    fn update(&self, update: Value) {
        rpc::notify("session/update", json!({"sessionId": self.session_id, "update": update}));
    }

    fn say(&self, text: &str) {
        for chunk in chunks(text, CHUNK_BYTES) {
            self.message_chunk(chunk);
        }
    }

    fn message_chunk(&self, text: &str) {
        self.update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}));
    }

    /// Drains pending events; true once a cancel has arrived.
    fn poll_cancel(&mut self) -> bool {
        while let Ok(event) = self.events.try_recv() {
            if let TurnEvent::Cancel = event {
                self.cancelled = true;
            }
        }
        self.cancelled
    }

    fn sleep(&mut self, duration: Duration) -> Option<End> {
        let deadline = Instant::now() + duration;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(TurnEvent::Cancel) => {
                    self.cancelled = true;
                    return Some(cancelled());
                }
                Ok(TurnEvent::Answer(_)) => {}
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// A pending tool call, then `session/request_permission`, blocking until the client answers.
    /// A cancel meanwhile is remembered: ACP has the client answer `cancelled` after cancelling.
    fn ask_permission(&mut self, tool_id: &str, title: &str) {
        let tool_call = json!({"toolCallId": tool_id, "title": title, "kind": "execute", "status": "pending"});
        let mut update = tool_call.clone();
        update["sessionUpdate"] = json!("tool_call");
        self.update(update);
        let params = json!({
            "sessionId": self.session_id,
            "toolCall": tool_call,
            "options": [
                {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ],
        });
        self.agent.request("session/request_permission", params, self.events_tx.clone());
        let answer = loop {
            match self.events.recv() {
                Ok(TurnEvent::Cancel) => self.cancelled = true,
                Ok(TurnEvent::Answer(answer)) => break answer,
                // Unreachable while we hold `events_tx`; treat like a cancelled request.
                Err(_) => break Err(Value::Null),
            }
        };
        let choice = permission_choice(&answer);
        // One chunk, unlike `say`, so tests read the verdict from a single update.
        self.message_chunk(&format!("permission: {choice}"));
        let status = if choice == "allow-once" || choice == "allow-always" { "completed" } else { "failed" };
        self.update(json!({"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": status}));
    }
}

fn cancelled() -> End {
    End::Stop("cancelled".to_owned())
}

fn usage_json(usage: &Usage) -> Value {
    let mut json = json!({"inputTokens": usage.input, "outputTokens": usage.output, "totalTokens": usage.total()});
    if let Some((read, write)) = usage.cache {
        json["cachedReadTokens"] = json!(read);
        json["cachedWriteTokens"] = json!(write);
    }
    json
}

/// The chosen option id, `cancelled`, or `error` when the client answered with an error.
fn permission_choice(answer: &Result<Value, Value>) -> String {
    let Ok(result) = answer else { return "error".to_owned() };
    let outcome = &result["outcome"];
    match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
        (Some("selected"), Some(option)) => option.to_owned(),
        (Some("cancelled"), _) => "cancelled".to_owned(),
        _ => "error".to_owned(),
    }
}

/// Splits `text` into pieces of at most `max` bytes on char boundaries; empty text is one
/// empty piece so that an empty `say` still shows up. A char wider than `max` goes alone.
fn chunks(text: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if i + c.len_utf8() - start > max && i > start {
            pieces.push(&text[start..i]);
            start = i;
        }
    }
    if start < text.len() || pieces.is_empty() {
        pieces.push(&text[start..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_respect_byte_limit_and_char_boundaries() {
        assert_eq!(chunks("", 16), vec![""]);
        assert_eq!(chunks("abcd", 4), vec!["abcd"]);
        assert_eq!(chunks("abcde", 4), vec!["abcd", "e"]);
        // "é" is 2 bytes: never split inside it.
        assert_eq!(chunks("aéé", 4), vec!["aé", "é"]);
        assert_eq!(chunks("€€", 2), vec!["€", "€"]);
    }

    #[test]
    fn permission_choice_reads_the_outcome() {
        let selected = Ok(json!({"outcome": {"outcome": "selected", "optionId": "reject"}}));
        assert_eq!(permission_choice(&selected), "reject");
        assert_eq!(permission_choice(&Ok(json!({"outcome": {"outcome": "cancelled"}}))), "cancelled");
        assert_eq!(permission_choice(&Ok(json!({}))), "error");
        assert_eq!(permission_choice(&Err(json!({"code": -32601}))), "error");
    }

    #[test]
    fn usage_json_reports_cache_only_when_given() {
        let plain = usage_json(&Usage { input: 1, output: 2, cache: None });
        assert_eq!(plain, json!({"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}));
        let cached = usage_json(&Usage { input: 1, output: 2, cache: Some((3, 4)) });
        assert_eq!(cached["cachedReadTokens"], 3);
        assert_eq!(cached["totalTokens"], 10);
    }
}
