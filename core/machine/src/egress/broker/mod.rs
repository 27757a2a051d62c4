//! The egress broker: for a host with an enabled secret binding, the proxy
//! terminates the machine's TLS with a leaf of the deployment's CA (which
//! the machine trusts), adds the bound credential to each request and
//! forwards it over a verified TLS connection of its own. Every other host
//! stays an opaque tunnel. Which hosts are bound and what value each request
//! carries come from [`Credentials`], looked up per request, so a binding
//! changed while a turn runs applies to its next request.

pub mod ca;
mod chain;
mod intercept;
pub mod remote;
mod upstream;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use hyper::header::{HeaderName, HeaderValue};
use uuid::Uuid;

pub use ca::{Ca, CaError, NewCa};
pub(crate) use chain::chain;
pub(crate) use intercept::serve;
pub(crate) use upstream::Pool;
pub use upstream::upstream_tls;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the broker adds to one request.
pub struct Attachment {
    /// The binding that matched (the egress record's `service`).
    pub service: String,
    /// Names of the source keys attached (never values).
    pub credential_keys: Vec<String>,
    pub header: HeaderName,
    /// `None`: the binding's value is missing; the request is refused with
    /// 502 and `credential_missing`.
    pub value: Option<HeaderValue>,
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment")
            .field("service", &self.service)
            .field("credential_keys", &self.credential_keys)
            .field("header", &self.header)
            .field("value", &self.value.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

/// The secret bindings as the broker sees them.
pub trait Credentials: Send + Sync {
    /// Whether an enabled binding of this machine's account names `host`:
    /// its CONNECTs are intercepted, and need no `allowed_hosts` entry.
    fn binds<'a>(&'a self, sandbox_id: Uuid, host: &'a str) -> BoxFuture<'a, bool>;

    /// The credential for one request to `host`; `None` when no enabled
    /// binding names it now (the request passes unchanged).
    fn attach<'a>(&'a self, sandbox_id: Uuid, host: &'a str) -> BoxFuture<'a, Option<Attachment>>;
}

/// A broker a machine's proxy consults: which hosts are bound, the CA the
/// machine trusts, and where interception happens.
pub struct Broker {
    pub credentials: Arc<dyn Credentials>,
    /// The CA certificate machines trust, PEM.
    pub ca_pem: String,
    pub mode: Mode,
}

pub enum Mode {
    /// This process terminates TLS and forwards.
    Local { ca: Arc<Ca>, upstream: Arc<rustls::ClientConfig> },
    /// `acs broker` on another host does: bound CONNECTs are passed on to it.
    Remote(Remote),
}

/// A broker on another host (`broker.url`).
pub struct Remote {
    /// `host:port` it listens on.
    pub addr: String,
    /// The `Proxy-Authorization` bearer naming a machine to it.
    pub token: Arc<dyn Fn(Uuid) -> String + Send + Sync>,
    /// Bounds the connection and its answer to the CONNECT.
    pub timeout: std::time::Duration,
}

impl Broker {
    /// A broker that intercepts in this process.
    pub fn local(ca: Arc<Ca>, upstream: Arc<rustls::ClientConfig>, credentials: Arc<dyn Credentials>) -> Broker {
        Broker { credentials, ca_pem: ca.cert_pem().to_owned(), mode: Mode::Local { ca, upstream } }
    }
}

/// A proxy's broker, compared by identity (policies are compared to tell a
/// change).
#[derive(Clone)]
pub struct BrokerRef(pub Arc<Broker>);

impl std::fmt::Debug for BrokerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BrokerRef")
    }
}

impl PartialEq for BrokerRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for BrokerRef {}
