//! The lifecycle of sandboxes: launch, provisioning stages, park and
//! checkpoint, wake and rollback, reclaim, reset, and reattach after a
//! server restart. One async lock per sandbox serialises these moves on
//! this server; the conditional status updates in `store` keep replicas
//! from taking the same move twice.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use super::model::{ApiAccess, SandboxRow, SandboxState};
use super::provision::{self, Ctx};
use super::redact::Redactor;
use super::{capacity, names, store};
use crate::agents::{Agent, MachineProvider, SandboxMode};
use crate::boxed::BoxFuture;
use crate::broker::model::Source;
use crate::config::SandboxConfig;
use crate::environments::{self, Environment, NetworkingType};
use crate::error::{ApiError, ApiResult, Kind};
use crate::events::{self, StageState};
use crate::provider::{Limits, MachineSpec, NetworkPolicy, SandboxProvider};
use crate::refusal::{Building, Capacity, Refusal, Unavailable};
use crate::state::AppState;
use crate::time_fmt::{now_micros, to_micros};

pub struct Sandboxes {
    /// The enabled providers by name (`sandbox.providers`); each sends
    /// machines placed on a runner to that runner.
    providers: Vec<(String, Arc<dyn SandboxProvider>)>,
    /// Which of them new machines get unless their agent names one (`sandbox.provider`).
    default: usize,
    /// `ACS_API_URL` as machines see it.
    pub api_url: String,
    pub cfg: SandboxConfig,
    locks: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>,
}

/// What a launch asks for (the conversations issue fills it from a create body).
#[derive(Debug, Clone)]
pub struct LaunchRequest {
    pub account_id: Uuid,
    pub agent: Agent,
    /// Overrides of the agent's selection.
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    pub mode: Option<SandboxMode>,
    pub machine_name: Option<String>,
    pub api_access: ApiAccess,
    /// The conversation the machine is launched for, if any.
    pub conversation_id: Option<Uuid>,
}

impl Sandboxes {
    /// `providers` holds the one named `cfg.provider` (checked at start).
    pub fn new(providers: Vec<(String, Arc<dyn SandboxProvider>)>, api_url: String, cfg: SandboxConfig) -> Sandboxes {
        let default = providers.iter().position(|(name, _)| *name == cfg.provider).unwrap_or(0);
        Sandboxes { providers, default, api_url, cfg, locks: Mutex::new(HashMap::new()) }
    }

    /// The provider of a sandbox (its row's `provider`).
    pub fn provider(&self, row: &SandboxRow) -> &dyn SandboxProvider {
        self.named(&row.provider)
    }

    /// The provider called `name`; a runner's machines (and a provider no
    /// longer enabled) go through the default one, which routes runners'.
    pub fn named(&self, name: &str) -> &dyn SandboxProvider {
        let found = self.providers.iter().find(|(n, _)| n == name);
        found.unwrap_or(&self.providers[self.default]).1.as_ref()
    }

    /// The provider serving machine `id` on this server, else the default
    /// one: for callers holding only an id, on the hot path of a turn.
    pub fn serving(&self, id: Uuid) -> &dyn SandboxProvider {
        let found = self.providers.iter().find(|(_, p)| p.served().contains(&id));
        found.unwrap_or(&self.providers[self.default]).1.as_ref()
    }

    pub fn all(&self) -> impl Iterator<Item = &dyn SandboxProvider> {
        self.providers.iter().map(|(_, p)| p.as_ref())
    }

    /// The provider a new machine of an agent naming `provider` (if any) gets.
    pub fn chosen(&self, provider: Option<MachineProvider>) -> &'static str {
        self.named(provider.map_or(self.cfg.provider.as_str(), |p| p.as_str())).name()
    }

    /// Whether `name` is one of this server's providers.
    pub fn offers(&self, name: &str) -> bool {
        self.providers.iter().any(|(n, _)| n == name)
    }

    fn lock(&self, id: Uuid) -> Arc<tokio::sync::Mutex<()>> {
        self.locks.lock().unwrap_or_else(|p| p.into_inner()).entry(id).or_default().clone()
    }

    /// What the provider needs to run `row`'s machine.
    pub(super) fn spec(
        &self,
        row: &SandboxRow,
        env: BTreeMap<String, String>,
        network: NetworkPolicy,
        broker: Option<crate::egress::broker::BrokerRef>,
    ) -> MachineSpec {
        MachineSpec {
            id: row.id,
            hostname: row.machine_name.clone(),
            persistent: row.persistent(),
            env,
            network,
            limits: self.limits(),
            runner: row.runner_id,
            broker,
        }
    }

    pub fn limits(&self) -> Limits {
        let c = &self.cfg;
        Limits {
            memory_bytes: (c.memory_mb > 0).then_some(c.memory_mb << 20),
            cpu_millis: (c.cpu_millis > 0).then_some(c.cpu_millis),
            pids: (c.pids > 0).then_some(c.pids),
        }
    }
}

