//! The listener: one request per connection, dispatched to its handler.

use std::future::Future;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::Arc;
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
}

/// Listens on `socket` until `shutdown` resolves or a client asks for it, then stops kept processes and returns.
/// Exec children still running are killed when their tasks are dropped with the runtime.
pub async fn serve(socket: &Path, shutdown: impl Future<Output = ()>) -> io::Result<()> {
    let listener = bind(socket)?;
    eprintln!("sandboxd: listening on {}", socket.display());
    let daemon = Arc::new(Daemon { started: Instant::now(), kept: Registry::default(), stop: Notify::new() });
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(handle(daemon.clone(), stream));
                }
                Err(e) => {
                    // Typically EMFILE; pausing avoids a busy loop while descriptors are short.
                    eprintln!("sandboxd: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            () = &mut shutdown => break,
            () = daemon.stop.notified() => break,
        }
    }
    drop(listener);
    let _ = std::fs::remove_file(socket);
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
