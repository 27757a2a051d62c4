//! A fake model server standing in for the Anthropic, OpenAI and Gemini
//! APIs, so the real agent programs (Claude ACP adapter, Codex ACP, Gemini
//! CLI, OpenCode) complete turns offline.
//!
//! Stateless: each reply is decided from the request alone. A request whose
//! latest message is a tool result gets `Tool finished.` + [`REPLY`]; a
//! latest user text with a line `run: <command>` gets one call of the shell
//! tool that request offers; anything else gets [`REPLY`].

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The text every plain reply contains.
pub const REPLY: &str = "Hello from the fake model.";

/// The text that precedes [`REPLY`] after a tool result.
const TOOL_FINISHED: &str = "Tool finished.";

type Log = Arc<Mutex<Vec<(String, String, Value)>>>;
/// The credential headers of each request, as `name: value`.
type Keys = Arc<Mutex<Vec<String>>>;

pub struct FakeModel {
    port: u16,
    log: Log,
    keys: Keys,
    server: tokio::task::JoinHandle<()>,
}

/// The headers the three APIs take a key in.
const KEY_HEADERS: [&str; 3] = ["x-api-key", "authorization", "x-goog-api-key"];

impl FakeModel {
    /// Listens on 0.0.0.0 with a free port (reachable from sandboxes through the host's addresses).
    pub async fn start() -> FakeModel {
        let listener = tokio::net::TcpListener::bind(("0.0.0.0", 0)).await.expect("bind fake model");
        let port = listener.local_addr().unwrap().port();
        let (log, keys) = (Log::default(), Keys::default());
        let app = Router::new().fallback(handle).with_state((log.clone(), keys.clone()));
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("fake model server");
        });
        FakeModel { port, log, keys, server }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request received so far, oldest first: (method, path with query, JSON body or Null).
    pub fn requests(&self) -> Vec<(String, String, Value)> {
        self.log.lock().unwrap().clone()
    }

    /// The key headers every request carried, `name: value`, oldest first.
    pub fn keys(&self) -> Vec<String> {
        self.keys.lock().unwrap().clone()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn handle(
    State((log, keys)): State<(Log, Keys)>,
    method: Method,
    uri: Uri,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    for name in KEY_HEADERS {
        for value in headers.get_all(name) {
            keys.lock().unwrap().push(format!("{name}: {}", value.to_str().unwrap_or_default()));
        }
    }
    let path_and_query = uri.path_and_query().map_or_else(|| uri.path().to_string(), |p| p.to_string());
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    log.lock().unwrap().push((method.to_string(), path_and_query, body.clone()));
    route(&method, uri.path(), &body)
}

fn route(method: &Method, path: &str, body: &Value) -> Response {
    if path == "/" && (method == Method::GET || method == Method::HEAD) {
        return StatusCode::OK.into_response();
    }
    if method != Method::POST {
        return not_found(path);
    }
    let stream = body["stream"].as_bool().unwrap_or(false);
    if path.ends_with("/v1/messages") {
        let reply = anthropic::decide(body);
        let usage = Usage::of(body, &reply);
        if stream { sse(anthropic::events(&reply, usage)) } else { json_reply(anthropic::message(&reply, usage)) }
    } else if path.ends_with("/v1/responses") {
        let reply = responses::decide(body);
        let usage = Usage::of(body, &reply);
        sse(responses::events(&reply, usage))
    } else if path.ends_with("/chat/completions") {
        let reply = chat::decide(body);
        let usage = Usage::of(body, &reply);
        if stream { sse(chat::events(&reply, usage)) } else { json_reply(chat::completion(&reply, usage)) }
    } else if path.ends_with(":streamGenerateContent") {
        let reply = gemini::decide(body);
        let usage = Usage::of(body, &reply);
        sse(vec![(None, gemini::response(&reply, usage))])
    } else if path.ends_with(":generateContent") {
        let reply = gemini::decide(body);
        let usage = Usage::of(body, &reply);
        json_reply(gemini::response(&reply, usage))
    } else {
        not_found(path)
    }
}

fn not_found(path: &str) -> Response {
    let body = json!({"error": {"type": "not_found", "message": format!("fake model: no route for {path}")}});
    (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
}

fn json_reply(body: Value) -> Response {
    axum::Json(body).into_response()
}

/// One SSE body holding every event at once: replies are instant anyway.
fn sse(events: Vec<(Option<&str>, Value)>) -> Response {
    let mut body = String::new();
    for (event, data) in events {
        if let Some(event) = event {
            body.push_str(&format!("event: {event}\n"));
        }
        // A string is sent raw: OpenAI ends its streams with `data: [DONE]`.
        match data {
            Value::String(raw) => body.push_str(&format!("data: {raw}\n\n")),
            data => body.push_str(&format!("data: {data}\n\n")),
        }
    }
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

/// What the model answers.
#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Text(String),
    /// One call of tool `name` with these arguments.
    Tool {
        name: String,
        args: Value,
    },
}

/// How a request's shell tool takes its command.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ShellArg {
    /// `{"command": "<cmd>", "description": ...}` (Claude `Bash`, OpenCode `bash`, Gemini).
    CommandString,
    /// `{"command": ["bash", "-lc", "<cmd>"]}` (Codex `shell`).
    CommandArgv,
    /// `{"cmd": "<cmd>"}` (Codex `exec_command`).
    Cmd,
}

fn decide(tool_result: bool, user_text: &str, shell: Option<(String, ShellArg)>) -> Reply {
    if tool_result {
        return Reply::Text(format!("{TOOL_FINISHED} {REPLY}"));
    }
    let command = user_text.lines().find_map(|l| l.trim().strip_prefix("run:")).map(str::trim);
    match (command, shell) {
        (Some(cmd), Some((name, arg))) if !cmd.is_empty() => {
            let args = match arg {
                ShellArg::CommandString => json!({"command": cmd, "description": "Run the requested command"}),
                ShellArg::CommandArgv => json!({"command": ["bash", "-lc", cmd]}),
                ShellArg::Cmd => json!({"cmd": cmd}),
            };
            Reply::Tool { name, args }
        }
        _ => Reply::Text(REPLY.to_string()),
    }
}

/// Picks the shell tool among `(name, JSON schema of its parameters)`.
fn shell_tool<'a>(tools: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Option<(String, ShellArg)> {
    const NAMES: [&str; 6] = ["Bash", "bash", "run_shell_command", "shell_command", "shell", "exec_command"];
    let mut found: Vec<(&str, &Value)> = tools.into_iter().filter(|(n, _)| NAMES.contains(n)).collect();
    found.sort_by_key(|(n, _)| NAMES.iter().position(|x| x == n));
    let (name, schema) = found.into_iter().next()?;
    let props = &schema["properties"];
    let arg = if props.get("cmd").is_some() {
        ShellArg::Cmd
    } else if props["command"]["type"] == "array" {
        ShellArg::CommandArgv
    } else {
        ShellArg::CommandString
    };
    Some((name.to_string(), arg))
}