/// What the layer above does when a machine it waits for is ready or failed
/// to start (the conversations waiting on it); the server assembly puts it
/// in the state's slots.
pub struct MachineObserver {
    pub ready: for<'a> fn(&'a AppState, Uuid) -> BoxFuture<'a, ()>,
    pub failed: for<'a> fn(&'a AppState, Uuid) -> BoxFuture<'a, ()>,
}

/// The sandbox service of a started server.
pub fn service(state: &AppState) -> ApiResult<Arc<Sandboxes>> {
    state.get::<Sandboxes>().ok_or_else(|| Refusal::Unavailable(Unavailable::Sandboxes).into())
}

/// The network policy of an environment (`unrestricted` without one).
pub fn network_policy(env: Option<&Environment>) -> NetworkPolicy {
    match env {
        Some(e) if e.networking_type == NetworkingType::Limited => {
            NetworkPolicy::Limited(e.networking_config.allowed_hosts.clone().unwrap_or_default())
        }
        _ => NetworkPolicy::Unrestricted,
    }
}

/// Starts (or finds) the machine for a launch. A new machine provisions in
/// the background; its stages go to the event log. A persistent home already
/// built is shared, woken when parked, and refused with 503 while it builds.
/// A new machine or a wake is refused at a concurrency ceiling (429
/// `sandbox_quota_exceeded`, 503 `fleet_at_capacity`) or without credits (402).
pub async fn launch(state: &AppState, req: LaunchRequest) -> ApiResult<SandboxRow> {
    let svc = service(state)?;
    let environment_id = req.environment_id.or(req.agent.spec.environment_id);
    let vault_id = req.vault_id.or(req.agent.spec.vault_id);
    let env = match environment_id {
        Some(id) => Some(environments::get_environment(state, req.account_id, id).await?),
        None => None,
    };
    if let Some(v) = vault_id {
        crate::vaults::live_secret_values(state, req.account_id, v, now_micros()).await?;
    }
    let mode = req.mode.unwrap_or(req.agent.spec.sandbox_mode);
    if req.api_access == ApiAccess::None && mode == SandboxMode::Persistent {
        return Err(ApiError::invalid("sandbox_api_access", "`none` requires a fresh ephemeral sandbox"));
    }
    if req.api_access == ApiAccess::None && req.machine_name.is_some() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_machine_name",
            "machine_name can't be combined with sandbox_api_access: none",
        ));
    }
    let runner_id = match (req.agent.spec.provider, req.agent.spec.runner_id) {
        (Some(MachineProvider::Runner), Some(runner)) => Some(runner),
        _ => None,
    };
    if runner_id.is_some() && req.machine_name.is_some() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "machine_name_not_supported",
            "machine_name can't be chosen for an agent whose machines run on a runner",
        ));
    }
    if mode == SandboxMode::Persistent
        && let Some(home) = store::find_home(&state.db, req.account_id, req.agent.id, environment_id, vault_id).await?
    {
        return match home.status {
            SandboxState::Pending | SandboxState::Starting => Err(Refusal::Provisioning(Building::Start).into()),
            SandboxState::Ready => {
                store::touch(&state.db, home.id).await?;
                Ok(home)
            }
            _ => {
                wake(state, home.id).await?;
                Ok(store::get(&state.db, home.id).await?.unwrap_or(home))
            }
        };
    }
    // A machine a warm pool keeps for this selection, when one waits (a fresh ephemeral machine
    // with the callback key is what a pool builds).
    if runner_id.is_none()
        && mode == SandboxMode::Ephemeral
        && req.api_access == ApiAccess::Owner
        && req.machine_name.is_none()
        && let Some(row) = super::pool::claim(state, &req, env.as_ref(), vault_id).await?
    {
        return Ok(row);
    }
    let id = Uuid::now_v7();
    let machine_name = names::machine_name(req.account_id, req.machine_name.as_deref(), id)?;
    let fingerprint = env.as_ref().map(|e| e.build_fingerprint.clone());
    let new = store::NewSandbox {
        id,
        account_id: req.account_id,
        machine_name: &machine_name,
        mode: if mode == SandboxMode::Persistent { "persistent" } else { "ephemeral" },
        provider: if runner_id.is_some() { "runner" } else { svc.chosen(req.agent.spec.provider) },
        agent_id: req.agent.id,
        environment_id,
        vault_id,
        runtime: req.agent.spec.runtime.as_str(),
        api_access: req.api_access.as_str(),
        fingerprint: fingerprint.as_deref(),
        runner_id,
        pool: None,
    };
    // A runner's machines are the user's own: no credits, no place under the ceilings.
    let place = if runner_id.is_none() {
        crate::credits::gate(state, req.account_id).await?;
        // A brokered machine never starts without its broker (spec 6.1 `broker`).
        crate::broker::reachable(state).await?;
        Some(capacity::Place::Start)
    } else {
        crate::auth::check_active(state, req.account_id).await?;
        None
    };
    start_new(state, &new, place, req.conversation_id, env).await
}

