//! Redaction of sandbox environment and vault values (spec 2.2, 2.3): every
//! occurrence of a secret value in text leaving the server reads
//! `[REDACTED]`, and reads cut at `max_bytes` never show part of one.

use base64::Engine;

pub const MARKER: &str = "[REDACTED]";

/// Replaces secret values. Every occurrence of every value is found, even
/// when occurrences overlap, and overlapping ones become one marker: no byte
/// of any value survives, whichever value contains or overlaps another.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Distinct non-empty values.
    values: Vec<Vec<u8>>,
}

/// A read shown through the redactor (`SandboxFile`, `SandboxDiff`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub content: String,
    /// `utf-8`, or `base64` when the shown bytes are not valid UTF-8.
    pub encoding: &'static str,
    /// Content is not the whole redacted text (cut by `max_bytes`, either
    /// because the source was longer or because redaction grew it).
    pub truncated: bool,
}

/// A byte range of the input holding secret bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
    /// The range may hold the start of a value that goes on past the input.
    open: bool,
}

impl Redactor {
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<Vec<u8>> = values.into_iter().filter(|v| !v.is_empty()).map(String::into_bytes).collect();
        values.sort();
        values.dedup();
        Redactor { values }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Bytes to read past `max_bytes` (the longest value's length), so a
    /// value that starts before the cut is recognised whole.
    pub fn margin(&self) -> usize {
        self.values.iter().map(Vec::len).max().unwrap_or(0)
    }

    pub fn redact_str(&self, text: &str) -> String {
        let out = self.redact_bytes(text.as_bytes());
        // Values are whole UTF-8 strings, so in UTF-8 text they match on char
        // boundaries and the result stays valid; the fallback never loses data.
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// For text that arrives in pieces: the redacted part that can be shown
    /// now, and the raw tail held back because it could begin a value the
    /// next piece completes.
    pub fn redact_stream(&self, text: &str) -> (String, String) {
        let mut spans = self.spans(text.as_bytes(), true);
        let held = match spans.last() {
            Some(last) if last.open => {
                let start = last.start;
                spans.pop();
                start
            }
            _ => text.len(),
        };
        let (out, _) = replace(&text.as_bytes()[..held], &spans);
        let shown = String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        (shown, text[held..].to_owned())
    }

    pub fn redact_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let (out, _) = replace(bytes, &self.spans(bytes, false));
        out
    }

    /// Shows the first bytes of a file or diff. `raw` is the start of the
    /// content (read `max_bytes` + [`Redactor::margin`] bytes of it) and `whole_size`
    /// its full length (anything above `raw.len()` when the read stopped
    /// early). The redacted text is cut to `max_bytes` before a marker that
    /// would not fit and, for text, on a char boundary. When `raw` is not the
    /// whole content, a tail of it that could begin a value is dropped, so a
    /// value cut by the read is never shown in part.
    pub fn render(&self, raw: &[u8], whole_size: u64, max_bytes: usize) -> Rendered {
        let partial_read = (raw.len() as u64) < whole_size;
        let mut spans = self.spans(raw, partial_read);
        let mut usable = raw;
        if let Some(last) = spans.last().copied().filter(|s| s.open) {
            usable = &raw[..last.start];
            spans.pop();
        }
        let (out, markers) = replace(usable, &spans);
        let mut cut = out.len().min(max_bytes);
        if let Some(m) = markers.iter().find(|&&m| m < cut && cut < m + MARKER.len()) {
            cut = *m;
        }
        let truncated = partial_read || cut < out.len();
        let shown = &out[..cut];
        match std::str::from_utf8(shown) {
            Ok(text) => utf8(text, truncated),
            // A char split by the cut: show the text before it.
            Err(e) if truncated && e.error_len().is_none() => {
                utf8(&String::from_utf8_lossy(&shown[..e.valid_up_to()]), truncated)
            }
            Err(_) => Rendered {
                content: base64::engine::general_purpose::STANDARD.encode(shown),
                encoding: "base64",
                truncated,
            },
        }
    }

    /// Merged ranges of `input` holding a value. With `open_tail`, a suffix
    /// of `input` that is a proper prefix of a value counts too (open).
    fn spans(&self, input: &[u8], open_tail: bool) -> Vec<Span> {
        // Values by first byte, so each input byte is tried only against
        // the values it can start.
        let mut by_first: Vec<Vec<&[u8]>> = vec![Vec::new(); 256];
        for value in &self.values {
            if let Some(&first) = value.first() {
                by_first[usize::from(first)].push(value);
            }
        }
        let mut merged: Vec<Span> = Vec::new();
        for (start, &byte) in input.iter().enumerate() {
            let rest = &input[start..];
            for value in &by_first[usize::from(byte)] {
                let span = if rest.starts_with(value) {
                    Span { start, end: start + value.len(), open: false }
                } else if open_tail && value.starts_with(rest) {
                    Span { start, end: input.len(), open: true }
                } else {
                    continue;
                };
                // Spans arrive by start, so only the last one can overlap.
                match merged.last_mut() {
                    Some(last) if span.start < last.end => {
                        last.end = last.end.max(span.end);
                        last.open |= span.open;
                    }
                    _ => merged.push(span),
                }
            }
        }
        merged
    }
}

/// `input` with each span replaced by the marker, and where the markers start.
fn replace(input: &[u8], spans: &[Span]) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::with_capacity(input.len());
    let mut markers = Vec::with_capacity(spans.len());
    let mut at = 0;
    for span in spans {
        out.extend_from_slice(&input[at..span.start]);
        markers.push(out.len());
        out.extend_from_slice(MARKER.as_bytes());
        at = span.end;
    }
    out.extend_from_slice(&input[at..]);
    (out, markers)
}

