//! Sandboxes: the API resource (spec 2.3, DESIGN section 3), provisioning
//! and lifecycle. Handlers are thin; the moves live in `service`, the
//! build stages in `provision`, the reads in `reads`.

pub mod broker_host;
pub mod capacity;
pub mod egress_log;
pub mod git;
pub mod host;
pub mod model;
pub mod names;
pub mod pool;
pub mod provision;
pub mod reads;
pub mod redact;
pub mod service;
pub mod store;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use self::git::{DiffQuery, SandboxChange};
use self::model::{
    EgressEvent, MachineStateView, Sandbox, SandboxDetail, SandboxDiff, SandboxDirectory, SandboxFile, SandboxRow,
    SandboxStatus, SandboxStatusResponse,
};
pub use self::service::{LaunchRequest, Sandboxes, launch, park, reclaim, wake};
use crate::auth::{Principal, Scope};
use crate::blocklist::AddressRules;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::page_limit;
use crate::http::{Data, Path, Query, ok};
use crate::provider::container::{ContainerConfig, ContainerProvider};
use crate::provider::local::{LocalConfig, LocalProvider, net::NetConfig};
use crate::provider::remote::{RemoteProvider, Routed};
use crate::provider::{self, MachineState, SandboxProvider};
use crate::state::AppState;
use crate::time_fmt::from_micros;

/// The sandbox of `id` if the caller may see it; 404 `sandbox_not_found` otherwise (also
/// while it waits unclaimed in a warm pool: no one may attach to it or act on it then).
pub async fn owned(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<SandboxRow> {
    let row = store::get(&state.db, id).await?;
    match row {
        Some(r) if r.account_id == p.account_id && p.sandbox_id.is_none_or(|s| s == id) && r.pool.is_none() => Ok(r),
        _ => Err(ApiError::new(axum::http::StatusCode::NOT_FOUND, "sandbox_not_found", "No such sandbox.")),
    }
}

/// The account's sandboxes, newest first (a sandbox key sees its own only).
#[utoipa::path(get, path = "/api/sandboxes", operation_id = "listSandboxes", tag = "sandboxes",
    responses((status = 200, description = "Sandboxes, newest first", body = Data<Vec<Sandbox>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<Sandbox>>> {
    let rows = store::list(&state.db, p.account_id, p.sandbox_id).await?;
    Ok(ok(views(&state, &rows).await?))
}

/// The API view of sandboxes, with the `runner` object of those on a runner.
pub async fn views(state: &AppState, rows: &[SandboxRow]) -> ApiResult<Vec<Sandbox>> {
    let mut ids: Vec<Uuid> = rows.iter().filter_map(|r| r.runner_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let runners = crate::runners::store::by_ids(&state.db, &ids).await?;
    let remote = crate::runners::remote(state);
    Ok(rows
        .iter()
        .map(|row| {
            let mut view = row.view();
            if let Some(id) = row.runner_id {
                let found = runners.iter().find(|r| r.id == id);
                view.runner = Some(model::Runner {
                    online: remote.as_ref().is_some_and(|r| r.online(id)),
                    id: Some(id),
                    name: found.map(|r| r.name.clone()),
                    hostname: found.and_then(|r| r.hostname.clone()),
                    path: found
                        .and_then(|r| r.root.as_deref())
                        .map(|root| format!("{}/{}", root.trim_end_matches('/'), row.machine_name)),
                });
            }
            view
        })
        .collect())
}

async fn view(state: &AppState, row: &SandboxRow) -> ApiResult<Sandbox> {
    Ok(views(state, std::slice::from_ref(row)).await?.remove(0))
}

/// One sandbox with every conversation opened on it, newest first.
#[utoipa::path(get, path = "/api/sandboxes/{id}", operation_id = "getSandbox", tag = "sandboxes", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The sandbox", body = Data<SandboxDetail>),
        (status = 404, description = "`sandbox_not_found`", body = crate::error::ErrorBody)))]
async fn detail(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<SandboxDetail>> {
    let row = owned(&state, &p, id).await?;
    let conversations = store::conversations(&state.db, id).await?;
    Ok(ok(SandboxDetail {
        sandbox: view(&state, &row).await?,
        inserted_at: from_micros(row.created_at),
        last_resumed_at: row.last_resumed_at.map(from_micros),
        conversations,
    }))
}

/// Resets a sandbox: the machine and its disk are thrown away and the next
/// launch builds a new one. Refused while a turn runs (409 `sandbox_not_resettable`).
#[utoipa::path(delete, path = "/api/sandboxes/{id}", operation_id = "resetSandbox", tag = "sandboxes", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The sandbox, now terminated", body = Data<Sandbox>),
        (status = 409, description = "`sandbox_not_resettable` with `reason`", body = crate::error::ErrorBody)))]
