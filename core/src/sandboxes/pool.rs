//! Warm pools (docs/scale.md, "Warm pools"): machines built ahead of demand
//! for one account's selection (`[[sandbox.warm_pools]]`), each with the
//! pool's agent process started by the layer above ([`PoolHooks`]), taken by
//! the next conversation whose selection they match.
//!
//! A pool belongs to one account. Its machines are built from that account's
//! environment and vault, with that account's callback key, exactly as a
//! launch would build them; a claim only moves a machine from the pool to a
//! conversation of the same account. No machine ever changes tenant, so
//! nothing of one account can reach another through a pool.
//!
//! Each server keeps its own pools of the machines it serves. A pooled
//! machine holds a place in the fleet (not in its account's ceiling) and is
//! not metered until claimed; a start refused at the fleet's ceiling takes a
//! place back from the pools first ([`give_back_one`]).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;
use uuid::Uuid;

use super::capacity::{self, Place};
use super::model::SandboxRow;
use super::service::{self, LaunchRequest, Sandboxes};
use super::{names, store};
use crate::agents::{Agent, MachineProvider, SandboxMode};
use crate::boxed::BoxFuture;
use crate::config::WarmPoolConfig;
use crate::environments::{self, Environment};
use crate::error::{ApiError, ApiResult};
use crate::events::{self, StageState};
use crate::state::AppState;

/// What the layer above does for pooled machines: `warm` starts the pool's
/// agent in one just built (the machine may be claimed once it returns);
/// `retired` forgets what it keeps for a machine that is gone (reclaimed in
/// its pool, or after a claim before any turn took the agent).
pub struct PoolHooks {
    pub warm: for<'a> fn(&'a AppState, &'a SandboxRow, &'a Agent) -> BoxFuture<'a, ()>,
    pub retired: fn(&AppState, Uuid),
}

/// This server's pools: what it built, and when each pool was last asked for.
#[derive(Default)]
struct Pools {
    built: Mutex<HashSet<Uuid>>,
    activity: Mutex<HashMap<String, Activity>>,
    wake: tokio::sync::Notify,
}

struct Activity {
    /// The last claim from the pool, or the last miss that wanted one.
    asked: Instant,
    /// An idle pool gave its machines back; a miss wants it again.
    wanted: bool,
    claims: u64,
    misses: u64,
    /// A machine of the pool failed to build: no new one before then.
    backoff_until: Option<Instant>,
}

impl Default for Activity {
    fn default() -> Self {
        Activity { asked: Instant::now(), wanted: true, claims: 0, misses: 0, backoff_until: None }
    }
}

/// How long the keeper waits after a claim before it builds the replacement.
const REFILL_DELAY: Duration = Duration::from_millis(500);

/// How long a pool waits after a machine of it failed to build.
const BUILD_FAILED_BACKOFF: Duration = Duration::from_secs(30);

fn pools(state: &AppState) -> Arc<Pools> {
    state.get_or_put(Pools::default)
}

impl Pools {
    fn with<T>(&self, pool: &str, f: impl FnOnce(&mut Activity) -> T) -> T {
        let mut all = self.activity.lock().unwrap_or_else(PoisonError::into_inner);
        f(all.entry(pool.to_owned()).or_default())
    }
}

/// The selection a pool's machines are built with: its agent's, now.
struct Selection {
    agent: Agent,
    env: Option<Environment>,
}

impl Selection {
    fn matches(&self, m: &store::Pooled) -> bool {
        m.environment_id == self.env.as_ref().map(|e| e.id)
            && m.fingerprint.as_deref() == self.env.as_ref().map(|e| e.build_fingerprint.as_str())
            && m.vault_id == self.agent.spec.vault_id
    }
}

