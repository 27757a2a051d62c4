//! Async client of a sandboxd socket, used by the acs server. Every call is one connection.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::BufReader;
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::lines::{read_line, write_line};
use crate::proto::{
    AttachInput, ExecRequest, FileRead, MAX_LINE, Pong, ProcessInfo, RemoteError, Reply, Request, SpawnRequest, Stream,
};

/// A daemon that does not accept within this long is treated as gone.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub enum Error {
    /// Connecting or talking failed; a refused or missing socket means the daemon is gone.
    Io(io::Error),
    /// The daemon answered with an error line.
    Remote { code: String, message: String },
    /// The daemon answered something this client does not understand, or hung up early.
    Protocol(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "sandboxd connection: {e}"),
            Error::Remote { code, message } => write!(f, "sandboxd: {code}: {message}"),
            Error::Protocol(message) => write!(f, "sandboxd protocol: {message}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

fn unexpected(reply: &Reply) -> Error {
    Error::Protocol(format!("unexpected reply {reply:?}"))
}

/// How an exec ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecExit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// Some output beyond `max_output` was dropped.
    pub truncated: bool,
}

/// Everything an exec printed, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit: ExecExit,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachEvent {
    /// `offset` is the absolute position of `data`'s first byte in its stream.
    Output { stream: Stream, offset: u64, data: Vec<u8> },
    /// The process ended, and all output before its end was delivered.
    Exit { code: Option<i32>, signal: Option<i32> },
}

/// A live attachment: output through `reader`, input through `writer`, usable from different tasks.
#[derive(Debug)]
pub struct Attachment {
    pub pid: u32,
    /// Offsets the output resumes from (the asked ones, raised to the oldest byte still buffered).
    pub stdout_start: u64,
    pub stderr_start: u64,
    pub reader: AttachReader,
    pub writer: AttachWriter,
}

#[derive(Debug)]
pub struct AttachReader {
    lines: Lines,
}

impl AttachReader {
    /// The next event; `None` once the attachment ended (after `Exit`, or when a newer attach replaced it).
    /// Cancel safe.
    pub async fn next(&mut self) -> Result<Option<AttachEvent>, Error> {
        match self.lines.next().await? {
            None => Ok(None),
            Some(Reply::Output(out)) => {
                let offset = out.offset.ok_or_else(|| Error::Protocol("output line without offset".into()))?;
                Ok(Some(AttachEvent::Output { stream: out.stream, offset, data: out.data }))
            }
            Some(Reply::Exit(exit)) => Ok(Some(AttachEvent::Exit { code: exit.code, signal: exit.signal })),
            Some(other) => Err(unexpected(&other)),
        }
    }
}

/// Input to the attached process. Dropping it leaves the process's stdin open.
#[derive(Debug)]
pub struct AttachWriter {
    writer: OwnedWriteHalf,
}

impl AttachWriter {
    pub async fn send_stdin(&mut self, data: &[u8]) -> Result<(), Error> {
        Ok(write_line(&mut self.writer, &AttachInput::Stdin { data: data.to_vec() }).await?)
    }

    pub async fn close_stdin(&mut self) -> Result<(), Error> {
        Ok(write_line(&mut self.writer, &AttachInput::CloseStdin).await?)
    }
}

/// The reading side of a connection: one reply per call.
#[derive(Debug)]
struct Lines {
    reader: BufReader<OwnedReadHalf>,
    /// Holds a partial line across a cancelled `next`.
    line: Vec<u8>,
}

impl Lines {
    /// The next reply, `None` at end of stream; an error line becomes `Error::Remote`.
    async fn next(&mut self) -> Result<Option<Reply>, Error> {
        let complete = read_line(&mut self.reader, &mut self.line, MAX_LINE).await?;
        let parsed = complete.then(|| serde_json::from_slice::<Reply>(&self.line));
        self.line.clear();
        match parsed {
            None => Ok(None),
            Some(Ok(Reply::Error(RemoteError { code, message }))) => Err(Error::Remote { code, message }),
            Some(Ok(reply)) => Ok(Some(reply)),
            Some(Err(e)) => Err(Error::Protocol(format!("bad reply line: {e}"))),
        }
    }

    async fn expect(&mut self) -> Result<Reply, Error> {
        self.next().await?.ok_or_else(|| Error::Protocol("connection closed before the reply".into()))
    }
}

/// The process that must be at the other end of the socket: the machine's
/// supervisor, as the kernel reports it (`SO_PEERCRED`, taken when it called
/// listen(2)), not as it describes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub uid: u32,
    pub pid: i32,
}

#[derive(Debug, Clone)]
pub struct Client {
    socket: PathBuf,
    peer: Option<Peer>,
}

