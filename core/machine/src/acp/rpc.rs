//! A JSON-RPC 2.0 connection over newline-delimited JSON, generic over the transport: a tokio pipe in
//! tests, a sandboxd attachment ([`super::attach`]) in production.
//!
//! One task reads lines: responses complete the matching [`Connection::call`], everything else goes, in
//! order, to the [`Inbound`] stream. One task writes, so a dropped caller never leaves half a line behind.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::lines::{LineSplitter, MAX_LINE};

pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// Where the agent's output lines come from.
pub trait LineSource: Send + 'static {
    /// The next line without its '\n'; `None` once the agent's output ended.
    fn next_line(&mut self) -> impl Future<Output = io::Result<Option<Vec<u8>>>> + Send;
}

/// Where lines to the agent go.
pub trait LineSink: Send + 'static {
    /// Writes one whole line, '\n' included.
    fn send_line(&mut self, line: &[u8]) -> impl Future<Output = io::Result<()>> + Send;
}

/// Both directions of an agent's stdio.
#[derive(Debug)]
pub struct Transport<S, K> {
    pub lines: S,
    pub sink: K,
}

impl<R: AsyncRead + Unpin + Send + 'static, W: AsyncWrite + Unpin + Send + 'static> Transport<IoLines<R>, IoSink<W>> {
    /// Over a plain reader and writer, such as a child's stdout and stdin.
    pub fn io(reader: R, writer: W) -> Self {
        Transport { lines: IoLines::new(reader), sink: IoSink(writer) }
    }
}

#[derive(Debug)]
pub struct IoLines<R> {
    reader: R,
    splitter: LineSplitter,
}

impl<R> IoLines<R> {
    pub fn new(reader: R) -> Self {
        IoLines { reader, splitter: LineSplitter::new(0, MAX_LINE) }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> LineSource for IoLines<R> {
    async fn next_line(&mut self) -> io::Result<Option<Vec<u8>>> {
        let mut buf = vec![0; 64 * 1024];
        loop {
            if let Some(line) = self.splitter.pop() {
                return Ok(Some(line));
            }
            match self.reader.read(&mut buf).await? {
                0 => return Ok(None),
                n => self.splitter.push(&buf[..n]),
            }
        }
    }
}

#[derive(Debug)]
pub struct IoSink<W>(pub W);

impl<W: AsyncWrite + Unpin + Send + 'static> LineSink for IoSink<W> {
    async fn send_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.0.write_all(line).await?;
        self.0.flush().await
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RpcError {
    /// The agent answered with a JSON-RPC error.
    #[error("agent error {code}: {message}")]
    Remote { code: i64, message: String, data: Option<Value> },
    /// The agent's output ended (it exited, or the attachment went away) or writing to it failed.
    #[error("agent connection closed: {0}")]
    Closed(String),
    /// The agent answered in a shape we cannot read.
    #[error("unexpected answer to {method}: {detail}")]
    Decode { method: String, detail: String },
}

/// A message the agent started.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Notification {
        method: String,
        params: Value,
    },
    /// Must be answered with [`Connection::respond`] or [`Connection::respond_error`].
    Request {
        id: Value,
        method: String,
        params: Value,
    },
}

/// What one line of agent output is.
#[derive(Debug, PartialEq)]
enum Message {
    Response {
        id: u64,
        result: Result<Value, RpcError>,
    },
    Incoming(Incoming),
    /// Not JSON-RPC, or an id we never sent; the reason says which, without the content.
    Invalid(&'static str),
}

fn classify(line: &[u8]) -> Message {
    let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(line) else {
        return Message::Invalid("not a JSON object");
    };
    let params = msg.remove("params").unwrap_or(Value::Null);
    match (msg.remove("method"), msg.remove("id")) {
        (Some(Value::String(method)), None) => Message::Incoming(Incoming::Notification { method, params }),
        (Some(Value::String(method)), Some(id)) => Message::Incoming(Incoming::Request { id, method, params }),
        (Some(_), _) => Message::Invalid("method is not a string"),
        (None, Some(id)) => {
            let Some(id) = id.as_u64() else { return Message::Invalid("response id is not one of ours") };
            let result = match (msg.remove("result"), msg.remove("error")) {
                (_, Some(error)) => Err(remote_error(error)),
                (Some(result), None) => Ok(result),
                (None, None) => return Message::Invalid("response without result or error"),
            };
            Message::Response { id, result }
        }
        (None, None) => Message::Invalid("neither method nor id"),
    }
}

fn remote_error(error: Value) -> RpcError {
    RpcError::Remote {
        code: error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
        message: error.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_owned(),
        data: error.get("data").cloned(),
    }
}

type Pending = HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>;

#[derive(Debug)]
struct Shared {
    /// `None` once the connection ended: nothing new may wait for an answer that cannot come.
    pending: Mutex<Option<Pending>>,
    next_id: AtomicU64,
    out: mpsc::UnboundedSender<Vec<u8>>,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, Option<Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fails every waiting call and refuses new ones.
    fn close(&self, reason: &str) {
        if let Some(pending) = self.pending().take() {
            for (_, waiter) in pending {
                let _ = waiter.send(Err(RpcError::Closed(reason.to_owned())));
            }
        }
    }

