//! `acs broker`: the broker serving machines of other hosts. Their proxies
//! pass each bound CONNECT on (`chain.rs`) with a token naming the machine;
//! this server checks it ([`Admit`]), terminates TLS and forwards exactly as
//! a broker inside `acs serve` does. `GET /health` answers 200, for the
//! `broker` stage's check.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::PROXY_AUTHORIZATION;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::BoxFuture;
use crate::egress::body::{ProxyBody, empty, text};
use crate::egress::policy::Policy;
use crate::egress::proxy::{Shared, proxy_target};
use crate::egress::record::{EgressSink, PendingRecord};

/// Who a token names: the machine, and the policy its requests follow (its
/// broker included). `None` refuses the CONNECT with 407.
pub trait Admit: Send + Sync {
    fn admit<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Option<(Uuid, Arc<Policy>)>>;
}

const HEADER_WAIT: Duration = Duration::from_secs(30);
/// Machines whose upstream connections are kept; past it all are forgotten
/// at once (a gone machine's entry would otherwise stay forever).
const MAX_MACHINES: usize = 10_000;

struct Server {
    admit: Arc<dyn Admit>,
    sink: Arc<dyn EgressSink>,
    request_timeout: Duration,
    stopped: CancellationToken,
    /// Per machine, so its upstream connections are kept between requests.
    machines: Mutex<HashMap<Uuid, Arc<Shared>>>,
}

/// Serves until `stopped` is cancelled.
pub async fn serve(
    listener: TcpListener,
    admit: Arc<dyn Admit>,
    sink: Arc<dyn EgressSink>,
    request_timeout: Duration,
    stopped: CancellationToken,
) {
    let server =
        Arc::new(Server { admit, sink, request_timeout, stopped: stopped.clone(), machines: Mutex::default() });
    loop {
        let accepted = tokio::select! {
            _ = stopped.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::debug!("broker accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("broker connection: {e}");
        }
        let server = server.clone();
        tokio::spawn(async move {
            let stopped = server.stopped.clone();
            let service = service_fn(move |req| {
                let server = server.clone();
                async move { Ok::<_, Infallible>(server.handle(req).await) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_WAIT)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                _ = connection => {}
                _ = stopped.cancelled() => {}
            }
        });
    }
}

fn answer(status: StatusCode, message: &str) -> Response<ProxyBody> {
    let mut response = Response::new(text(format!("acs broker: {message}\n")));
    *response.status_mut() = status;
    response
}

impl Server {
    async fn handle(&self, req: Request<Incoming>) -> Response<ProxyBody> {
        if req.method() == Method::GET && req.uri().path() == "/health" {
            return answer(StatusCode::OK, "ok");
        }
        let Some(target) = proxy_target(&req).filter(|_| req.method() == Method::CONNECT) else {
            return answer(StatusCode::BAD_REQUEST, "only CONNECT from an acs egress proxy");
        };
        let token = req
            .headers()
            .get(PROXY_AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default()
            .to_owned();
        let Some((sandbox_id, policy)) = self.admit.admit(&token).await else {
            return answer(StatusCode::PROXY_AUTHENTICATION_REQUIRED, "no machine by that token");
        };
        let Some(broker) = policy.broker.as_ref().map(|b| b.0.clone()) else {
            return answer(StatusCode::FORBIDDEN, "the machine is not brokered");
        };
        let shared = self.machine(sandbox_id, &policy);
        let connect =
            PendingRecord::start(self.sink.clone(), sandbox_id, "CONNECT", target.to_string(), self.stopped.clone());
        tokio::spawn(async move {
            match hyper::upgrade::on(req).await {
                Ok(upgraded) => super::serve(TokioIo::new(upgraded), shared, policy, broker, target, connect).await,
                Err(_) => connect.finish(Some("client_closed")),
            }
        });
        Response::new(empty())
    }

    fn machine(&self, sandbox_id: Uuid, policy: &Arc<Policy>) -> Arc<Shared> {
        let mut machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
        if machines.len() >= MAX_MACHINES && !machines.contains_key(&sandbox_id) {
            // Their pools' connections close with the upstream; new requests open new ones.
            machines.clear();
        }
        machines
            .entry(sandbox_id)
            .or_insert_with(|| {
                Arc::new(Shared::new(
                    sandbox_id,
                    policy.clone(),
                    self.sink.clone(),
                    self.request_timeout,
                    self.stopped.child_token(),
                ))
            })
            .clone()
    }
}