async fn selection(state: &AppState, pool: &WarmPoolConfig) -> ApiResult<Selection> {
    let agent = crate::agents::get_agent(state, pool.account_id, pool.agent_id).await?;
    if agent.spec.sandbox_mode == SandboxMode::Persistent || agent.spec.provider == Some(MachineProvider::Runner) {
        return Err(ApiError::invalid(
            "warm_pool_agent",
            "a warm pool's agent runs on fresh ephemeral machines of this server, not a home or a runner",
        ));
    }
    let env = match agent.spec.environment_id {
        Some(id) => Some(environments::get_environment(state, pool.account_id, id).await?),
        None => None,
    };
    Ok(Selection { agent, env })
}

/// Keeps every configured pool at its size on this server, empties idle ones,
/// and retires pooled machines nothing here knows (an earlier run's, a pool
/// no longer configured, a selection that changed since they were built).
pub async fn worker(state: AppState) {
    let configured = state.config().sandbox.warm_pools.clone();
    let Ok(svc) = service::service(&state) else { return };
    let me = pools(&state);
    loop {
        tend(&state, &svc, &me, &configured).await;
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            // After a claim, its conversation's first turn goes first: a build beside it on two
            // cores (and the database's one writer) would delay the turn the pool exists to speed.
            _ = me.wake.notified() => tokio::time::sleep(REFILL_DELAY).await,
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
        }
    }
}

async fn tend(state: &AppState, svc: &Sandboxes, me: &Pools, configured: &[WarmPoolConfig]) {
    let here = match store::pooled_here(&state.db, state.events.server()).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!("warm pools not read: {e}");
            return;
        }
    };
    let mut by_pool: HashMap<&str, Vec<&store::Pooled>> = HashMap::new();
    for m in &here {
        let known = me.built.lock().unwrap_or_else(PoisonError::into_inner).contains(&m.id);
        match configured.iter().find(|p| p.name == m.pool) {
            Some(p) if known => by_pool.entry(p.name.as_str()).or_default().push(m),
            _ => {
                retire(state, m).await;
            }
        }
    }
    for pool in configured {
        let live = by_pool.remove(pool.name.as_str()).unwrap_or_default();
        let idle = Duration::from_secs(pool.idle_seconds);
        let (wanted, asked) = me.with(&pool.name, |a| (a.wanted, a.asked));
        if asked.elapsed() >= idle {
            if wanted {
                tracing::info!(pool = %pool.name, "warm pool idle: its machines go");
                me.with(&pool.name, |a| a.wanted = false);
            }
            for m in &live {
                retire(state, m).await;
            }
            continue;
        }
        if me.with(&pool.name, |a| a.backoff_until.is_some_and(|t| Instant::now() < t)) {
            continue;
        }
        let sel = match selection(state, pool).await {
            Ok(sel) => sel,
            Err(e) => {
                tracing::warn!(pool = %pool.name, "warm pool not filled: {}", service::reason(e));
                continue;
            }
        };
        let mut kept = 0;
        for m in &live {
            if sel.matches(m) {
                kept += 1;
            } else {
                retire(state, m).await;
            }
        }
        for _ in kept..pool.size as usize {
            // A server on its way out builds nothing more (a machine outlives its server).
            if state.shutdown.is_cancelled() {
                return;
            }
            if let Err(e) = fill_one(state, svc, me, pool, &sel).await {
                tracing::debug!(pool = %pool.name, "warm pool not filled: {}", service::reason(e));
                break;
            }
        }
    }
}

async fn fill_one(
    state: &AppState,
    svc: &Sandboxes,
    me: &Pools,
    pool: &WarmPoolConfig,
    sel: &Selection,
) -> ApiResult<()> {
    crate::credits::gate(state, pool.account_id).await?;
    crate::broker::reachable(state).await?;
    let id = Uuid::now_v7();
    let machine_name = names::machine_name(pool.account_id, None, id)?;
    let new = store::NewSandbox {
        id,
        account_id: pool.account_id,
        machine_name: &machine_name,
        mode: "ephemeral",
        provider: svc.chosen(sel.agent.spec.provider),
        agent_id: sel.agent.id,
        environment_id: sel.env.as_ref().map(|e| e.id),
        vault_id: sel.agent.spec.vault_id,
        runtime: sel.agent.spec.runtime.as_str(),
        api_access: "owner",
        fingerprint: sel.env.as_ref().map(|e| e.build_fingerprint.as_str()),
        runner_id: None,
        pool: Some(&pool.name),
    };
    me.built.lock().unwrap_or_else(PoisonError::into_inner).insert(id);
    if let Err(e) = service::start_new(state, &new, Some(Place::Pool), None, sel.env.clone()).await {
        me.built.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        return Err(e);
    }
    Ok(())
}

