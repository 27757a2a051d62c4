//! The transcript as HTML: events become rendering operations ([`Op`]),
//! which the page's script applies as they stream in and which [`Doc`]
//! applies on the server for the first load and for older pages, so one
//! logic draws both. Text pieces join the block before them; a tool call's
//! update replaces the parts it names (title, status, output, ...) and keeps
//! the rest; an answered permission request loses its buttons.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use crate::console::{escape, hidden};
use crate::journal::Event;

/// Activity lines kept on the page.
pub const ACTIVITY: usize = 50;

/// One event as the page needs it, from the API's `LogEvent` or from the log.
#[derive(Debug, Clone, Default)]
pub struct Ev {
    pub turn: Option<String>,
    pub kind: String,
    pub stage: Option<String>,
    pub state: Option<String>,
    pub data: String,
    pub blocks: Vec<Value>,
}

impl Ev {
    /// From a `LogEvent` of the events page (asked with `blocks=true`).
    pub fn from_api(v: &Value) -> Ev {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        Ev {
            turn: s("turn_id"),
            kind: s("kind").unwrap_or_default(),
            stage: s("stage"),
            state: s("state"),
            data: s("data").unwrap_or_default(),
            blocks: v["blocks"].as_array().cloned().unwrap_or_default(),
        }
    }

    pub fn from_log(e: &Event) -> Ev {
        Ev {
            turn: e.turn_id.map(|t| t.to_string()),
            kind: e.kind.clone(),
            stage: e.stage.clone(),
            state: e.state.clone(),
            data: e.data.clone(),
            blocks: crate::events::stream::blocks(e),
        }
    }
}

/// A structured block: named parts, so an update replaces only the parts it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockView {
    pub id: Option<String>,
    pub class: &'static str,
    pub status: Option<String>,
    pub parts: Vec<(&'static str, String)>,
    pub answered: bool,
}

impl BlockView {
    fn new(id: Option<String>, class: &'static str) -> BlockView {
        BlockView { id, class, status: None, parts: Vec::new(), answered: false }
    }

    fn part(mut self, name: &'static str, html: String) -> BlockView {
        self.parts.push((name, html));
        self
    }

    pub fn html(&self) -> String {
        let id = self.id.as_deref().map(|i| format!(" id=\"{}\"", escape(i))).unwrap_or_default();
        let status = self.status.as_deref().map(|s| format!(" data-status=\"{}\"", escape(s))).unwrap_or_default();
        let answered = if self.answered { " data-answered" } else { "" };
        let parts: String =
            self.parts.iter().map(|(name, html)| format!("<div data-part=\"{name}\">{html}</div>")).collect();
        format!("<div class=\"blk {}\"{id}{status}{answered}>{parts}</div>", self.class)
    }

    fn merge(&mut self, update: BlockView) {
        for (name, html) in update.parts {
            match self.parts.iter_mut().find(|(n, _)| *n == name) {
                Some(part) => part.1 = html,
                None => self.parts.push((name, html)),
            }
        }
        if update.status.is_some() {
            self.status = update.status;
        }
    }
}

/// What the page does with one event; the script applies the same list.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Op {
    /// Adds the turn's frame unless the page has it.
    Turn { id: String, html: String },
    /// Replaces the turn's header (prompt, status, request id, usage).
    Head { turn: String, id: String, html: String, status: String },
    /// Text joining the last block of the same kind, or starting one.
    Text { into: String, kind: &'static str, text: String },
    /// A structured block, or an update of the one with the same id.
    Block {
        into: String,
        id: Option<String>,
        html: String,
        #[serde(skip)]
        view: BlockView,
    },
    /// A permission request was answered (by a person, the policy or its timeout).
    Answered { id: String, text: String },
    /// A line of the machine's and session's stages.
    Activity { text: String },
}

fn turn_key(turn: Option<&str>) -> String {
    turn.unwrap_or("none").to_owned()
}

/// The frame of a turn: its header, then its blocks.
pub fn turn_shell(key: &str, row: Option<&Value>) -> String {
    let status = row.and_then(|r| r["status"].as_str()).unwrap_or("");
    format!(
        "<article class=\"turn\" id=\"turn-{k}\" data-status=\"{}\">{}<div class=\"blocks\" id=\"blocks-{k}\"></div></article>",
        escape(status),
        head_html(key, row),
        k = escape(key)
    )
}

