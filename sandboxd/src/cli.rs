//! Command line of the binary: the daemon, or a one-shot file read.

use std::path::PathBuf;

#[derive(Debug, PartialEq)]
pub(crate) enum Mode {
    Serve { socket: PathBuf },
    ReadFile { path: String, max_bytes: u64 },
}

pub(crate) const USAGE: &str = "usage: sandboxd --socket <path> | sandboxd read-file <path> <max_bytes>";

pub(crate) fn parse(args: &[String]) -> Result<Mode, String> {
    match args {
        [flag, socket] if flag == "--socket" => Ok(Mode::Serve { socket: socket.into() }),
        [flag] if flag.starts_with("--socket=") => Ok(Mode::Serve { socket: flag["--socket=".len()..].into() }),
        [cmd, path, max] if cmd == "read-file" => {
            let max_bytes = max.parse().map_err(|_| format!("max_bytes {max:?} is not a number\n{USAGE}"))?;
            Ok(Mode::ReadFile { path: path.clone(), max_bytes })
        }
        _ => Err(USAGE.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_both_modes() {
        let serve = Mode::Serve { socket: "/run/acs/sandboxd.sock".into() };
        assert_eq!(parse(&args(&["--socket", "/run/acs/sandboxd.sock"])), Ok(serve));
        let serve = Mode::Serve { socket: "/s".into() };
        assert_eq!(parse(&args(&["--socket=/s"])), Ok(serve));
        let read = Mode::ReadFile { path: "/etc/hostname".into(), max_bytes: 10 };
        assert_eq!(parse(&args(&["read-file", "/etc/hostname", "10"])), Ok(read));
    }

    #[test]
    fn rejects_anything_else() {
        assert!(parse(&args(&[])).is_err());
        assert!(parse(&args(&["--socket"])).is_err());
        assert!(parse(&args(&["read-file", "/x", "-1"])).is_err());
        assert!(parse(&args(&["--socket", "/s", "extra"])).is_err());
    }
}
