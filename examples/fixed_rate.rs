//! A tiny open-loop, fixed-rate HTTP/1.1 load generator for `bench/run`
//! (wrk has no fixed-rate mode). Standard library only.
//!
//!     fixed_rate --url http://127.0.0.1:18080/api/auth/me --rate 1000 \
//!         --duration 10 --connections 16 --header 'Authorization: Bearer ...'
//!
//! Request `i` is *scheduled* at `start + i / rate`. A pool of keep-alive
//! connections, one blocking thread each, takes the next request number,
//! sleeps until its scheduled time, sends it and reads the whole response.
//! Latency is measured from the scheduled time, not from the moment it was
//! actually sent, so when the server (or every connection) is busy the
//! queueing delay counts too (no "coordinated omission", as in wrk2).
//! Requests scheduled during `--warmup` seconds are sent but not recorded.
//!
//! Prints a human summary on stderr and one JSON object on stdout.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

struct Opts {
    host: String,
    path: String,
    rate: f64,
    duration: f64,
    warmup: f64,
    connections: usize,
    headers: Vec<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: fixed_rate --url http://HOST:PORT/PATH --rate REQ_PER_S [--duration S] [--warmup S] \
         [--connections N] [--header 'K: V']..."
    );
    std::process::exit(2)
}

fn parse_args() -> Opts {
    let mut url = None;
    let mut o = Opts {
        host: String::new(),
        path: String::new(),
        rate: 1000.0,
        duration: 10.0,
        warmup: 1.0,
        connections: 16,
        headers: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--url" => url = Some(val()),
            "--rate" => o.rate = val().parse().unwrap_or_else(|_| usage()),
            "--duration" => o.duration = val().parse().unwrap_or_else(|_| usage()),
            "--warmup" => o.warmup = val().parse().unwrap_or_else(|_| usage()),
            "--connections" => o.connections = val().parse().unwrap_or_else(|_| usage()),
            "--header" => o.headers.push(val()),
            _ => usage(),
        }
    }
    let url = url.unwrap_or_else(|| usage());
    let rest = url.strip_prefix("http://").unwrap_or_else(|| usage());
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    o.host = host.to_owned();
    o.path = path.to_owned();
    if o.rate <= 0.0 || o.duration <= 0.0 || o.connections == 0 {
        usage()
    }
    o
}

