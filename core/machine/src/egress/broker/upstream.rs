//! The broker's side toward upstreams: verified TLS (the system's roots plus
//! an operator's bundle), HTTP/2 when the upstream offers it, and connections
//! kept per destination so a request does not pay for a handshake.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio_util::sync::CancellationToken;

use crate::egress::dial::dial;
use crate::egress::policy::Policy;
use crate::egress::refusal::Refusal;
use crate::egress::target::Target;

/// Idle connections kept per destination.
const MAX_IDLE: usize = 8;

/// The client TLS configuration for upstreams: the system's roots plus the
/// PEM bundle `extra` (`broker.upstream_ca_file`). ALPN offers HTTP/2 and 1.1.
pub fn upstream_tls(extra: Option<&str>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        // A system bundle may hold a certificate rustls cannot parse; the others still count.
        if let Err(e) = roots.add(cert) {
            tracing::debug!("a system root certificate was skipped: {e}");
        }
    }
    if let Some(pem) = extra {
        let certs: Vec<CertificateDer> = CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("broker.upstream_ca_file: {e}"))?;
        if certs.is_empty() {
            return Err("broker.upstream_ca_file holds no certificate".into());
        }
        for cert in certs {
            roots.add(cert).map_err(|e| format!("broker.upstream_ca_file: {e}"))?;
        }
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

enum Sender {
    /// Taken out of the pool while it carries a request.
    H1(hyper::client::conn::http1::SendRequest<Incoming>),
    /// Multiplexed: stays in the pool, shared.
    H2(hyper::client::conn::http2::SendRequest<Incoming>),
}

/// Kept upstream connections of one proxy, by destination.
#[derive(Default)]
pub(crate) struct Pool(Mutex<HashMap<String, Vec<Sender>>>);

impl Pool {
    /// Sends `req` to `target` on a kept connection, or a new one.
    pub(crate) async fn send(
        &self,
        policy: &Policy,
        tls: &Arc<rustls::ClientConfig>,
        target: &Target,
        stopped: &CancellationToken,
        req: Request<Incoming>,
    ) -> Result<Response<Incoming>, Refusal> {
        let key = target.to_string();
        let sender = match self.take(&key) {
            Some(sender) => sender,
            None => connect(policy, tls, target, stopped).await?,
        };
        match sender {
            Sender::H2(mut h2) => {
                self.put(&key, Sender::H2(h2.clone()));
                h2.send_request(h2_form(req, target)).await.map_err(|_| Refusal::UpstreamClosed)
            }
            Sender::H1(mut h1) => {
                let answer = h1.send_request(req).await.map_err(|_| Refusal::UpstreamClosed);
                // Ready again once this response's body is read; `take` checks.
                self.put(&key, Sender::H1(h1));
                answer
            }
        }
    }

    fn take(&self, key: &str) -> Option<Sender> {
        let mut pool = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = pool.get_mut(key)?;
        idle.retain(|s| match s {
            Sender::H2(h2) => !h2.is_closed(),
            Sender::H1(h1) => !h1.is_closed(),
        });
        for sender in idle.iter() {
            if let Sender::H2(h2) = sender {
                return Some(Sender::H2(h2.clone()));
            }
        }
        let ready = idle.iter().position(|s| matches!(s, Sender::H1(h1) if h1.is_ready()))?;
        Some(idle.swap_remove(ready))
    }

    fn put(&self, key: &str, sender: Sender) {
        let mut pool = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = pool.entry(key.to_owned()).or_default();
        if matches!(sender, Sender::H2(_)) && idle.iter().any(|s| matches!(s, Sender::H2(_))) {
            return;
        }
        if idle.len() < MAX_IDLE {
            idle.push(sender);
        }
    }
}

/// HTTP/2 names the destination in the URI (`:scheme`, `:authority`), not in `Host`.
fn h2_form(req: Request<Incoming>, target: &Target) -> Request<Incoming> {
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    if let Ok(uri) = format!("https://{}{path}", target.https_authority()).parse() {
        parts.uri = uri;
    }
    parts.version = hyper::Version::HTTP_2;
    parts.headers.remove(hyper::header::HOST);
    Request::from_parts(parts, body)
}

async fn connect(
    policy: &Policy,
    tls: &Arc<rustls::ClientConfig>,
    target: &Target,
    stopped: &CancellationToken,
) -> Result<Sender, Refusal> {
    let tcp = dial(policy, target).await?;
    let name = match target.ip() {
        Some(ip) => ServerName::IpAddress(ip.into()),
        None => ServerName::try_from(target.host().to_owned()).map_err(|_| Refusal::HostUnresolved)?,
    };
    let stream = tokio_rustls::TlsConnector::from(tls.clone()).connect(name, tcp).await.map_err(|e| {
        tracing::debug!(host = %target, "upstream TLS failed: {e}");
        Refusal::UpstreamTls
    })?;
    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    let io = TokioIo::new(stream);
    let stopped = stopped.clone();
    if h2 {
        let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|_| Refusal::UpstreamUnreachable)?;
        tokio::spawn(async move {
            tokio::select! {
                _ = conn => {}
                _ = stopped.cancelled() => {}
            }
        });
        Ok(Sender::H2(sender))
    } else {
        let (sender, conn) =
            hyper::client::conn::http1::handshake(io).await.map_err(|_| Refusal::UpstreamUnreachable)?;
        tokio::spawn(async move {
            tokio::select! {
                _ = conn => {}
                _ = stopped.cancelled() => {}
            }
        });
        Ok(Sender::H1(sender))
    }
}
