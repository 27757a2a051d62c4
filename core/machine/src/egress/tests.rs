//! The proxy end to end on loopback: real upstream servers, real clients.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use uuid::Uuid;

use super::*;
use acs_store::blocklist::AddressRules;

pub(super) const TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Default)]
pub(super) struct Collect(pub(super) Mutex<Vec<EgressRecord>>);

impl EgressSink for Collect {
    fn record(&self, record: EgressRecord) {
        self.0.lock().unwrap().push(record);
    }
}

impl Collect {
    /// Waits for `n` records, then a little longer so a duplicate would show.
    pub(super) async fn wait(&self, n: usize) -> Vec<EgressRecord> {
        let deadline = Instant::now() + TIMEOUT;
        while self.0.lock().unwrap().len() < n && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.0.lock().unwrap().clone()
    }
}

pub(super) struct Proxy {
    pub(super) handle: ProxyHandle,
    pub(super) addr: SocketAddr,
    pub(super) sink: Arc<Collect>,
    pub(super) sandbox_id: Uuid,
}

pub(super) async fn start(policy: Policy, request_timeout: Duration) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let sink = Arc::new(Collect::default());
    let sandbox_id = Uuid::new_v4();
    let handle = spawn(listener, sandbox_id, policy, sink.clone(), request_timeout);
    Proxy { handle, addr, sink, sandbox_id }
}

pub(super) fn limited(hosts: &[&str]) -> Policy {
    Policy {
        allow_all: false,
        allowed_hosts: hosts.iter().map(|h| h.to_string()).collect(),
        always_allowed: vec![],
        addresses: AddressRules::blocking(vec![]),
        aliases: vec![],
        overrides: vec![],
        hooks: Default::default(),
        broker: None,
    }
}

fn client(proxy: SocketAddr) -> reqwest::Client {
    client_builder().proxy(reqwest::Proxy::all(format!("http://{proxy}")).unwrap()).build().unwrap()
}

pub(super) fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

async fn axum_upstream() -> SocketAddr {
    let app = axum::Router::new().route("/hello", axum::routing::get(|| async { "hello" }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// An upstream that reads one request head per connection and writes what `respond` returns
/// for it, then closes; `None` keeps the connection open without answering.
async fn raw_upstream(respond: fn(&str) -> Option<String>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut reader = BufReader::new(stream);
                let mut head = String::new();
                while !head.ends_with("\r\n\r\n") {
                    if reader.read_line(&mut head).await.unwrap_or(0) == 0 {
                        return;
                    }
                }
                match respond(&head) {
                    Some(answer) => {
                        let _ = reader.get_mut().write_all(answer.as_bytes()).await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(60)).await,
                }
            });
        }
    });
    addr
}

/// Echoes bytes until the client closes its side.
async fn echo_upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    addr
}

/// A raw client connection that can send several requests in a row.
struct Conn(BufReader<TcpStream>);

impl Conn {
    async fn open(proxy: SocketAddr) -> Conn {
        Conn(BufReader::new(TcpStream::connect(proxy).await.unwrap()))
    }

    /// Sends `request` and reads one response: status and body (by Content-Length).
    async fn exchange(&mut self, request: &str) -> (u16, String) {
        self.0.get_mut().write_all(request.as_bytes()).await.unwrap();
        tokio::time::timeout(TIMEOUT, self.response()).await.expect("response in time")
    }

    async fn response(&mut self) -> (u16, String) {
        let mut status_line = String::new();
        self.0.read_line(&mut status_line).await.unwrap();
        let status = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.0.read_line(&mut line).await.unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.0.read_exact(&mut body).await.unwrap();
        (status, String::from_utf8(body).unwrap())
    }

    /// True when the proxy closed the connection (EOF or reset) within the timeout.
    async fn closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(tokio::time::timeout(TIMEOUT, self.0.read(&mut byte)).await, Ok(Ok(0) | Err(_)))
    }
}

fn get(target: &str) -> String {
    format!("GET http://{target}/hello HTTP/1.1\r\nHost: {target}\r\n\r\n")
}

fn connect(target: &str) -> String {
    format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n")
}

#[tokio::test]
async fn forwards_allowed_host_and_records_it() {
    let upstream = axum_upstream().await;
    let proxy = start(limited(&["localhost"]), TIMEOUT).await;
    let url = format!("http://localhost:{}/hello", upstream.port());
    let response = client(proxy.addr).get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "hello");

    let records = proxy.sink.wait(1).await;
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record.sandbox_id, proxy.sandbox_id);
    assert_eq!(record.method, "GET");
    assert_eq!(record.host, format!("localhost:{}", upstream.port()));
    assert_eq!(record.status, Some(200));
    assert_eq!(record.error, None);
    assert!(record.credential_keys.is_empty() && record.service.is_none());
    assert!((0..5000).contains(&record.latency_ms));
    assert!(record.at <= time::OffsetDateTime::now_utc());
}