fn connect(host: &str) -> std::io::Result<TcpStream> {
    let s = TcpStream::connect(host)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    Ok(s)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads one response; returns (status, server wants the connection closed).
/// `buf` keeps bytes that arrived after it (there should be none).
fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<(u16, bool)> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_owned());
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(bad("connection closed before the response head"));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let (mut len, mut chunked, mut close) = (None, false, false);
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            match (k.trim(), v.trim()) {
                ("content-length", v) => len = v.parse::<usize>().ok(),
                ("transfer-encoding", v) if v.contains("chunked") => chunked = true,
                ("connection", v) if v.contains("close") => close = true,
                _ => {}
            }
        }
    }
    buf.drain(..head_end);
    let mut fill = |buf: &mut Vec<u8>, want: usize| -> std::io::Result<()> {
        while buf.len() < want {
            let n = s.read(&mut chunk)?;
            if n == 0 {
                return Err(bad("connection closed inside the body"));
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Ok(())
    };
    if chunked {
        loop {
            let line_end = loop {
                if let Some(i) = find(buf, b"\r\n") {
                    break i;
                }
                let have = buf.len();
                fill(buf, have + 1)?;
            };
            let size_text = String::from_utf8_lossy(&buf[..line_end]).to_string();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| bad("bad chunk size"))?;
            // size line + data + CRLF (the last chunk is followed by an empty trailer line).
            let total = line_end + 2 + size + 2;
            fill(buf, total)?;
            buf.drain(..total);
            if size == 0 {
                break;
            }
        }
    } else if let Some(len) = len {
        fill(buf, len)?;
        buf.drain(..len);
    } else {
        // No length: the body runs to the end of the connection.
        loop {
            let n = s.read(&mut chunk)?;
            if n == 0 {
                break;
            }
        }
        buf.clear();
        close = true;
    }
    Ok((status, close))
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[i.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

fn main() {
    let o = Arc::new(parse_args());
    let mut request = format!("GET {} HTTP/1.1\r\nHost: {}\r\n", o.path, o.host);
    for h in &o.headers {
        request.push_str(h);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    let request: Arc<[u8]> = request.into_bytes().into();

    let interval_ns = 1e9 / o.rate;
    let total = ((o.warmup + o.duration) * o.rate).round() as u64;
    let first_recorded = (o.warmup * o.rate).round() as u64;
    let next = Arc::new(AtomicU64::new(0));

    // Open every connection before the clock starts.
    let mut streams = Vec::new();
    for _ in 0..o.connections {
        match connect(&o.host) {
            Ok(s) => streams.push(s),
            Err(e) => {
                eprintln!("fixed_rate: cannot connect to {}: {e}", o.host);
                std::process::exit(1)
            }
        }
    }
    let start = Instant::now() + Duration::from_millis(50);
    let workers: Vec<_> = streams
        .into_iter()
        .map(|stream| {
            let (o, next, request) = (o.clone(), next.clone(), request.clone());
            std::thread::spawn(move || {
                let mut stream = Some(stream);
                let mut buf = Vec::with_capacity(16384);
                // (latency from schedule, service time from send), in microseconds
                let mut samples: Vec<(u64, u64)> = Vec::new();
                let (mut errors, mut non_2xx) = (0u64, 0u64);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    let due = start + Duration::from_nanos((i as f64 * interval_ns) as u64);
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                    let sent = Instant::now();
                    let outcome = (|| {
                        if stream.is_none() {
                            stream = Some(connect(&o.host)?);
                        }
                        let s = stream.as_mut().expect("connected above");
                        s.write_all(&request)?;
                        read_response(s, &mut buf)
                    })();
                    let done = Instant::now();
                    match outcome {
                        Ok((status, close)) => {
                            if !(200..300).contains(&status) {
                                non_2xx += 1;
                            }
                            if close {
                                stream = None;
                            }
                            if i >= first_recorded {
                                samples.push((
                                    done.duration_since(due).as_micros() as u64,
                                    done.duration_since(sent).as_micros() as u64,
                                ));
                            }
                        }
                        Err(_) => {
                            errors += 1;
                            stream = None;
                            buf.clear();
                        }
                    }
                }
                (samples, errors, non_2xx)
            })
        })
        .collect();

    let (mut lat, mut svc, mut errors, mut non_2xx) = (Vec::new(), Vec::new(), 0, 0);
    for w in workers {
        let (s, e, n) = w.join().expect("worker thread");
        lat.extend(s.iter().map(|x| x.0));
        svc.extend(s.iter().map(|x| x.1));
        errors += e;
        non_2xx += n;
    }
    let elapsed = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    svc.sort_unstable();
    let achieved = (lat.len() as f64) / o.duration;
    let p = |v: &[u64], q| pct(v, q);
    eprintln!(
        "fixed_rate: {} req/s target over {} s ({} s warmup, {} connections): {} recorded, {:.0} req/s achieved, \
         {} errors, {} non-2xx; latency from schedule p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, \
         max {:.2} ms; service time p99 {:.2} ms; wall {:.1} s",
        o.rate,
        o.duration,
        o.warmup,
        o.connections,
        lat.len(),
        achieved,
        errors,
        non_2xx,
        p(&lat, 50.0),
        p(&lat, 90.0),
        p(&lat, 99.0),
        p(&lat, 99.9),
        p(&lat, 100.0),
        p(&svc, 99.0),
        elapsed
    );
    println!(
        "{{\"target_rate\":{},\"duration_s\":{},\"connections\":{},\"recorded\":{},\"achieved_rate\":{:.1},\
         \"errors\":{},\"non_2xx\":{},\"p50_ms\":{:.3},\"p90_ms\":{:.3},\"p99_ms\":{:.3},\"p999_ms\":{:.3},\
         \"max_ms\":{:.3},\"service_p99_ms\":{:.3}}}",
        o.rate,
        o.duration,
        o.connections,
        lat.len(),
        achieved,
        errors,
        non_2xx,
        p(&lat, 50.0),
        p(&lat, 90.0),
        p(&lat, 99.0),
        p(&lat, 99.9),
        p(&lat, 100.0),
        p(&svc, 99.0)
    );
}
