//! Output of a kept process, addressed by absolute byte offsets so a client can resume where it left off.

use std::collections::VecDeque;

/// Bytes retained per stream of a kept process.
pub(crate) const RETAINED_BYTES: usize = 8 << 20;

/// The last `cap` bytes of a stream. Offsets count every byte ever pushed; dropped bytes move `start` up.
#[derive(Debug)]
pub(crate) struct OutputBuffer {
    start: u64,
    data: VecDeque<u8>,
    cap: usize,
}

impl OutputBuffer {
    pub(crate) fn new(cap: usize) -> Self {
        OutputBuffer { start: 0, data: VecDeque::new(), cap }
    }

    /// Offset one past the newest byte (the total ever pushed).
    pub(crate) fn end(&self) -> u64 {
        self.start + self.data.len() as u64
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        // Trim before appending so the deque never grows past `cap` (and never doubles its allocation).
        let kept = &bytes[bytes.len().saturating_sub(self.cap)..];
        let skipped = (bytes.len() - kept.len()) as u64;
        let overflow = (self.data.len() + kept.len()).saturating_sub(self.cap);
        self.data.drain(..overflow);
        self.start += overflow as u64 + skipped;
        self.data.extend(kept);
    }

    /// Where a client asking for `asked` actually resumes: no earlier than the oldest retained byte and no
    /// later than the end (a client cannot have seen bytes that were never produced).
    pub(crate) fn resume_offset(&self, asked: u64) -> u64 {
        asked.clamp(self.start, self.end())
    }

    /// Up to `max` bytes from `from` (raised to the oldest retained byte), with the offset of the first one.
    /// Empty when nothing is pending at or after `from`.
    pub(crate) fn read_from(&self, from: u64, max: usize) -> (u64, Vec<u8>) {
        let from = self.resume_offset(from);
        let skip = (from - self.start) as usize;
        (from, self.data.range(skip..).take(max).copied().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_last_cap_bytes() {
        let mut buf = OutputBuffer::new(4);
        buf.push(b"ab");
        buf.push(b"cde");
        assert_eq!((buf.start, buf.end()), (1, 5));
        assert_eq!(buf.read_from(0, 100), (1, b"bcde".to_vec()));
        // A single push larger than the cap keeps its tail.
        buf.push(b"0123456");
        assert_eq!((buf.start, buf.end()), (8, 12));
        assert_eq!(buf.read_from(0, 100), (8, b"3456".to_vec()));
        assert!(buf.data.capacity() < 16);
    }

    #[test]
    fn resume_offset_is_clamped_to_retained_range() {
        let mut buf = OutputBuffer::new(4);
        assert_eq!(buf.resume_offset(7), 0);
        buf.push(b"abcdef");
        assert_eq!(buf.resume_offset(0), 2);
        assert_eq!(buf.resume_offset(3), 3);
        assert_eq!(buf.resume_offset(6), 6);
        assert_eq!(buf.resume_offset(99), 6);
    }

    #[test]
    fn reads_resume_exactly_after_the_last_byte_seen() {
        let mut buf = OutputBuffer::new(100);
        buf.push(b"hello ");
        let (at, first) = buf.read_from(0, 3);
        assert_eq!((at, first.as_slice()), (0, &b"hel"[..]));
        buf.push(b"world");
        let (at, rest) = buf.read_from(at + first.len() as u64, 100);
        assert_eq!((at, rest.as_slice()), (3, &b"lo world"[..]));
        assert_eq!(buf.read_from(buf.end(), 100), (11, Vec::new()));
    }
}
