//! The egress broker (spec 1.5 and 5.8, DESIGN 9.5): with `features.brokerage`
//! on, every new machine trusts the deployment's CA and its egress proxy
//! intercepts the hosts the account's secret bindings name, adding the bound
//! credential outside the machine. The interception itself is
//! `acs_machine::egress::broker`; this module owns the CA store, the
//! bindings (`/api/secret-bindings`) and what a machine is started with.

pub mod bindings;
pub mod ca;
pub mod credentials;
pub mod model;
pub mod rules;
pub mod store;
pub mod token;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

use crate::egress::broker::{Broker, BrokerRef, Mode, Remote};
use crate::refusal::{BrokerDown, Refusal, Unavailable};
use crate::state::AppState;

pub use bindings::router;
pub use credentials::Bindings;

pub use crate::features::BROKERAGE;

/// How long a broker on another host has to answer (its health check, a CONNECT).
const REMOTE_TIMEOUT: Duration = Duration::from_secs(3);

/// What one server holds for brokered machines.
pub struct Service {
    bindings: Arc<Bindings>,
    upstream: Arc<rustls::ClientConfig>,
    /// `host:port` of the broker on another host (`broker.url`); `None`:
    /// this process intercepts.
    remote: Option<String>,
    /// A broker per CA, so each CA's leaves are minted once per server.
    brokers: Mutex<HashMap<Uuid, BrokerRef>>,
}

/// Builds the service into the state's slots (at start, flag on or off: it
/// may be turned on later). `serving`: this process is `acs broker` itself,
/// which intercepts whatever `broker.url` says.
pub fn start(state: &AppState, serving: bool) -> Result<(), String> {
    let cfg = &state.config().broker;
    let extra = match &cfg.upstream_ca_file {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|e| format!("broker.upstream_ca_file {path}: {e}"))?),
        None => None,
    };
    let remote = match (&cfg.url, serving) {
        (Some(url), false) => Some(remote_addr(url)?),
        _ => None,
    };
    let upstream = Arc::new(crate::egress::broker::upstream_tls(extra.as_deref())?);
    let bindings = Arc::new(Bindings::new(state));
    state.put_any(bindings.clone());
    state.put_any(Arc::new(Service { bindings, upstream, remote, brokers: Mutex::default() }));
    Ok(())
}

/// `broker.url` (`http://host:port`) as the address to dial.
fn remote_addr(url: &str) -> Result<String, String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| format!("broker.url `{url}` must start with http://"))?;
    let addr = rest.trim_end_matches('/');
    if addr.is_empty() || addr.contains('/') || !addr.contains(':') {
        return Err(format!("broker.url `{url}` must be http://host:port"));
    }
    Ok(addr.to_owned())
}

/// Whether the broker answers: always for one in this process; a broker on
/// another host must answer its health check in time.
pub async fn reachable(state: &AppState) -> Result<(), Unbrokered> {
    if !state.feature_enabled(BROKERAGE) {
        return Ok(());
    }
    let Some(addr) = state.get::<Service>().and_then(|s| s.remote.clone()) else { return Ok(()) };
    let check = async {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.map_err(|_| BrokerDown::Refused)?;
        let ask = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(ask.as_bytes()).await.map_err(|_| BrokerDown::Refused)?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await.map_err(|_| BrokerDown::Refused)?;
        if head.starts_with(b"HTTP/1.1 200") { Ok(()) } else { Err(BrokerDown::Refused) }
    };
    match tokio::time::timeout(REMOTE_TIMEOUT, check).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(down)) => Err(Unbrokered::Down(down)),
        Err(_) => Err(Unbrokered::Down(BrokerDown::Timeout)),
    }
}