/// Text of a content that is either a string or a list of parts with `text`.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

#[derive(Debug, Clone, Copy)]
struct Usage {
    input: u64,
    output: u64,
}

impl Usage {
    /// Roughly four characters a token, like real tokenizers on English.
    fn of(request: &Value, reply: &Reply) -> Usage {
        let reply_len = match reply {
            Reply::Text(t) => t.len(),
            Reply::Tool { args, .. } => args.to_string().len() + 10,
        };
        Usage { input: (request.to_string().len() as u64 / 4).max(1), output: (reply_len as u64 / 4).max(1) }
    }
}

fn call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

mod anthropic {
    use super::*;

    pub(super) fn decide(body: &Value) -> Reply {
        let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or(Value::Null);
        let tool_result =
            last["content"].as_array().is_some_and(|parts| parts.iter().any(|p| p["type"] == "tool_result"));
        let text = if last["role"] == "user" { text_of(&last["content"]) } else { String::new() };
        let tools = body["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
        let shell = shell_tool(tools.iter().filter_map(|t| Some((t["name"].as_str()?, &t["input_schema"]))));
        super::decide(tool_result, &text, shell)
    }

    fn blocks(reply: &Reply) -> (Vec<Value>, &'static str) {
        match reply {
            Reply::Text(t) => (vec![json!({"type": "text", "text": t})], "end_turn"),
            Reply::Tool { name, args } => (
                vec![
                    json!({"type": "tool_use", "id": format!("toolu_{}", uuid::Uuid::new_v4().simple()), "name": name, "input": args}),
                ],
                "tool_use",
            ),
        }
    }

    pub(super) fn message(reply: &Reply, usage: Usage) -> Value {
        let (content, stop) = blocks(reply);
        json!({
            "id": format!("msg_{}", uuid::Uuid::new_v4().simple()), "type": "message", "role": "assistant",
            "model": "claude-fake", "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": usage.input, "output_tokens": usage.output,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        })
    }

    pub(super) fn events(reply: &Reply, usage: Usage) -> Vec<(Option<&'static str>, Value)> {
        let (content, stop) = blocks(reply);
        let mut start = message(reply, usage);
        start["content"] = json!([]);
        start["stop_reason"] = Value::Null;
        start["usage"]["output_tokens"] = json!(1);
        let mut events = vec![(Some("message_start"), json!({"type": "message_start", "message": start}))];
        for (index, block) in content.into_iter().enumerate() {
            let (empty, delta) = if block["type"] == "text" {
                (json!({"type": "text", "text": ""}), json!({"type": "text_delta", "text": block["text"]}))
            } else {
                let mut empty = block.clone();
                empty["input"] = json!({});
                (empty, json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}))
            };
            events.push((
                Some("content_block_start"),
                json!({"type": "content_block_start", "index": index, "content_block": empty}),
            ));
            events.push((
                Some("content_block_delta"),
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
            events.push((Some("content_block_stop"), json!({"type": "content_block_stop", "index": index})));
        }
        events.push((
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                   "usage": {"output_tokens": usage.output}}),
        ));
        events.push((Some("message_stop"), json!({"type": "message_stop"})));
        events
    }
}