/// A turn's header from its row (`GET /api/conversations/{id}/turns`).
pub fn head_html(key: &str, row: Option<&Value>) -> String {
    let Some(row) = row else {
        let what = if key == "none" { "Outside any turn" } else { "Earlier turn" };
        return format!("<header id=\"head-{}\"><div class=\"prompt muted\">{what}</div></header>", escape(key));
    };
    let status = row["status"].as_str().unwrap_or("");
    let mut meta = Vec::new();
    if let Some(crid) = row["client_request_id"].as_str() {
        meta.push(format!("<span class=\"meta crid\">client_request_id <code>{}</code></span>", escape(crid)));
    }
    let usage = &row["usage"];
    if let (Some(i), Some(o)) = (usage["input"].as_i64(), usage["output"].as_i64()) {
        meta.push(format!("<span class=\"meta usage\">{i} in · {o} out tokens</span>"));
    }
    if let Some(reason) = row["limit_reason"].as_str().or(row["stop_reason"].as_str()) {
        meta.push(format!("<span class=\"meta\">{}</span>", escape(reason)));
    }
    if let Some(at) = row["inserted_at"].as_str() {
        meta.push(format!("<span class=\"meta\">{}</span>", crate::console::when(&serde_json::json!({"t": at}), "t")));
    }
    format!(
        "<header id=\"head-{}\"><div class=\"prompt\">{}</div><span class=\"status badge\">{}</span>{}</header>",
        escape(key),
        escape(row["prompt"].as_str().unwrap_or("")),
        escape(status),
        meta.join("")
    )
}

fn pretty(v: &Value) -> String {
    match v {
        Value::String(s) => escape(s),
        other => escape(&serde_json::to_string_pretty(other).unwrap_or_default()),
    }
}

/// The text of ACP tool content (`[{type: "content", content: {type: "text", text}}, ...]`).
fn content_text(v: &Value) -> String {
    let items = v.as_array().map(Vec::as_slice).unwrap_or_default();
    let texts: Vec<&str> = items
        .iter()
        .filter_map(|i| i.get("content").and_then(|c| c.get("text")).or_else(|| i.get("text")).and_then(Value::as_str))
        .collect();
    if texts.is_empty() { pretty(v) } else { escape(&texts.join("\n")) }
}

fn tool_view(key: &str, b: &Value) -> BlockView {
    let call = b["tool_call_id"].as_str().unwrap_or("");
    let mut view = BlockView::new(Some(format!("tool-{key}-{call}")), "tool");
    if let Some(title) = b["title"].as_str() {
        view = view.part("title", format!("<strong>{}</strong>", escape(title)));
    }
    if let Some(kind) = b["kind"].as_str() {
        view = view.part("kind", format!("<span class=\"muted\">{}</span>", escape(kind)));
    }
    if let Some(status) = b["status"].as_str() {
        view.status = Some(status.to_owned());
        view = view.part("status", format!("<span class=\"tool-status badge\">{}</span>", escape(status)));
    }
    if let Some(input) = b.get("raw_input") {
        view = view.part("input", format!("<details><summary>Input</summary><pre>{}</pre></details>", pretty(input)));
    }
    if let Some(content) = b.get("content").filter(|c| c.as_array().is_some_and(|a| !a.is_empty())) {
        view = view.part("content", format!("<pre>{}</pre>", content_text(content)));
    }
    if let Some(output) = b.get("raw_output") {
        view =
            view.part("output", format!("<details><summary>Output</summary><pre>{}</pre></details>", pretty(output)));
    }
    view
}

fn plan_view(key: &str, b: &Value) -> BlockView {
    let entries = b["entries"].as_array().map(Vec::as_slice).unwrap_or_default();
    let items: String = entries
        .iter()
        .map(|e| {
            format!(
                "<li data-status=\"{}\">{}</li>",
                escape(e["status"].as_str().unwrap_or("")),
                escape(e["content"].as_str().unwrap_or(""))
            )
        })
        .collect();
    BlockView::new(Some(format!("plan-{key}")), "plan")
        .part("title", "<strong>Plan</strong>".to_owned())
        .part("entries", format!("<ol>{items}</ol>"))
}

/// Where a permission request's answer is posted, and by which id the page knows it.
fn permission_id(key: &str, request: &str) -> String {
    format!("perm-{key}-{request}")
}

