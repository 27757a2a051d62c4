//! The listener: one request per connection, dispatched to its handler.

use std::future::Future;
use std::io;
use std::os::fd::FromRawFd;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::BufReader;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Notify;

use crate::kept::Registry;
use crate::lines::{read_line, write_line};
use crate::proto::{ErrorCode, MAX_LINE, Pong, RemoteError, Reply, Request};
use crate::{attach, exec, files};

/// Grace between SIGTERM and SIGKILL for kept processes when the daemon stops.
const STOP_GRACE: Duration = Duration::from_secs(2);

struct Daemon {
    started: Instant,
    kept: Registry,
    /// Signalled by a `shutdown` request.
    stop: Notify,
    activity: Activity,
}

/// When a client last came or went, and how many are connected: what the watchdog reads.
struct Activity {
    open: AtomicUsize,
    last: Mutex<Instant>,
}

impl Activity {
    fn touch(&self) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }
    fn idle_for(&self) -> Option<Duration> {
        (self.open.load(Ordering::Acquire) == 0).then(|| self.last.lock().unwrap_or_else(|p| p.into_inner()).elapsed())
    }
}

/// Counts one connection for as long as it lives.
struct Connected(Arc<Daemon>);

impl Connected {
    fn new(daemon: Arc<Daemon>) -> Connected {
        daemon.activity.open.fetch_add(1, Ordering::AcqRel);
        daemon.activity.touch();
        Connected(daemon)
    }
}