    fn send(&self, message: &Value) -> Result<(), RpcError> {
        let mut line = serde_json::to_vec(message).map_err(|e| RpcError::Closed(e.to_string()))?;
        line.push(b'\n');
        self.out.send(line).map_err(|_| RpcError::Closed("the writer stopped".into()))
    }
}

/// Stops reading when the last handle goes (failing calls still awaited); the writer then finishes its queue
/// and stops by itself.
#[derive(Debug)]
struct ReaderGuard {
    task: JoinHandle<()>,
    shared: Arc<Shared>,
}

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        self.task.abort();
        self.shared.close("the connection was dropped");
    }
}

/// The caller's side of the connection; clones share it.
#[derive(Debug, Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    _reader: Arc<ReaderGuard>,
}

/// Requests and notifications from the agent, in the order it sent them; ends when the connection does.
#[derive(Debug)]
pub struct Inbound(mpsc::UnboundedReceiver<Incoming>);

impl Inbound {
    /// Cancel safe.
    pub async fn recv(&mut self) -> Option<Incoming> {
        self.0.recv().await
    }

    /// A message already received, without waiting.
    pub fn try_recv(&mut self) -> Option<Incoming> {
        self.0.try_recv().ok()
    }
}

impl Connection {
    /// Starts the reader and writer tasks; must run inside a tokio runtime.
    pub fn start<S: LineSource, K: LineSink>(transport: Transport<S, K>) -> (Connection, Inbound) {
        Self::start_at(transport, 1)
    }

    /// Like [`Self::start`], numbering requests from `first_id`: a connection that takes over an agent
    /// after a restart must not reuse the ids of calls the agent may still answer.
    pub fn start_at<S: LineSource, K: LineSink>(transport: Transport<S, K>, first_id: u64) -> (Connection, Inbound) {
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            pending: Mutex::new(Some(Pending::new())),
            next_id: AtomicU64::new(first_id),
            out: out_tx,
        });
        tokio::spawn(write_loop(transport.sink, out_rx, Arc::downgrade(&shared)));
        let reader = tokio::spawn(read_loop(transport.lines, shared.clone(), in_tx));
        let guard = ReaderGuard { task: reader, shared: shared.clone() };
        (Connection { shared, _reader: Arc::new(guard) }, Inbound(in_rx))
    }

    /// Sends a request and waits for its answer. Dropping the future forgets the answer.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.send_request(method, params)?.await
    }

    /// Queues a request now; the returned future is its answer. Lets a caller keep reading [`Inbound`]
    /// while the answer is outstanding, with the request already on its way.
    pub fn send_request(&self, method: &str, params: Value) -> Result<PendingCall, RpcError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match self.shared.pending().as_mut() {
            Some(pending) => pending.insert(id, tx),
            None => return Err(RpcError::Closed("the agent's output ended".into())),
        };
        let call = PendingCall { rx, shared: self.shared.clone(), id };
        self.shared.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(call)
    }

    /// Waits for the answer to a request sent by an earlier connection to the same agent (before a
    /// server restart), whose answer will come on this one.
    pub fn adopt(&self, id: u64) -> Result<PendingCall, RpcError> {
        let (tx, rx) = oneshot::channel();
        match self.shared.pending().as_mut() {
            Some(pending) => pending.insert(id, tx),
            None => return Err(RpcError::Closed("the agent's output ended".into())),
        };
        Ok(PendingCall { rx, shared: self.shared.clone(), id })
    }

    pub fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        self.shared.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    pub fn respond(&self, id: Value, result: Value) -> Result<(), RpcError> {
        self.shared.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    pub fn respond_error(&self, id: Value, code: i64, message: &str) -> Result<(), RpcError> {
        self.shared.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
    }
}