/// Why a machine cannot start brokered (the `broker` stage fails with it).
#[derive(Debug, thiserror::Error)]
pub enum Unbrokered {
    #[error("the runner provider cannot enforce the network floor the broker needs")]
    Unenforceable,
    #[error("the broker did not answer ({})", .0.reason())]
    Down(BrokerDown),
    #[error("the broker is not running on this server")]
    NotStarted,
    #[error("the broker's CA: {0}")]
    Ca(String),
}

impl From<Unbrokered> for crate::error::ApiError {
    fn from(e: Unbrokered) -> Self {
        match e {
            Unbrokered::Down(down) => Refusal::Unavailable(Unavailable::Broker(down)).into(),
            other => {
                tracing::warn!("broker: {other}");
                crate::error::ApiError::internal()
            }
        }
    }
}

/// The machine a broker is asked for.
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    /// It runs on a runner (its owner's computer).
    pub on_runner: bool,
    /// The CA it trusts, if it started brokered.
    pub ca: Option<Uuid>,
}

/// The broker a machine runs with: `None` while brokerage is off. A start
/// gets the current CA; a running machine taken over after a restart
/// (`keep`) keeps the one it started with.
pub async fn for_machine(
    state: &AppState,
    machine: Machine,
    keep: bool,
) -> Result<Option<(Uuid, BrokerRef)>, Unbrokered> {
    if !state.feature_enabled(BROKERAGE) {
        return Ok(None);
    }
    if machine.on_runner {
        return Err(Unbrokered::Unenforceable);
    }
    let svc = state.get::<Service>().ok_or(Unbrokered::NotStarted)?;
    let ca_id = match machine.ca.filter(|_| keep) {
        Some(id) => id,
        None => ca::current_id(&state.db, &state.crypto).await.map_err(|e| Unbrokered::Ca(e.to_string()))?,
    };
    if let Some(broker) = svc.brokers.lock().unwrap_or_else(PoisonError::into_inner).get(&ca_id) {
        return Ok(Some((ca_id, broker.clone())));
    }
    let ca = match ca::load(&state.db, &state.crypto, ca_id).await.map_err(|e| Unbrokered::Ca(e.to_string()))? {
        Some(ca) => ca,
        None => return Err(Unbrokered::Ca(format!("{ca_id} is gone"))),
    };
    let broker = match &svc.remote {
        None => Broker::local(Arc::new(ca), svc.upstream.clone(), svc.bindings.clone()),
        Some(addr) => {
            let crypto = state.downgrade();
            let token = move |id| crypto.upgrade().and_then(|s| token::make(&s.crypto, id).ok()).unwrap_or_default();
            Broker {
                credentials: svc.bindings.clone(),
                ca_pem: ca.cert_pem().to_owned(),
                mode: Mode::Remote(Remote { addr: addr.clone(), token: Arc::new(token), timeout: REMOTE_TIMEOUT }),
            }
        }
    };
    let broker = BrokerRef(Arc::new(broker));
    let mut brokers = svc.brokers.lock().unwrap_or_else(PoisonError::into_inner);
    Ok(Some((ca_id, brokers.entry(ca_id).or_insert(broker).clone())))
}

/// Records the CA a machine trusts (`None`: it runs unbrokered).
pub async fn remember_ca(state: &AppState, sandbox_id: Uuid, ca_id: Option<Uuid>) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sandboxes SET broker_ca_id = $1 WHERE id = $2")
        .bind(ca_id.map(|id| id.to_string()))
        .bind(sandbox_id.to_string())
        .execute(&state.db.pool)
        .await?;
    Ok(())
}

/// The vault and environment keys the account's enabled bindings draw on:
/// with brokerage on they stay out of the machine's environment.
pub async fn bound_keys(state: &AppState, account_id: Uuid) -> Vec<model::Source> {
    if !state.feature_enabled(BROKERAGE) {
        return Vec::new();
    }
    match state.get::<Bindings>() {
        Some(b) => b.enabled(state, account_id).await.iter().map(|b| b.source.clone()).collect(),
        None => Vec::new(),
    }
}