impl Renderer {
    fn permission_view(&self, key: &str, b: &Value) -> BlockView {
        let request = b["request_id"].as_str().unwrap_or("");
        let title = b["tool_call"]["title"].as_str().unwrap_or("a tool call");
        let options = b["options"].as_array().map(Vec::as_slice).unwrap_or_default();
        let buttons: String = options
            .iter()
            .filter_map(|o| {
                let id = o["optionId"].as_str()?;
                let class = if o["kind"].as_str().is_some_and(|k| k.starts_with("reject")) { "danger" } else { "" };
                Some(format!(
                    "<button type=\"submit\" name=\"option\" value=\"{}\" class=\"{class}\">{}</button>",
                    escape(id),
                    escape(o["name"].as_str().unwrap_or(id))
                ))
            })
            .collect();
        let action = format!(
            "/conversations/{}/permissions/{}",
            crate::console::seg(&self.conversation),
            crate::console::seg(request)
        );
        let form = format!(
            "<form method=\"post\" action=\"{}\" data-async>{}{buttons}\
             <p class=\"error\" role=\"alert\" data-message hidden></p></form>",
            escape(&action),
            hidden("csrf", &self.csrf)
        );
        BlockView::new(Some(permission_id(key, request)), "permission")
            .part("title", format!("<strong>Permission asked:</strong> {}", escape(title)))
            .part("form", form)
    }
}

fn other_view(b: &Value) -> BlockView {
    let kind = b["type"].as_str().unwrap_or("block");
    BlockView::new(None, "other")
        .part("body", format!("<details><summary>{}</summary><pre>{}</pre></details>", escape(kind), pretty(b)))
}

/// Turns events into operations for one page (or one stream): it knows the
/// conversation, the session's form token, and which turns have a frame.
pub struct Renderer {
    conversation: String,
    csrf: String,
    framed: HashSet<String>,
}

impl Renderer {
    pub fn new(conversation: String, csrf: String) -> Renderer {
        Renderer { conversation, csrf, framed: HashSet::new() }
    }

    fn frame(&mut self, key: &str, turns: &HashMap<String, Value>, out: &mut Vec<Op>) {
        if self.framed.insert(key.to_owned()) {
            out.push(Op::Turn { id: format!("turn-{key}"), html: turn_shell(key, turns.get(key)) });
        }
    }

    /// The operations one event adds; `turns` are the conversation's turn rows by id.
    pub fn ops(&mut self, ev: &Ev, turns: &HashMap<String, Value>) -> Vec<Op> {
        let key = turn_key(ev.turn.as_deref());
        let mut out = Vec::new();
        match (ev.kind.as_str(), ev.stage.as_deref()) {
            ("stage", Some("turn")) => {
                self.frame(&key, turns, &mut out);
                let row = turns.get(&key);
                let status = row.and_then(|r| r["status"].as_str()).or(ev.state.as_deref()).unwrap_or("");
                out.push(Op::Head {
                    turn: format!("turn-{key}"),
                    id: format!("head-{key}"),
                    html: head_html(&key, row),
                    status: status.to_owned(),
                });
            }
            ("stage", Some("request")) if ev.state.as_deref() != Some("started") => {
                let data: Value = serde_json::from_str(&ev.data).unwrap_or_default();
                let request = data["request_id"].as_str().unwrap_or("");
                let by = if data["by"] == "policy" { " by the policy" } else { "" };
                let text = match (data["outcome"].as_str(), data["option_id"].as_str()) {
                    (Some("expired"), _) => "No answer in time: refused.".to_owned(),
                    (_, Some(option)) => format!("Answered{by}: {option}."),
                    _ => format!("Cancelled{by}."),
                };
                out.push(Op::Answered { id: permission_id(&key, request), text });
            }
            ("stage", Some("request")) => {}
            ("stage", stage) => {
                let state = ev.state.as_deref().unwrap_or("");
                out.push(Op::Activity { text: format!("{} {state}", stage.unwrap_or("stage")) });
            }
            _ => {
                self.frame(&key, turns, &mut out);
                let into = format!("blocks-{key}");
                if ev.blocks.is_empty() && !ev.data.is_empty() {
                    out.push(Op::Text { into: into.clone(), kind: "log", text: ev.data.clone() });
                }
                for b in &ev.blocks {
                    let view = match b["type"].as_str().unwrap_or("") {
                        kind @ ("text" | "thinking") => {
                            let text = b["text"].as_str().unwrap_or("").to_owned();
                            let kind = if kind == "text" { "text" } else { "thinking" };
                            out.push(Op::Text { into: into.clone(), kind, text });
                            continue;
                        }
                        "tool_call" | "tool_call_update" => tool_view(&key, b),
                        "plan" => plan_view(&key, b),
                        "permission_request" => self.permission_view(&key, b),
                        _ => other_view(b),
                    };
                    out.push(Op::Block { into: into.clone(), id: view.id.clone(), html: view.html(), view });
                }
            }
        }
        out
    }
}