/// The answer to one request. Cancel safe; dropping it forgets the answer, so abandoned calls do not pile up.
#[derive(Debug)]
pub struct PendingCall {
    rx: oneshot::Receiver<Result<Value, RpcError>>,
    shared: Arc<Shared>,
    id: u64,
}

impl PendingCall {
    /// The JSON-RPC id of the request.
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl Future for PendingCall {
    type Output = Result<Value, RpcError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|answer| answer.unwrap_or_else(|_| Err(RpcError::Closed("the agent's output ended".into()))))
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if let Some(pending) = self.shared.pending().as_mut() {
            pending.remove(&self.id);
        }
    }
}

async fn read_loop<S: LineSource>(mut lines: S, shared: Arc<Shared>, inbound: mpsc::UnboundedSender<Incoming>) {
    let reason = loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break "the agent's output ended".to_owned(),
            Err(e) => break format!("reading the agent's output failed: {e}"),
        };
        if line.trim_ascii().is_empty() {
            continue;
        }
        match classify(&line) {
            Message::Response { id, result } => {
                let waiter = shared.pending().as_mut().and_then(|pending| pending.remove(&id));
                match waiter {
                    Some(waiter) => drop(waiter.send(result)),
                    None => tracing::debug!(id, "answer to a call nobody waits for"),
                }
            }
            // Nobody listening is the owner's choice; keep reading so answers still arrive.
            Message::Incoming(message) => drop(inbound.send(message)),
            Message::Invalid(why) => {
                tracing::warn!(why, bytes = line.len(), "skipping a malformed line from the agent")
            }
        }
    };
    tracing::debug!(reason, "agent connection ended");
    shared.close(&reason);
}

