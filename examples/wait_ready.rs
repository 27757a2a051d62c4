//! Start-to-ready timer for `bench/run`. Standard library only.
//!
//!     wait_ready --since "$EPOCHREALTIME" [--pid PID] [--timeout S] http://127.0.0.1:18080/api/health/ready
//!
//! Polls the URL (plain HTTP/1.1 GET, `Connection: close`) until it answers
//! 200, then prints the milliseconds elapsed since `--since` (Unix seconds,
//! fractional; the caller takes it just before starting the server). Polls
//! every 0.2 ms: a refused connection costs microseconds, so the poller
//! neither dominates the measurement nor keeps a core busy.
//! Exits 1 on timeout, or as soon as process `--pid` (the server) is gone.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn usage() -> ! {
    eprintln!("usage: wait_ready [--since UNIX_SECONDS] [--pid PID] [--timeout S] http://HOST:PORT/PATH");
    std::process::exit(2)
}

fn now_unix() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_secs_f64()
}

/// The status code of one GET, or None when nothing answered.
fn probe(host: &str, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(host).ok()?;
    s.set_nodelay(true).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes()).ok()?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(2).any(|w| w == b"\r\n") {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&head).split(' ').nth(1)?.parse().ok()
}

fn main() {
    let (mut since, mut timeout, mut url, mut pid) = (None, 30.0f64, None, None::<u32>);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--since" => since = Some(args.next().and_then(|v| v.parse::<f64>().ok()).unwrap_or_else(|| usage())),
            "--pid" => pid = Some(args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage())),
            "--timeout" => timeout = args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
            _ if url.is_none() => url = Some(a),
            _ => usage(),
        }
    }
    let since = since.unwrap_or_else(now_unix);
    let url = url.unwrap_or_else(|| usage());
    let rest = url.strip_prefix("http://").unwrap_or_else(|| usage());
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let deadline = Instant::now() + Duration::from_secs_f64(timeout);
    let mut last = None;
    while Instant::now() < deadline {
        last = probe(host, path);
        if last == Some(200) {
            println!("{:.1}", (now_unix() - since) * 1000.0);
            return;
        }
        if let Some(pid) = pid
            && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            eprintln!("wait_ready: process {pid} exited before {url} was ready");
            std::process::exit(1)
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    eprintln!("wait_ready: {url} not ready after {timeout} s (last status: {last:?})");
    std::process::exit(1)
}
