//! The runner protocol: what the server and an `acs runner` say over the
//! runner's WebSocket (`GET /api/runners/connect`).
//!
//! Text frames are JSON: calls of the [`SandboxProvider`](super::super::SandboxProvider)
//! methods and their replies, the opening and closing of supervisor streams,
//! and the runner's egress records. Binary frames carry the bytes of one
//! supervisor stream: a 4-byte big-endian stream number, then the bytes; a
//! frame with no bytes after the number ends that direction of the stream.
//! Each stream is one connection to a machine's `sandboxd`, so the
//! supervisor's own protocol passes through unchanged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::super::{CheckpointInfo, ExecOutput, Limits, MachineSpec, NetworkPolicy};
use crate::egress::EgressRecord;
use sandboxd::client::ExecExit;

/// The runner protocol's version; a runner of another version is refused at hello.
pub const VERSION: u32 = 1;
/// Largest binary payload one frame carries (streams are cut into frames of at most this).
pub const MAX_CHUNK: usize = 64 << 10;

/// One WebSocket message, whichever transport carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Text(String),
    Binary(Vec<u8>),
}

/// A frame of stream bytes (empty `data`: that side is done writing).
pub fn data_frame(stream: u32, data: &[u8]) -> Frame {
    let mut out = Vec::with_capacity(4 + data.len());
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(data);
    Frame::Binary(out)
}

/// The stream number and bytes of a binary frame.
pub fn parse_data(frame: &[u8]) -> Option<(u32, &[u8])> {
    let (head, rest) = frame.split_at_checked(4)?;
    Some((u32::from_be_bytes(head.try_into().ok()?), rest))
}

/// What the server sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ToRunner {
    /// The answer to the runner's hello: who it is, and the API URL its machines call.
    Welcome {
        runner_id: Uuid,
        name: String,
        api_url: String,
    },
    Call {
        id: u64,
        call: Call,
    },
    /// Connect stream `stream` to machine `machine`'s supervisor.
    Open {
        stream: u32,
        machine: Uuid,
    },
    /// The server is done with a stream (both directions).
    Close {
        stream: u32,
    },
}

/// What the runner sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum FromRunner {
    /// First frame of a connection.
    Hello {
        version: u32,
        hostname: String,
        root: String,
    },
    /// `ok` on success, else `error`.
    Reply {
        id: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ok: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The runner could not open the stream, or its supervisor hung up.
    Closed {
        stream: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    Egress {
        record: WireEgress,
    },
}

/// A provider method, as the server calls it on a runner.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Call {
    Start { spec: WireSpec },
    Reattach { spec: WireSpec },
    SetNetwork { id: Uuid, network: WireNetwork },
    Stop { id: Uuid },
    Checkpoint { id: Uuid },
    Restore { id: Uuid },
    Destroy { id: Uuid },
    State { id: Uuid },
    LetGo { id: Uuid },
    ExecOffline { id: Uuid, argv: Vec<String>, env: BTreeMap<String, String> },
}

/// [`MachineSpec`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireSpec {
    pub id: Uuid,
    pub hostname: String,
    pub persistent: bool,
    pub env: BTreeMap<String, String>,
    pub network: WireNetwork,
    pub memory_bytes: Option<u64>,
    pub cpu_millis: Option<u32>,
    pub pids: Option<u32>,
}

impl From<&MachineSpec> for WireSpec {
    fn from(s: &MachineSpec) -> Self {
        WireSpec {
            id: s.id,
            hostname: s.hostname.clone(),
            persistent: s.persistent,
            env: s.env.clone(),
            network: WireNetwork::from(&s.network),
            memory_bytes: s.limits.memory_bytes,
            cpu_millis: s.limits.cpu_millis,
            pids: s.limits.pids,
        }
    }
}

impl From<WireSpec> for MachineSpec {
    fn from(s: WireSpec) -> Self {
        MachineSpec {
            id: s.id,
            hostname: s.hostname,
            persistent: s.persistent,
            env: s.env,
            network: s.network.into(),
            limits: Limits { memory_bytes: s.memory_bytes, cpu_millis: s.cpu_millis, pids: s.pids },
            runner: None,
            // A runner's machines are never brokered (its owner's host cannot enforce it).
            broker: None,
        }
    }
}