async fn write_loop<K: LineSink>(
    mut sink: K,
    mut out: mpsc::UnboundedReceiver<Vec<u8>>,
    shared: std::sync::Weak<Shared>,
) {
    while let Some(line) = out.recv().await {
        if let Err(e) = sink.send_line(&line).await {
            tracing::warn!(error = %e, "writing to the agent failed");
            if let Some(shared) = shared.upgrade() {
                shared.close(&format!("writing to the agent failed: {e}"));
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake_agent::pipe;
    use super::*;

    #[test]
    fn classify_tells_messages_apart() {
        let line = br#"{"jsonrpc":"2.0","method":"session/update","params":{"a":1}}"#;
        let want = Incoming::Notification { method: "session/update".into(), params: json!({"a": 1}) };
        assert_eq!(classify(line), Message::Incoming(want));
        let line = br#"{"jsonrpc":"2.0","id":"x","method":"fs/read_text_file"}"#;
        let want = Incoming::Request { id: json!("x"), method: "fs/read_text_file".into(), params: Value::Null };
        assert_eq!(classify(line), Message::Incoming(want));
        assert_eq!(classify(br#"{"id":3,"result":null}"#), Message::Response { id: 3, result: Ok(Value::Null) });
        let Message::Response { id: 4, result: Err(RpcError::Remote { code: -32000, message, .. }) } =
            classify(br#"{"id":4,"error":{"code":-32000,"message":"Authentication required"}}"#)
        else {
            panic!("not a remote error");
        };
        assert_eq!(message, "Authentication required");
        for bad in [&b"not json"[..], b"[1]", br#"{"id":5}"#, br#"{"id":"5","result":1}"#, br#"{"method":1}"#, b"{}"] {
            assert!(matches!(classify(bad), Message::Invalid(_)), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[tokio::test]
    async fn many_calls_in_flight_answered_out_of_order() {
        let (transport, mut agent) = pipe();
        let (conn, _inbound) = Connection::start(transport);
        let agent_side = async {
            let mut requests = Vec::new();
            for _ in 0..3 {
                let msg = agent.recv().await;
                requests.push((msg["id"].clone(), msg["method"].clone()));
            }
            for (id, method) in requests.into_iter().rev() {
                agent.answer(id, json!({"echo": method})).await;
            }
        };
        let (a, b, c, ()) = tokio::join!(
            conn.call("one", json!({})),
            conn.call("two", json!({})),
            conn.call("three", json!({})),
            agent_side
        );
        assert_eq!(
            (a.unwrap(), b.unwrap(), c.unwrap()),
            (json!({"echo": "one"}), json!({"echo": "two"}), json!({"echo": "three"}))
        );
    }

    #[tokio::test]
    async fn malformed_lines_are_skipped() {
        let (transport, mut agent) = pipe();
        let (conn, mut inbound) = Connection::start(transport);
        agent.send_raw("this is not json\n\n{\"half\": \n").await;
        agent.notify("_service/labels", json!({"labels": {"a": "b"}})).await;
        let got = inbound.recv().await.unwrap();
        assert_eq!(
            got,
            Incoming::Notification { method: "_service/labels".into(), params: json!({"labels": {"a": "b"}}) }
        );
        let call = conn.call("ping", json!(null));
        let answer = async {
            let (id, _) = agent.expect("ping").await;
            agent.answer(id, json!("pong")).await;
        };
        let (got, ()) = tokio::join!(call, answer);
        assert_eq!(got.unwrap(), "pong");
    }

    #[tokio::test]
    async fn eof_fails_pending_calls_and_ends_inbound() {
        let (transport, mut agent) = pipe();
        let (conn, mut inbound) = Connection::start(transport);
        let call = conn.call("session/prompt", json!({}));
        let hang_up = async {
            agent.expect("session/prompt").await;
            drop(agent);
        };
        let (got, ()) = tokio::join!(call, hang_up);
        assert!(matches!(got, Err(RpcError::Closed(_))), "{got:?}");
        assert_eq!(inbound.recv().await, None);
        assert!(matches!(conn.call("again", json!({})).await, Err(RpcError::Closed(_))));
    }

    #[tokio::test]
    async fn dropping_the_connection_fails_an_outstanding_call() {
        let (transport, mut agent) = pipe();
        let (conn, _inbound) = Connection::start(transport);
        let call = conn.send_request("session/prompt", json!({})).unwrap();
        agent.expect("session/prompt").await;
        drop(conn);
        assert!(matches!(call.await, Err(RpcError::Closed(_))));
    }

    #[tokio::test]
    async fn agent_requests_are_answered_by_the_owner() {
        let (transport, mut agent) = pipe();
        let (conn, mut inbound) = Connection::start(transport);
        agent.send(json!({"jsonrpc": "2.0", "id": "r1", "method": "x/y", "params": {"q": 1}})).await;
        agent.send(json!({"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file"})).await;
        let Some(Incoming::Request { id, method, params }) = inbound.recv().await else { panic!("no request") };
        assert_eq!((method.as_str(), &params), ("x/y", &json!({"q": 1})));
        conn.respond(id, json!({"ok": true})).unwrap();
        let Some(Incoming::Request { id, .. }) = inbound.recv().await else { panic!("no request") };
        conn.respond_error(id, METHOD_NOT_FOUND, "no").unwrap();
        assert_eq!(agent.recv().await, json!({"jsonrpc": "2.0", "id": "r1", "result": {"ok": true}}));
        assert_eq!(agent.recv().await, json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "no"}}));
        conn.notify("session/cancel", json!({"sessionId": "s"})).unwrap();
        assert_eq!(
            agent.recv().await,
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}})
        );
    }

    #[tokio::test]
    async fn remote_errors_reach_the_caller() {
        let (transport, mut agent) = pipe();
        let (conn, _inbound) = Connection::start(transport);
        let answer = async {
            let (id, _) = agent.expect("session/set_model").await;
            agent
                .send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}))
                .await;
        };
        let (got, ()) = tokio::join!(conn.call("session/set_model", json!({})), answer);
        assert_eq!(got, Err(RpcError::Remote { code: -32601, message: "Method not found".into(), data: None }));
    }
}