#[tokio::test]
async fn forward_strips_hop_by_hop_and_sets_host_from_target() {
    let mirror = raw_upstream(|head| {
        Some(format!("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{head}", head.len()))
    })
    .await;
    let proxy = start(limited(&["localhost"]), TIMEOUT).await;
    let host = format!("localhost:{}", mirror.port());
    let request = format!(
        "GET http://{host}/p?q=1 HTTP/1.1\r\nHost: fronted.example\r\nProxy-Authorization: Basic eDp5\r\n\
         Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nX-Keep: 1\r\n\r\n"
    );
    let (status, seen) = Conn::open(proxy.addr).await.exchange(&request).await;
    assert_eq!(status, 200);
    let seen = seen.to_ascii_lowercase();
    assert!(seen.starts_with("get /p?q=1 http/1.1\r\n"), "{seen}");
    assert!(seen.contains(&format!("host: {host}\r\n")) && !seen.contains("fronted"), "{seen}");
    assert!(seen.contains("x-keep: 1"), "{seen}");
    assert!(!seen.contains("proxy-") && !seen.contains("x-hop"), "{seen}");
}

#[tokio::test]
async fn refuses_host_outside_policy() {
    let proxy = start(limited(&["*.example.com"]), TIMEOUT).await;
    let response = client(proxy.addr).get("http://example.org/secret?token=1").send().await.unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(response.text().await.unwrap(), "acs egress: host not allowed: example.org\n");

    let records = proxy.sink.wait(1).await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].host, "example.org:80");
    assert_eq!(records[0].status, Some(403));
    assert_eq!(records[0].error.as_deref(), Some("host_not_allowed"));
}

#[tokio::test]
async fn connect_tunnels_to_allowed_host() {
    let echo = echo_upstream().await;
    let proxy = start(limited(&["localhost"]), TIMEOUT).await;
    let host = format!("localhost:{}", echo.port());
    let mut conn = Conn::open(proxy.addr).await;
    let (status, _) = conn.exchange(&connect(&host)).await;
    assert_eq!(status, 200);
    conn.0.get_mut().write_all(b"ping through the tunnel").await.unwrap();
    let mut back = [0u8; 23];
    conn.0.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"ping through the tunnel");
    assert!(proxy.sink.0.lock().unwrap().is_empty(), "recorded only when the tunnel closes");

    conn.0.get_mut().shutdown().await.unwrap();
    assert!(conn.closed().await);
    let records = proxy.sink.wait(1).await;
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].method.as_str(), records[0].host.as_str()), ("CONNECT", host.as_str()));
    assert_eq!((records[0].status, records[0].error.as_deref()), (Some(200), None));
}

#[tokio::test]
async fn connect_refused_outside_policy() {
    let proxy = start(limited(&["github.com"]), TIMEOUT).await;
    let (status, body) = Conn::open(proxy.addr).await.exchange(&connect("example.org:443")).await;
    assert_eq!(status, 403);
    assert_eq!(body, "acs egress: host not allowed: example.org\n");
    let records = proxy.sink.wait(1).await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].method, "CONNECT");
    assert_eq!((records[0].status, records[0].error.as_deref()), (Some(403), Some("host_not_allowed")));
}

#[tokio::test]
async fn blocked_address_refused_even_when_host_allowed() {
    let upstream = axum_upstream().await;
    let echo = echo_upstream().await;
    let policy = Policy {
        addresses: AddressRules::blocking(vec!["127.0.0.0/8".parse().unwrap()]),
        ..limited(&["localhost", "127.0.0.1"])
    };
    let proxy = start(policy, TIMEOUT).await;
    let mut conn = Conn::open(proxy.addr).await;
    for request in [
        get(&format!("localhost:{}", upstream.port())),
        get(&format!("127.0.0.1:{}", upstream.port())),
        connect(&format!("localhost:{}", echo.port())),
    ] {
        let (status, body) = conn.exchange(&request).await;
        assert_eq!(status, 403, "{request}");
        assert!(body.starts_with("acs egress: address not allowed: "), "{body}");
    }
    let records = proxy.sink.wait(3).await;
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r.error.as_deref() == Some("address_not_allowed") && r.status == Some(403)));
}

#[tokio::test]
async fn always_allowed_passes_policy_and_blocked_nets() {
    let upstream = axum_upstream().await;
    let api = format!("localhost:{}", upstream.port());
    let policy =
        Policy { always_allowed: vec![api.clone()], addresses: AddressRules::exempting(vec![]), ..limited(&[]) };
    let proxy = start(policy, TIMEOUT).await;
    let mut conn = Conn::open(proxy.addr).await;
    assert_eq!(conn.exchange(&get(&api)).await, (200, "hello".into()));
    let other_port = format!("localhost:{}", upstream.port().wrapping_add(1));
    assert_eq!(conn.exchange(&get(&other_port)).await.0, 403);
}