/// [`NetworkPolicy`] on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum WireNetwork {
    Open,
    Unrestricted,
    Limited { hosts: Vec<String> },
}

impl From<&NetworkPolicy> for WireNetwork {
    fn from(p: &NetworkPolicy) -> Self {
        match p {
            NetworkPolicy::Open => WireNetwork::Open,
            NetworkPolicy::Unrestricted => WireNetwork::Unrestricted,
            NetworkPolicy::Limited(hosts) => WireNetwork::Limited { hosts: hosts.clone() },
        }
    }
}

impl From<WireNetwork> for NetworkPolicy {
    fn from(p: WireNetwork) -> Self {
        match p {
            WireNetwork::Open => NetworkPolicy::Open,
            WireNetwork::Unrestricted => NetworkPolicy::Unrestricted,
            WireNetwork::Limited { hosts } => NetworkPolicy::Limited(hosts),
        }
    }
}

/// [`ExecOutput`] on the wire (bytes as standard base64).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireExec {
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub truncated: bool,
}

impl From<&ExecOutput> for WireExec {
    fn from(o: &ExecOutput) -> Self {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        WireExec {
            stdout: b64.encode(&o.stdout),
            stderr: b64.encode(&o.stderr),
            code: o.exit.code,
            signal: o.exit.signal,
            timed_out: o.exit.timed_out,
            truncated: o.exit.truncated,
        }
    }
}

impl TryFrom<WireExec> for ExecOutput {
    type Error = String;
    fn try_from(w: WireExec) -> Result<Self, String> {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let decode = |s: &str| b64.decode(s).map_err(|e| format!("bad exec output from the runner: {e}"));
        Ok(ExecOutput {
            stdout: decode(&w.stdout)?,
            stderr: decode(&w.stderr)?,
            exit: ExecExit { code: w.code, signal: w.signal, timed_out: w.timed_out, truncated: w.truncated },
        })
    }
}

/// [`EgressRecord`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireEgress {
    pub sandbox_id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    pub method: String,
    pub host: String,
    pub status: Option<u16>,
    pub latency_ms: i64,
    pub error: Option<String>,
}

impl From<&EgressRecord> for WireEgress {
    fn from(r: &EgressRecord) -> Self {
        WireEgress {
            sandbox_id: r.sandbox_id,
            at: r.at,
            method: r.method.clone(),
            host: r.host.clone(),
            status: r.status,
            latency_ms: r.latency_ms,
            error: r.error.clone(),
        }
    }
}

impl From<WireEgress> for EgressRecord {
    fn from(w: WireEgress) -> Self {
        EgressRecord {
            sandbox_id: w.sandbox_id,
            at: w.at,
            method: w.method,
            host: w.host,
            // A runner attaches no credentials: it has no broker.
            credential_keys: Vec::new(),
            service: None,
            status: w.status,
            latency_ms: w.latency_ms,
            error: w.error,
        }
    }
}

/// A checkpoint on the wire is [`CheckpointInfo`] itself.
pub type WireCheckpoint = CheckpointInfo;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_frames_round_trip() {
        let Frame::Binary(f) = data_frame(7, b"hello") else { panic!() };
        assert_eq!(parse_data(&f), Some((7, &b"hello"[..])));
        let Frame::Binary(eof) = data_frame(u32::MAX, b"") else { panic!() };
        assert_eq!(parse_data(&eof), Some((u32::MAX, &b""[..])));
        assert_eq!(parse_data(&[0, 1]), None);
    }

    #[test]
    fn calls_are_tagged_by_method() {
        let id = Uuid::nil();
        let text = serde_json::to_string(&ToRunner::Call { id: 3, call: Call::Stop { id } }).unwrap();
        assert_eq!(text, format!(r#"{{"op":"call","id":3,"call":{{"method":"stop","id":"{id}"}}}}"#));
        let back: ToRunner = serde_json::from_str(&text).unwrap();
        assert!(matches!(back, ToRunner::Call { id: 3, call: Call::Stop { .. } }));
    }
}