enum Node {
    Text { kind: &'static str, text: String },
    Block(BlockView),
}

struct TurnDoc {
    key: String,
    head: String,
    status: String,
    nodes: Vec<Node>,
}

/// The page as the script would have drawn it from the same operations.
#[derive(Default)]
pub struct Doc {
    turns: Vec<TurnDoc>,
    pub activity: Vec<String>,
}

impl Doc {
    fn turn_mut(&mut self, into: &str) -> Option<&mut TurnDoc> {
        let key = into.strip_prefix("blocks-")?;
        self.turns.iter_mut().find(|t| t.key == key)
    }

    fn block_mut(&mut self, id: &str) -> Option<&mut BlockView> {
        self.turns.iter_mut().flat_map(|t| t.nodes.iter_mut()).find_map(|n| match n {
            Node::Block(b) if b.id.as_deref() == Some(id) => Some(b),
            _ => None,
        })
    }

    pub fn apply(&mut self, op: Op) {
        match op {
            Op::Turn { id, html: _ } => {
                let key = id.strip_prefix("turn-").unwrap_or(&id).to_owned();
                if !self.turns.iter().any(|t| t.key == key) {
                    let head = head_html(&key, None);
                    self.turns.push(TurnDoc { key, head, status: String::new(), nodes: Vec::new() });
                }
            }
            Op::Head { turn, html, status, .. } => {
                let key = turn.strip_prefix("turn-").unwrap_or(&turn);
                if let Some(t) = self.turns.iter_mut().find(|t| t.key == key) {
                    t.head = html;
                    t.status = status;
                }
            }
            Op::Text { into, kind, text } => {
                let Some(t) = self.turn_mut(&into) else { return };
                match t.nodes.last_mut() {
                    Some(Node::Text { kind: k, text: last }) if *k == kind => last.push_str(&text),
                    _ => t.nodes.push(Node::Text { kind, text }),
                }
            }
            Op::Block { into, id, view, .. } => {
                if let Some(old) = id.as_deref().and_then(|id| self.block_mut(id)) {
                    old.merge(view);
                } else if let Some(t) = self.turn_mut(&into) {
                    t.nodes.push(Node::Block(view));
                }
            }
            Op::Answered { id, text } => {
                if let Some(b) = self.block_mut(&id).filter(|b| !b.answered) {
                    b.answered = true;
                    b.parts.push(("answer", format!("<p class=\"muted\">{}</p>", escape(&text))));
                }
            }
            Op::Activity { text } => {
                self.activity.push(text);
                if self.activity.len() > ACTIVITY {
                    self.activity.remove(0);
                }
            }
        }
    }

    /// Every turn's header from its row as it is now (a page shows the latest).
    pub fn heads(&mut self, turns: &HashMap<String, Value>) {
        for t in &mut self.turns {
            if let Some(row) = turns.get(&t.key) {
                t.head = head_html(&t.key, Some(row));
                t.status = row["status"].as_str().unwrap_or("").to_owned();
            }
        }
    }

