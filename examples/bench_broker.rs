//! Benchmark of the egress broker (the proxy terminating a bound host's TLS
//! and adding its credential) against a plain CONNECT tunnel to the same
//! HTTPS upstream, all in one process on 127.0.0.1, no root needed. Run
//! through `bench/run`, or alone:
//!
//!     cargo run --release --example bench_broker
//!
//! The upstream is the testkit's (`HttpsUpstream`, HTTP/2 and 1.1, `/echo`);
//! its name is mapped to 127.0.0.1 by the policy's overrides. Two names on
//! it: `api.bench.test`, bound (a static `Credentials`: intercepted, a bearer
//! added), and `open.bench.test`, only allowed (an opaque tunnel). The
//! clients are reqwest (HTTP/1.1, one kept connection per client, trusting
//! only the broker's CA or only the upstream's).
//!
//! 1. Added latency: one client, one proxy, one kept connection (one
//!    CONNECT, then sequential requests in it); BENCH_BROKER_REQUESTS
//!    requests after a warm-up, p50 and p99 of each. The broker's upstream
//!    connection (HTTP/2) is kept by the proxy's pool.
//! 2. Requests per second: 100 proxies (one per machine) sharing one broker,
//!    one client per proxy, all at once for BENCH_BROKER_SECONDS; tunnel and
//!    broker alternate for BENCH_BROKER_ROUNDS rounds, the best of each kept.
//! 3. Memory per open connection: a fresh server process (this example with
//!    `--memory-server MODE`: the upstream, 100 proxies and the broker) and
//!    BENCH_BROKER_CONNECTIONS clients in this one, each having completed
//!    one request and keeping its connection; the server's VmRSS growth per
//!    connection, intercepted, tunnelled, and straight to the upstream (the
//!    upstream's own share of a tunnelled connection).
//!
//! Knobs: BENCH_BROKER_REQUESTS (3000), BENCH_BROKER_SECONDS (5),
//! BENCH_BROKER_ROUNDS (3), BENCH_BROKER_CONNECTIONS (1000).

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use acs_core::blocklist::AddressRules;
use acs_core::egress::broker::{Attachment, BoxFuture, Broker, BrokerRef, Credentials, ca, upstream_tls};
use acs_core::egress::{self, EgressRecord, EgressSink, Policy, ProxyHandle};
use acs_testkit::upstream::HttpsUpstream;
use tokio::net::TcpListener;
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{env_or, percentile};

const BOUND: &str = "api.bench.test";
const OPEN: &str = "open.bench.test";
const MACHINES: usize = 100;
const TIMEOUT: Duration = Duration::from_secs(30);

/// Binds `BOUND` with a fixed bearer; nothing else.
struct Static;

impl Credentials for Static {
    fn binds<'a>(&'a self, _: Uuid, host: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move { host == BOUND })
    }

    fn attach<'a>(&'a self, _: Uuid, host: &'a str) -> BoxFuture<'a, Option<Attachment>> {
        Box::pin(async move {
            (host == BOUND).then(|| Attachment {
                service: "bench".into(),
                credential_keys: vec!["BENCH_TOKEN".into()],
                header: reqwest::header::AUTHORIZATION,
                value: Some(reqwest::header::HeaderValue::from_static("Bearer bench-secret")),
            })
        })
    }
}

/// Counts records; never blocks.
#[derive(Default)]
struct Count(AtomicU64);