/// Reclaims a pooled machine that is not claimed (one being built goes once it
/// is); false when it stays.
async fn retire(state: &AppState, m: &store::Pooled) -> bool {
    if m.building {
        return false;
    }
    match service::reclaim_pooled(state, m.id).await {
        Ok(gone) => {
            if gone {
                forget(state, m.id);
            }
            gone
        }
        Err(e) => {
            tracing::warn!(sandbox = %m.id, "pooled machine not reclaimed: {e:?}");
            false
        }
    }
}

fn forget(state: &AppState, id: Uuid) {
    pools(state).built.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    if let Some(hooks) = state.get::<PoolHooks>() {
        (hooks.retired)(state, id);
    }
}

/// A machine of `pool` failed to build: the pool waits before it builds another.
pub(super) fn build_failed(state: &AppState, pool: &str) {
    tracing::warn!(pool = %pool, "a warm pool's machine failed to build; the pool waits {BUILD_FAILED_BACKOFF:?}");
    pools(state).with(pool, |a| a.backoff_until = Some(Instant::now() + BUILD_FAILED_BACKOFF));
}

/// A pooled machine is built: its agent is started (by the layer above), then it may be claimed.
pub(super) async fn warm_up(state: &AppState, id: Uuid) {
    // As it is now it is ready (when it started, for one).
    let row = match store::get(&state.db, id).await {
        Ok(Some(row)) => row,
        Ok(None) => return,
        Err(e) => {
            tracing::error!(sandbox = %id, "pooled machine not read: {e}");
            return;
        }
    };
    let row = &row;
    let Some(name) = row.pool.as_deref() else { return };
    let Some(pool) = state.config().sandbox.warm_pools.iter().find(|p| p.name == name) else { return };
    match (state.get::<PoolHooks>(), selection(state, pool).await) {
        (Some(hooks), Ok(sel)) => (hooks.warm)(state, row, &sel.agent).await,
        (_, Err(e)) => tracing::warn!(pool = %name, "warm pool agent not started: {}", service::reason(e)),
        (None, Ok(_)) => {}
    }
    if let Err(e) = store::set_warm(&state.db, row.id).await {
        tracing::error!(sandbox = %row.id, "pooled machine not offered: {e}");
    }
}

