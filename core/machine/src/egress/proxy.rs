//! The proxy server of one sandbox: accepts connections on its listener,
//! parses HTTP/1.1 with bounded headers and a header deadline, and hands each
//! request to the decision step.

use std::convert::Infallible;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::HOST;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::body::ProxyBody;
use super::decide::{Decision, decide};
use super::forward::forward;
use super::policy::Policy;
use super::record::{EgressSink, PendingRecord};
use super::refusal::Refusal;
use super::target::Target;
use super::tunnel;

/// Open client connections (tunnels included) per proxy; more wait in the listen backlog.
const MAX_CONNECTIONS: usize = 256;
const MAX_HEADER_BYTES: usize = 32 * 1024;
/// Read buffer per connection: room for a full head plus some body.
const MAX_READ_BUFFER: usize = 2 * MAX_HEADER_BYTES;
const MAX_HEADERS: usize = 100;
/// Longest wait for a request head, also between keep-alive requests.
const MAX_HEADER_WAIT: Duration = Duration::from_secs(30);
/// Pause after a failed accept (such as too many open files) so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// State every request of one proxy reads.
pub(crate) struct Shared {
    pub(crate) sandbox_id: Uuid,
    policy: RwLock<Arc<Policy>>,
    pub(crate) sink: Arc<dyn EgressSink>,
    /// Kept upstream connections of intercepted requests.
    pub(crate) pool: super::broker::Pool,
    pub(crate) request_timeout: Duration,
    pub(crate) stopped: CancellationToken,
}

impl Shared {
    pub(crate) fn new(
        sandbox_id: Uuid,
        policy: Arc<Policy>,
        sink: Arc<dyn EgressSink>,
        request_timeout: Duration,
        stopped: CancellationToken,
    ) -> Shared {
        Shared { sandbox_id, policy: RwLock::new(policy), sink, pool: Default::default(), request_timeout, stopped }
    }

    fn policy(&self) -> Arc<Policy> {
        self.policy.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Controls a running proxy. Dropping it stops the proxy.
pub struct ProxyHandle {
    shared: Arc<Shared>,
}

impl ProxyHandle {
    /// Applies to requests that start after the call; open tunnels and requests already
    /// under way keep the decision they got.
    pub fn set_policy(&self, policy: Policy) {
        *self.shared.policy.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
    }

    /// Closes the listener and every open connection and tunnel of this proxy.
    pub fn stop(&self) {
        self.shared.stopped.cancel();
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Serves the proxy on `listener` until stopped. Must be called inside a Tokio runtime.
/// `request_timeout` bounds resolving, connecting and waiting for the response head; it also
/// bounds reading a request head (at most 30 s).
pub fn spawn(
    listener: TcpListener,
    sandbox_id: Uuid,
    policy: Policy,
    sink: Arc<dyn EgressSink>,
    request_timeout: Duration,
) -> ProxyHandle {
    let shared = Arc::new(Shared::new(sandbox_id, Arc::new(policy), sink, request_timeout, CancellationToken::new()));
    tokio::spawn(accept_loop(listener, shared.clone()));
    ProxyHandle { shared }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            _ = shared.stopped.cancelled() => return,
            accepted = accept(&listener, &slots) => accepted,
        };
        match accepted {
            Ok((stream, slot)) => {
                tokio::spawn(serve_connection(stream, shared.clone(), slot));
            }
            Err(error) => {
                tracing::debug!(sandbox_id = %shared.sandbox_id, %error, "egress proxy accept failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

async fn accept(listener: &TcpListener, slots: &Arc<Semaphore>) -> std::io::Result<(TcpStream, OwnedSemaphorePermit)> {
    // The semaphore is never closed, so acquiring only waits.
    let slot = slots.clone().acquire_owned().await.map_err(std::io::Error::other)?;
    let (stream, _) = listener.accept().await?;
    let _ = stream.set_nodelay(true);
    Ok((stream, slot))
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>, slot: OwnedSemaphorePermit) {
    let slot = Arc::new(slot);
    let stopped = shared.stopped.clone();
    let header_wait = shared.request_timeout.min(MAX_HEADER_WAIT);
    let service = service_fn(move |req| handle(req, shared.clone(), slot.clone()));
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_wait)
        .max_headers(MAX_HEADERS)
        .max_buf_size(MAX_READ_BUFFER)
        .max_header_size(MAX_HEADER_BYTES)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::select! {
        _ = connection => {}
        _ = stopped.cancelled() => {}
    }
}

async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    slot: Arc<OwnedSemaphorePermit>,
) -> Result<Response<ProxyBody>, Infallible> {
    let target = proxy_target(&req);
    let host = target.as_ref().map_or_else(|| claimed_host(&req), Target::to_string);
    let pending = PendingRecord::start(
        shared.sink.clone(),
        shared.sandbox_id,
        req.method().as_str(),
        host,
        shared.stopped.clone(),
    );
    let Some(target) = target else {
        return Ok(Refusal::BadRequest.respond(None, pending));
    };
    let policy = shared.policy();
    let bound = match &policy.broker {
        Some(broker) if req.method() == Method::CONNECT => {
            broker.0.credentials.binds(shared.sandbox_id, target.host()).await
        }
        _ => false,
    };
    let response = match decide(&policy, shared.sandbox_id, req.method(), &target, bound) {
        Decision::Refuse(refusal) => refusal.respond(Some(&target), pending),
        Decision::Forward => forward(&shared, &policy, &target, req, pending).await,
        Decision::Tunnel => tunnel::open(&shared, &policy, &target, req, pending, slot).await,
        Decision::Intercept => tunnel::intercept(&shared, &policy, target, req, pending, slot).await,
    };
    Ok(response)
}

/// The destination of a proxy request: `CONNECT host:port`, or an absolute `http://` URI.
/// `None` for origin-form requests and other schemes.
pub(crate) fn proxy_target<B>(req: &Request<B>) -> Option<Target> {
    let uri = req.uri();
    // Userinfo is never forwarded and is not part of the destination.
    let authority = uri.authority()?.as_str().rsplit('@').next()?;
    if req.method() == Method::CONNECT {
        uri.scheme().is_none().then(|| Target::parse(authority, None))?
    } else {
        (uri.scheme_str() == Some("http")).then(|| Target::parse(authority, Some(80)))?
    }
}

/// For the record of a request that named no destination: its `Host` header, if short.
fn claimed_host<B>(req: &Request<B>) -> String {
    let host = req.headers().get(HOST).and_then(|value| value.to_str().ok()).unwrap_or_default();
    if host.len() <= 255 { host.to_owned() } else { String::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target_of(method: Method, uri: &str) -> Option<String> {
        let req = Request::builder().method(method).uri(uri).body(()).unwrap();
        proxy_target(&req).map(|t| t.to_string())
    }

    #[test]
    fn proxy_targets() {
        assert_eq!(target_of(Method::GET, "http://Example.com/x").as_deref(), Some("example.com:80"));
        assert_eq!(target_of(Method::GET, "http://u:p@example.com:8080/").as_deref(), Some("example.com:8080"));
        assert_eq!(target_of(Method::GET, "http://[::1]:81/").as_deref(), Some("[::1]:81"));
        assert_eq!(target_of(Method::CONNECT, "example.com:443").as_deref(), Some("example.com:443"));
        assert_eq!(target_of(Method::CONNECT, "example.com").as_deref(), None);
        assert_eq!(target_of(Method::GET, "/path").as_deref(), None);
        assert_eq!(target_of(Method::GET, "https://example.com/").as_deref(), None);
        assert_eq!(target_of(Method::GET, "ftp://example.com/").as_deref(), None);
    }
}