async fn reset(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<Sandbox>> {
    if p.scope == Scope::Sandbox {
        return Err(ApiError::insufficient_scope());
    }
    let row = owned(&state, &p, id).await?;
    service::reset(&state, &row).await?;
    crate::audit::record(&state.db.pool, &crate::audit::Actor::key(&p), "sandbox.reset", Some(("sandbox", id))).await?;
    let row = store::get(&state.db, id).await?.ok_or_else(ApiError::internal)?;
    Ok(ok(view(&state, &row).await?))
}

/// The sandbox's status and what the provider reports of the machine now.
#[utoipa::path(get, path = "/api/sandboxes/{id}/status", operation_id = "getSandboxStatus", tag = "sandboxes", params(("id" = Uuid, Path)),
    responses((status = 200, description = "Status", body = SandboxStatusResponse)))]
async fn status(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<axum::Json<SandboxStatusResponse>> {
    let row = owned(&state, &p, id).await?;
    let svc = service::service(&state)?;
    let machine = match svc.provider(&row).state(id).await {
        MachineState::Running => MachineStateView::Running,
        MachineState::Stopped => MachineStateView::Stopped,
        MachineState::Missing => MachineStateView::Missing,
    };
    Ok(axum::Json(SandboxStatusResponse {
        data: SandboxStatus {
            id,
            status: row.status,
            machine,
            mid_turn: row.busy,
            error: row.error.clone(),
            last_resumed_at: row.last_resumed_at.map(from_micros),
        },
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FileQuery {
    /// Absolute path inside the sandbox.
    pub path: String,
    /// Bytes of content at most (default `sandbox.read_max_bytes`, 1 MiB; at most 16 MiB).
    pub max_bytes: Option<u64>,
}

/// Reads a file (redacted). A parked sandbox answers from its snapshot with `snapshot_at`.
#[utoipa::path(get, path = "/api/sandboxes/{id}/files", operation_id = "getSandboxFile", tag = "sandboxes", params(("id" = Uuid, Path), FileQuery),
    responses((status = 200, description = "The file", body = Data<SandboxFile>),
        (status = 409, description = "`sandbox_not_ready`: the sandbox is neither ready nor parked", body = crate::error::ErrorBody),
        (status = 503, description = "`sandbox_unavailable`: the machine did not answer", body = crate::error::ErrorBody)))]
async fn files(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Query(q): Query<FileQuery>,
) -> ApiResult<Data<SandboxFile>> {
    let row = owned(&state, &p, id).await?;
    Ok(ok(reads::file(&state, &row, &q.path, q.max_bytes).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DirectoryQuery {
    /// Absolute path of a directory inside the sandbox.
    pub path: String,
}

/// Lists a directory (names redacted; at most 1000 entries, directories
/// first). A parked sandbox answers from its snapshot with `snapshot_at`.
#[utoipa::path(get, path = "/api/sandboxes/{id}/directory", operation_id = "listSandboxDirectory", tag = "sandboxes", params(("id" = Uuid, Path), DirectoryQuery),
    responses((status = 200, description = "The directory's entries", body = Data<SandboxDirectory>),
        (status = 404, description = "`not_found`: nothing at that path", body = crate::error::ErrorBody),
        (status = 409, description = "`sandbox_not_ready`: the sandbox is neither ready nor parked", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed`: not absolute, or not a directory", body = crate::error::ErrorBody),
        (status = 503, description = "`sandbox_unavailable`: the machine did not answer", body = crate::error::ErrorBody)))]
async fn directory(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Query(q): Query<DirectoryQuery>,
) -> ApiResult<Data<SandboxDirectory>> {
    let row = owned(&state, &p, id).await?;
    Ok(ok(reads::directory(&state, &row, &q.path).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiffParams {
    /// A directory inside a repository (absolute).
    pub path: String,
    /// Diff the index (`--cached`) instead of the working tree.
    #[serde(default)]
    pub staged: bool,
    /// The revision to diff against (default: the index, or HEAD when staged).
    #[serde(rename = "ref")]
    #[param(rename = "ref")]
    pub git_ref: Option<String>,
    pub max_bytes: Option<u64>,
}

/// The git diff of tracked content under a path (unified, no colour, redacted).
#[utoipa::path(get, path = "/api/sandboxes/{id}/diff", operation_id = "getSandboxDiff", tag = "sandboxes", params(("id" = Uuid, Path), DiffParams),
    responses((status = 200, description = "The diff", body = Data<SandboxDiff>),
        (status = 409, description = "`sandbox_not_ready`: the sandbox is neither ready nor parked", body = crate::error::ErrorBody),
        (status = 503, description = "`sandbox_unavailable`: the machine did not answer", body = crate::error::ErrorBody)))]
async fn diff(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Query(q): Query<DiffParams>,
) -> ApiResult<Data<SandboxDiff>> {
    let row = owned(&state, &p, id).await?;
    let query = DiffQuery { path: q.path, staged: q.staged, git_ref: q.git_ref };
    Ok(ok(reads::diff(&state, &row, query, q.max_bytes).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChangesQuery {
    /// A directory inside a repository (absolute).
    pub path: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxChangesResponse {
    pub data: Vec<SandboxChange>,
    /// The repository's root; change paths are relative to it.
    pub repo_root: String,
}

/// git status of the repository holding `path`: one entry per changed path.
#[utoipa::path(get, path = "/api/sandboxes/{id}/changes", operation_id = "listSandboxChanges", tag = "sandboxes", params(("id" = Uuid, Path), ChangesQuery),
    responses((status = 200, description = "Changed paths", body = SandboxChangesResponse),
        (status = 409, description = "`sandbox_not_ready`: the sandbox is neither ready nor parked", body = crate::error::ErrorBody),
        (status = 503, description = "`sandbox_unavailable`: the machine did not answer", body = crate::error::ErrorBody)))]
async fn changes(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Query(q): Query<ChangesQuery>,
) -> ApiResult<axum::Json<SandboxChangesResponse>> {
    let row = owned(&state, &p, id).await?;
    let (repo_root, data) = reads::changes(&state, &row, &q.path).await?;
    Ok(axum::Json(SandboxChangesResponse { data, repo_root }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EgressQuery {
    /// Only records older than this id (the last id of the previous page).
    pub before: Option<i64>,
    /// 1 to 500 (default 100).
    pub limit: Option<i64>,
}

/// Outbound requests of the sandbox through the egress proxy, newest first.
#[utoipa::path(get, path = "/api/sandboxes/{id}/egress", operation_id = "listSandboxEgress", tag = "sandboxes", params(("id" = Uuid, Path), EgressQuery),
    responses((status = 200, description = "Egress records", body = Data<Vec<EgressEvent>>)))]
async fn egress(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Query(q): Query<EgressQuery>,
) -> ApiResult<Data<Vec<EgressEvent>>> {
    owned(&state, &p, id).await?;
    let limit = page_limit(q.limit, 100, 500)?;
    Ok(ok(store::egress_page(&state.db, id, q.before, limit).await?))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(detail, reset))
        .routes(routes!(status))
        .routes(routes!(files))
        .routes(routes!(directory))
        .routes(routes!(diff))
        .routes(routes!(changes))
        .routes(routes!(egress))
}

/// Where the supervisor binary is: configured, or `sandboxd` beside the
/// running executable (or one level up, where test binaries live), or else
/// the `acs` executable itself, which acts as the supervisor when started
/// under that name.
pub fn sandboxd_path(configured: &str) -> PathBuf {
    if !configured.is_empty() {
        return PathBuf::from(configured);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    [dir.join("sandboxd"), dir.join("../sandboxd")].into_iter().find(|p| p.is_file()).unwrap_or(exe)
}

/// The name machines call the API by when no `public_url` is set: their
/// own loopback is not the host's, so the egress proxy maps this name to
/// the address the server listens on.
pub const API_ALIAS: &str = "acs-api";

/// The API URL machines call back on, and the alias the proxy resolves for it.
fn api_url(state: &AppState, addr: SocketAddr) -> (String, Option<(String, SocketAddr)>) {
    if let Some(url) = &state.config().public_url {
        return (url.trim_end_matches('/').to_owned(), None);
    }
    let ip = if addr.ip().is_unspecified() { std::net::Ipv4Addr::LOCALHOST.into() } else { addr.ip() };
    let name = format!("{API_ALIAS}:{}", addr.port());
    (format!("http://{name}"), Some((name, SocketAddr::new(ip, addr.port()))))
}

pub fn origin(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let default_port = if url.starts_with("https://") { 443 } else { 80 };
    Some(if authority.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    })
}

/// The `local` provider's settings from the configuration: machines call
/// the API at `api_url`, which `api_alias` maps to where it listens.
pub fn local_config(
    config: &crate::config::Config,
    api_url: &str,
    api_alias: Option<(String, SocketAddr)>,
    egress_hooks: crate::egress::hook::EgressHooks,
) -> Result<LocalConfig, String> {
    let cfg = &config.sandbox;
    Ok(LocalConfig {
        machines_dir: PathBuf::from(&cfg.dir).join("machines"),
        run_dir: PathBuf::from(&cfg.run_dir),
        sandboxd: sandboxd_path(&cfg.sandboxd_path),
        ro_binds: cfg
            .ro_binds
            .iter()
            .map(|b| provider::local::bwrap::parse_ro_bind(b))
            .chain(crate::runtimes::machine_bind(&config.runtimes.dir).map(Ok))
            .collect::<Result<_, _>>()?,
        net: NetConfig { subnet: cfg.subnet, lease_dir: PathBuf::from(&cfg.lease_dir), proxy_port: cfg.proxy_port },
        always_allowed: origin(api_url).into_iter().collect(),
        api_alias,
        addresses: AddressRules::blocking(cfg.blocked_cidrs.clone()),
        egress_hooks,
        host_overrides: host_overrides(&cfg.host_overrides)?,
        request_timeout: Duration::from_secs(cfg.egress_timeout_seconds),
        disk_mb: cfg.disk_mb,
        uid_base: cfg.uid_base,
        watchdog_seconds: cfg.watchdog_seconds,
        names_dir: None,
    })
}

/// What the broker needs to know of a machine.
pub(crate) fn broker_machine(row: &model::SandboxRow) -> crate::broker::Machine {
    crate::broker::Machine { on_runner: row.runner_id.is_some(), ca: row.broker_ca_id }
}

/// `sandbox.host_overrides`: `host=address` entries.
pub fn host_overrides(entries: &[String]) -> Result<Vec<(String, std::net::IpAddr)>, String> {
    entries
        .iter()
        .map(|e| {
            let (host, addr) =
                e.split_once('=').ok_or_else(|| format!("sandbox.host_overrides: `{e}` is not host=address"))?;
            let addr =
                addr.trim().parse().map_err(|_| format!("sandbox.host_overrides: `{addr}` is not an IP address"))?;
            Ok((host.trim().to_ascii_lowercase(), addr))
        })
        .collect()
}

/// The providers this build has for this host (`runner` machines need none).
const HOST_PROVIDERS: &[&str] = &["local", "container"];

/// `sandbox.providers` names only providers this build has, and the default is one of them.
fn check_providers(cfg: &crate::config::SandboxConfig) -> Result<(), String> {
    let available = HOST_PROVIDERS.join(", ");
    if let Some(unknown) = cfg.providers.iter().find(|p| !HOST_PROVIDERS.contains(&p.as_str())) {
        return Err(format!("sandbox.providers: unknown sandbox provider `{unknown}` (available: {available})"));
    }
    if !cfg.providers.contains(&cfg.provider) {
        return Err(format!(
            "sandbox.provider: `{}` is not among sandbox.providers ({}); available here: {available}",
            cfg.provider,
            cfg.providers.join(", ")
        ));
    }
    Ok(())
}

/// Builds the providers (this host's and the runners'), takes over machines
/// that outlived the last server, and returns the idle sweeper and the warm
/// pools' keeper to run as a worker. Fails with a clear message when the host cannot run sandboxes.
pub async fn start(state: &AppState, addr: SocketAddr) -> Result<impl Future<Output = ()> + Send + 'static, String> {
    let cfg = state.config().sandbox.clone();
    let (api_url, api_alias) = api_url(state, addr);
    let local = local_config(state.config(), &api_url, api_alias, state.extensions.egress.clone())?;
    check_providers(&cfg)?;
    let sink = Arc::new(egress_log::DbSink::start(state.clone()));
    let remote = RemoteProvider::new(PathBuf::from(&cfg.run_dir).join("runners"), api_url.clone(), sink.clone())?;
    for (machine, runner) in crate::runners::store::placements(&state.db).await.map_err(|e| e.to_string())? {
        remote.place(machine, runner);
    }
    state.put_any(remote.clone());
    let mut providers = Vec::new();
    for name in &cfg.providers {
        let host: Arc<dyn SandboxProvider> = match name.as_str() {
            "local" => Arc::new(LocalProvider::new(local.clone(), sink.clone())?),
            _ => {
                let c = &state.config().container;
                let engine = ContainerConfig { socket: PathBuf::from(&c.socket), image: c.image.clone() };
                let provider = ContainerProvider::new(local.clone(), &engine, sink.clone()).await;
                Arc::new(provider.map_err(|e| format!("sandbox provider `container`: {e}"))?)
            }
        };
        providers.push((name.clone(), Arc::new(Routed { host, remote: remote.clone() }) as Arc<dyn SandboxProvider>));
    }
    state.put_any(Arc::new(Sandboxes::new(providers, api_url, cfg)));
    let (sweeper, pools) = (service::idle_sweeper(state.clone()), pool::worker(state.clone()));
    Ok(async move {
        tokio::join!(sweeper, pools);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_origin_always_has_a_port() {
        assert_eq!(origin("http://127.0.0.1:8080").as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(origin("https://acs.example.com/").as_deref(), Some("acs.example.com:443"));
        assert_eq!(origin("http://acs.example.com/base").as_deref(), Some("acs.example.com:80"));
        assert_eq!(origin("nonsense"), None);
    }
}
