//! Starting children in their own process group, signalling that group, and describing how they ended.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use tokio::process::{Child, Command};

use crate::proto::{DEFAULT_CWD, ErrorCode, RemoteError};

/// What to run; stdio is piped except stdin when `stdin` is false (then `/dev/null`).
pub(crate) struct Launch<'a> {
    pub argv: &'a [String],
    pub cwd: Option<&'a str>,
    pub env: &'a BTreeMap<String, String>,
    pub stdin: bool,
}

/// Starts the child as leader of a new process group so the whole tree can be signalled at once.
pub(crate) fn start(launch: &Launch<'_>) -> Result<Child, RemoteError> {
    let Some((program, args)) = launch.argv.split_first() else {
        return Err(RemoteError::new(ErrorCode::BadRequest, "argv is empty"));
    };
    let cwd = launch.cwd.unwrap_or(DEFAULT_CWD);
    // Checked up front: the OS reports a missing cwd as a missing program, which misleads.
    if !Path::new(cwd).is_dir() {
        return Err(RemoteError::new(ErrorCode::SpawnFailed, format!("working directory {cwd} does not exist")));
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .envs(launch.env)
        .process_group(0)
        .stdin(if launch.stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().map_err(|e| RemoteError::new(ErrorCode::SpawnFailed, format!("cannot start {program}: {e}")))
}

/// Sends `signal` to the process group led by `pid`.
pub(crate) fn signal_group(pid: u32, signal: i32) -> std::io::Result<()> {
    let pgid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    if pgid <= 1 {
        // kill(0) or kill(-1) would hit sandboxd's own group or every process.
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(-pgid, signal) } == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// SIGKILLs a child's process group when dropped, unless disarmed: covers every early return and a task that
/// is dropped because its client went away or the daemon is shutting down.
pub(crate) struct GroupGuard {
    pid: Option<u32>,
}

impl GroupGuard {
    pub(crate) fn new(pid: Option<u32>) -> Self {
        GroupGuard { pid }
    }

    pub(crate) fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            let _ = signal_group(pid, libc::SIGKILL);
        }
    }

    pub(crate) fn disarm(&mut self) {
        self.pid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `(code, signal)`: exactly one is set for a finished process.
pub(crate) fn describe(status: ExitStatus) -> (Option<i32>, Option<i32>) {
    (status.code(), status.signal())
}

/// Size of one read from a child's pipe (and so the largest output line's payload).
pub(crate) const READ_CHUNK: usize = 64 << 10;

/// How long to keep reading a child's pipes after it exited: bytes it wrote just before exiting are still in
/// the pipe, but a background grandchild may hold the pipe open for good.
pub(crate) const DRAIN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);