impl EgressSink for Count {
    fn record(&self, _: EgressRecord) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The upstream, the broker and `machines` proxies sharing it.
struct Setup {
    upstream: HttpsUpstream,
    broker_ca: String,
    proxies: Vec<(SocketAddr, ProxyHandle)>,
    records: Arc<Count>,
}

async fn setup(dir: &Path, machines: usize) -> Setup {
    let upstream = HttpsUpstream::start(&[BOUND, OPEN], dir).await;
    let new = ca::generate("acs bench broker").unwrap();
    let ca = ca::Ca::load("acs bench broker", &new.cert_pem, &new.key_pem).unwrap();
    let tls = upstream_tls(Some(upstream.ca_pem.as_str())).unwrap();
    let broker = BrokerRef(Arc::new(Broker::local(Arc::new(ca), Arc::new(tls), Arc::new(Static))));
    let records = Arc::new(Count::default());
    let loopback = "127.0.0.1".parse().unwrap();
    let mut proxies = Vec::new();
    for _ in 0..machines {
        let policy = Policy {
            allow_all: false,
            allowed_hosts: vec![OPEN.into()],
            always_allowed: vec![],
            addresses: AddressRules::blocking(vec![]),
            aliases: vec![],
            overrides: vec![(BOUND.into(), loopback), (OPEN.into(), loopback)],
            hooks: Default::default(),
            broker: Some(broker.clone()),
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = egress::spawn(listener, Uuid::new_v4(), policy, records.clone(), TIMEOUT);
        proxies.push((addr, handle));
    }
    Setup { upstream, broker_ca: new.cert_pem, proxies, records }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Through the proxy, bound: intercepted.
    Broker,
    /// Through the proxy, allowed: an opaque tunnel.
    Tunnel,
    /// Straight to the upstream, no proxy.
    Direct,
}

impl Mode {
    fn parse(s: &str) -> Mode {
        match s {
            "broker" => Mode::Broker,
            "tunnel" => Mode::Tunnel,
            "direct" => Mode::Direct,
            other => panic!("unknown mode {other}"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Broker => "broker",
            Mode::Tunnel => "tunnel",
            Mode::Direct => "direct",
        }
    }

    fn host(self) -> &'static str {
        if self == Mode::Broker { BOUND } else { OPEN }
    }
}

/// A client with one kept connection, trusting only `ca_pem`.
fn client(mode: Mode, proxy: SocketAddr, upstream_port: u16, ca_pem: &str) -> reqwest::Client {
    let cert = reqwest::Certificate::from_pem(ca_pem.as_bytes()).unwrap();
    let builder = reqwest::Client::builder()
        .tls_certs_only([cert])
        .pool_max_idle_per_host(1)
        .pool_idle_timeout(Duration::from_secs(600))
        .timeout(TIMEOUT);
    let builder = match mode {
        Mode::Direct => builder.no_proxy().resolve(OPEN, SocketAddr::from(([127, 0, 0, 1], upstream_port))),
        _ => builder.proxy(reqwest::Proxy::all(format!("http://{proxy}")).unwrap()),
    };
    builder.build().unwrap()
}

fn url(mode: Mode, port: u16) -> String {
    format!("https://{}:{port}/echo", mode.host())
}

async fn get(client: &reqwest::Client, url: &str) {
    let response = client.get(url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.bytes().await.unwrap();
    assert_eq!(&body[..], b"hello from upstream");
}

/// p50 and p99 of `n` sequential requests on one kept connection, in ms.
async fn latency(s: &Setup, mode: Mode, n: usize) -> (f64, f64) {
    let ca = if mode == Mode::Broker { &s.broker_ca } else { &s.upstream.ca_pem };
    let client = client(mode, s.proxies[0].0, s.upstream.port, ca);
    let url = url(mode, s.upstream.port);
    for _ in 0..n / 10 {
        get(&client, &url).await;
    }
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        get(&client, &url).await;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    (percentile(&mut ms, 0.5), percentile(&mut ms, 0.99))
}

/// User + system CPU time of this process so far, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// CPU time the whole machine spent in user and system mode so far, in seconds.
fn machine_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let ticks: u64 =
        stat.lines().next().unwrap().split_whitespace().skip(1).take(3).map(|t| t.parse::<u64>().unwrap()).sum();
    // SAFETY: sysconf reads a constant.
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// One throughput run.
struct Rate {
    per_second: f64,
    /// This process's CPU time per request, µs.
    cpu_us: f64,
    /// Share of the machine other processes used meanwhile, %.
    other_pct: f64,
}

/// Requests per second of one client per proxy, all at once for `seconds`, and the
/// process's CPU time per request (clients, proxies, broker and upstream together), in µs.
async fn throughput(s: &Setup, mode: Mode, seconds: u64) -> Rate {
    let ca = if mode == Mode::Broker { &s.broker_ca } else { &s.upstream.ca_pem };
    let url = url(mode, s.upstream.port);
    let clients: Vec<_> = s.proxies.iter().map(|(addr, _)| client(mode, *addr, s.upstream.port, ca)).collect();
    // Every connection opened (and the broker's upstream ones) before the clock starts.
    futures::future::join_all(clients.iter().map(|c| get(c, &url))).await;
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let (cpu0, machine0) = (cpu_seconds(), machine_cpu_seconds());
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|c| {
            let (url, done) = (url.clone(), done.clone());
            tokio::spawn(async move {
                while Instant::now() < until {
                    get(&c, &url).await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let (n, elapsed) = (done.load(Ordering::Relaxed) as f64, started.elapsed().as_secs_f64());
    let own = cpu_seconds() - cpu0;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let other = (machine_cpu_seconds() - machine0 - own).max(0.0);
    Rate { per_second: n / elapsed, cpu_us: own * 1e6 / n, other_pct: 100.0 * other / (elapsed * cpus) }
}

fn self_status(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("acs-bench-broker-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `--memory-server MODE`: the server side of the memory measurement. Prints
/// `ready PORT CA_FILE ADDR,ADDR,...`, then answers each line `rss` on stdin
/// with `VmRSS_KB OPEN_FDS`, until stdin closes.
async fn memory_server(mode: Mode) {
    let dir = scratch("server");
    let s = setup(&dir, MACHINES).await;
    let ca_file = dir.join("client-ca.pem");
    std::fs::write(&ca_file, if mode == Mode::Broker { &s.broker_ca } else { &s.upstream.ca_pem }).unwrap();
    let addrs: Vec<String> = s.proxies.iter().map(|(a, _)| a.to_string()).collect();
    println!("ready {} {} {}", s.upstream.port, ca_file.display(), addrs.join(","));
    std::io::stdout().flush().unwrap();
    let lines = tokio::task::spawn_blocking(|| {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.trim() == "rss" {
                println!("{} {}", self_status("VmRSS:"), open_fds());
                std::io::stdout().flush().unwrap();
            }
        }
    });
    lines.await.unwrap();
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

struct Memory {
    /// Server RSS growth per connection, KB.
    kb_per_conn: f64,
    /// Server file descriptors opened per connection.
    fds_per_conn: f64,
}

/// Opens `n` connections of `mode` against a fresh server process.
async fn memory(mode: Mode, n: usize) -> Memory {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--memory-server", mode.name()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to = child.stdin.take().unwrap();
    let mut from = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    from.read_line(&mut line).unwrap();
    let parts: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(parts.first(), Some(&"ready"), "server said {line:?}");
    let port: u16 = parts[1].parse().unwrap();
    let ca_pem = std::fs::read_to_string(parts[2]).unwrap();
    let proxies: Vec<SocketAddr> = parts[3].split(',').map(|a| a.parse().unwrap()).collect();
    let url = url(mode, port);
    let mut ask = move || {
        writeln!(to, "rss").unwrap();
        to.flush().unwrap();
        let mut answer = String::new();
        from.read_line(&mut answer).unwrap();
        let v: Vec<u64> = answer.split_whitespace().map(|x| x.parse().unwrap()).collect();
        (v[0], v[1])
    };
    // Warm-up: one connection per proxy, closed again (mints the leaf, opens the broker's
    // upstream connection of each proxy, grows the allocator's arenas).
    let warm: Vec<_> = proxies.iter().map(|p| client(mode, *p, port, &ca_pem)).collect();
    futures::future::join_all(warm.iter().map(|c| get(c, &url))).await;
    drop(warm);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss0, fds0) = ask();
    let clients: Vec<_> = (0..n).map(|i| client(mode, proxies[i % proxies.len()], port, &ca_pem)).collect();
    for batch in clients.chunks(50) {
        futures::future::join_all(batch.iter().map(|c| get(c, &url))).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (rss1, fds1) = ask();
    drop(clients);
    drop(ask); // closes the server's stdin: it exits
    child.wait().unwrap();
    Memory { kb_per_conn: (rss1 as f64 - rss0 as f64) / n as f64, fds_per_conn: (fds1 as f64 - fds0 as f64) / n as f64 }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--memory-server") {
        return memory_server(Mode::parse(&args[2])).await;
    }
    let requests = env_or("BENCH_BROKER_REQUESTS", 3000);
    let seconds = env_or("BENCH_BROKER_SECONDS", 5) as u64;
    let connections = env_or("BENCH_BROKER_CONNECTIONS", 1000);
    let rounds = env_or("BENCH_BROKER_ROUNDS", 3).max(1);

    let dir = scratch("main");
    let s = setup(&dir, MACHINES).await;
    let (t50, t99) = latency(&s, Mode::Tunnel, requests).await;
    let (b50, b99) = latency(&s, Mode::Broker, requests).await;
    // The broker did its work: the last request reached the upstream with the bound credential.
    let last = s.upstream.seen().pop().unwrap();
    assert_eq!(last.authorization.as_deref(), Some("Bearer bench-secret"), "{last:?}");
    let broker_upstream_version = last.version;
    // Alternating rounds, the best of each kept: on a shared machine the least disturbed.
    let best = |a: Rate, b: Rate| if b.per_second > a.per_second { b } else { a };
    let mut tunnel = throughput(&s, Mode::Tunnel, seconds).await;
    let mut broker = throughput(&s, Mode::Broker, seconds).await;
    for _ in 1..rounds {
        tunnel = best(tunnel, throughput(&s, Mode::Tunnel, seconds).await);
        broker = best(broker, throughput(&s, Mode::Broker, seconds).await);
    }
    let (tunnel_rps, tunnel_cpu, broker_rps, broker_cpu) =
        (tunnel.per_second, tunnel.cpu_us, broker.per_second, broker.cpu_us);
    let records = s.records.0.load(Ordering::Relaxed);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
    let broker_mem = memory(Mode::Broker, connections).await;
    let tunnel_mem = memory(Mode::Tunnel, connections).await;
    let direct_mem = memory(Mode::Direct, connections).await;

    let added = b50 - t50;
    let ratio = tunnel_rps / broker_rps;
    let met = |ok: bool| if ok { "met" } else { "**missed**" };
    println!(
        "| egress broker, loopback, HTTPS upstream `/echo` (HTTP/2 to the broker, HTTP/1.1 in a tunnel) | plain CONNECT tunnel | broker (intercepted, credential added) | difference | goal |"
    );
    println!("| --- | ---: | ---: | ---: | --- |");
    println!(
        "| one kept connection, {requests} sequential requests after {} warm-up: p50 | {t50:.3} ms | {b50:.3} ms | {added:+.3} ms | broker adds < 1 ms p50: {} |",
        requests / 10,
        met(added < 1.0)
    );
    println!("| same: p99 | {t99:.3} ms | {b99:.3} ms | {:+.3} ms | |", b99 - t99);
    println!(
        "| {MACHINES} proxies (one per machine), one broker, {MACHINES} concurrent clients for {seconds} s, best of {rounds} alternating rounds: req/s (other processes used {:.0}% / {:.0}% of the machine meanwhile) | {tunnel_rps:.0} | {broker_rps:.0} | tunnel / broker {ratio:.2}x | within 2x of the tunnel: {} |",
        tunnel.other_pct,
        broker.other_pct,
        met(ratio <= 2.0)
    );
    println!(
        "| same: CPU time per request, the whole process (clients, proxies, broker, upstream) | {tunnel_cpu:.0} µs | {broker_cpu:.0} µs | {:+.0} µs ({:.2}x) | |",
        broker_cpu - tunnel_cpu,
        broker_cpu / tunnel_cpu
    );
    println!(
        "| server RSS per open connection, {connections} kept after one request each (upstream and proxies in one process; straight to the upstream, no proxy: {:.1} KB, {:.1} fds) | {:.1} KB ({:.1} fds) | {:.1} KB ({:.1} fds) | {:+.1} KB | |",
        direct_mem.kb_per_conn,
        direct_mem.fds_per_conn,
        tunnel_mem.kb_per_conn,
        tunnel_mem.fds_per_conn,
        broker_mem.kb_per_conn,
        broker_mem.fds_per_conn,
        broker_mem.kb_per_conn - tunnel_mem.kb_per_conn
    );
    println!(
        "| same, the proxy's share (tunnel: less the upstream's own connection; broker: its upstream side is one shared HTTP/2 connection per proxy) | {:.1} KB | {:.1} KB | | |",
        tunnel_mem.kb_per_conn - direct_mem.kb_per_conn,
        broker_mem.kb_per_conn
    );
    eprintln!(
        "bench_broker: {records} egress records in the latency and throughput runs; the broker reached the upstream over {broker_upstream_version}"
    );
}
