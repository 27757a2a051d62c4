//! Redaction of sandbox environment and vault values (spec 2.2, 2.3): every
//! occurrence of a secret value in text leaving the server reads
//! `[REDACTED]`, and reads cut at `max_bytes` never show part of one.
//!
//! A value is looked for in the forms an agent prints it by accident, not
//! only as stored: JSON-escaped as common encoders write it inside a string
//! (`"`, `\`, control characters, `/`, non-ASCII as `\uXXXX`, HTML-safe
//! `<>&`), and, for a value of several lines (a PEM key), each line of
//! [`LINE_MIN`] characters or more on its own. All forms are found in one
//! pass (Aho-Corasick), so the cost per text is linear in its length
//! whatever the number of secrets.

use aho_corasick::AhoCorasick;
use base64::Engine;
use serde_json::Value;

pub const MARKER: &str = "[REDACTED]";

/// A line of a multi-line value is a form of its own from this many
/// characters (after trimming): shorter lines are too common to hide.
pub const LINE_MIN: usize = 8;

/// Replaces secret values. Every occurrence of every form of every value is
/// found, even when occurrences overlap, and overlapping ones become one
/// marker: no byte of any value survives, whichever value contains or
/// overlaps another.
#[derive(Debug, Clone)]
pub struct Redactor {
    /// Distinct non-empty forms, sorted (a binary search finds which begin with a text).
    patterns: std::sync::Arc<[Box<[u8]>]>,
    /// Finds every occurrence of every pattern; `None` without patterns.
    matcher: Option<AhoCorasick>,
    /// Whether a pattern begins with the byte (bit per byte value).
    starts: [u64; 4],
    /// The longest pattern's length.
    longest: usize,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(Vec::new())
    }
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

/// How one JSON encoder escapes inside a string, beyond `"`, `\` and control characters.
#[derive(Debug, Clone, Copy)]
struct Escaping {
    /// Non-ASCII as `\uXXXX` (Python's default, Java's): `Some(upper_hex)`.
    unicode: Option<bool>,
    /// `/` as `\/` (PHP's default).
    slash: bool,
    /// `<`, `>`, `&`, U+2028 and U+2029 as `\u00XX` (Go's default).
    html: bool,
}

/// Every escaping the combinations of encoders above produce.
fn escapings() -> impl Iterator<Item = Escaping> {
    [None, Some(false), Some(true)].into_iter().flat_map(|unicode| {
        [false, true].into_iter().flat_map(move |slash| [false, true].map(|html| Escaping { unicode, slash, html }))
    })
}

fn push_unit(out: &mut String, unit: u16, upper: bool) {
    if upper {
        out.push_str(&format!("\\u{unit:04X}"));
    } else {
        out.push_str(&format!("\\u{unit:04x}"));
    }
}

/// `text` as it reads between the quotes of a JSON string written with `e`.
fn json_escaped(text: &str, e: Escaping) -> String {
    let upper = e.unicode == Some(true);
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '/' if e.slash => out.push_str("\\/"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' if e.html => push_unit(&mut out, c as u16, false),
            c if u32::from(c) < 0x20 => push_unit(&mut out, c as u16, upper),
            c if !c.is_ascii() && e.unicode.is_some() => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    push_unit(&mut out, *unit, upper);
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The forms a value is looked for in: itself and its JSON escapings, and
/// the same for each line of [`LINE_MIN`] characters or more of a value of
/// several lines.
fn forms(value: &str) -> Vec<String> {
    let mut texts = vec![value];
    if value.contains('\n') {
        texts.extend(value.split('\n').map(str::trim).filter(|line| line.chars().count() >= LINE_MIN));
    }
    let mut out = Vec::new();
    for text in texts {
        out.push(text.to_owned());
        out.extend(escapings().map(|e| json_escaped(text, e)));
    }
    out
}

impl Redactor {
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut patterns: Vec<Box<[u8]>> = values
            .into_iter()
            .filter(|v| !v.is_empty())
            .flat_map(|v| forms(&v))
            .map(|f| f.into_bytes().into_boxed_slice())
            .collect();
        patterns.sort();
        patterns.dedup();
        let mut starts = [0u64; 4];
        for p in &patterns {
            let b = usize::from(p[0]);
            starts[b / 64] |= 1 << (b % 64);
        }
        let longest = patterns.iter().map(|p| p.len()).max().unwrap_or(0);
        // Plain literals always build; a failure could only come from a size limit, and then
        // nothing may pass unredacted, so it is not swallowed.
        let matcher = (!patterns.is_empty())
            .then(|| AhoCorasick::new(patterns.iter()).expect("the secret values build a matcher"));
        Redactor { patterns: patterns.into(), matcher, starts, longest }
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Bytes to read past `max_bytes` (the longest form's length), so a
    /// value that starts before the cut is recognised whole.
    pub fn margin(&self) -> usize {
        self.longest
    }

    pub fn redact_str(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_owned();
        }
        let out = self.redact_bytes(text.as_bytes());
        // Values are whole UTF-8 strings, so in UTF-8 text they match on char
        // boundaries and the result stays valid; the fallback never loses data.
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// JSON with every string redacted, object keys included.
    pub fn redact_json(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.redact_str(s)),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.redact_json(x)).collect()),
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, x)| (self.redact_str(k), self.redact_json(x))).collect())
            }
            other => other.clone(),
        }
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

    fn may_start(&self, byte: u8) -> bool {
        let b = usize::from(byte);
        self.starts[b / 64] & (1 << (b % 64)) != 0
    }

    /// Whether `text` is the beginning of a longer pattern.
    fn begins_a_pattern(&self, text: &[u8]) -> bool {
        // Patterns that begin with `text` sort right after it (or after `text` itself).
        let at = self.patterns.partition_point(|p| &**p < text);
        self.patterns[at..].iter().take(2).any(|p| p.len() > text.len() && p.starts_with(text))
    }

    /// Merged ranges of `input` holding a value. With `open_tail`, a suffix
    /// of `input` that is a proper prefix of a value counts too (open).
    fn spans(&self, input: &[u8], open_tail: bool) -> Vec<Span> {
        let Some(matcher) = &self.matcher else { return Vec::new() };
        let mut found: Vec<Span> = matcher
            .find_overlapping_iter(input)
            .map(|m| Span { start: m.start(), end: m.end(), open: false })
            .collect();
        if open_tail {
            // Only the earliest such suffix matters: every one runs to the end of the input.
            let from = input.len().saturating_sub(self.longest.saturating_sub(1));
            if let Some(start) =
                (from..input.len()).find(|&i| self.may_start(input[i]) && self.begins_a_pattern(&input[i..]))
            {
                found.push(Span { start, end: input.len(), open: true });
            }
        }
        found.sort_by_key(|s| s.start);
        let mut merged: Vec<Span> = Vec::with_capacity(found.len());
        for span in found {
            match merged.last_mut() {
                Some(last) if span.start < last.end => {
                    last.end = last.end.max(span.end);
                    last.open |= span.open;
                }
                _ => merged.push(span),
            }
        }
        merged
    }
}