#[tokio::test]
async fn no_answer_in_time_is_504() {
    let silent = raw_upstream(|_| None).await;
    let proxy = start(limited(&["localhost"]), Duration::from_millis(300)).await;
    let started = Instant::now();
    let (status, body) = Conn::open(proxy.addr).await.exchange(&get(&format!("localhost:{}", silent.port()))).await;
    assert_eq!(status, 504);
    assert!(body.contains("localhost"), "{body}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let records = proxy.sink.wait(1).await;
    assert_eq!((records[0].status, records[0].error.as_deref()), (Some(504), Some("request_timeout")));
    assert!(records[0].latency_ms >= 300);
}

#[tokio::test]
async fn unreachable_upstream_is_502() {
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let proxy = start(limited(&["127.0.0.1"]), TIMEOUT).await;
    let (status, _) = Conn::open(proxy.addr).await.exchange(&connect(&closed.to_string())).await;
    assert_eq!(status, 502);
    let records = proxy.sink.wait(1).await;
    assert_eq!(records[0].error.as_deref(), Some("upstream_unreachable"));
}

#[tokio::test]
async fn upstream_closing_mid_response_is_recorded() {
    let truncating = raw_upstream(|_| Some("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part".into())).await;
    let proxy = start(limited(&["localhost"]), TIMEOUT).await;
    let url = format!("http://localhost:{}/hello", truncating.port());
    let response = client(proxy.addr).get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.text().await.is_err(), "the client must see the body cut short");
    let records = proxy.sink.wait(1).await;
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].status, records[0].error.as_deref()), (Some(200), Some("upstream_closed")));
}

#[tokio::test]
async fn keep_alive_serves_several_requests() {
    let upstream = axum_upstream().await;
    let proxy = start(limited(&["localhost"]), TIMEOUT).await;
    let mut conn = Conn::open(proxy.addr).await;
    let request = get(&format!("localhost:{}", upstream.port()));
    for _ in 0..3 {
        assert_eq!(conn.exchange(&request).await, (200, "hello".into()));
    }
    let records = proxy.sink.wait(3).await;
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r.status == Some(200) && r.error.is_none()));
}

#[tokio::test]
async fn set_policy_narrows_live() {
    let upstream = axum_upstream().await;
    let proxy = start(Policy { allow_all: true, ..limited(&[]) }, TIMEOUT).await;
    let mut conn = Conn::open(proxy.addr).await;
    let request = get(&format!("localhost:{}", upstream.port()));
    assert_eq!(conn.exchange(&request).await.0, 200);
    proxy.handle.set_policy(limited(&["pypi.org"]));
    let (status, body) = conn.exchange(&request).await;
    assert_eq!(status, 403);
    assert_eq!(body, "acs egress: host not allowed: localhost\n");
}

#[tokio::test]
async fn stop_closes_listener_and_tunnels() {
    let echo = echo_upstream().await;
    let proxy = start(limited(&["localhost"]), TIMEOUT).await;
    let mut tunnel = Conn::open(proxy.addr).await;
    assert_eq!(tunnel.exchange(&connect(&format!("localhost:{}", echo.port()))).await.0, 200);
    let mut idle = Conn::open(proxy.addr).await;

    proxy.handle.stop();
    assert!(tunnel.closed().await, "open tunnel closed");
    assert!(idle.closed().await, "idle connection closed");
    let deadline = Instant::now() + TIMEOUT;
    while TcpStream::connect(proxy.addr).await.is_ok() {
        assert!(Instant::now() < deadline, "listener still accepting");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let records = proxy.sink.wait(1).await;
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].status, records[0].error.as_deref()), (Some(200), Some("proxy_stopped")));
}

#[tokio::test]
async fn origin_form_is_400() {
    let proxy = start(Policy { allow_all: true, ..limited(&[]) }, TIMEOUT).await;
    let (status, _) = Conn::open(proxy.addr).await.exchange("GET /hello HTTP/1.1\r\nHost: example.org\r\n\r\n").await;
    assert_eq!(status, 400);
    let records = proxy.sink.wait(1).await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].host, "example.org");
    assert_eq!((records[0].status, records[0].error.as_deref()), (Some(400), Some("bad_request")));
}

#[tokio::test]
async fn slow_request_head_is_cut_off() {
    let proxy = start(Policy { allow_all: true, ..limited(&[]) }, Duration::from_millis(300)).await;
    let mut conn = Conn::open(proxy.addr).await;
    conn.0.get_mut().write_all(b"GET http://example.org/ HTTP/1.1\r\nX-Slow: ").await.unwrap();
    let started = Instant::now();
    assert!(conn.closed().await);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(proxy.sink.wait(0).await.is_empty(), "no request, no record");
}

#[tokio::test]
async fn oversized_request_head_is_refused() {
    let proxy = start(Policy { allow_all: true, ..limited(&[]) }, TIMEOUT).await;
    let mut conn = Conn::open(proxy.addr).await;
    let request = format!("GET http://example.org/ HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(64 * 1024));
    let _ = conn.0.get_mut().write_all(request.as_bytes()).await;
    let (status, _) = tokio::time::timeout(TIMEOUT, conn.response()).await.unwrap();
    assert_eq!(status, 431);
}
