//! Drives the built `scripted-agent` binary over its stdio, one JSON-RPC line at a time.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(10);

/// A scratch directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!("scripted-agent-test-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The running agent; killed on drop.
pub struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: u64,
    pub dir: TempDir,
}

impl Agent {
    /// Starts the agent with `profile`, its log and stderr in a fresh temp dir, plus `env`.
    pub fn spawn(profile: &str, env: &[(&str, &str)]) -> Self {
        let dir = TempDir::new();
        let stderr = std::fs::File::create(dir.path().join("stderr")).expect("stderr file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_scripted-agent"))
            .env("SCRIPTED_AGENT_PROFILE", profile)
            .env("SCRIPTED_AGENT_LOG", dir.path().join("log"))
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn scripted-agent");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value =
                    serde_json::from_str(&line).unwrap_or_else(|e| panic!("agent wrote non-JSON {line:?}: {e}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Agent { child, stdin, lines, next_id: 0, dir }
    }

    pub fn send_line(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to agent");
        self.stdin.flush().expect("flush agent stdin");
    }

    pub fn send(&mut self, message: Value) {
        self.send_line(&message.to_string());
    }

    /// Sends a request and returns its id.
    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message from the agent.
    pub fn recv(&mut self) -> Value {
        self.lines.recv_timeout(TIMEOUT).expect("agent message within 10 s")
    }

    /// True when the agent writes nothing for `wait`.
    pub fn quiet_for(&mut self, wait: Duration) -> bool {
        self.lines.recv_timeout(wait).is_err()
    }

    /// Sends a request whose response must be the very next message; returns that message.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        let response = self.recv();
        assert_eq!(response["id"], id, "expected the response to {method}, got {response}");
        response
    }

    /// Like `call`, but returns `result` and fails on an error response.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// initialize, the profile's authenticate, session/new; returns the session id.
    pub fn start(&mut self, auth_method: Option<&str>) -> String {
        self.ok("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
        if let Some(method) = auth_method {
            self.ok("authenticate", json!({"methodId": method}));
        }
        let session = self.ok("session/new", json!({"cwd": "/workspace", "mcpServers": []}));
        session["sessionId"].as_str().expect("sessionId").to_owned()
    }

    /// Sends session/prompt with `text`; returns its id.
    pub fn send_prompt(&mut self, session: &str, text: &str) -> u64 {
        self.request("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}))
    }

    /// Messages up to the response with `id`, and that response.
    pub fn until_response(&mut self, id: u64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let message = self.recv();
            if message["id"] == id && message.get("method").is_none() {
                return (before, message);
            }
            before.push(message);
        }
    }

    /// A whole turn: the notifications it sent and the prompt response.
    pub fn prompt(&mut self, session: &str, text: &str) -> (Vec<Value>, Value) {
        let id = self.send_prompt(session, text);
        self.until_response(id)
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait agent") {
                return status;
            }
            assert!(Instant::now() < deadline, "agent did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr")).unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `session/update` notification as the agent sends it.
pub fn update(session: &str, update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}})
}

pub fn message_chunk(session: &str, text: &str) -> Value {
    update(session, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}))
}

/// The concatenated agent text of a turn's notifications.
pub fn agent_text(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect()
}

pub fn stop_response(id: u64, reason: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": reason}})
}