/// Redacts a command's output as it arrives in pieces: text is shown once
/// it cannot be the beginning of a secret (see [`Redactor::redact_stream`]),
/// and a char split between two pieces is joined before it is decoded.
pub struct OutputRedaction<'a> {
    redactor: &'a Redactor,
    /// The bytes of a char the last piece began.
    partial: Vec<u8>,
    /// Decoded text held back.
    held: String,
}

impl<'a> OutputRedaction<'a> {
    pub fn new(redactor: &'a Redactor) -> Self {
        OutputRedaction { redactor, partial: Vec::new(), held: String::new() }
    }

    /// The redacted text that can be shown after this piece (maybe empty).
    pub fn push(&mut self, piece: &[u8]) -> String {
        self.partial.extend_from_slice(piece);
        let whole = complete_chars(&self.partial);
        self.held.push_str(&String::from_utf8_lossy(&self.partial[..whole]));
        self.partial.drain(..whole);
        let (shown, held) = self.redactor.redact_stream(&self.held);
        self.held = held;
        shown
    }

    /// What is left once the output ended, redacted.
    pub fn finish(mut self) -> String {
        self.held.push_str(&String::from_utf8_lossy(&self.partial));
        self.redactor.redact_str(&self.held)
    }
}

/// How many bytes of `b` end on a char boundary: a UTF-8 sequence begun in
/// the last three bytes and not finished stays out.
fn complete_chars(b: &[u8]) -> usize {
    for back in 1..=b.len().min(3) {
        let lead = b[b.len() - back];
        if lead & 0xC0 == 0x80 {
            continue;
        }
        let needs = match lead {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if back < needs { b.len() - back } else { b.len() };
    }
    b.len()
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
    fn command_output_is_redacted_across_pieces_and_chars() {
        let r = Redactor::new(["pässwörd".to_owned()]);
        let mut out = OutputRedaction::new(&r);
        let bytes = "ok pässwörd é!".as_bytes();
        // Byte by byte: every char and the secret are split somewhere.
        let mut shown: String = bytes.iter().map(|b| out.push(std::slice::from_ref(b))).collect();
        shown.push_str(&out.finish());
        assert_eq!(shown, "ok [REDACTED] é!");
        // A char left unfinished at the end is shown as a replacement, never lost silently.
        let mut out = OutputRedaction::new(&r);
        assert_eq!(out.push(b"x\xc3"), "x");
        assert_eq!(out.finish(), "\u{fffd}");
        assert_eq!(complete_chars(b"\xf0\x9f\x98"), 0);
        assert_eq!(complete_chars(b"a\xf0\x9f\x98\x80"), 5);
        assert_eq!(complete_chars(b"\x80\x80\x80"), 3);
    }

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

    #[test]
    fn a_tail_that_could_begin_an_escaped_form_is_held() {
        let r = Redactor::new([r#"a"quoted"value"#.to_owned()]);
        assert_eq!(r.redact_stream(r#"x a\"quo"#), ("x ".to_owned(), r#"a\"quo"#.to_owned()));
        let (shown, held) = r.redact_stream(r#"x a\"quoted\"value!"#);
        assert_eq!((shown.as_str(), held.as_str()), ("x [REDACTED]!", ""));
        // A line of a multi-line value too.
        let r = Redactor::new(["first-line-here\nsecond-line-here".to_owned()]);
        assert_eq!(r.redact_stream("ok second-li"), ("ok ".to_owned(), "second-li".to_owned()));
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
    fn margin_is_the_longest_form() {
        assert_eq!(redactor(&[]).margin(), 0);
        assert_eq!(redactor(&["abc", "abcdefg", "xy"]).margin(), 7);
        // Four chars of two bytes, and escaped as four `\uXXXX` of six bytes.
        assert_eq!(redactor(&["ключ"]).margin(), 24);
    }

    #[test]
    fn json_escaped_forms_are_redacted() {
        let r = redactor(&[r#"pa"ss\wo/rd"#]);
        assert_eq!(r.redact_str(r#"{"pw": "pa\"ss\\wo/rd"}"#), r#"{"pw": "[REDACTED]"}"#);
        // PHP escapes the slash.
        assert_eq!(r.redact_str(r#""pa\"ss\\wo\/rd""#), r#""[REDACTED]""#);
        // Control characters: the short escapes, else \u00XX in either case.
        let r = redactor(&["tab\there\nnext\u{1f}"]);
        for printed in [r"tab\there\nnext\u001f", r"tab\there\nnext\u001F"] {
            assert_eq!(r.redact_str(&format!(r#"x="{printed}""#)), r#"x="[REDACTED]""#, "{printed}");
        }
        // Non-ASCII as \uXXXX (Python, lower case; Java, upper case), astral chars as surrogate pairs.
        let r = redactor(&["pässwörd😀"]);
        for printed in [r"p\u00e4ssw\u00f6rd\ud83d\ude00", r"p\u00E4ssw\u00F6rd\uD83D\uDE00", "pässwörd😀"] {
            assert_eq!(r.redact_str(&format!("[{printed}]")), "[[REDACTED]]", "{printed}");
        }
        // Go's HTML-safe escaping.
        let r = redactor(&["<tok&en>"]);
        assert_eq!(r.redact_str(r#""\u003ctok\u0026en\u003e""#), r#""[REDACTED]""#);
        // A value with nothing to escape has just itself as a form.
        assert_eq!(redactor(&["plain-token-42"]).patterns.len(), 1);
    }

    #[test]
    fn each_long_line_of_a_multiline_value_is_redacted_alone() {
        let pem =
            "-----BEGIN KEY-----\r\nMIIBOgIBAAJBAKj34GkxFhD9\r\n  0s+Tn/Q6bwIDAQAB  \r\nshort\r\n-----END KEY-----\r\n";
        let r = redactor(&[pem]);
        // Printed line by line, with other line ends or indentation.
        let printed = "key:\n    MIIBOgIBAAJBAKj34GkxFhD9\n    0s+Tn/Q6bwIDAQAB\n    short\n";
        assert_eq!(r.redact_str(printed), "key:\n    [REDACTED]\n    [REDACTED]\n    short\n");
        // A line is matched in its escaped forms too (PHP's `\/`).
        assert_eq!(r.redact_str(r"0s+Tn\/Q6bwIDAQAB"), "[REDACTED]");
        // The whole value, and JSON-escaped whole.
        assert_eq!(r.redact_str(&format!("<{pem}>")), "<[REDACTED]>");
        let escaped = serde_json::to_string(pem).unwrap();
        assert_eq!(r.redact_str(&escaped), "\"[REDACTED]\"");
        // Lines under the minimum, and blank lines, are not forms.
        assert_eq!(r.redact_str("short"), "short");
        let r = redactor(&["aaaa\n        \nbbbbbbb\n"]);
        assert_eq!(r.redact_str("aaaa bbbbbbb         x"), "aaaa bbbbbbb         x");
        // A single-line value keeps its own length rule: any length.
        assert_eq!(redactor(&["k3y"]).redact_str("a k3y"), "a [REDACTED]");
    }

    #[test]
    fn json_is_redacted_in_keys_and_values() {
        let r = redactor(&["s3cr3t"]);
        let v = serde_json::json!({"s3cr3t": ["x s3cr3t", 1, null, {"k": "s3cr3t"}], "ok": true});
        assert_eq!(
            r.redact_json(&v),
            serde_json::json!({"[REDACTED]": ["x [REDACTED]", 1, null, {"k": "[REDACTED]"}], "ok": true})
        );
    }

    #[test]
    fn many_values_are_all_found() {
        let values: Vec<String> = (0..2000).map(|i| format!("secret-{i:05}-value")).collect();
        let r = Redactor::new(values.clone());
        let text: String = values.iter().step_by(7).map(|v| format!("<{v}>")).collect();
        let out = r.redact_str(&text);
        assert_eq!(out, "<[REDACTED]>".repeat(values.iter().step_by(7).count()));
        let (shown, held) = r.redact_stream("see secret-00042-val");
        assert_eq!((shown.as_str(), held.as_str()), ("see ", "secret-00042-val"));
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
