//! CONNECT: dial the checked address, answer 200, then relay bytes both ways
//! until either side closes. No TLS interception.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;

use super::body::{ProxyBody, empty};
use super::dial::dial;
use super::policy::Policy;
use super::proxy::Shared;
use super::record::PendingRecord;
use super::refusal::Refusal;
use super::target::Target;

pub(crate) async fn open(
    shared: &Shared,
    policy: &Policy,
    target: &Target,
    req: Request<Incoming>,
    mut pending: PendingRecord,
    slot: Arc<OwnedSemaphorePermit>,
) -> Response<ProxyBody> {
    let dialed = tokio::time::timeout(shared.request_timeout, dial(policy, target))
        .await
        .unwrap_or(Err(Refusal::RequestTimeout));
    let upstream = match dialed {
        Ok(upstream) => upstream,
        Err(refusal) => return refusal.respond(Some(target), pending),
    };
    pending.set_status(200);
    let stopped = shared.stopped.clone();
    // The tunnel outlives the HTTP connection task, so it holds the connection's slot.
    tokio::spawn(async move {
        let _slot = slot;
        tokio::select! {
            ended = relay(req, upstream) => pending.finish(ended.err()),
            _ = stopped.cancelled() => drop(pending),
        }
    });
    Response::new(empty())
}

async fn relay(req: Request<Incoming>, mut upstream: TcpStream) -> Result<(), &'static str> {
    let upgraded = hyper::upgrade::on(req).await.map_err(|_| "client_closed")?;
    let mut client = TokioIo::new(upgraded);
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await.map(drop).map_err(|_| "connection_reset")
}

/// CONNECT to a bound host: answer 200, then hand the upgraded connection to
/// the broker, which terminates its TLS.
pub(crate) async fn intercept(
    shared: &Arc<Shared>,
    policy: &Arc<Policy>,
    target: Target,
    req: Request<Incoming>,
    pending: PendingRecord,
    slot: Arc<OwnedSemaphorePermit>,
) -> Response<ProxyBody> {
    let Some(broker) = policy.broker.as_ref().map(|b| b.0.clone()) else {
        return Refusal::BadRequest.respond(Some(&target), pending);
    };
    if let super::broker::Mode::Remote(remote) = &broker.mode {
        return super::broker::chain(shared, remote, target, req, pending, slot).await;
    }
    let (shared, policy) = (shared.clone(), policy.clone());
    tokio::spawn(async move {
        let _slot = slot;
        match hyper::upgrade::on(req).await {
            Ok(upgraded) => {
                super::broker::serve(TokioIo::new(upgraded), shared, policy, broker, target, pending).await;
            }
            Err(_) => pending.finish(Some("client_closed")),
        }
    });
    Response::new(empty())
}
