//! Kept processes (agents): they outlive client connections, and their output is buffered so a client can
//! re-attach after a server restart and resume at a byte offset.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};
use tokio::sync::{oneshot, watch};

use crate::buffer::{OutputBuffer, RETAINED_BYTES};
use crate::command::{self, DRAIN_GRACE, GroupGuard, Launch, READ_CHUNK};
use crate::proto::{ErrorCode, ProcessInfo, RemoteError, SpawnRequest, Stream};

/// `(code, signal)` of a finished process.
pub(crate) type ExitInfo = (Option<i32>, Option<i32>);

/// Kept processes by name.
#[derive(Default)]
pub(crate) struct Registry {
    procs: Mutex<HashMap<String, Arc<Kept>>>,
}

impl Registry {
    /// Starts a kept process; a finished one of the same name is replaced, a running one is `exists`.
    pub(crate) fn spawn(&self, req: &SpawnRequest) -> Result<Arc<Kept>, RemoteError> {
        if req.name.is_empty() {
            return Err(RemoteError::new(ErrorCode::BadRequest, "name is empty"));
        }
        // The map stays locked across the start so two spawns of one name cannot both succeed.
        let mut procs = lock(&self.procs);
        if procs.get(&req.name).is_some_and(|p| p.running()) {
            return Err(RemoteError::new(ErrorCode::Exists, format!("process {} is running", req.name)));
        }
        let launch = Launch { argv: &req.argv, cwd: req.cwd.as_deref(), env: &req.env, stdin: true };
        let mut child = command::start(&launch)?;
        let (Some(pid), Some(stdin), Some(stdout), Some(stderr)) =
            (child.id(), child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            // Unreachable with piped stdio; answered rather than assumed.
            return Err(RemoteError::new(ErrorCode::SpawnFailed, "child has no pid or pipes"));
        };
        let kept = Arc::new(Kept {
            name: req.name.clone(),
            pid,
            state: Mutex::new(State {
                stdout: OutputBuffer::new(RETAINED_BYTES),
                stderr: OutputBuffer::new(RETAINED_BYTES),
                status: None,
                finished: false,
            }),
            changed: watch::Sender::new(()),
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            attachment: Mutex::new(None),
        });
        procs.insert(req.name.clone(), kept.clone());
        eprintln!("sandboxd: spawned {} (pid {pid})", req.name);
        tokio::spawn(supervise(kept.clone(), child, stdout, stderr));
        Ok(kept)
    }

    pub(crate) fn get(&self, name: &str) -> Result<Arc<Kept>, RemoteError> {
        lock(&self.procs)
            .get(name)
            .cloned()
            .ok_or_else(|| RemoteError::new(ErrorCode::NotFound, format!("no process named {name}")))
    }

    /// Moves a kept process to a new name; a finished one of that name is replaced.
    pub(crate) fn rename(&self, from: &str, to: &str) -> Result<(), RemoteError> {
        if to.is_empty() {
            return Err(RemoteError::new(ErrorCode::BadRequest, "name is empty"));
        }
        let mut procs = lock(&self.procs);
        if from != to && procs.get(to).is_some_and(|p| p.running()) {
            return Err(RemoteError::new(ErrorCode::Exists, format!("process {to} is running")));
        }
        let kept = procs
            .remove(from)
            .ok_or_else(|| RemoteError::new(ErrorCode::NotFound, format!("no process named {from}")))?;
        eprintln!("sandboxd: {from} (pid {}) renamed {to}", kept.pid);
        procs.insert(to.to_owned(), kept);
        Ok(())
    }

    /// Every kept process, by name.
    pub(crate) fn list(&self) -> Vec<ProcessInfo> {
        let mut all: Vec<_> = lock(&self.procs).iter().map(|(name, p)| p.info(name)).collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// SIGTERMs every running process group, then SIGKILLs the ones still running after `grace`.
    pub(crate) async fn terminate_all(&self, grace: Duration) {
        let procs: Vec<_> = lock(&self.procs).values().filter(|p| p.running()).cloned().collect();
        for p in &procs {
            let _ = command::signal_group(p.pid, libc::SIGTERM);
        }
        let _ = tokio::time::timeout(grace, async {
            for p in &procs {
                p.wait_exit().await;
            }
        })
        .await;
        for p in procs.iter().filter(|p| p.running()) {
            eprintln!("sandboxd: killing {} (pid {})", p.name, p.pid);
            let _ = command::signal_group(p.pid, libc::SIGKILL);
        }
    }
}

pub(crate) struct Kept {
    /// The name it was spawned under (for the log; the registry's key is its name now).
    pub(crate) name: String,
    pub(crate) pid: u32,
    state: Mutex<State>,
    /// Bumped on every change of `state`; attachments wait on it.
    changed: watch::Sender<()>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// Dropping the sender ends the current attachment.
    attachment: Mutex<Option<oneshot::Sender<()>>>,
}

struct State {
    stdout: OutputBuffer,
    stderr: OutputBuffer,
    /// Set as soon as the process is reaped.
    status: Option<ExitInfo>,
    /// Set once the pipes are drained too, so every byte written before exit is in the buffers.
    finished: bool,
}

impl State {
    fn buffer(&mut self, stream: Stream) -> &mut OutputBuffer {
        match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        }
    }
}

