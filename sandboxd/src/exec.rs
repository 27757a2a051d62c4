//! One-shot commands: output streams back as it arrives, then one exit line.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::Child;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::command::{self, DRAIN_GRACE, GroupGuard, Launch, READ_CHUNK};
use crate::lines::write_line;
use crate::proto::{DEFAULT_MAX_OUTPUT, ExecRequest, Exit, Output, RemoteError, Reply, Stream};

/// Runs `req`, answering on `writer`. `client` is the rest of the connection: its end means the client left,
/// and then the child's process group is killed.
pub(crate) async fn run<R, W>(req: ExecRequest, mut client: R, writer: &mut W) -> Result<(), RemoteError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let launch = Launch { argv: &req.argv, cwd: req.cwd.as_deref(), env: &req.env, stdin: req.stdin.is_some() };
    let mut child = command::start(&launch)?;
    let mut guard = GroupGuard::new(child.id());
    let program = &req.argv[0];
    if let (Some(data), Some(mut pipe)) = (req.stdin, child.stdin.take()) {
        // Its own task: a child that does not read stdin must not stall its output.
        tokio::spawn(async move {
            let _ = pipe.write_all(&data).await;
        });
    }
    let deadline = req.timeout_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
    let truncated = AtomicBool::new(false);
    let max = req.max_output.unwrap_or(DEFAULT_MAX_OUTPUT);
    let mut timed_out = false;
    let status = {
        // Both streams write lines through it; the exit line below is written after they are done.
        let shared = Mutex::new(&mut *writer);
        let forwarding = run_to_exit(&mut child, &shared, max, &truncated);
        tokio::pin!(forwarding);
        loop {
            tokio::select! {
                status = &mut forwarding => break status,
                // Killing rather than abandoning the forwarding: a line is never cut, and output written
                // before the kill still reaches the client.
                () = sleep_until(deadline), if !timed_out => {
                    timed_out = true;
                    guard.kill();
                }
                () = read_until_closed(&mut client) => {
                    eprintln!("sandboxd: exec {program}: client left, killing its process group");
                    return Ok(());
                }
            }
        }
    };
    let status = status.map_err(|e| RemoteError::from_io(&e, "exec"))?;
    guard.disarm();
    let (code, signal) = command::describe(status);
    let exit = Exit { code, signal, timed_out: Some(timed_out), truncated: Some(truncated.load(Ordering::Relaxed)) };
    write_line(writer, &Reply::Exit(exit)).await.map_err(|e| RemoteError::from_io(&e, "client connection"))
}

/// Forwards both output streams until the child exits and its pipes are drained (or the drain grace ran out).
async fn run_to_exit<W: AsyncWrite + Unpin>(
    child: &mut Child,
    writer: &Mutex<&mut W>,
    max: u64,
    truncated: &AtomicBool,
) -> std::io::Result<std::process::ExitStatus> {
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(std::io::Error::other("child output is not piped"));
    };
    let readers = async {
        tokio::try_join!(
            forward(stdout, Stream::Stdout, writer, max, truncated),
            forward(stderr, Stream::Stderr, writer, max, truncated)
        )
    };
    tokio::pin!(readers);
    tokio::select! {
        status = child.wait() => {
            let status = status?;
            if let Ok(forwarded) = tokio::time::timeout(DRAIN_GRACE, &mut readers).await {
                forwarded?;
            }
            Ok(status)
        }
        forwarded = &mut readers => {
            forwarded?;
            child.wait().await
        }
    }
}

/// Sends one stream's output, at most `max` bytes of it; the rest is read and dropped.
async fn forward<W: AsyncWrite + Unpin>(
    mut pipe: impl AsyncRead + Unpin,
    stream: Stream,
    writer: &Mutex<&mut W>,
    max: u64,
    truncated: &AtomicBool,
) -> std::io::Result<()> {
    let mut chunk = vec![0; READ_CHUNK];
    let mut sent = 0u64;
    loop {
        let n = pipe.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        let allowed = usize::try_from(max.saturating_sub(sent)).unwrap_or(usize::MAX).min(n);
        if allowed < n {
            truncated.store(true, Ordering::Relaxed);
        }
        if allowed > 0 {
            sent += allowed as u64;
            let line = Reply::Output(Output { stream, offset: None, data: chunk[..allowed].to_vec() });
            write_line(&mut **writer.lock().await, &line).await?;
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Resolves when the client closes its side (or the connection fails); stray bytes are ignored.
async fn read_until_closed<R: AsyncRead + Unpin>(client: &mut R) {
    let mut scratch = [0u8; 512];
    while let Ok(1..) = client.read(&mut scratch).await {}
}
