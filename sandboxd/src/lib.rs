//! sandboxd: the supervisor inside every sandbox. The acs server talks to it over a unix socket (JSON lines, see
//! [`proto`]) to run commands, keep agent processes whose output survives a server restart, and read files.

mod attach;
mod buffer;
mod cli;
pub mod client;
mod command;
mod exec;
mod files;
mod kept;
mod lines;
pub mod proto;
mod server;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

pub use server::{serve, serve_inherited};

/// Entry point of the `sandboxd` binary.
pub fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match cli::parse(&args) {
        Ok(cli::Mode::Serve { socket }) => run_daemon(Listen::Path(&socket)),
        Ok(cli::Mode::Inherited { fd, watchdog_seconds, ready_fd }) => inherited(Ok(fd), ready_fd, watchdog_seconds),
        Ok(cli::Mode::Bind { socket, watchdog_seconds }) => inherited(bound_socket(&socket), None, watchdog_seconds),
        Ok(cli::Mode::ReadFile { path, max_bytes }) => read_file_once(&path, max_bytes),
        Err(usage) => {
            eprintln!("{usage}");
            2
        }
    };
    std::process::exit(code);
}

/// Serves a bound (not yet listening) socket as the machine's init and daemon.
fn inherited(fd: std::io::Result<i32>, ready: Option<i32>, watchdog_seconds: u64) -> i32 {
    let watchdog = (watchdog_seconds > 0).then(|| Duration::from_secs(watchdog_seconds));
    let prepared = fd.and_then(|fd| {
        let kept: Vec<i32> = [Some(fd), ready].into_iter().flatten().collect();
        harden(&kept)?;
        become_init(&kept)?;
        Ok(fd)
    });
    match prepared {
        Ok(fd) => run_daemon(Listen::Fd(fd, ready, watchdog)),
        Err(e) => {
            eprintln!("sandboxd: {e}");
            1
        }
    }
}

/// A unix socket bound at `path` (mode 0600) but not listening: the daemon
/// calls listen(2) after the fork, so the kernel reports it, not the init,
/// as the socket's peer (the host checks that).
fn bound_socket(path: &Path) -> std::io::Result<i32> {
    use std::os::unix::ffi::OsStrExt;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: plain data; all-zero is a valid sockaddr_un.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() {
        return Err(std::io::Error::other(format!("socket path too long: {}", path.display())));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    let len = (std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1) as libc::socklen_t;
    // SAFETY: socket(2), umask(2) and bind(2) on a valid sockaddr_un of `len` bytes; the
    // descriptor is closed on failure.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Only the host's root (and this uid) may connect.
        let old = libc::umask(0o177);
        let bound = libc::bind(fd, (&raw const addr).cast(), len);
        libc::umask(old);
        if bound != 0 {
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

enum Listen<'a> {
    Path(&'a Path),
    /// The socket, the readiness pipe, the watchdog.
    Fd(i32, Option<i32>, Option<Duration>),
}

/// Before anything else in a machine: the agent runs as the same uid as the
/// supervisor, so the supervisor makes itself non-dumpable (no ptrace, no
/// `/proc/<pid>/fd`, no `pidfd_getfd` from its own children) and closes
/// every descriptor it inherited but `keep` (its socket and readiness
/// pipe), so nothing of the host that bwrap was handed can reach an agent.
fn harden(keep: &[i32]) -> std::io::Result<()> {
    let mut keep = keep
        .iter()
        .map(|fd| u32::try_from(*fd).map_err(|_| std::io::Error::other("negative descriptor")))
        .collect::<std::io::Result<Vec<u32>>>()?;
    keep.sort_unstable();
    // SAFETY: plain prctl and close_range calls on this process's own state.
    unsafe {
        if libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut from = 3;
        for fd in keep {
            if fd > from && libc::close_range(from, fd - 1, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            from = from.max(fd + 1);
        }
        if libc::close_range(from, u32::MAX, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// As the first process of the machine's PID namespace (bwrap `--as-pid-1`),
/// splits in two before any thread exists: this process stays init, reaping
/// every orphan the agent leaves (and nothing else), and exits with the
/// daemon's status; the child returns and runs the daemon. Both are
/// non-dumpable, so the agent, though the same uid, can touch neither (a
/// bwrap reaper would be an ordinary process holding the machine's log).
/// The init closes `daemons` (the descriptors only the daemon serves).
fn become_init(daemons: &[i32]) -> std::io::Result<()> {
    if std::process::id() != 1 {
        return Ok(());
    }
    // SAFETY: no thread has been started yet, so fork is safe; the parent only calls close and waitpid.
    let daemon = unsafe { libc::fork() };
    if daemon < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if daemon == 0 {
        return Ok(());
    }
    // SAFETY: close and waitpid on this process's own descriptor and children.
    unsafe {
        for fd in daemons {
            libc::close(*fd);
        }
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, 0);
            if pid == daemon {
                let code =
                    if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
                std::process::exit(code);
            }
            if pid < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
                std::process::exit(1);
            }
        }
    }
}

/// A current-thread runtime: sandboxd idles almost always, and memory per sandbox matters more than throughput.
fn run_daemon(listen: Listen<'_>) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sandboxd: cannot start runtime: {e}");
            return 1;
        }
    };
    let result = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let stop = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        };
        match listen {
            Listen::Path(socket) => serve(socket, stop).await,
            Listen::Fd(fd, ready, watchdog) => serve_inherited(fd, ready, watchdog, stop).await,
        }
    });
    // Dropping the runtime drops the exec tasks, whose guards kill their process groups.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sandboxd: {e}");
            1
        }
    }
}

/// `sandboxd read-file`: one read without a daemon, answered as the daemon would on stdout.
fn read_file_once(path: &str, max_bytes: u64) -> i32 {
    let (reply, code) = match files::read_file(path, max_bytes) {
        Ok(file) => (proto::Reply::File(file), 0),
        Err(error) => (proto::Reply::Error(error), 1),
    };
    let mut line = serde_json::to_vec(&reply).unwrap_or_default();
    line.push(b'\n');
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(&line).and_then(|()| stdout.flush()).is_err() {
        return 1;
    }
    code
}
