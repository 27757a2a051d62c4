//! Command line of the binary: the daemon, or a one-shot file read.

use std::path::PathBuf;

#[derive(Debug, PartialEq)]
pub(crate) enum Mode {
    Serve {
        socket: PathBuf,
    },
    /// On a socket bound by the host and passed in; stops after `watchdog_seconds` (0 = never) without a client.
    /// `ready_fd`, when given, is a pipe's writing end: one byte on it says the socket listens.
    Inherited {
        fd: i32,
        watchdog_seconds: u64,
        ready_fd: Option<i32>,
    },
    /// As `Inherited`, on a socket it binds itself at `socket` first: a
    /// container engine cannot hand a descriptor in (the `container` provider).
    Bind {
        socket: PathBuf,
        watchdog_seconds: u64,
    },
    ReadFile {
        path: String,
        max_bytes: u64,
    },
}

pub(crate) const USAGE: &str = "usage: sandboxd --socket <path> | sandboxd --listen-fd <fd> [--watchdog <seconds> [--ready-fd <fd>]] | \
                                sandboxd --bind <path> --watchdog <seconds> | sandboxd read-file <path> <max_bytes>";

fn number<T: std::str::FromStr>(what: &str, value: &str) -> Result<T, String> {
    value.parse().map_err(|_| format!("{what} {value:?} is not a number\n{USAGE}"))
}

pub(crate) fn parse(args: &[String]) -> Result<Mode, String> {
    match args {
        [flag, socket] if flag == "--socket" => Ok(Mode::Serve { socket: socket.into() }),
        [flag] if flag.starts_with("--socket=") => Ok(Mode::Serve { socket: flag["--socket=".len()..].into() }),
        [flag, fd] if flag == "--listen-fd" => {
            Ok(Mode::Inherited { fd: number("fd", fd)?, watchdog_seconds: 0, ready_fd: None })
        }
        [flag, fd, w, secs] if flag == "--listen-fd" && w == "--watchdog" => {
            Ok(Mode::Inherited { fd: number("fd", fd)?, watchdog_seconds: number("watchdog", secs)?, ready_fd: None })
        }
        [flag, fd, w, secs, r, ready] if flag == "--listen-fd" && w == "--watchdog" && r == "--ready-fd" => {
            Ok(Mode::Inherited {
                fd: number("fd", fd)?,
                watchdog_seconds: number("watchdog", secs)?,
                ready_fd: Some(number("fd", ready)?),
            })
        }
        [flag, socket, w, secs] if flag == "--bind" && w == "--watchdog" => {
            Ok(Mode::Bind { socket: socket.into(), watchdog_seconds: number("watchdog", secs)? })
        }
        [cmd, path, max] if cmd == "read-file" => {
            Ok(Mode::ReadFile { path: path.clone(), max_bytes: number("max_bytes", max)? })
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
        let inherited = Mode::Inherited { fd: 4, watchdog_seconds: 3600, ready_fd: None };
        assert_eq!(parse(&args(&["--listen-fd", "4", "--watchdog", "3600"])), Ok(inherited));
        let inherited = Mode::Inherited { fd: 4, watchdog_seconds: 0, ready_fd: None };
        assert_eq!(parse(&args(&["--listen-fd", "4"])), Ok(inherited));
        let signalled = Mode::Inherited { fd: 4, watchdog_seconds: 60, ready_fd: Some(5) };
        assert_eq!(parse(&args(&["--listen-fd", "4", "--watchdog", "60", "--ready-fd", "5"])), Ok(signalled));
        let bind = Mode::Bind { socket: "/run/acs/ctl/sandboxd.sock".into(), watchdog_seconds: 60 };
        assert_eq!(parse(&args(&["--bind", "/run/acs/ctl/sandboxd.sock", "--watchdog", "60"])), Ok(bind));
        let read = Mode::ReadFile { path: "/etc/hostname".into(), max_bytes: 10 };
        assert_eq!(parse(&args(&["read-file", "/etc/hostname", "10"])), Ok(read));
    }

    #[test]
    fn rejects_anything_else() {
        assert!(parse(&args(&[])).is_err());
        assert!(parse(&args(&["--socket"])).is_err());
        assert!(parse(&args(&["read-file", "/x", "-1"])).is_err());
        assert!(parse(&args(&["--socket", "/s", "extra"])).is_err());
        assert!(parse(&args(&["--listen-fd", "x"])).is_err());
        assert!(parse(&args(&["--bind", "/s"])).is_err());
        assert!(parse(&args(&["--listen-fd", "4", "--watchdog", "-1"])).is_err());
        assert!(parse(&args(&["--listen-fd", "4", "--watchdog", "60", "--ready-fd", "x"])).is_err());
    }
}
