//! `acs broker`: this deployment's broker on a host of its own. It shares
//! the database and the master key with the servers; their machines' proxies
//! pass bound CONNECTs to it with a token naming the machine
//! (`broker/token.rs`). It lives here, above the broker, because it writes
//! the machines' egress log.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use uuid::Uuid;

use crate::egress::Policy;
use crate::egress::broker::BoxFuture;
use crate::egress::broker::remote::{self, Admit};
use crate::state::{AppState, WeakState};

struct Machines(WeakState);

impl Admit for Machines {
    fn admit<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Option<(Uuid, Arc<Policy>)>> {
        Box::pin(async move {
            let state = self.0.upgrade()?;
            let id = crate::broker::token::check(&state.crypto, token)?;
            let row = match super::store::get(&state.db, id).await {
                Ok(row) => row?,
                Err(e) => {
                    tracing::warn!(sandbox = %id, "broker: the machine was not read: {e}");
                    return None;
                }
            };
            let broker = match crate::broker::for_machine(&state, super::broker_machine(&row), true).await {
                Ok(Some((_, broker))) => broker,
                Ok(None) => return None,
                Err(e) => {
                    tracing::warn!(sandbox = %id, "broker: {e}");
                    return None;
                }
            };
            let cfg = &state.config().sandbox;
            let overrides = super::host_overrides(&cfg.host_overrides).ok()?;
            // Only bound hosts come here, and those need no allowed-hosts entry; where the
            // broker may connect is the deployment's address rules.
            let policy = Policy {
                allow_all: false,
                allowed_hosts: Vec::new(),
                always_allowed: Vec::new(),
                addresses: crate::blocklist::AddressRules::blocking(cfg.blocked_cidrs.clone()),
                aliases: Vec::new(),
                overrides,
                hooks: state.extensions.egress.clone(),
                broker: Some(broker),
            };
            Some((id, Arc::new(policy)))
        })
    }
}

/// Serves the broker on `listener` until the state shuts down.
pub async fn run(state: AppState, listener: TcpListener) -> Result<(), String> {
    crate::broker::start(&state, true)?;
    let sink = Arc::new(super::egress_log::DbSink::start(state.clone()));
    let timeout = Duration::from_secs(state.config().sandbox.egress_timeout_seconds);
    let admit = Arc::new(Machines(state.downgrade()));
    remote::serve(listener, admit, sink, timeout, state.shutdown.clone()).await;
    Ok(())
}
