//! Parsing a prompt's text into the steps of a turn (README.md lists the directives).

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq)]
pub enum Directive {
    Say(String),
    Think(String),
    Tool {
        id: String,
        kind: String,
        title: String,
    },
    Permission {
        tool_id: String,
        title: String,
    },
    Plan(Vec<String>),
    Usage(Usage),
    Labels(Map<String, Value>),
    Sleep(u64),
    Stop(String),
    Error {
        code: i64,
        message: String,
    },
    Stderr(String),
    Exit(i32),
    EchoEnv(String),
    Write {
        path: String,
        text: String,
    },
    /// A shell command (`bash -c`), run to its end; its output is said.
    Run(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    /// `(cache_read, cache_write)`, reported only when given.
    pub cache: Option<(u64, u64)>,
}

impl Usage {
    pub fn total(&self) -> u64 {
        let (read, write) = self.cache.unwrap_or((0, 0));
        self.input + self.output + read + write
    }
}

/// The steps of a turn. A prompt without any directive is echoed back as one `Say` of the whole
/// text; otherwise each non-blank plain line is a `Say` of that line. A malformed directive is an
/// error naming its line (1-based).
pub fn parse(text: &str) -> Result<Vec<Directive>, String> {
    let mut steps = Vec::new();
    let mut any_directive = false;
    for (n, line) in text.lines().enumerate() {
        match parse_line(line) {
            Some(Ok(directive)) => {
                any_directive = true;
                steps.push(directive);
            }
            Some(Err(e)) => return Err(format!("line {}: {e}", n + 1)),
            None if line.trim().is_empty() => {}
            None => steps.push(Directive::Say(line.to_owned())),
        }
    }
    if !any_directive {
        return Ok(if text.is_empty() { Vec::new() } else { vec![Directive::Say(text.to_owned())] });
    }
    Ok(steps)
}

/// `None` when the line is not a directive (no known `name:` at its start).
fn parse_line(line: &str) -> Option<Result<Directive, String>> {
    let (name, rest) = line.trim_start().split_once(':')?;
    let arg = rest.trim();
    let directive = match name {
        "say" => Ok(Directive::Say(arg.to_owned())),
        "think" => Ok(Directive::Think(arg.to_owned())),
        "tool" => parse_tool(arg),
        "permission" => parse_permission(arg),
        "plan" => {
            Ok(Directive::Plan(arg.split(';').map(str::trim).filter(|e| !e.is_empty()).map(String::from).collect()))
        }
        "usage" => parse_usage(arg),
        "labels" => parse_labels(arg),
        "sleep" => number(arg, "sleep: milliseconds").map(Directive::Sleep),
        "stop" => Ok(Directive::Stop(if arg.is_empty() { "end_turn".to_owned() } else { arg.to_owned() })),
        "error" => parse_error(arg),
        "stderr" => Ok(Directive::Stderr(arg.to_owned())),
        "exit" => number(arg, "exit: code").map(Directive::Exit),
        "echo-env" if !arg.is_empty() => Ok(Directive::EchoEnv(arg.to_owned())),
        "echo-env" => Err("echo-env: expected a variable name".to_owned()),
        "write" => parse_write(arg),
        "run" if !arg.is_empty() => Ok(Directive::Run(arg.to_owned())),
        "run" => Err("run: expected a shell command".to_owned()),
        _ => return None,
    };
    Some(directive)
}

fn number<T: std::str::FromStr>(arg: &str, what: &str) -> Result<T, String> {
    arg.parse().map_err(|_| format!("{what}: expected a number, got `{arg}`"))
}

/// Splits off the first whitespace-separated word; the rest keeps its inner spacing.
fn first_word(arg: &str) -> (&str, &str) {
    match arg.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim_start()),
        None => (arg, ""),
    }
}

fn parse_tool(arg: &str) -> Result<Directive, String> {
    let (id, rest) = first_word(arg);
    let (kind, title) = first_word(rest);
    if id.is_empty() || kind.is_empty() {
        return Err("tool: expected `<id> <kind> <title...>`".to_owned());
    }
    Ok(Directive::Tool { id: id.to_owned(), kind: kind.to_owned(), title: title.to_owned() })
}

fn parse_permission(arg: &str) -> Result<Directive, String> {
    let (tool_id, title) = first_word(arg);
    if tool_id.is_empty() {
        return Err("permission: expected `<tool id> <title...>`".to_owned());
    }
    Ok(Directive::Permission { tool_id: tool_id.to_owned(), title: title.to_owned() })
}

