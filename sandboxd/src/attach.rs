//! An attachment to a kept process: replays and follows its output from given offsets, forwards stdin.

use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::oneshot::{self, error::TryRecvError};
use tokio::task::{JoinError, JoinHandle};

use crate::command::READ_CHUNK;
use crate::kept::Kept;
use crate::lines::{read_line, write_line};
use crate::proto::{AttachInput, Attached, ErrorCode, Exit, MAX_LINE, Output, RemoteError, Reply, Stream};

/// Serves one attach connection until the process has finished and everything was sent, the client goes away,
/// or a newer attachment takes over.
pub(crate) async fn run<R, W>(
    kept: Arc<Kept>,
    stdout_offset: u64,
    stderr_offset: u64,
    reader: R,
    writer: &mut W,
) -> Result<(), RemoteError>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    let replaced = kept.take_over();
    let (stdout_start, stderr_start) = kept.resume_offsets(stdout_offset, stderr_offset);
    let attached = Attached { pid: kept.pid, stdout_start, stderr_start };
    write_line(writer, &Reply::Attached(attached)).await.map_err(client_gone)?;
    eprintln!("sandboxd: attached to {} at {stdout_start}/{stderr_start}", kept.name);
    let mut input = tokio::spawn(forward_input(kept.clone(), reader));
    let result = send_output(&kept, [stdout_start, stderr_start], writer, replaced, &mut input).await;
    input.abort();
    result
}

/// Sends buffered output from `next` (stdout, stderr offsets) as it arrives, then the exit line. Stops early
/// when `replaced` fires or the input is malformed; those are checked between lines, never within one.
async fn send_output<W: AsyncWrite + Unpin>(
    kept: &Kept,
    mut next: [u64; 2],
    writer: &mut W,
    mut replaced: oneshot::Receiver<()>,
    input: &mut JoinHandle<Result<(), RemoteError>>,
) -> Result<(), RemoteError> {
    let mut changes = kept.subscribe();
    let mut input_open = true;
    loop {
        changes.borrow_and_update();
        if !matches!(replaced.try_recv(), Err(TryRecvError::Empty)) {
            return Ok(());
        }
        if input_open && input.is_finished() {
            input_open = false;
            input_failed((&mut *input).await)?;
        }
        // Read before the buffers: once finished is seen, no byte can be added after what is read next.
        let finished = kept.finished();
        let mut sent = false;
        for (i, stream) in [Stream::Stdout, Stream::Stderr].into_iter().enumerate() {
            let (offset, data) = kept.pending(stream, next[i], READ_CHUNK);
            if !data.is_empty() {
                next[i] = offset + data.len() as u64;
                let line = Reply::Output(Output { stream, offset: Some(offset), data });
                write_line(writer, &line).await.map_err(client_gone)?;
                sent = true;
            }
        }
        if sent {
            continue;
        }
        if let Some((code, signal)) = finished {
            let exit = Reply::Exit(Exit { code, signal, timed_out: None, truncated: None });
            return write_line(writer, &exit).await.map_err(client_gone);
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return Ok(()) },
            _ = &mut replaced => return Ok(()),
            done = &mut *input, if input_open => {
                input_open = false;
                input_failed(done)?;
            }
        }
    }
}

/// Input ends quietly at end of stream; only a malformed line ends the attachment from the client's side.
fn input_failed(done: Result<Result<(), RemoteError>, JoinError>) -> Result<(), RemoteError> {
    match done {
        Ok(Err(bad)) => Err(bad),
        Ok(Ok(())) | Err(_) => Ok(()),
    }
}

fn client_gone(e: std::io::Error) -> RemoteError {
    RemoteError::from_io(&e, "client connection")
}

/// Applies the client's input lines until it stops sending.
async fn forward_input<R: AsyncBufRead + Unpin>(kept: Arc<Kept>, mut reader: R) -> Result<(), RemoteError> {
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut reader, &mut line, MAX_LINE).await {
            Ok(true) => {}
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(RemoteError::new(ErrorCode::BadRequest, e.to_string()));
            }
            Ok(false) | Err(_) => return Ok(()),
        }
        match serde_json::from_slice(&line) {
            Ok(AttachInput::Stdin { data }) => kept.write_stdin(&data).await,
            Ok(AttachInput::CloseStdin) => kept.close_stdin().await,
            Err(e) => return Err(RemoteError::new(ErrorCode::BadRequest, format!("bad input line: {e}"))),
        }
    }
}