fn utf8(text: &str, truncated: bool) -> Rendered {
    Rendered { content: text.to_owned(), encoding: "utf-8", truncated }
}

#[cfg(test)]
mod stream_tests {
    use super::*;

    #[test]
    fn a_value_split_across_pieces_is_never_shown() {
        let r = Redactor::new(["s3cr3t-value".to_owned()]);
        let mut held = String::new();
        let mut shown = String::new();
        for piece in ["the key is s3c", "r3t-va", "lue, ok s", "3"] {
            held.push_str(piece);
            let (now, rest) = r.redact_stream(&held);
            shown.push_str(&now);
            held = rest;
        }
        shown.push_str(&r.redact_str(&held));
        assert_eq!(shown, "the key is [REDACTED], ok s3");
        assert_eq!(Redactor::default().redact_stream("abc"), ("abc".to_owned(), String::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(values: &[&str]) -> Redactor {
        Redactor::new(values.iter().map(|v| v.to_string()))
    }

    fn text(content: &str, truncated: bool) -> Rendered {
        Rendered { content: content.into(), encoding: "utf-8", truncated }
    }

    #[test]
    fn empty_values_are_ignored() {
        assert!(redactor(&[]).is_empty());
        assert!(redactor(&["", ""]).is_empty());
        let r = redactor(&["", "x"]);
        assert!(!r.is_empty());
        assert_eq!(r.redact_str("axb"), "a[REDACTED]b");
    }

    #[test]
    fn every_occurrence_is_replaced() {
        let r = redactor(&["hunter2", "s3cr3t"]);
        assert_eq!(r.redact_str("no secrets here"), "no secrets here");
        assert_eq!(
            r.redact_str("pw=hunter2 token=s3cr3t again hunter2"),
            "pw=[REDACTED] token=[REDACTED] again [REDACTED]"
        );
        assert_eq!(r.redact_str("hunter2hunter2"), "[REDACTED][REDACTED]");
    }

    #[test]
    fn a_value_containing_another_is_replaced_whole() {
        let r = redactor(&["abc", "xxabcxx"]);
        assert_eq!(r.redact_str("1 xxabcxx 2 abc"), "1 [REDACTED] 2 [REDACTED]");
        let r = redactor(&["xxabcxx", "abc"]);
        assert_eq!(r.redact_str("1 xxabcxx 2"), "1 [REDACTED] 2");
    }

    #[test]
    fn overlapping_values_leave_no_byte_of_either() {
        let r = redactor(&["abcd", "cdef"]);
        assert_eq!(r.redact_str("_abcdef_"), "_[REDACTED]_");
        // Overlapping occurrences of one value.
        let r = redactor(&["aba"]);
        assert_eq!(r.redact_str("ababa!"), "[REDACTED]!");
    }

    #[test]
    fn bytes_are_binary_safe() {
        let r = redactor(&["key"]);
        assert_eq!(r.redact_bytes(b"\xff\0key\x80"), b"\xff\0[REDACTED]\x80".to_vec());
        assert_eq!(r.redact_str("ключ key ключ"), "ключ [REDACTED] ключ");
    }

    #[test]
    fn margin_is_the_longest_value() {
        assert_eq!(redactor(&[]).margin(), 0);
        assert_eq!(redactor(&["abc", "abcdefg", "xy"]).margin(), 7);
        assert_eq!(redactor(&["ключ"]).margin(), 8);
    }

    #[test]
    fn render_without_secrets() {
        let r = redactor(&[]);
        assert_eq!(r.render(b"hello", 5, 100), text("hello", false));
        assert_eq!(r.render(b"hello", 5, 5), text("hello", false));
        assert_eq!(r.render(b"hello", 5, 4), text("hell", true));
        assert_eq!(r.render(b"", 0, 0), text("", false));
        assert_eq!(r.render(b"", 3, 0), text("", true));
        // The read stopped at max_bytes: the file is longer.
        assert_eq!(r.render(b"hell", 5, 4), text("hell", true));
    }

    #[test]
    fn render_secret_in_the_middle() {
        let r = redactor(&["s3cr3t"]);
        let raw = b"a=s3cr3t;";
        assert_eq!(r.render(raw, raw.len() as u64, 100), text("a=[REDACTED];", false));
    }

    #[test]
    fn render_secret_straddling_max_bytes_is_whole_or_absent() {
        let r = redactor(&["SECRET"]);
        // max_bytes 5 cuts "abc=SECRET" inside the value; with the margin read,
        // the value is recognised and the marker does not fit.
        let raw = b"abc=SECRETxyz";
        assert_eq!(r.render(&raw[..5 + r.margin()], raw.len() as u64, 5), text("abc=", true));
        // With room for the marker it is shown whole.
        assert_eq!(r.render(raw, 13, 14), text("abc=[REDACTED]", true));
        assert_eq!(r.render(raw, 13, 17), text("abc=[REDACTED]xyz", false));
    }

    #[test]
    fn render_never_shows_a_value_cut_by_the_read() {
        let r = redactor(&["SECRETVALUE"]);
        // The caller read too little: "SEC" could begin the value, so it goes.
        assert_eq!(r.render(b"abc=SEC", 100, 7), text("abc=", true));
        // A longer value shrinks to the marker, pulling tail bytes into view;
        // the tail that could begin the value is still dropped.
        let raw = b"SECRETVALUE-ok-SECRE";
        assert_eq!(r.render(raw, 1000, 20), text("[REDACTED]-ok-", true));
        // A tail that is not a prefix of any value is shown.
        assert_eq!(r.render(b"abc=SEX", 100, 7), text("abc=SEX", true));
        // The whole file was read: a trailing prefix is just text.
        assert_eq!(r.render(b"abc=SEC", 7, 7), text("abc=SEC", false));
    }

    #[test]
    fn render_open_tail_overlapping_a_whole_value_drops_both() {
        // "zz" may begin "zzzz" past the read and overlaps the whole "xyz":
        // the cut lands before "xyz", not inside it.
        let r = redactor(&["xyz", "zzzz"]);
        assert_eq!(r.render(b"ab xyzz", 100, 100), text("ab ", true));
    }

    #[test]
    fn render_growth_past_max_bytes_truncates() {
        let r = redactor(&["k"]);
        // Three bytes grow to 30; the whole file was read and fits max_bytes.
        assert_eq!(r.render(b"kkk", 3, 25), text("[REDACTED][REDACTED]", true));
        assert_eq!(r.render(b"kkk", 3, 30), text("[REDACTED][REDACTED][REDACTED]", false));
        assert_eq!(r.render(b"kkk", 3, 9), text("", true));
    }

    #[test]
    fn render_binary_is_base64() {
        let r = redactor(&["key"]);
        let raw = b"\x00\xffkey\x01";
        let shown = r.render(raw, raw.len() as u64, 100);
        assert_eq!(shown.encoding, "base64");
        assert!(!shown.truncated);
        let bytes = base64::engine::general_purpose::STANDARD.decode(&shown.content).unwrap();
        assert_eq!(bytes, b"\x00\xff[REDACTED]\x01".to_vec());
        // Cut binary content: base64 of the first max_bytes bytes.
        let shown = r.render(raw, 100, 2);
        assert_eq!(shown.encoding, "base64");
        assert_eq!(shown.content, "AP8=");
        assert!(shown.truncated);
    }

    #[test]
    fn render_multibyte_char_at_the_cut() {
        let r = redactor(&[]);
        // "é" is two bytes: a cut at 2 would split it.
        assert_eq!(r.render("aé".as_bytes(), 3, 2), text("a", true));
        assert_eq!(r.render("a€".as_bytes(), 4, 3), text("a", true));
        assert_eq!(r.render("a€".as_bytes(), 4, 4), text("a€", false));
        // The read itself split the char.
        assert_eq!(r.render(&"a€b".as_bytes()[..3], 5, 3), text("a", true));
        // A whole file ending in half a char is not UTF-8.
        let shown = r.render(&"a€".as_bytes()[..3], 3, 10);
        assert_eq!((shown.encoding, shown.truncated), ("base64", false));
        // Invalid bytes before the cut stay binary.
        assert_eq!(r.render(b"a\xffbc", 10, 3).encoding, "base64");
    }
}