/// OpenAI Responses API, as codex-acp uses it.
mod responses {
    use super::*;

    pub(super) fn decide(body: &Value) -> Reply {
        let last = match &body["input"] {
            Value::Array(items) => items.last().cloned().unwrap_or(Value::Null),
            Value::String(s) => json!({"type": "message", "role": "user", "content": s}),
            _ => Value::Null,
        };
        let tool_result = last["type"].as_str().is_some_and(|t| t.ends_with("_output"));
        let text = if last["role"] == "user" { text_of(&last["content"]) } else { String::new() };
        let tools = body["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
        let shell = shell_tool(tools.iter().filter_map(|t| Some((t["name"].as_str()?, &t["parameters"]))));
        super::decide(tool_result, &text, shell)
    }

    pub(super) fn events(reply: &Reply, usage: Usage) -> Vec<(Option<&'static str>, Value)> {
        let id = format!("resp_{}", uuid::Uuid::new_v4().simple());
        let item = match reply {
            Reply::Text(t) => json!({"type": "message", "id": format!("msg_{}", uuid::Uuid::new_v4().simple()),
                "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": t, "annotations": []}]}),
            Reply::Tool { name, args } => {
                json!({"type": "function_call", "id": format!("fc_{}", uuid::Uuid::new_v4().simple()),
                "status": "completed", "name": name, "arguments": args.to_string(), "call_id": call_id()})
            }
        };
        let response = |status: &str, output: Value| json!({"id": id, "object": "response", "status": status, "model": "gpt-fake", "output": output});
        let mut events = vec![
            (
                Some("response.created"),
                json!({"type": "response.created", "response": response("in_progress", json!([]))}),
            ),
            (
                Some("response.output_item.added"),
                json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
            ),
        ];
        if let Reply::Text(t) = reply {
            events.push((
                Some("response.output_text.delta"),
                json!({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0, "content_index": 0, "delta": t}),
            ));
        }
        events.push((
            Some("response.output_item.done"),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ));
        let mut done = response("completed", json!([item]));
        done["usage"] = json!({
            "input_tokens": usage.input, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage.output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.input + usage.output,
        });
        events.push((Some("response.completed"), json!({"type": "response.completed", "response": done})));
        events
    }
}