    pub fn html(&self) -> String {
        let mut out = String::new();
        for t in &self.turns {
            out.push_str(&format!(
                "<article class=\"turn\" id=\"turn-{k}\" data-status=\"{}\">{}<div class=\"blocks\" id=\"blocks-{k}\">",
                escape(&t.status),
                t.head,
                k = escape(&t.key)
            ));
            for n in &t.nodes {
                match n {
                    Node::Text { kind, text } => {
                        out.push_str(&format!("<div class=\"blk {kind}\" data-merge=\"{kind}\">{}</div>", escape(text)))
                    }
                    Node::Block(b) => out.push_str(&b.html()),
                }
            }
            out.push_str("</div></article>");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn out(turn: &str, blocks: Value) -> Ev {
        Ev {
            turn: Some(turn.into()),
            kind: "output".into(),
            blocks: blocks.as_array().cloned().unwrap_or_default(),
            ..Ev::default()
        }
    }

    fn stage(turn: &str, stage: &str, state: &str, data: Value) -> Ev {
        Ev {
            turn: Some(turn.into()),
            kind: "stage".into(),
            stage: Some(stage.into()),
            state: Some(state.into()),
            data: data.to_string(),
            ..Ev::default()
        }
    }

    fn draw(events: &[Ev], turns: &HashMap<String, Value>) -> String {
        let mut r = Renderer::new("c1".into(), "tok".into());
        let mut doc = Doc::default();
        for e in events {
            for op in r.ops(e, turns) {
                doc.apply(op);
            }
        }
        doc.heads(turns);
        doc.html()
    }

    #[test]
    fn text_pieces_join_and_kinds_split() {
        let html = draw(
            &[
                out("t", json!([{"type": "text", "text": "hel"}])),
                out("t", json!([{"type": "text", "text": "lo <b>"}])),
                out("t", json!([{"type": "thinking", "text": "hmm"}])),
                out("t", json!([{"type": "text", "text": "again"}])),
            ],
            &HashMap::new(),
        );
        assert!(html.contains("<div class=\"blk text\" data-merge=\"text\">hello &lt;b&gt;</div>"), "{html}");
        assert!(html.contains("data-merge=\"thinking\">hmm</div><div class=\"blk text\" data-merge=\"text\">again"));
    }

    #[test]
    fn a_tool_update_replaces_only_what_it_names() {
        let html = draw(
            &[
                out("t", json!([{"type": "tool_call", "tool_call_id": "x", "title": "Read a", "status": "pending"}])),
                out(
                    "t",
                    json!([{"type": "tool_call_update", "tool_call_id": "x", "status": "completed",
                    "raw_output": {"ok": true}}]),
                ),
            ],
            &HashMap::new(),
        );
        assert_eq!(html.matches("id=\"tool-t-x\"").count(), 1, "{html}");
        assert!(html.contains("data-status=\"completed\""));
        assert!(html.contains("<strong>Read a</strong>") && html.contains(">completed</span>"));
        assert!(!html.contains(">pending<"));
        assert!(html.contains("Output</summary><pre>{\n  &quot;ok&quot;: true\n}</pre>"), "{html}");
    }

    #[test]
    fn permission_requests_offer_buttons_until_answered() {
        let ask = out(
            "t",
            json!([{"type": "permission_request", "request_id": "1", "tool_call": {"title": "rm -rf build"},
                "options": [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                            {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}]),
        );
        let open = draw(std::slice::from_ref(&ask), &HashMap::new());
        assert!(open.contains("action=\"/conversations/c1/permissions/1\""), "{open}");
        assert!(open.contains("value=\"allow-once\" class=\"\">Allow once</button>"));
        assert!(open.contains("<input type=\"hidden\" name=\"csrf\" value=\"tok\">"));
        assert!(!open.contains("data-answered"));
        let answered = draw(
            &[ask, stage("t", "request", "done", json!({"request_id": "1", "option_id": "allow-once"}))],
            &HashMap::new(),
        );
        assert!(answered.contains("data-answered") && answered.contains("Answered: allow-once."), "{answered}");
    }

    #[test]
    fn turn_headers_come_from_the_turn_rows() {
        let turns = HashMap::from([(
            "t".to_owned(),
            json!({"id": "t", "prompt": "do <it>", "status": "done", "client_request_id": "r-1",
                   "usage": {"input": 12, "output": 3}}),
        )]);
        let html = draw(
            &[stage("t", "turn", "started", json!({})), out("t", json!([{"type": "text", "text": "ok"}]))],
            &turns,
        );
        assert!(html.starts_with("<article class=\"turn\" id=\"turn-t\" data-status=\"done\">"), "{html}");
        assert!(html.contains("<div class=\"prompt\">do &lt;it&gt;</div>"));
        assert!(html.contains("<code>r-1</code>") && html.contains("12 in · 3 out tokens"));
    }

    #[test]
    fn stages_outside_turns_are_activity() {
        let mut r = Renderer::new("c".into(), String::new());
        let ops = r.ops(
            &Ev { kind: "stage".into(), stage: Some("machine".into()), state: Some("done".into()), ..Ev::default() },
            &HashMap::new(),
        );
        assert!(matches!(&ops[..], [Op::Activity { text }] if text == "machine done"));
    }
}