impl Drop for Connected {
    fn drop(&mut self) {
        self.0.activity.touch();
        self.0.activity.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Listens on `socket` until `shutdown` resolves or a client asks for it, then stops kept processes and returns.
/// Exec children still running are killed when their tasks are dropped with the runtime.
pub async fn serve(socket: &Path, shutdown: impl Future<Output = ()>) -> io::Result<()> {
    let listener = bind(socket)?;
    eprintln!("sandboxd: listening on {}", socket.display());
    let result = run(listener, None, shutdown).await;
    let _ = std::fs::remove_file(socket);
    result
}

/// Serves on a unix socket the host bound and handed over as `fd`, not yet
/// listening: the listen(2) here is what the host's peer check sees. The
/// socket's path is outside the machine, where nothing in it can replace it.
/// A `ready` pipe gets one byte once the socket listens, and is closed: the
/// host waits on it instead of trying to connect again and again.
/// With a `watchdog`, stops (kept processes too) once no client has been
/// connected for that long: a machine whose server is gone for good parks
/// itself instead of running forever.
pub async fn serve_inherited(
    fd: i32,
    ready: Option<i32>,
    watchdog: Option<Duration>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    // SAFETY: `fd` is the socket the host passed in, owned by nothing else in this process.
    let std_listener = unsafe {
        if libc::listen(fd, 1024) != 0 {
            return Err(io::Error::last_os_error());
        }
        std::os::unix::net::UnixListener::from_raw_fd(fd)
    };
    set_cloexec(fd)?;
    std_listener.set_nonblocking(true)?;
    eprintln!("sandboxd: listening on the socket passed in");
    if let Some(ready) = ready {
        // SAFETY: the pipe's writing end, passed in for this and owned by nothing else here.
        let mut pipe = unsafe { std::fs::File::from_raw_fd(ready) };
        // A host gone meanwhile (a broken pipe) finds the machine on reattach: serve anyway.
        if let Err(e) = std::io::Write::write_all(&mut pipe, b"r") {
            eprintln!("sandboxd: could not say it is ready: {e}");
        }
    }
    run(UnixListener::from_std(std_listener)?, watchdog, shutdown).await
}

fn set_cloexec(fd: i32) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor this process owns.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

async fn run(listener: UnixListener, watchdog: Option<Duration>, shutdown: impl Future<Output = ()>) -> io::Result<()> {
    let daemon = Arc::new(Daemon {
        started: Instant::now(),
        kept: Registry::default(),
        stop: Notify::new(),
        activity: Activity { open: AtomicUsize::new(0), last: Mutex::new(Instant::now()) },
    });
    let tick = watchdog
        .map_or(Duration::from_secs(3600), |w| (w / 4).clamp(Duration::from_millis(100), Duration::from_secs(60)));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let connected = Connected::new(daemon.clone());
                    tokio::spawn(async move {
                        handle(connected.0.clone(), stream).await;
                        drop(connected);
                    });
                }
                Err(e) => {
                    // Typically EMFILE; pausing avoids a busy loop while descriptors are short.
                    eprintln!("sandboxd: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            () = &mut shutdown => break,
            () = daemon.stop.notified() => break,
            () = tokio::time::sleep(tick), if watchdog.is_some() => {
                if let (Some(limit), Some(idle)) = (watchdog, daemon.activity.idle_for())
                    && idle >= limit
                {
                    eprintln!("sandboxd: no server has spoken to this machine for {} s: parking it", idle.as_secs());
                    break;
                }
            }
        }
    }
    drop(listener);
    eprintln!("sandboxd: stopping");
    daemon.kept.terminate_all(STOP_GRACE).await;
    Ok(())
}

/// Binds `socket`, replacing a stale socket file but never a live daemon's socket or a file of another kind.
fn bind(socket: &Path) -> io::Result<UnixListener> {
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if meta.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(socket).is_ok() {
                return Err(io::Error::new(io::ErrorKind::AddrInUse, "another daemon listens on this socket"));
            }
            std::fs::remove_file(socket)?;
        }
        Ok(_) => return Err(io::Error::new(io::ErrorKind::AlreadyExists, "socket path exists and is not a socket")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    UnixListener::bind(socket)
}

async fn handle(daemon: Arc<Daemon>, stream: UnixStream) {
    let (read, mut writer) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = Vec::new();
    let request = match read_line(&mut reader, &mut line, MAX_LINE).await {
        Ok(true) => serde_json::from_slice::<Request>(&line).map_err(|e| e.to_string()),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(e.to_string()),
        // Connected and left without a request (a liveness probe), or the connection failed.
        Ok(false) | Err(_) => return,
    };
    drop(line);
    let result = match request {
        Ok(request) => dispatch(&daemon, request, reader, &mut writer).await,
        Err(message) => {
            // The parser's message may quote request values, so the log gets none of it.
            eprintln!("sandboxd: rejected a malformed request");
            Err(RemoteError::new(ErrorCode::BadRequest, message))
        }
    };
    if let Err(error) = result {
        let _ = write_line(&mut writer, &Reply::Error(error)).await;
    }
}

async fn dispatch(
    daemon: &Daemon,
    request: Request,
    reader: BufReader<OwnedReadHalf>,
    writer: &mut OwnedWriteHalf,
) -> Result<(), RemoteError> {
    let reply = match request {
        Request::Ping => Reply::Pong(Pong {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            pid: std::process::id(),
            uptime_ms: u64::try_from(daemon.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }),
        Request::Exec(req) => return exec::run(req, reader, writer).await,
        Request::Spawn(req) => {
            let kept = daemon.kept.spawn(&req)?;
            Reply::Spawned { name: kept.name.clone(), pid: kept.pid }
        }
        Request::Attach { name, stdout_offset, stderr_offset } => {
            let kept = daemon.kept.get(&name)?;
            return attach::run(kept, stdout_offset, stderr_offset, reader, writer).await;
        }
        Request::List => Reply::Processes { processes: daemon.kept.list() },
        Request::Kill { name, signal } => {
            daemon.kept.get(&name)?.signal(signal)?;
            Reply::Ok
        }
        Request::Rename { from, to } => {
            daemon.kept.rename(&from, &to)?;
            Reply::Ok
        }
        Request::ReadFile { path, max_bytes } => {
            // Off the runtime thread: a slow filesystem must not stall every other connection.
            let read = tokio::task::spawn_blocking(move || files::read_file(&path, max_bytes)).await;
            Reply::File(read.map_err(|e| RemoteError::new(ErrorCode::Io, e.to_string()))??)
        }
        Request::Shutdown => {
            let answered = write_line(writer, &Reply::Ok).await;
            daemon.stop.notify_one();
            return answered.map_err(|e| RemoteError::from_io(&e, "client connection"));
        }
    };
    write_line(writer, &reply).await.map_err(|e| RemoteError::from_io(&e, "client connection"))
}
