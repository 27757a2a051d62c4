//! The agent's end of an in-memory pipe, for tests of the connection and the client.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

use super::rpc::{IoLines, IoSink, Transport};

pub type PipeTransport = Transport<IoLines<ReadHalf<DuplexStream>>, IoSink<WriteHalf<DuplexStream>>>;

pub struct FakeAgent {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
}

/// A transport for the client and the agent at its other end.
pub fn pipe() -> (PipeTransport, FakeAgent) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (our_read, our_write) = tokio::io::split(ours);
    let (their_read, their_write) = tokio::io::split(theirs);
    let agent = FakeAgent { lines: BufReader::new(their_read).lines(), writer: their_write };
    (Transport::io(our_read, our_write), agent)
}

impl FakeAgent {
    /// The next message the client sent.
    pub async fn recv(&mut self) -> Value {
        let line = self.lines.next_line().await.unwrap().expect("client closed the pipe");
        serde_json::from_str(&line).unwrap()
    }

    /// The next request, checked to be `method`; returns its id and params.
    pub async fn expect(&mut self, method: &str) -> (Value, Value) {
        let msg = self.recv().await;
        assert_eq!(msg["method"], method, "{msg}");
        (msg["id"].clone(), msg["params"].clone())
    }

    pub async fn send(&mut self, msg: Value) {
        self.send_raw(&format!("{msg}\n")).await;
    }

    pub async fn send_raw(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).await.unwrap();
    }

    pub async fn answer(&mut self, id: Value, result: Value) {
        self.send(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})).await;
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }
}
