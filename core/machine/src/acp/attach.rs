//! A sandboxd attachment as an ACP transport: the agent's stdout chunks become lines, stderr is ignored
//! (sandboxd keeps it for diagnostics), and stdin takes our lines.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sandboxd::client::{AttachEvent, AttachReader, AttachWriter, Attachment, Error};
use sandboxd::proto::Stream;

use super::lines::{LineSplitter, MAX_LINE};
use super::rpc::{LineSink, LineSource, Transport};

/// Where a later attach should resume stdout: just past the last complete line handed to the connection, so
/// a line cut by a server restart is replayed whole. Readable while the connection owns the reader.
#[derive(Debug, Clone)]
pub struct ResumeOffset(Arc<AtomicU64>);

impl ResumeOffset {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The output half of an attachment; a trait so the line logic is testable without a daemon.
pub trait OutputEvents: Send + 'static {
    fn next_event(&mut self) -> impl Future<Output = Result<Option<AttachEvent>, Error>> + Send;
}

impl OutputEvents for AttachReader {
    fn next_event(&mut self) -> impl Future<Output = Result<Option<AttachEvent>, Error>> + Send {
        self.next()
    }
}

#[derive(Debug)]
pub struct AttachLines<E> {
    events: E,
    splitter: LineSplitter,
    resume: ResumeOffset,
}

impl<E: OutputEvents> AttachLines<E> {
    /// `stdout_start` is the offset the attachment's stdout begins at.
    pub fn new(events: E, stdout_start: u64) -> Self {
        AttachLines {
            events,
            splitter: LineSplitter::new(stdout_start, MAX_LINE),
            resume: ResumeOffset(Arc::new(AtomicU64::new(stdout_start))),
        }
    }

    pub fn resume_offset(&self) -> ResumeOffset {
        self.resume.clone()
    }
}

impl<E: OutputEvents> LineSource for AttachLines<E> {
    async fn next_line(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(line) = self.splitter.pop() {
                self.resume.0.store(self.splitter.consumed(), Ordering::Relaxed);
                return Ok(Some(line));
            }
            match self.events.next_event().await.map_err(io::Error::other)? {
                Some(AttachEvent::Output { stream: Stream::Stdout, offset, data }) => {
                    self.splitter.push_at(offset, &data)
                }
                Some(AttachEvent::Output { stream: Stream::Stderr, .. }) => {}
                Some(AttachEvent::Exit { code, signal }) => {
                    tracing::debug!(?code, ?signal, "agent process exited");
                    return Ok(None);
                }
                None => return Ok(None),
            }
        }
    }
}

#[derive(Debug)]
pub struct AttachSink(pub AttachWriter);

impl LineSink for AttachSink {
    async fn send_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.0.send_stdin(line).await.map_err(io::Error::other)
    }
}

/// The transport over an attachment, and where its stdout should resume after a reattach.
pub fn transport(attachment: Attachment) -> (Transport<AttachLines<AttachReader>, AttachSink>, ResumeOffset) {
    let lines = AttachLines::new(attachment.reader, attachment.stdout_start);
    let resume = lines.resume_offset();
    (Transport { lines, sink: AttachSink(attachment.writer) }, resume)
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    struct Script(VecDeque<AttachEvent>);

    impl OutputEvents for Script {
        async fn next_event(&mut self) -> Result<Option<AttachEvent>, Error> {
            Ok(self.0.pop_front())
        }
    }

    fn out(stream: Stream, offset: u64, data: &str) -> AttachEvent {
        AttachEvent::Output { stream, offset, data: data.as_bytes().to_vec() }
    }

    async fn line(lines: &mut AttachLines<Script>) -> Option<String> {
        lines.next_line().await.unwrap().map(|l| String::from_utf8(l).unwrap())
    }

    #[tokio::test]
    async fn stdout_chunks_become_lines_and_stderr_is_ignored() {
        let events = [
            out(Stream::Stdout, 10, "{\"a\""),
            out(Stream::Stderr, 0, "warning\n"),
            out(Stream::Stdout, 14, ":1}\n{\"b\":2}\n{\"c\""),
            AttachEvent::Exit { code: Some(0), signal: None },
        ];
        let mut lines = AttachLines::new(Script(events.into()), 10);
        let resume = lines.resume_offset();
        assert_eq!(resume.get(), 10);
        assert_eq!(line(&mut lines).await.as_deref(), Some("{\"a\":1}"));
        assert_eq!(resume.get(), 18);
        assert_eq!(line(&mut lines).await.as_deref(), Some("{\"b\":2}"));
        assert_eq!(resume.get(), 26);
        // The unfinished `{"c"` is not consumed: a reattach at 26 replays it.
        assert_eq!(line(&mut lines).await, None);
        assert_eq!(resume.get(), 26);
    }

    #[tokio::test]
    async fn a_replay_from_an_older_offset_is_not_delivered_twice() {
        let events = [out(Stream::Stdout, 0, "one\ntwo\n"), out(Stream::Stdout, 4, "two\nthree\n")];
        let mut lines = AttachLines::new(Script(events.into()), 0);
        let mut got = Vec::new();
        while let Some(l) = line(&mut lines).await {
            got.push(l);
        }
        assert_eq!(got, ["one", "two", "three"]);
        assert_eq!(lines.resume_offset().get(), 14);
    }
}
