//! Wire types shared by the daemon and its client: JSON lines over a unix socket, one request per connection.
//!
//! Byte payloads travel as standard base64 strings; in these types they are plain `Vec<u8>`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Longest JSON line either side accepts; bounds memory against a runaway or hostile peer.
pub const MAX_LINE: usize = 64 << 20;
/// Largest `max_bytes` a file read honours (its base64 still fits in [`MAX_LINE`]).
pub const MAX_FILE_READ: u64 = 32 << 20;
/// Default cap on the bytes an exec sends per stream.
pub const DEFAULT_MAX_OUTPUT: u64 = 16 << 20;
/// Working directory when a request names none.
pub const DEFAULT_CWD: &str = "/workspace";

/// The first (and, except for attach, only) line a client sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Ping,
    Exec(ExecRequest),
    Spawn(SpawnRequest),
    Attach {
        name: String,
        #[serde(default)]
        stdout_offset: u64,
        #[serde(default)]
        stderr_offset: u64,
    },
    List,
    Kill {
        name: String,
        #[serde(default = "default_signal")]
        signal: i32,
    },
    ReadFile {
        path: String,
        max_bytes: u64,
    },
    /// Gives a kept process a new name (an agent started ahead, handed to the
    /// conversation that takes it); `exists` when a running one has that name.
    Rename {
        from: String,
        to: String,
    },
    Shutdown,
}

fn default_signal() -> i32 {
    libc::SIGTERM
}

/// A one-shot command whose output streams back on the same connection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecRequest {
    pub argv: Vec<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// Added to (and overriding) sandboxd's own environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default, with = "b64_opt")]
    pub stdin: Option<Vec<u8>>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Bytes sent per stream; `None` means [`DEFAULT_MAX_OUTPUT`].
    #[serde(default)]
    pub max_output: Option<u64>,
}

/// A kept process (an agent) that outlives connections and buffers its output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpawnRequest {
    pub name: String,
    pub argv: Vec<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Every line the daemon sends. One enum so both sides share the spelling of each `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    Pong(Pong),
    Output(Output),
    Exit(Exit),
    Spawned { name: String, pid: u32 },
    Attached(Attached),
    Processes { processes: Vec<ProcessInfo> },
    File(FileRead),
    Ok,
    Error(RemoteError),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pong {
    pub version: String,
    pub pid: u32,
    pub uptime_ms: u64,
}

/// A chunk of output. `offset` (absolute position of its first byte) is present on attach streams only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Output {
    pub stream: Stream,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(with = "b64")]
    pub data: Vec<u8>,
}

/// How a process ended. `timed_out` and `truncated` are present on exec streams only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_out: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attached {
    pub pid: u32,
    /// Offsets actually resumed from: the asked ones, raised to the oldest retained byte.
    pub stdout_start: u64,
    pub stderr_start: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub name: String,
    pub pid: u32,
    pub running: bool,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout_end: u64,
    pub stderr_end: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRead {
    /// As given in the request.
    pub path: String,
    /// Whole file bytes; `data` is shorter when `max_bytes` cut it.
    pub size: u64,
    #[serde(with = "b64")]
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteError {
    pub code: String,
    pub message: String,
}

/// The `code` values of [`RemoteError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    BadRequest,
    NotFound,
    IsDirectory,
    PermissionDenied,
    Exists,
    SpawnFailed,
    Io,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::NotFound => "not_found",
            ErrorCode::IsDirectory => "is_directory",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::Exists => "exists",
            ErrorCode::SpawnFailed => "spawn_failed",
            ErrorCode::Io => "io",
        }
    }
}

impl RemoteError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        RemoteError { code: code.as_str().to_owned(), message: message.into() }
    }

    /// Maps an OS error to the closest code (missing, denied, anything else is `io`).
    pub fn from_io(err: &std::io::Error, context: &str) -> Self {
        let code = match err.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => ErrorCode::NotFound,
            std::io::ErrorKind::PermissionDenied => ErrorCode::PermissionDenied,
            std::io::ErrorKind::IsADirectory => ErrorCode::IsDirectory,
            _ => ErrorCode::Io,
        };
        RemoteError::new(code, format!("{context}: {err}"))
    }
}

/// Lines a client sends on an attach connection after the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AttachInput {
    Stdin {
        #[serde(with = "b64")]
        data: Vec<u8>,
    },
    CloseStdin,
}

mod b64 {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text.as_bytes()).map_err(serde::de::Error::custom)
    }
}

mod b64_opt {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(bytes) => super::b64::serialize(bytes, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        #[derive(Deserialize)]
        struct Wrapped(#[serde(with = "super::b64")] Vec<u8>);
        Ok(Option::<Wrapped>::deserialize(d)?.map(|Wrapped(bytes)| bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_with_defaults() {
        let req: Request = serde_json::from_str(r#"{"op":"kill","name":"a"}"#).unwrap();
        assert_eq!(req, Request::Kill { name: "a".into(), signal: 15 });
        let req: Request = serde_json::from_str(r#"{"op":"exec","argv":["true"],"stdin":null}"#).unwrap();
        assert_eq!(req, Request::Exec(ExecRequest { argv: vec!["true".into()], ..Default::default() }));
        let req: Request = serde_json::from_str(r#"{"op":"exec","argv":["cat"],"stdin":"aGk="}"#).unwrap();
        let Request::Exec(exec) = req else { panic!("not exec") };
        assert_eq!(exec.stdin.as_deref(), Some(&b"hi"[..]));
    }

    #[test]
    fn bad_base64_and_unknown_ops_are_rejected() {
        assert!(serde_json::from_str::<Request>(r#"{"op":"exec","argv":["cat"],"stdin":"!!"}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"op":"format_disk"}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"argv":[]}"#).is_err());
    }

    #[test]
    fn exec_and_attach_lines_carry_only_their_fields() {
        let exec_out = Reply::Output(Output { stream: Stream::Stderr, offset: None, data: b"x".to_vec() });
        assert_eq!(serde_json::to_string(&exec_out).unwrap(), r#"{"type":"output","stream":"stderr","data":"eA=="}"#);
        let attach_exit = Reply::Exit(Exit { code: Some(0), signal: None, timed_out: None, truncated: None });
        assert_eq!(serde_json::to_string(&attach_exit).unwrap(), r#"{"type":"exit","code":0,"signal":null}"#);
        let err = Reply::Error(RemoteError::new(ErrorCode::NotFound, "no"));
        assert_eq!(serde_json::to_string(&err).unwrap(), r#"{"type":"error","code":"not_found","message":"no"}"#);
    }

    #[test]
    fn os_errors_map_to_codes() {
        use std::io::{Error, ErrorKind};
        let code = |kind| RemoteError::from_io(&Error::from(kind), "x").code;
        assert_eq!(code(ErrorKind::NotFound), "not_found");
        assert_eq!(code(ErrorKind::NotADirectory), "not_found");
        assert_eq!(code(ErrorKind::PermissionDenied), "permission_denied");
        assert_eq!(code(ErrorKind::IsADirectory), "is_directory");
        assert_eq!(code(ErrorKind::Interrupted), "io");
    }
}
