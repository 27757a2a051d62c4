//! Splitting a byte stream that arrives in arbitrary chunks into '\n'-terminated lines, tracking stream offsets
//! so a reader that reattaches can resume right after the last line it handed out.

use std::collections::VecDeque;

/// Longer lines are dropped (and logged) instead of growing memory without bound.
pub const MAX_LINE: usize = 16 << 20;

#[derive(Debug)]
pub struct LineSplitter {
    max_line: usize,
    /// The unfinished line.
    partial: Vec<u8>,
    /// Stream offset just past the last byte pushed.
    end: u64,
    /// Skipping to the next '\n': the line's start was lost (a gap) or it grew too long.
    discarding: bool,
    /// Complete lines (without '\n') with the offset just past their '\n'.
    ready: VecDeque<(Vec<u8>, u64)>,
    /// Offset just past the last line popped.
    consumed: u64,
}

impl LineSplitter {
    /// A splitter for a stream whose next byte is at `start`.
    pub fn new(start: u64, max_line: usize) -> Self {
        LineSplitter {
            max_line,
            partial: Vec::new(),
            end: start,
            discarding: false,
            ready: VecDeque::new(),
            consumed: start,
        }
    }

    /// Adds the bytes that continue the stream.
    pub fn push(&mut self, data: &[u8]) {
        self.push_at(self.end, data);
    }

    /// Adds `data` found at stream `offset`: bytes already seen are skipped (a replay after reattach), and a
    /// gap (output the supervisor no longer had) drops the line it cut, since half a message is useless.
    pub fn push_at(&mut self, offset: u64, data: &[u8]) {
        let data = if offset < self.end {
            let seen = usize::try_from(self.end - offset).unwrap_or(usize::MAX);
            data.get(seen..).unwrap_or_default()
        } else {
            if offset > self.end {
                tracing::warn!(lost = offset - self.end, "agent output has a gap; dropping the line it cut");
                self.partial.clear();
                self.discarding = true;
                self.end = offset;
            }
            data
        };
        for piece in data.split_inclusive(|&b| b == b'\n') {
            self.end += piece.len() as u64;
            let (body, complete) = match piece.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (piece, false),
            };
            if !self.discarding {
                self.partial.extend_from_slice(body);
                if self.partial.len() > self.max_line {
                    tracing::warn!(max = self.max_line, "agent output line too long; dropping it");
                    self.partial = Vec::new();
                    self.discarding = true;
                }
            }
            if complete {
                if !self.discarding {
                    self.ready.push_back((std::mem::take(&mut self.partial), self.end));
                }
                self.discarding = false;
            }
        }
    }

    /// The next complete line, without its '\n'.
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        let (line, end) = self.ready.pop_front()?;
        self.consumed = end;
        Some(line)
    }

    /// Offset just past the last line popped: where a new reader should resume.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(splitter: &mut LineSplitter) -> Vec<String> {
        std::iter::from_fn(|| splitter.pop()).map(|l| String::from_utf8(l).unwrap()).collect()
    }

    #[test]
    fn a_line_split_across_chunks_is_joined() {
        let mut s = LineSplitter::new(0, MAX_LINE);
        s.push(b"{\"a\":");
        assert_eq!(drain(&mut s), Vec::<String>::new());
        assert_eq!(s.consumed(), 0);
        s.push(b"1}\n{\"b\"");
        assert_eq!(drain(&mut s), ["{\"a\":1}"]);
        assert_eq!(s.consumed(), 8);
    }

    #[test]
    fn several_lines_in_one_chunk() {
        let mut s = LineSplitter::new(100, MAX_LINE);
        s.push(b"one\ntwo\n\nthree\npart");
        assert_eq!(s.pop().unwrap(), b"one");
        assert_eq!(s.consumed(), 104);
        assert_eq!(drain(&mut s), ["two", "", "three"]);
        assert_eq!(s.consumed(), 115);
    }

    #[test]
    fn replayed_bytes_are_skipped() {
        let mut s = LineSplitter::new(0, MAX_LINE);
        s.push_at(0, b"one\ntw");
        s.push_at(4, b"two\nthree\n");
        assert_eq!(drain(&mut s), ["one", "two", "three"]);
        s.push_at(0, b"one\n");
        assert_eq!(drain(&mut s), Vec::<String>::new());
        assert_eq!(s.consumed(), 14);
    }

    #[test]
    fn a_gap_drops_the_cut_line_only() {
        let mut s = LineSplitter::new(0, MAX_LINE);
        s.push_at(0, b"one\nthe st");
        s.push_at(20, b"rest of it\nnext\n");
        assert_eq!(drain(&mut s), ["one", "next"]);
        assert_eq!(s.consumed(), 36);
    }

    #[test]
    fn overlong_lines_are_dropped() {
        let mut s = LineSplitter::new(0, 4);
        s.push(b"ok\ntoo");
        s.push(b" long\nfine\n");
        assert_eq!(drain(&mut s), ["ok", "fine"]);
    }

    #[test]
    fn resuming_from_consumed_replays_the_partial_line() {
        let mut first = LineSplitter::new(0, MAX_LINE);
        first.push(b"one\ntw");
        assert_eq!(drain(&mut first), ["one"]);
        let mut second = LineSplitter::new(first.consumed(), MAX_LINE);
        second.push_at(first.consumed(), b"two\n");
        assert_eq!(drain(&mut second), ["two"]);
    }
}
