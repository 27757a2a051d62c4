//! An attachment to a kept process: replays and follows its output from given offsets, forwards stdin.

use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncWrite};

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
    let result = tokio::select! {
        sent = send_output(&kept, [stdout_start, stderr_start], writer) => sent.map_err(client_gone),
        // Input ends quietly at end of stream; only a malformed line ends the attachment from this side.
        Ok(Err(bad)) = &mut input => Err(bad),
        _ = replaced => Ok(()),
    };
    input.abort();
    result
}

fn client_gone(e: std::io::Error) -> RemoteError {
    RemoteError::from_io(&e, "client connection")
}

/// Sends buffered output from `next` (stdout, stderr offsets) as it arrives, then the exit line.
async fn send_output<W: AsyncWrite + Unpin>(kept: &Kept, mut next: [u64; 2], writer: &mut W) -> std::io::Result<()> {
    let mut changes = kept.subscribe();
    loop {
        changes.borrow_and_update();
        // Read before the buffers: once finished is seen, no byte can be added after what is read next.
        let finished = kept.finished();
        let mut sent = false;
        for (i, stream) in [Stream::Stdout, Stream::Stderr].into_iter().enumerate() {
            let (offset, data) = kept.pending(stream, next[i], READ_CHUNK);
            if !data.is_empty() {
                next[i] = offset + data.len() as u64;
                write_line(writer, &Reply::Output(Output { stream, offset: Some(offset), data })).await?;
                sent = true;
            }
        }
        if sent {
            continue;
        }
        if let Some((code, signal)) = finished {
            return write_line(writer, &Reply::Exit(Exit { code, signal, timed_out: None, truncated: None })).await;
        }
        if changes.changed().await.is_err() {
            return Ok(());
        }
    }
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