impl Client {
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        Client { socket: socket.into(), peer: None }
    }

    /// Refuses to talk unless the listener is `peer`.
    pub fn with_peer(mut self, peer: Peer) -> Self {
        self.peer = Some(peer);
        self
    }

    /// A connection to the supervisor, its listener checked: what a runner
    /// relays a server's connection over.
    pub async fn connect(&self) -> Result<UnixStream, Error> {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, UnixStream::connect(&self.socket))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connecting to sandboxd timed out"))??;
        if let Some(want) = self.peer {
            let cred = stream.peer_cred()?;
            if cred.uid() != want.uid || cred.pid() != Some(want.pid) {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "the socket's listener (pid {:?}, uid {}) is not this machine's supervisor",
                        cred.pid(),
                        cred.uid()
                    ),
                )));
            }
        }
        Ok(stream)
    }

    /// Connects and sends `request`. The write half is returned too: dropping it would end an exec.
    async fn open(&self, request: &Request) -> Result<(Lines, OwnedWriteHalf), Error> {
        let stream = self.connect().await?;
        let (read, mut writer) = stream.into_split();
        write_line(&mut writer, request).await?;
        Ok((Lines { reader: BufReader::new(read), line: Vec::new() }, writer))
    }

    /// One request, one reply.
    async fn call(&self, request: &Request) -> Result<Reply, Error> {
        let (mut lines, _writer) = self.open(request).await?;
        lines.expect().await
    }

    pub async fn ping(&self) -> Result<Pong, Error> {
        match self.call(&Request::Ping).await? {
            Reply::Pong(pong) => Ok(pong),
            other => Err(unexpected(&other)),
        }
    }

    /// Runs a command and collects its output.
    pub async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, Error> {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let exit = self
            .exec_streaming(req, |stream, data| match stream {
                Stream::Stdout => stdout.extend_from_slice(data),
                Stream::Stderr => stderr.extend_from_slice(data),
            })
            .await?;
        Ok(ExecOutput { stdout, stderr, exit })
    }

    /// Runs a command, handing output to `on_output` as it arrives. Dropping the future kills the command.
    pub async fn exec_streaming(
        &self,
        req: &ExecRequest,
        mut on_output: impl FnMut(Stream, &[u8]),
    ) -> Result<ExecExit, Error> {
        let (mut lines, _writer) = self.open(&Request::Exec(req.clone())).await?;
        loop {
            match lines.expect().await? {
                Reply::Output(out) => on_output(out.stream, &out.data),
                Reply::Exit(exit) => {
                    return Ok(ExecExit {
                        code: exit.code,
                        signal: exit.signal,
                        timed_out: exit.timed_out.unwrap_or(false),
                        truncated: exit.truncated.unwrap_or(false),
                    });
                }
                other => return Err(unexpected(&other)),
            }
        }
    }

    /// Starts a kept process; returns its pid.
    pub async fn spawn(&self, req: &SpawnRequest) -> Result<u32, Error> {
        match self.call(&Request::Spawn(req.clone())).await? {
            Reply::Spawned { pid, .. } => Ok(pid),
            other => Err(unexpected(&other)),
        }
    }

    /// Attaches to a kept process, replaying its output from the given offsets; ends any previous attachment.
    pub async fn attach(&self, name: &str, stdout_offset: u64, stderr_offset: u64) -> Result<Attachment, Error> {
        let request = Request::Attach { name: name.to_owned(), stdout_offset, stderr_offset };
        let (mut lines, writer) = self.open(&request).await?;
        match lines.expect().await? {
            Reply::Attached(a) => Ok(Attachment {
                pid: a.pid,
                stdout_start: a.stdout_start,
                stderr_start: a.stderr_start,
                reader: AttachReader { lines },
                writer: AttachWriter { writer },
            }),
            other => Err(unexpected(&other)),
        }
    }

    pub async fn list(&self) -> Result<Vec<ProcessInfo>, Error> {
        match self.call(&Request::List).await? {
            Reply::Processes { processes } => Ok(processes),
            other => Err(unexpected(&other)),
        }
    }

    /// Signals a kept process's group; a no-op for a finished process.
    pub async fn kill(&self, name: &str, signal: i32) -> Result<(), Error> {
        match self.call(&Request::Kill { name: name.to_owned(), signal }).await? {
            Reply::Ok => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    /// Gives a kept process a new name.
    pub async fn rename(&self, from: &str, to: &str) -> Result<(), Error> {
        match self.call(&Request::Rename { from: from.to_owned(), to: to.to_owned() }).await? {
            Reply::Ok => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    pub async fn read_file(&self, path: &str, max_bytes: u64) -> Result<FileRead, Error> {
        match self.call(&Request::ReadFile { path: path.to_owned(), max_bytes }).await? {
            Reply::File(file) => Ok(file),
            other => Err(unexpected(&other)),
        }
    }

    /// Asks the daemon to stop its kept processes and exit.
    pub async fn shutdown(&self) -> Result<(), Error> {
        match self.call(&Request::Shutdown).await? {
            Reply::Ok => Ok(()),
            other => Err(unexpected(&other)),
        }
    }
}