fn parse_usage(arg: &str) -> Result<Directive, String> {
    let counts = arg.split_whitespace().map(|n| number::<u64>(n, "usage")).collect::<Result<Vec<_>, _>>()?;
    let usage = match counts[..] {
        [input, output] => Usage { input, output, cache: None },
        [input, output, read, write] => Usage { input, output, cache: Some((read, write)) },
        _ => return Err("usage: expected `<input> <output> [<cache_read> <cache_write>]`".to_owned()),
    };
    Ok(Directive::Usage(usage))
}

fn parse_labels(arg: &str) -> Result<Directive, String> {
    match serde_json::from_str(arg) {
        Ok(Value::Object(labels)) => Ok(Directive::Labels(labels)),
        _ => Err("labels: expected a JSON object".to_owned()),
    }
}

fn parse_error(arg: &str) -> Result<Directive, String> {
    let (code, message) = first_word(arg);
    Ok(Directive::Error { code: number(code, "error: code")?, message: message.to_owned() })
}

fn parse_write(arg: &str) -> Result<Directive, String> {
    let (path, text) = first_word(arg);
    if path.is_empty() {
        return Err("write: expected `<path> <text>`".to_owned());
    }
    Ok(Directive::Write { path: path.to_owned(), text: text.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn say(text: &str) -> Directive {
        Directive::Say(text.to_owned())
    }

    #[test]
    fn prompt_without_directives_is_echoed_whole() {
        assert_eq!(parse("hello\n\nworld").unwrap(), vec![say("hello\n\nworld")]);
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(parse("note: not a directive").unwrap(), vec![say("note: not a directive")]);
    }

    #[test]
    fn plain_lines_between_directives_are_said_one_by_one() {
        let steps = parse("first\n\n  say:  hi there \nsecond\r\n").unwrap();
        assert_eq!(steps, vec![say("first"), say("hi there"), say("second")]);
    }

    #[test]
    fn each_directive_parses() {
        let text = "think: hmm\ntool: t1 execute Run ls  -la\npermission: t2 Delete the repo\n\
                    plan: a; b ;; c\nusage: 10 20\nusage: 1 2 3 4\nlabels: {\"k\": \"v\"}\nsleep: 50\n\
                    stop: max_tokens\nstop:\nerror: -32000 boom now\nstderr: oops\nexit: 3\n\
                    echo-env: HOME\nwrite: /tmp/x a  b\nrun: curl -s https://example.com | head -1";
        let expected = vec![
            Directive::Think("hmm".into()),
            Directive::Tool { id: "t1".into(), kind: "execute".into(), title: "Run ls  -la".into() },
            Directive::Permission { tool_id: "t2".into(), title: "Delete the repo".into() },
            Directive::Plan(vec!["a".into(), "b".into(), "c".into()]),
            Directive::Usage(Usage { input: 10, output: 20, cache: None }),
            Directive::Usage(Usage { input: 1, output: 2, cache: Some((3, 4)) }),
            Directive::Labels(json!({"k": "v"}).as_object().unwrap().clone()),
            Directive::Sleep(50),
            Directive::Stop("max_tokens".into()),
            Directive::Stop("end_turn".into()),
            Directive::Error { code: -32000, message: "boom now".into() },
            Directive::Stderr("oops".into()),
            Directive::Exit(3),
            Directive::EchoEnv("HOME".into()),
            Directive::Write { path: "/tmp/x".into(), text: "a  b".into() },
            Directive::Run("curl -s https://example.com | head -1".into()),
        ];
        assert_eq!(parse(text).unwrap(), expected);
    }

    #[test]
    fn malformed_directives_name_their_line() {
        assert_eq!(
            parse("say: ok\nsleep: soon").unwrap_err(),
            "line 2: sleep: milliseconds: expected a number, got `soon`"
        );
        assert!(parse("usage: 1 2 3").unwrap_err().starts_with("line 1: usage: expected"));
        assert!(parse("usage: 1 x").is_err());
        assert!(parse("labels: [1]").is_err());
        assert!(parse("tool: t1").is_err());
        assert!(parse("permission:").is_err());
        assert!(parse("error: oops").is_err());
        assert!(parse("exit:").is_err());
        assert!(parse("echo-env:").is_err());
        assert!(parse("write:").is_err());
    }

    #[test]
    fn usage_total_counts_cache() {
        assert_eq!(Usage { input: 1, output: 2, cache: None }.total(), 3);
        assert_eq!(Usage { input: 1, output: 2, cache: Some((3, 4)) }.total(), 10);
    }
}