/// OpenAI Chat Completions, as OpenCode uses it.
mod chat {
    use super::*;

    pub(super) fn decide(body: &Value) -> Reply {
        let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or(Value::Null);
        let text = if last["role"] == "user" { text_of(&last["content"]) } else { String::new() };
        let tools = body["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
        let shell = shell_tool(
            tools.iter().filter_map(|t| Some((t["function"]["name"].as_str()?, &t["function"]["parameters"]))),
        );
        super::decide(last["role"] == "tool", &text, shell)
    }

    fn usage_json(usage: Usage) -> Value {
        json!({"prompt_tokens": usage.input, "completion_tokens": usage.output, "total_tokens": usage.input + usage.output})
    }

    fn message(reply: &Reply) -> (Value, &'static str) {
        match reply {
            Reply::Text(t) => (json!({"role": "assistant", "content": t}), "stop"),
            Reply::Tool { name, args } => (
                json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": call_id(),
                    "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}),
                "tool_calls",
            ),
        }
    }

    pub(super) fn completion(reply: &Reply, usage: Usage) -> Value {
        let (message, finish) = message(reply);
        json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "gpt-fake",
               "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage_json(usage)})
    }

    pub(super) fn events(reply: &Reply, usage: Usage) -> Vec<(Option<&'static str>, Value)> {
        let (delta, finish) = message(reply);
        let chunk = |choices: Value| json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "gpt-fake", "choices": choices});
        let mut last = chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish}]));
        last["usage"] = usage_json(usage);
        let mut events =
            vec![(None, chunk(json!([{"index": 0, "delta": delta, "finish_reason": null}]))), (None, last)];
        events.push((None, Value::String("[DONE]".into())));
        events
    }
}

mod gemini {
    use super::*;