/// Writes a new machine's row (counted under the ceilings `place` names, in the same
/// transaction) and builds it in the background. A start refused at the fleet's ceiling
/// first takes a place back from the warm pools: machines asked for come before spares.
pub(super) async fn start_new(
    state: &AppState,
    new: &store::NewSandbox<'_>,
    place: Option<capacity::Place>,
    conversation: Option<Uuid>,
    env: Option<Environment>,
) -> ApiResult<SandboxRow> {
    let mut may_give_back = place == Some(capacity::Place::Start);
    loop {
        match write_new(state, new, place).await {
            Ok(()) => break,
            Err(capacity::Reserve::Full(c @ Capacity::Fleet { .. })) => {
                if !(may_give_back && super::pool::give_back_one(state).await) {
                    return Err(Refusal::Capacity(c).into());
                }
                may_give_back = false;
            }
            Err(capacity::Reserve::Db(e)) if crate::db::is_unique_violation(&e) => {
                return Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_machine_name",
                    format!("machine_name `{}` is already used by another live sandbox", new.machine_name),
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    let row = store::get(&state.db, new.id).await?.ok_or_else(ApiError::internal)?;
    let st = state.clone();
    let id = new.id;
    tokio::spawn(async move { provision_new(&st, id, conversation, env).await });
    Ok(row)
}

async fn write_new(
    state: &AppState,
    new: &store::NewSandbox<'_>,
    place: Option<capacity::Place>,
) -> Result<(), capacity::Reserve> {
    let mut tx = state.db.begin().await?;
    if let Some(place) = place {
        capacity::reserve(&mut tx, &state.config().limits, new.account_id, place).await?;
    }
    store::insert(&mut *tx, new).await?;
    crate::replicas::store::own_machine(&mut *tx, new.id, state.events.server()).await?;
    // A pooled machine is metered from its claim: until then it is the operator's spare.
    if place != Some(capacity::Place::Pool) {
        crate::credits::meter::started(state, &mut tx, new.id).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Everything a machine's environment holds, secrets included, and the
/// redactor for what leaves the server.
pub(crate) struct Material {
    pub env: BTreeMap<String, String>,
    pub secrets: BTreeMap<String, String>,
    pub redactor: Redactor,
}

pub(crate) async fn material(state: &AppState, row: &SandboxRow, env: Option<&Environment>) -> ApiResult<Material> {
    let mut vars = BTreeMap::new();
    let mut secrets = BTreeMap::new();
    for (k, v) in [
        ("HOME", "/home/agent"),
        ("USER", "agent"),
        ("LOGNAME", "agent"),
        ("SHELL", "/bin/bash"),
        ("LANG", "C.UTF-8"),
        ("PATH", "/home/agent/.local/bin:/usr/local/bin:/usr/bin:/bin"),
    ] {
        vars.insert(k.to_owned(), v.to_owned());
    }
    if let Some(e) = env {
        vars.extend(e.env_vars.clone());
    }
    if let Some(e) = row.environment_id {
        for (k, v) in environments::secret_values(state, row.account_id, e).await? {
            secrets.insert(k, v);
        }
    }
    let mut bound = Vec::new();
    let bound_sources = crate::broker::bound_keys(state, row.account_id).await;
    if let Some(e) = row.environment_id {
        for k in secrets.keys() {
            if bound_sources
                .iter()
                .any(|s| matches!(s, Source::Environment { environment_id, key } if *environment_id == e && key == k))
            {
                bound.push(k.clone());
            }
        }
    }
    if let Some(v) = row.vault_id {
        for (k, val) in crate::vaults::live_secret_values(state, row.account_id, v, now_micros()).await? {
            if bound_sources.iter().any(|s| matches!(s, Source::Vault { vault_id, key } if *vault_id == v && *key == k))
            {
                bound.push(k.clone());
            }
            secrets.insert(k, val);
        }
    }
    vars.extend(secrets.iter().filter(|(k, _)| !bound.contains(k)).map(|(k, v)| (k.clone(), v.clone())));
    vars.insert("ACS_SANDBOX_ID".into(), row.id.to_string());
    let redactor = Redactor::new(secrets.values().cloned());
    Ok(Material { env: vars, secrets, redactor })
}

/// Redacts what a machine sends outside a turn (its egress records, labels
/// set with its callback key): the secret values its selection holds now. A
/// deleted environment or vault holds none.
pub(crate) async fn machine_redactor(state: &AppState, row: &SandboxRow) -> ApiResult<Redactor> {
    fn gone_is_empty(r: ApiResult<Vec<(String, String)>>) -> ApiResult<Vec<(String, String)>> {
        match r {
            Err(e) if e.kind == Kind::NotFound => Ok(Vec::new()),
            other => other,
        }
    }
    let mut values = Vec::new();
    if let Some(e) = row.environment_id {
        values.extend(gone_is_empty(environments::secret_values(state, row.account_id, e).await)?);
    }
    if let Some(v) = row.vault_id {
        values.extend(gone_is_empty(crate::vaults::live_secret_values(state, row.account_id, v, now_micros()).await)?);
    }
    Ok(Redactor::new(values.into_iter().map(|(_, v)| v)))
}

/// Mints a fresh callback key (revoking the machine's older ones) unless
/// the machine has no API access.
async fn callback_env(state: &AppState, row: &SandboxRow, env: &mut BTreeMap<String, String>) -> ApiResult<()> {
    revoke_keys(state, row.id).await?;
    if row.api_access == ApiAccess::Owner {
        let svc = service(state)?;
        let key = crate::keys::create_for_sandbox(
            &state.db.pool,
            row.account_id,
            row.id,
            &format!("sandbox {}", row.machine_name),
        )
        .await?;
        env.insert("ACS_API_KEY".into(), key.api_key);
        env.insert("ACS_API_URL".into(), svc.api_url.clone());
    }
    Ok(())
}

async fn revoke_keys(state: &AppState, id: Uuid) -> ApiResult<()> {
    let ids = store::revoke_keys(&state.db, id).await?;
    if !ids.is_empty() {
        state.key_cache.remove_where(|k| ids.contains(&k.key_id));
    }
    Ok(())
}

pub(super) async fn scope(state: &AppState, row: &SandboxRow, conversation: Option<Uuid>) -> events::Scope {
    let mut conversations = store::holders(&state.db, row.id).await.unwrap_or_default();
    if let Some(c) = conversation
        && !conversations.contains(&c)
    {
        conversations.push(c);
    }
    events::Scope { account_id: row.account_id, sandbox_id: Some(row.id), conversations, turn_id: None }
}

pub(super) async fn stage(state: &AppState, scope: &events::Scope, name: &str, st: StageState, data: Value) {
    log(state, scope, &[events::NewEvent::stage(name, st, &data)]).await;
}

/// Writes stage events in one transaction; a failure is logged, the build goes on.
pub(super) async fn log(state: &AppState, scope: &events::Scope, batch: &[events::NewEvent]) {
    if let Err(e) = events::append(state, scope, batch, None).await {
        let stages: Vec<&str> = batch.iter().filter_map(|e| e.stage.as_deref()).collect();
        tracing::error!(sandbox = ?scope.sandbox_id, ?stages, "events not written: {e}");
    }
}

/// What a failed step tells the log: its message, else its code.
pub(crate) fn reason(e: ApiError) -> String {
    e.message.clone().unwrap_or_else(|| e.error.clone())
}

async fn provision_new(state: &AppState, id: Uuid, conversation: Option<Uuid>, env: Option<Environment>) {
    let Ok(svc) = service(state) else { return };
    let lock = svc.lock(id);
    let _held = lock.lock().await;
    let Ok(Some(row)) = store::get(&state.db, id).await else { return };
    let scope = scope(state, &row, conversation).await;
    stage(state, &scope, "provision", StageState::Started, json!({"sandbox_id": id})).await;
    let started = Instant::now();
    let outcome = match material(state, &row, env.as_ref()).await {
        Ok(mut m) => match callback_env(state, &row, &mut m.env).await {
            Ok(()) => {
                let ctx = Ctx { state, svc: &svc, row: &row, scope: &scope, env: env.as_ref(), material: &m };
                let deadline = Duration::from_secs(svc.cfg.provision_timeout_seconds);
                provision::run(&ctx, deadline).await
            }
            Err(e) => Err(reason(e)),
        },
        Err(e) => Err(reason(e)),
    };
    finish_start(state, &svc, &row, &scope, outcome, started).await;
}

async fn finish_start(
    state: &AppState,
    svc: &Sandboxes,
    row: &SandboxRow,
    scope: &events::Scope,
    outcome: Result<provision::Built, String>,
    started: Instant,
) {
    // The log is written before the status moves: whoever sees the new
    // status finds the stage that explains it.
    let ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    match outcome {
        Ok(provision::Built { url, mut unwritten }) => {
            let done = json!({"sandbox_id": row.id, "duration_ms": ms});
            unwritten.push(events::NewEvent::stage("provision", StageState::Done, &done));
            log(state, scope, &unwritten).await;
            if let Err(e) = store::set_ready(&state.db, row.id, url.as_deref()).await {
                tracing::error!(sandbox = %row.id, "could not mark ready: {e}");
            }
            if let Some(observer) = state.get::<MachineObserver>() {
                (observer.ready)(state, row.id).await;
            }
            if row.pool.is_some() {
                let (st, id) = (state.clone(), row.id);
                tokio::spawn(async move { super::pool::warm_up(&st, id).await });
            }
        }
        Err(error) => {
            tracing::warn!(sandbox = %row.id, "provisioning failed: {error}");
            if row.persistent() {
                svc.provider(row).stop(row.id).await;
            } else {
                svc.provider(row).destroy(row.id).await;
            }
            let _ = revoke_keys(state, row.id).await;
            stage(state, scope, "provision", StageState::Failed, json!({"sandbox_id": row.id, "error": error})).await;
            let _ = store::set_failed(&state.db, row.id, &error).await;
            crate::credits::meter::settle(state, row.id).await;
            state.queue.wake();
            if let Some(pool) = &row.pool {
                super::pool::build_failed(state, pool);
            }
            if let Some(observer) = state.get::<MachineObserver>() {
                (observer.failed)(state, row.id).await;
            }
        }
    }
}

/// Wakes a parked (or failed) machine. A failed home with a checkpoint is
/// rolled back to it first (`checkpoint_restore`). Returns at once; the
/// stages follow on the event log. `Ok(false)` when it was already up.
pub async fn wake(state: &AppState, id: Uuid) -> ApiResult<bool> {
    let row = store::get(&state.db, id).await?.ok_or_else(|| ApiError::not_found("Sandbox"))?;
    match row.status {
        SandboxState::Ready | SandboxState::Pending | SandboxState::Starting => return Ok(false),
        SandboxState::Terminated => {
            return Err(ApiError::new(StatusCode::CONFLICT, "sandbox_not_attachable", "The sandbox was reclaimed."));
        }
        SandboxState::Suspended | SandboxState::Failed => {}
    }
    // A woken machine is a concurrent sandbox again: the same gates as a new one (none on a runner).
    if row.runner_id.is_none() {
        crate::credits::gate(state, row.account_id).await?;
        crate::broker::reachable(state).await?;
    }
    let mut tx = state.db.begin().await?;
    if row.runner_id.is_none() {
        capacity::reserve(&mut tx, &state.config().limits, row.account_id, capacity::Place::Start).await?;
    }
    if !store::transition_in(&mut *tx, id, &[SandboxState::Suspended, SandboxState::Failed], SandboxState::Starting)
        .await?
    {
        return Ok(false);
    }
    crate::replicas::store::own_machine(&mut *tx, id, state.events.server()).await?;
    crate::credits::meter::started(state, &mut tx, id).await?;
    tx.commit().await?;
    let st = state.clone();
    tokio::spawn(async move { wake_now(&st, row).await });
    Ok(true)
}

async fn wake_now(state: &AppState, row: SandboxRow) {
    let Ok(svc) = service(state) else { return };
    let lock = svc.lock(row.id);
    let _held = lock.lock().await;
    let scope = scope(state, &row, None).await;
    stage(state, &scope, "provision", StageState::Started, json!({"sandbox_id": row.id, "wake": true})).await;
    let started = Instant::now();
    let outcome = wake_steps(state, &svc, &row, &scope).await;
    finish_start(state, &svc, &row, &scope, outcome, started).await;
}

async fn wake_steps(
    state: &AppState,
    svc: &Sandboxes,
    row: &SandboxRow,
    scope: &events::Scope,
) -> Result<provision::Built, String> {
    let env = match row.environment_id {
        Some(e) => Some(environments::get_environment(state, row.account_id, e).await.map_err(reason)?),
        None => None,
    };
    if row.status == SandboxState::Failed && row.persistent() && row.checkpoint_id.is_some() {
        svc.provider(row).stop(row.id).await;
        stage(state, scope, "checkpoint_restore", StageState::Started, json!({"checkpoint_id": row.checkpoint_id}))
            .await;
        match svc.provider(row).restore(row.id).await {
            Ok(()) => stage(state, scope, "checkpoint_restore", StageState::Done, json!({})).await,
            Err(e) => {
                let error = e.to_string();
                stage(state, scope, "checkpoint_restore", StageState::Failed, json!({"error": error})).await;
                return Err(error);
            }
        }
    }
    let mut m = material(state, row, env.as_ref()).await.map_err(reason)?;
    callback_env(state, row, &mut m.env).await.map_err(reason)?;
    let broker = machine_broker(state, row).await?;
    let spec = svc.spec(row, m.env, network_policy(env.as_ref()), broker);
    let started = svc.provider(row).start(&spec).await.map_err(|e| m.redactor.redact_str(&e.to_string()))?;
    Ok(provision::Built { url: started.url, unwritten: Vec::new() })
}

/// The broker a machine starts with, its CA recorded on the row.
pub(super) async fn machine_broker(
    state: &AppState,
    row: &SandboxRow,
) -> Result<Option<crate::egress::broker::BrokerRef>, String> {
    let broker =
        crate::broker::for_machine(state, super::broker_machine(row), false).await.map_err(|e| e.to_string())?;
    record_ca(state, row, broker.as_ref().map(|(id, _)| *id)).await?;
    Ok(broker.map(|(_, b)| b))
}

/// Records the broker CA a machine starts with, when it changed (most
/// starts have none, and had none).
pub(super) async fn record_ca(state: &AppState, row: &SandboxRow, ca_id: Option<Uuid>) -> Result<(), String> {
    if row.broker_ca_id == ca_id {
        return Ok(());
    }
    crate::broker::remember_ca(state, row.id, ca_id).await.map_err(|e| e.to_string())
}

/// Parks an idle persistent machine (stop, then checkpoint its disk) or
/// reclaims an idle ephemeral one. Skipped when a turn started meanwhile.
pub async fn park(state: &AppState, id: Uuid) -> ApiResult<()> {
    let svc = service(state)?;
    let lock = svc.lock(id);
    let _held = lock.lock().await;
    let Some(row) = store::get(&state.db, id).await? else { return Ok(()) };
    if row.status != SandboxState::Ready || row.busy {
        return Ok(());
    }
    if !row.persistent() {
        return reclaim_locked(state, &svc, &row, None).await;
    }
    if !store::transition(&state.db, id, &[SandboxState::Ready], SandboxState::Suspended).await? {
        return Ok(());
    }
    // A place under the ceilings freed: the sandbox queue may start what waits.
    state.queue.wake();
    crate::credits::meter::settle(state, id).await;
    svc.provider(&row).stop(id).await;
    revoke_keys(state, id).await?;
    let scope = scope(state, &row, None).await;
    match svc.provider(&row).checkpoint(id).await {
        Ok(ck) => {
            store::set_checkpoint(&state.db, id, &ck.id, to_micros(ck.at)).await?;
            stage(state, &scope, "checkpoint", StageState::Done, json!({"checkpoint_id": ck.id})).await;
        }
        Err(e) => stage(state, &scope, "checkpoint", StageState::Failed, json!({"error": e.to_string()})).await,
    }
    Ok(())
}

/// Ends a machine still waiting in a warm pool (no conversation saw it: no
/// event); false when a conversation claimed it meanwhile.
pub(super) async fn reclaim_pooled(state: &AppState, id: Uuid) -> ApiResult<bool> {
    let svc = service(state)?;
    let lock = svc.lock(id);
    let _held = lock.lock().await;
    if !store::retire_pooled(&state.db, id).await? {
        return Ok(false);
    }
    state.queue.wake();
    if let Some(row) = store::get(&state.db, id).await? {
        svc.provider(&row).destroy(id).await;
    }
    revoke_keys(state, id).await?;
    Ok(true)
}

/// Reclaims an ephemeral machine: gone for good; its conversations stay
/// resumable on a new one (`sandbox` stage `done`).
pub async fn reclaim(state: &AppState, id: Uuid) -> ApiResult<()> {
    reclaim_for(state, id, None).await
}

/// Reclaims a machine, telling `ended` (a conversation that just ended and
/// so no longer holds it) as well as its holders.
pub async fn reclaim_for(state: &AppState, id: Uuid, ended: Option<Uuid>) -> ApiResult<()> {
    let svc = service(state)?;
    let lock = svc.lock(id);
    let _held = lock.lock().await;
    let Some(row) = store::get(&state.db, id).await? else { return Ok(()) };
    reclaim_locked(state, &svc, &row, ended).await
}

async fn reclaim_locked(state: &AppState, svc: &Sandboxes, row: &SandboxRow, ended: Option<Uuid>) -> ApiResult<()> {
    let live = [
        SandboxState::Pending,
        SandboxState::Starting,
        SandboxState::Ready,
        SandboxState::Suspended,
        SandboxState::Failed,
    ];
    if !store::transition(&state.db, row.id, &live, SandboxState::Terminated).await? {
        return Ok(());
    }
    state.queue.wake();
    crate::credits::meter::settle(state, row.id).await;
    svc.provider(row).destroy(row.id).await;
    // An agent a warm pool started on it and no turn took goes with it.
    if let Some(hooks) = state.get::<super::pool::PoolHooks>() {
        (hooks.retired)(state, row.id);
    }
    revoke_keys(state, row.id).await?;
    let scope = scope(state, row, ended).await;
    stage(state, &scope, "sandbox", StageState::Done, json!({"sandbox_id": row.id})).await;
    Ok(())
}

/// `DELETE /api/sandboxes/{id}`: throws the machine and its disk away; the
/// next launch builds a new one. Refused while a turn runs.
pub async fn reset(state: &AppState, row: &SandboxRow) -> ApiResult<()> {
    if row.busy {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "sandbox_not_resettable",
            "A turn is running on this sandbox; interrupt it or wait for it to end.",
        )
        .with("reason", "turn_running"));
    }
    let refusal = match row.status {
        SandboxState::Terminated => Some(("terminated", "The sandbox was already reclaimed.")),
        // The build holds the machine until it ends; waiting for it here could take its whole deadline.
        SandboxState::Pending | SandboxState::Starting => {
            Some(("provisioning", "The sandbox is being built; reset it once it is ready or failed."))
        }
        _ => None,
    };
    if let Some((reason, message)) = refusal {
        return Err(ApiError::new(StatusCode::CONFLICT, "sandbox_not_resettable", message).with("reason", reason));
    }
    let svc = service(state)?;
    let lock = svc.lock(row.id);
    let _held = lock.lock().await;
    reclaim_locked(state, &svc, row, None).await
}

/// Follows a machine this server just took over (`replicas`): a ready one is
/// reattached (its proxy opened here), one whose build was cut short fails.
pub async fn take_over(state: &AppState, id: Uuid) {
    let Ok(svc) = service(state) else { return };
    let row = match store::get(&state.db, id).await {
        Ok(Some(row)) if svc.offers(&row.provider) || row.runner_id.is_some() => row,
        Ok(_) => return,
        Err(e) => {
            tracing::error!(sandbox = %id, "take over: could not read the sandbox: {e}");
            return;
        }
    };
    let lock = svc.lock(row.id);
    let _held = lock.lock().await;
    let scope = scope(state, &row, None).await;
    if row.status != SandboxState::Ready {
        svc.provider(&row).stop(row.id).await;
        let error = "provisioning was cut short by a server restart";
        stage(state, &scope, "provision", StageState::Failed, json!({"error": error})).await;
        let _ = store::set_failed(&state.db, row.id, error).await;
        crate::credits::meter::settle(state, row.id).await;
        return;
    }
    stage(state, &scope, "reattach", StageState::Started, json!({"sandbox_id": row.id})).await;
    let env = match row.environment_id {
        Some(e) => environments::get_environment(state, row.account_id, e).await.ok(),
        None => None,
    };
    // A machine keeps the broker CA it trusts; without a broker now its bound
    // hosts pass as plain tunnels (nothing attached) until it restarts.
    let broker = match crate::broker::for_machine(state, super::broker_machine(&row), true).await {
        Ok(b) => b.map(|(_, b)| b),
        Err(e) => {
            tracing::warn!(sandbox = %row.id, "reattached without the broker: {e}");
            None
        }
    };
    let spec = svc.spec(&row, BTreeMap::new(), network_policy(env.as_ref()), broker);
    match svc.provider(&row).reattach(&spec).await {
        Ok(true) => stage(state, &scope, "reattach", StageState::Done, json!({})).await,
        outcome => {
            let error = match outcome {
                Err(e) => e.to_string(),
                _ => "the machine stopped while no server ran".to_owned(),
            };
            stage(state, &scope, "reattach", StageState::Failed, json!({"error": error})).await;
            let _ = store::set_failed(&state.db, row.id, &error).await;
            crate::credits::meter::settle(state, row.id).await;
        }
    }
}

/// Parks or reclaims machines idle for `sandbox.idle_seconds`.
pub async fn idle_sweeper(state: AppState) {
    let Ok(svc) = service(&state) else { return };
    let idle = Duration::from_secs(svc.cfg.idle_seconds.max(1));
    let mut every = (idle / 4).clamp(Duration::from_millis(200), Duration::from_secs(30));
    // Each machine's supervisor parks it when no server speaks to it for
    // `watchdog_seconds`: this server speaks to the ones it serves well before.
    let watchdog = Duration::from_secs(svc.cfg.watchdog_seconds);
    if !watchdog.is_zero() {
        every = every.min((watchdog / 3).max(Duration::from_millis(200)));
    }
    loop {
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        if !watchdog.is_zero() {
            for provider in svc.all() {
                for id in provider.served() {
                    if let Err(e) = provider.supervisor(id).ping().await {
                        tracing::debug!(sandbox = %id, "keepalive ping: {e}");
                    }
                }
            }
        }
        let before = now_micros() - i64::try_from(idle.as_micros()).unwrap_or(i64::MAX);
        match store::idle(&state.db, before, state.events.server()).await {
            Ok(ids) => {
                for id in ids {
                    if let Err(e) = park(&state, id).await {
                        tracing::warn!(sandbox = %id, "park failed: {e:?}");
                    }
                }
            }
            Err(e) => tracing::warn!("idle sweep: {e}"),
        }
    }
}
