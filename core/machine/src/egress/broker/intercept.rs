//! One intercepted CONNECT: TLS terminated with the CA's leaf for the host
//! the machine named, HTTP/1.1 or HTTP/2 served on it, each request given
//! its credential and sent upstream, each answer streamed back as it comes
//! (server-sent events are never buffered). One egress record per request.

use std::convert::Infallible;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::{Broker, Mode};
use crate::egress::body::{ProxyBody, RecordedBody};
use crate::egress::forward::upstream_request;
use crate::egress::headers::strip_hop_by_hop;
use crate::egress::policy::Policy;
use crate::egress::proxy::Shared;
use crate::egress::record::PendingRecord;
use crate::egress::refusal::Refusal;
use crate::egress::target::Target;

/// What every request of one intercepted connection reads.
struct Conn {
    shared: Arc<Shared>,
    policy: Arc<Policy>,
    broker: Arc<Broker>,
    upstream: Arc<rustls::ClientConfig>,
    target: Target,
}

/// Serves the machine's side of an intercepted CONNECT until either side
/// closes. `connect` is the CONNECT's own record: it ends here, successful
/// once the TLS handshake passed (each request then has its own).
pub(crate) async fn serve<IO>(
    io: IO,
    shared: Arc<Shared>,
    policy: Arc<Policy>,
    broker: Arc<Broker>,
    target: Target,
    connect: PendingRecord,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Mode::Local { ca, upstream } = &broker.mode else {
        return connect.finish(Some("broker_tls"));
    };
    let upstream = upstream.clone();
    let config = match ca.server_config(target.host()) {
        Ok(config) => config,
        Err(e) => {
            tracing::warn!(host = %target, "broker leaf certificate: {e}");
            return connect.finish(Some("broker_tls"));
        }
    };
    let tls = match tokio_rustls::TlsAcceptor::from(config).accept(io).await {
        Ok(tls) => tls,
        // Most often the client does not trust the CA (a machine started without it).
        Err(_) => return connect.finish(Some("client_tls")),
    };
    connect.discard();
    let stopped = shared.stopped.clone();
    let conn = Arc::new(Conn { shared, policy, broker, upstream, target });
    let service = service_fn(move |req| {
        let conn = conn.clone();
        async move { Ok::<_, Infallible>(handle(&conn, req).await) }
    });
    let served = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(tls), service)
        .into_owned();
    tokio::select! {
        _ = served => {}
        _ = stopped.cancelled() => {}
    }
}

async fn handle(conn: &Conn, req: Request<Incoming>) -> Response<ProxyBody> {
    let shared = &conn.shared;
    let mut pending = PendingRecord::start(
        shared.sink.clone(),
        shared.sandbox_id,
        req.method().as_str(),
        conn.target.to_string(),
        shared.stopped.clone(),
    );
    // Origin-form HTTP/1.1 shape (the pool makes it HTTP/2 when the upstream speaks that),
    // `Host` naming the CONNECT's destination whatever the machine wrote.
    let mut req = upstream_request(req, &conn.target.https_authority());
    if let Some(attachment) = conn.broker.credentials.attach(shared.sandbox_id, conn.target.host()).await {
        pending.set_service(attachment.service, attachment.credential_keys);
        let Some(value) = attachment.value else {
            return Refusal::CredentialMissing.respond(Some(&conn.target), pending);
        };
        // Whatever the machine put in this header is replaced, never merged.
        let headers = req.headers_mut();
        headers.remove(&attachment.header);
        headers.insert(attachment.header, value);
    }
    let sent = shared.pool.send(&conn.policy, &conn.upstream, &conn.target, &shared.stopped, req);
    match tokio::time::timeout(shared.request_timeout, sent).await.unwrap_or(Err(Refusal::RequestTimeout)) {
        Ok(response) => {
            pending.set_status(response.status().as_u16());
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, http_body_util::Either::Right(RecordedBody::new(body, pending)))
        }
        Err(refusal) => refusal.respond(Some(&conn.target), pending),
    }
}
