//! A webhook receiver for the tests: a real HTTP server on `127.0.0.1:0`
//! (or another local address) that records every request it gets, raw
//! body bytes, headers and arrival time, and answers as the test planned:
//! queued replies first (one per request, in arrival order), then a
//! function of the request when one is set, then the default reply (200).
//! A reply may wait before answering, or hold until the test releases it.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    /// Path and query, e.g. `/hook`.
    pub path: String,
    pub headers: HeaderMap,
    /// The body exactly as sent.
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body parsed as JSON (panics when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("webhook body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// `Service-Event-Id`.
    pub fn event_id(&self) -> String {
        self.header("service-event-id").unwrap_or_default().to_owned()
    }

    /// `Service-Event-Type`.
    pub fn event_type(&self) -> String {
        self.header("service-event-type").unwrap_or_default().to_owned()
    }

    /// `Service-Delivery-Attempt` (0 when absent or not a number).
    pub fn attempt(&self) -> u32 {
        self.header("service-delivery-attempt").and_then(|a| a.parse().ok()).unwrap_or(0)
    }

    /// `Service-Signature`.
    pub fn signature(&self) -> String {
        self.header("service-signature").unwrap_or_default().to_owned()
    }
}

/// How to answer one request.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Wait this long before answering.
    pub delay: Option<Duration>,
    /// Answer only once the test calls `Receiver::release`.
    pub hold: bool,
}

impl Reply {
    pub fn status(status: u16) -> Reply {
        Reply { status, headers: Vec::new(), body: Vec::new(), delay: None, hold: false }
    }

    pub fn ok() -> Reply {
        Reply::status(200)
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Reply {
        self.body = body.into();
        self
    }

    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = Some(delay);
        self
    }

    /// Holds the answer until `Receiver::release` (then answers as planned).
    pub fn held(mut self) -> Reply {
        self.hold = true;
        self
    }
}

type Responder = Box<dyn Fn(&Received) -> Reply + Send + Sync>;

struct Inner {
    log: Mutex<Vec<Received>>,
    queue: Mutex<VecDeque<Reply>>,
    responder: Mutex<Option<Responder>>,
    default: Mutex<Reply>,
    released: tokio::sync::watch::Sender<bool>,
}

/// The running receiver; stops when dropped.
pub struct Receiver {
    pub addr: SocketAddr,
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.inner.released.send(true);
        self.task.abort();
    }
}

/// How long the wait helpers wait by default.
pub const WAIT: Duration = Duration::from_secs(30);

impl Receiver {
    /// A receiver on `127.0.0.1`, a free port.
    pub async fn start() -> Receiver {
        Receiver::bind("127.0.0.1:0".parse().unwrap()).await.expect("binding 127.0.0.1:0")
    }

    /// A receiver on `addr` (e.g. `[::1]:0`); an error when it cannot be bound.
    pub async fn bind(addr: SocketAddr) -> std::io::Result<Receiver> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let inner = Arc::new(Inner {
            log: Mutex::new(Vec::new()),
            queue: Mutex::new(VecDeque::new()),
            responder: Mutex::new(None),
            default: Mutex::new(Reply::ok()),
            released: tokio::sync::watch::channel(false).0,
        });
        let app = axum::Router::new().fallback(handle).with_state(inner.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Receiver { addr, inner, task })
    }

    /// `http://<addr><path>`, e.g. `url("/hook")`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Queues replies, used one per request in arrival order before anything else.
    pub fn plan(&self, replies: impl IntoIterator<Item = Reply>) {
        self.inner.queue.lock().unwrap().extend(replies);
    }

    /// Answers with `f(request)` once the queue is empty (replaces any earlier function).
    pub fn respond_with(&self, f: impl Fn(&Received) -> Reply + Send + Sync + 'static) {
        *self.inner.responder.lock().unwrap() = Some(Box::new(f));
    }

    /// The reply when neither the queue nor a function decides (200 at first).
    pub fn set_default(&self, reply: Reply) {
        *self.inner.responder.lock().unwrap() = None;
        *self.inner.default.lock().unwrap() = reply;
    }

    /// Lets every held reply (and any held later) answer.
    pub fn release(&self) {
        let _ = self.inner.released.send(true);
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Received> {
        self.inner.log.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.inner.log.lock().unwrap().len()
    }

    /// Waits until `done(requests)` holds; returns the requests then. Panics at `within`.
    pub async fn wait_until(&self, what: &str, within: Duration, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.requests();
            if done(&got) {
                return got;
            }
            if Instant::now() > deadline {
                let seen: Vec<String> = got
                    .iter()
                    .map(|r| {
                        let ago = r.at.elapsed();
                        format!("{} {} {} #{} ({ago:?} ago)", r.path, r.event_type(), r.event_id(), r.attempt())
                    })
                    .collect();
                panic!("receiver {}: waited {within:?} for {what}; got {} request(s): {seen:#?}", self.addr, got.len());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until at least `n` requests arrived; returns all of them.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        self.wait_until(&format!("{n} request(s)"), WAIT, |r| r.len() >= n).await
    }

    /// Waits for a request matching `pred`; returns it.
    pub async fn wait_for_one(&self, what: &str, pred: impl Fn(&Received) -> bool) -> Received {
        let got = self.wait_until(what, WAIT, |r| r.iter().any(&pred)).await;
        got.into_iter().find(|r| pred(r)).unwrap()
    }
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = Received {
        method: method.to_string(),
        path: uri.path_and_query().map(|p| p.to_string()).unwrap_or_else(|| uri.path().to_owned()),
        headers,
        body: body.to_vec(),
        at: Instant::now(),
    };
    let queued = inner.queue.lock().unwrap().pop_front();
    let reply = match queued {
        Some(r) => r,
        None => match inner.responder.lock().unwrap().as_ref() {
            Some(f) => f(&received),
            None => inner.default.lock().unwrap().clone(),
        },
    };
    // Recorded before any delay or hold: arrival is what the tests look at.
    inner.log.lock().unwrap().push(received);
    if reply.hold {
        let mut released = inner.released.subscribe();
        let _ = released.wait_for(|r| *r).await;
    }
    if let Some(d) = reply.delay {
        tokio::time::sleep(d).await;
    }
    let mut headers = HeaderMap::new();
    for (k, v) in &reply.headers {
        headers.insert(HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
    }
    (StatusCode::from_u16(reply.status).unwrap(), headers, reply.body).into_response()
}