impl Kept {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    pub(crate) fn running(&self) -> bool {
        self.state().status.is_none()
    }

    pub(crate) fn info(&self, name: &str) -> ProcessInfo {
        let state = self.state();
        let (code, signal) = state.status.unwrap_or_default();
        ProcessInfo {
            name: name.to_owned(),
            pid: self.pid,
            running: state.status.is_none(),
            code,
            signal,
            stdout_end: state.stdout.end(),
            stderr_end: state.stderr.end(),
        }
    }

    /// How the process ended, once it has and all its output is buffered.
    pub(crate) fn finished(&self) -> Option<ExitInfo> {
        let state = self.state();
        if state.finished { state.status } else { None }
    }

    /// Offsets a client asking for these actually resumes from.
    pub(crate) fn resume_offsets(&self, stdout: u64, stderr: u64) -> (u64, u64) {
        let state = self.state();
        (state.stdout.resume_offset(stdout), state.stderr.resume_offset(stderr))
    }

    /// Up to `max` buffered bytes of `stream` from `from`, with the offset of the first.
    pub(crate) fn pending(&self, stream: Stream, from: u64, max: usize) -> (u64, Vec<u8>) {
        self.state().buffer(stream).read_from(from, max)
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<()> {
        self.changed.subscribe()
    }

    /// Makes the caller the only attachment: the previous one's receiver resolves, and it closes.
    pub(crate) fn take_over(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        *lock(&self.attachment) = Some(tx);
        rx
    }

    /// Writes to the process's stdin; silently nothing once stdin is closed or the process is gone.
    pub(crate) async fn write_stdin(&self, data: &[u8]) {
        let mut stdin = self.stdin.lock().await;
        if let Some(pipe) = stdin.as_mut()
            && pipe.write_all(data).await.is_err()
        {
            *stdin = None;
        }
    }

    pub(crate) async fn close_stdin(&self) {
        self.stdin.lock().await.take();
    }

    /// Signals the process group; a no-op once the process is reaped (its group id may be reused).
    pub(crate) fn signal(&self, signal: i32) -> Result<(), RemoteError> {
        if !self.running() {
            return Ok(());
        }
        match command::signal_group(self.pid, signal) {
            Ok(()) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                Err(RemoteError::new(ErrorCode::BadRequest, format!("invalid signal {signal}")))
            }
            Err(e) => Err(RemoteError::from_io(&e, &format!("signal {}", self.name))),
        }
    }

    async fn wait_exit(&self) {
        let mut changes = self.subscribe();
        while self.running() {
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.state());
        self.changed.send_replace(());
    }
}

/// Buffers the output of a kept process and records its end.
async fn supervise(kept: Arc<Kept>, mut child: Child, stdout: impl AsyncRead + Unpin, stderr: impl AsyncRead + Unpin) {
    // Kills the group if this task is dropped (the daemon going away) before the process ends.
    let mut guard = GroupGuard::new(Some(kept.pid));
    let readers =
        async { tokio::join!(collect(&kept, Stream::Stdout, stdout), collect(&kept, Stream::Stderr, stderr)) };
    tokio::pin!(readers);
    let mut drained = false;
    let status = tokio::select! {
        status = child.wait() => status,
        _ = &mut readers => {
            drained = true;
            child.wait().await
        }
    };
    // Reaped: its group id may be reused from now on.
    guard.disarm();
    let exit = status.map(command::describe).unwrap_or_default();
    kept.update(|s| s.status = Some(exit));
    if !drained {
        let _ = tokio::time::timeout(DRAIN_GRACE, &mut readers).await;
    }
    kept.update(|s| s.finished = true);
    eprintln!("sandboxd: {} (pid {}) exited: code {:?} signal {:?}", kept.name, kept.pid, exit.0, exit.1);
}

async fn collect(kept: &Kept, stream: Stream, mut pipe: impl AsyncRead + Unpin) {
    let mut chunk = vec![0; READ_CHUNK];
    while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
        kept.update(|s| s.buffer(stream).push(&chunk[..n]));
    }
}

/// Locks a std mutex; a panic while holding one cannot leave these plain-data states half-updated.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