/// Takes a warm machine for a launch when one of the account's pools keeps one
/// for its selection: the tenant's ceiling counts it from now, the meter runs
/// from now, and the conversation sees its `provision` done at once. `None`:
/// none waits (the pools that would have served it fill again).
pub(super) async fn claim(
    state: &AppState,
    req: &LaunchRequest,
    env: Option<&Environment>,
    vault_id: Option<Uuid>,
) -> ApiResult<Option<SandboxRow>> {
    let mine: Vec<&WarmPoolConfig> =
        state.config().sandbox.warm_pools.iter().filter(|p| p.account_id == req.account_id).collect();
    if mine.is_empty() {
        return Ok(None);
    }
    let started = Instant::now();
    let svc = service::service(state)?;
    crate::credits::gate(state, req.account_id).await?;
    let key = store::PoolKey {
        account_id: req.account_id,
        environment_id: env.map(|e| e.id),
        fingerprint: env.map(|e| e.build_fingerprint.clone()),
        vault_id,
        provider: svc.chosen(req.agent.spec.provider),
    };
    let me = pools(state);
    // Two claims may pick the same machine; the one that loses looks again.
    for _ in 0..3 {
        let mut tx = state.db.begin().await?;
        capacity::reserve(&mut tx, &state.config().limits, req.account_id, Place::Claim).await?;
        let Some(found) = store::find_pooled(&mut *tx, &key, state.events.server(), req.agent.id).await? else {
            break;
        };
        if !store::claim_pooled(&mut *tx, found.id, req.agent.id, req.agent.spec.runtime.as_str()).await? {
            continue;
        }
        crate::credits::meter::started(state, &mut tx, found.id).await?;
        tx.commit().await?;
        me.with(&found.pool, |a| {
            a.asked = Instant::now();
            a.wanted = true;
            a.claims += 1;
        });
        me.built.lock().unwrap_or_else(PoisonError::into_inner).remove(&found.id);
        me.wake.notify_one();
        let row = store::get(&state.db, found.id).await?.ok_or_else(ApiError::internal)?;
        let scope = events::Scope {
            account_id: req.account_id,
            sandbox_id: Some(row.id),
            conversations: req.conversation_id.into_iter().collect(),
            turn_id: None,
        };
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let data = json!({"sandbox_id": row.id, "warm_pool": found.pool, "duration_ms": ms});
        service::stage(state, &scope, "provision", StageState::Done, data).await;
        return Ok(Some(row));
    }
    // Missed: the pools of this selection are wanted again (an idle one fills).
    for pool in mine {
        if let Ok(sel) = selection(state, pool).await
            && sel.env.as_ref().map(|e| e.id) == key.environment_id
            && sel.agent.spec.vault_id == vault_id
        {
            me.with(&pool.name, |a| {
                a.asked = Instant::now();
                a.wanted = true;
                a.misses += 1;
            });
            me.wake.notify_one();
        }
    }
    Ok(None)
}

/// Reclaims one unclaimed machine of this server's pools to free its fleet place
/// for a machine asked for now. False when the pools hold none ready to go.
pub(super) async fn give_back_one(state: &AppState) -> bool {
    let here = match store::pooled_here(&state.db, state.events.server()).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!("warm pools not read: {e}");
            return false;
        }
    };
    for m in here.iter().filter(|m| !m.building) {
        if retire(state, m).await {
            tracing::info!(pool = %m.pool, sandbox = %m.id, "a pooled machine gave its fleet place to a start");
            return true;
        }
    }
    false
}

/// The pools' gauges and counters in Prometheus' text format (for `/metrics`).
pub async fn metrics(state: &AppState) -> String {
    let configured = &state.config().sandbox.warm_pools;
    if configured.is_empty() {
        return String::new();
    }
    let here = store::pooled_here(&state.db, state.events.server()).await.unwrap_or_default();
    let me = pools(state);
    let mut out = String::new();
    out.push_str(
        "# HELP acs_warm_pool_machines Machines a warm pool keeps on this server: warm (claimable) or building.\n",
    );
    out.push_str("# TYPE acs_warm_pool_machines gauge\n");
    for p in configured {
        let of = |building: bool| here.iter().filter(|m| m.pool == p.name && m.building == building).count();
        let _ = writeln!(out, "acs_warm_pool_machines{{pool=\"{}\",state=\"warm\"}} {}", p.name, of(false));
        let _ = writeln!(out, "acs_warm_pool_machines{{pool=\"{}\",state=\"building\"}} {}", p.name, of(true));
    }
    for (metric, help) in
        [("claims", "Machines claimed from a warm pool."), ("misses", "Launches a warm pool had no machine for.")]
    {
        let _ = writeln!(out, "# HELP acs_warm_pool_{metric}_total {help}");
        let _ = writeln!(out, "# TYPE acs_warm_pool_{metric}_total counter");
        for p in configured {
            let n = me.with(&p.name, |a| if metric == "claims" { a.claims } else { a.misses });
            let _ = writeln!(out, "acs_warm_pool_{metric}_total{{pool=\"{}\"}} {n}", p.name);
        }
    }
    out
}