    pub(super) fn decide(body: &Value) -> Reply {
        let last = body["contents"].as_array().and_then(|c| c.last()).cloned().unwrap_or(Value::Null);
        let parts = last["parts"].as_array().map(Vec::as_slice).unwrap_or_default();
        let tool_result = parts.iter().any(|p| p.get("functionResponse").is_some());
        let text = if last["role"] == "user" { text_of(&last["parts"]) } else { String::new() };
        let declarations = body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["functionDeclarations"].as_array())
            .flatten();
        let shell = shell_tool(declarations.filter_map(|d| {
            let schema = if d["parameters"].is_null() { &d["parametersJsonSchema"] } else { &d["parameters"] };
            Some((d["name"].as_str()?, schema))
        }));
        super::decide(tool_result, &text, shell)
    }

    pub(super) fn response(reply: &Reply, usage: Usage) -> Value {
        let part = match reply {
            Reply::Text(t) => json!({"text": t}),
            Reply::Tool { name, args } => json!({"functionCall": {"name": name, "args": args}}),
        };
        json!({
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": usage.input, "candidatesTokenCount": usage.output,
                              "totalTokenCount": usage.input + usage.output},
            "modelVersion": "gemini-fake",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Reply {
        Reply::Text(s.to_string())
    }

    #[test]
    fn anthropic_replies() {
        let tools = json!([{"name": "Bash", "input_schema": {"properties": {"command": {"type": "string"}}}}]);
        let plain = json!({"messages": [{"role": "user", "content": "hi"}], "tools": tools});
        assert_eq!(anthropic::decide(&plain), text(REPLY));
        let run = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "<ctx>"},
            {"type": "text", "text": "please\nrun: echo hi > hello.txt"}]}], "tools": tools});
        let Reply::Tool { name, args } = anthropic::decide(&run) else { panic!("expected a tool call") };
        assert_eq!((name.as_str(), &args["command"]), ("Bash", &json!("echo hi > hello.txt")));
        let result = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}]}], "tools": tools});
        assert_eq!(anthropic::decide(&result), text(&format!("{TOOL_FINISHED} {REPLY}")));
        // A side request without tools (e.g. title generation) gets plain text.
        let side = json!({"messages": [{"role": "user", "content": "run: ls"}]});
        assert_eq!(anthropic::decide(&side), text(REPLY));
    }

    #[test]
    fn responses_pick_the_offered_shell_shape() {
        let user = json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run: ls"}]}]);
        let offered = |tool: Value| json!({"input": user, "tools": [{"type": "function", "name": "update_plan", "parameters": {}}, tool]});
        let argv = offered(
            json!({"type": "function", "name": "shell", "parameters": {"properties": {"command": {"type": "array"}}}}),
        );
        assert_eq!(
            responses::decide(&argv),
            Reply::Tool { name: "shell".into(), args: json!({"command": ["bash", "-lc", "ls"]}) }
        );
        let cmd = offered(
            json!({"type": "function", "name": "exec_command", "parameters": {"properties": {"cmd": {"type": "string"}}}}),
        );
        assert_eq!(responses::decide(&cmd), Reply::Tool { name: "exec_command".into(), args: json!({"cmd": "ls"}) });
        let output = json!({"input": [user[0], {"type": "function_call_output", "call_id": "c", "output": "x"}]});
        assert_eq!(responses::decide(&output), text(&format!("{TOOL_FINISHED} {REPLY}")));
    }

    #[test]
    fn chat_and_gemini_replies() {
        let tools = json!([{"type": "function", "function": {"name": "bash", "parameters": {"properties": {"command": {"type": "string"}}}}}]);
        let run = json!({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "run: pwd"}], "tools": tools});
        assert!(matches!(chat::decide(&run), Reply::Tool { name, .. } if name == "bash"));
        let result = json!({"messages": [{"role": "tool", "tool_call_id": "c", "content": "x"}], "tools": tools});
        assert_eq!(chat::decide(&result), text(&format!("{TOOL_FINISHED} {REPLY}")));

        let decl = json!([{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": {"properties": {"command": {"type": "string"}}}}]}]);
        let run = json!({"contents": [{"role": "user", "parts": [{"text": "run: pwd"}]}], "tools": decl});
        assert!(matches!(gemini::decide(&run), Reply::Tool { args, .. } if args["command"] == "pwd"));
        let result = json!({"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {}}}]}]});
        assert_eq!(gemini::decide(&result), text(&format!("{TOOL_FINISHED} {REPLY}")));
        let plain = json!({"contents": [{"role": "user", "parts": [{"text": "hello"}]}], "tools": decl});
        assert_eq!(gemini::decide(&plain), text(REPLY));
    }

    /// One HTTP/1.1 exchange over a plain socket (reqwest needs a TLS
    /// provider installed first): returns the status and the body.
    async fn exchange(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        socket.read_to_string(&mut response).await.unwrap();
        let status = response[9..12].parse().unwrap();
        let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
        (status, body)
    }

    #[tokio::test]
    async fn serves_and_records_requests() {
        let model = FakeModel::start().await;
        let port = model.port();
        assert_eq!(exchange(port, "HEAD", "/", "").await.0, 200);
        let body = json!({"model": "m", "stream": false, "messages": [{"role": "user", "content": "hi"}]});
        let (status, reply) = exchange(port, "POST", "/v1/messages?beta=true", &body.to_string()).await;
        let reply: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!((status, &reply["content"][0]["text"]), (200, &json!(REPLY)));
        assert!(reply["usage"]["input_tokens"].as_u64().unwrap() > 0);
        let stream = "/x/v1beta/models/g:streamGenerateContent?alt=sse";
        assert!(exchange(port, "POST", stream, "{}").await.1.starts_with("data: {"));
        assert_eq!(exchange(port, "POST", "/nope", "").await.0, 404);
        let paths: Vec<_> = model.requests().into_iter().map(|(m, p, _)| format!("{m} {p}")).collect();
        assert_eq!(paths, ["HEAD /", "POST /v1/messages?beta=true", format!("POST {stream}").as_str(), "POST /nope"]);
        assert_eq!(model.requests()[1].2, body);
    }
}
