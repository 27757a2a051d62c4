//! The `local` provider: bubblewrap namespaces on this host.
//!
//! Each machine is a bwrap process tree (own user, PID, IPC, UTS and mount
//! namespaces) started inside its own network namespace, whose only way out
//! is the egress proxy on the host end of its veth pair. Its first process is
//! `sandboxd`; bwrap is started in its own process group and without
//! `--die-with-parent`, so machines outlive a server restart and the next
//! server reattaches to them. Limits come from a cgroup per machine when the
//! host allows it. See `docs/sandboxes.md`.

pub mod bwrap;
pub mod cgroup;
pub mod checkpoint;
pub mod net;

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use time::OffsetDateTime;
use uuid::Uuid;

use self::bwrap::{Layout, Payload};
use self::cgroup::{Cgroup, Cgroups};
use self::checkpoint::Checkpointer;
use self::net::{HostNet, Lease, NetConfig};
use super::{
    BoxFut, CheckpointInfo, ExecOutput, Limits, MachineSpec, MachineState, NetworkPolicy, ProviderError,
    ProviderResult, SandboxProvider, Started, Supervisor,
};
use crate::blocklist::AddressRules;
use crate::egress::{self, EgressSink, ProxyHandle};
use sandboxd::client::ExecExit;

/// How long a starting supervisor may take to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// Bounds of a read of a parked machine.
const OFFLINE_TIMEOUT: Duration = Duration::from_secs(30);
const OFFLINE_MAX_OUTPUT: usize = 16 << 20;

#[derive(Debug, Clone)]
pub struct LocalConfig {
    /// Machines live in `<dir>/<id>/`.
    pub machines_dir: PathBuf,
    /// Supervisor sockets live in `<dir>/<id>/` (a short path: unix sockets are limited to 107 bytes).
    pub run_dir: PathBuf,
    /// The supervisor binary bound into every machine.
    pub sandboxd: PathBuf,
    /// Host paths bound read-only into every machine (`sandbox.ro_binds`).
    pub ro_binds: Vec<(PathBuf, String)>,
    pub net: NetConfig,
    /// `host:port` pairs every machine may reach through the proxy (the API).
    pub always_allowed: Vec<String>,
    /// `host:port` that machines call the API by, and where it really listens.
    pub api_alias: Option<(String, std::net::SocketAddr)>,
    /// Which addresses the proxy may dial (past them only `always_allowed` and `api_alias`).
    pub addresses: AddressRules,
    pub request_timeout: Duration,
}

/// What the provider holds for a running machine (its cgroup, if any, is
/// found again by name).
struct Live {
    lease: Lease,
    proxy: ProxyHandle,
}

pub struct LocalProvider {
    cfg: LocalConfig,
    net: HostNet,
    cgroups: Option<Cgroups>,
    checkpointer: Checkpointer,
    sink: Arc<dyn EgressSink>,
    live: Mutex<HashMap<Uuid, Live>>,
}

/// The checks `acs serve` runs before it starts: a clear message per missing part.
pub fn check_host(cfg: &LocalConfig) -> Result<(), String> {
    if which("bwrap").is_none() {
        return Err("the local sandbox provider needs bubblewrap (`bwrap`): install it with \
                    `apt-get install bubblewrap` (or run scripts/setup)"
            .into());
    }
    if !cfg.sandboxd.is_file() {
        return Err(format!(
            "the sandbox supervisor binary was not found at {} (build it with `cargo build --bin sandboxd`, \
             or set sandbox.sandboxd_path)",
            cfg.sandboxd.display()
        ));
    }
    Ok(())
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin".into());
    std::env::split_paths(&path).chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")]).find_map(|d| {
        let p = d.join(program);
        p.is_file().then_some(p)
    })
}

impl LocalProvider {
    pub fn new(cfg: LocalConfig, sink: Arc<dyn EgressSink>) -> Result<LocalProvider, String> {
        check_host(&cfg)?;
        std::fs::create_dir_all(&cfg.machines_dir)
            .map_err(|e| format!("sandbox directory {}: {e}", cfg.machines_dir.display()))?;
        let net = HostNet::init(cfg.net.clone())?;
        let cgroups = Cgroups::detect();
        if cgroups.is_none() {
            tracing::warn!("cgroups are not usable here: sandboxes run without memory, CPU and process limits");
        }
        let checkpointer = Checkpointer::probe(&cfg.machines_dir);
        Ok(LocalProvider { cfg, net, cgroups, checkpointer, sink, live: Mutex::new(HashMap::new()) })
    }

    fn layout(&self, id: Uuid) -> Layout {
        Layout::new(&self.cfg.machines_dir, &self.cfg.run_dir, id)
    }

    fn policy(&self, policy: &NetworkPolicy) -> egress::Policy {
        let (allow_all, allowed_hosts) = match policy {
            NetworkPolicy::Open | NetworkPolicy::Unrestricted => (true, Vec::new()),
            NetworkPolicy::Limited(hosts) => (false, hosts.clone()),
        };
        egress::Policy {
            allow_all,
            allowed_hosts,
            always_allowed: self.cfg.always_allowed.clone(),
            addresses: self.cfg.addresses.clone(),
            aliases: self.cfg.api_alias.clone().into_iter().collect(),
        }
    }

    fn take_live(&self, id: Uuid) -> Option<Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).remove(&id)
    }

    fn put_live(&self, id: Uuid, live: Live) {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).insert(id, live);
    }

    async fn open_proxy(&self, id: Uuid, lease: &Lease, policy: &NetworkPolicy) -> std::io::Result<ProxyHandle> {
        let addr = (lease.host_ip, self.cfg.net.proxy_port);
        // A machine that just left these addresses may still be closing its
        // proxy's listener (stop is asynchronous): wait for it, briefly.
        let mut tries = 0;
        let listener = loop {
            match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => break l,
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tries < 100 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => return Err(e),
            }
        };
        Ok(egress::spawn(listener, id, self.policy(policy), self.sink.clone(), self.cfg.request_timeout))
    }

    /// Writes the machine's directories and generated `/etc`.
    fn prepare_disk(&self, layout: &Layout, hostname: &str) -> std::io::Result<()> {
        for dir in [layout.home(), layout.workspace(), layout.run(), layout.etc()] {
            std::fs::create_dir_all(&dir)?;
        }
        let _ = std::fs::remove_file(layout.socket());
        for (name, content) in bwrap::etc_files(hostname) {
            std::fs::write(layout.etc().join(name), content)?;
        }
        Ok(())
    }

    async fn launch(
        &self,
        spec: &MachineSpec,
        layout: &Layout,
        lease: &Lease,
        cgroup: Option<&Cgroup>,
    ) -> ProviderResult<()> {
        let mut env = spec.env.clone();
        let proxy = format!("http://{}:{}", lease.host_ip, self.cfg.net.proxy_port);
        for key in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"] {
            env.insert(key.into(), proxy.clone());
        }
        env.insert("no_proxy".into(), "localhost,127.0.0.1".into());
        env.insert("NO_PROXY".into(), "localhost,127.0.0.1".into());
        env.insert("SANDBOX_URL".into(), sandbox_url(lease));
        let netns = std::fs::File::open(&lease.netns_path)?;
        let info = std::fs::File::create(layout.info())?;
        let log = std::fs::OpenOptions::new().create(true).append(true).open(layout.log())?;
        let procs: Vec<CString> = cgroup.map(|c| c.procs_files()).unwrap_or_default();
        let mut cmd = tokio::process::Command::new("bwrap");
        cmd.args(bwrap::args(layout, &spec.hostname, &self.cfg.sandboxd, &self.cfg.ro_binds, Payload::Supervisor))
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Own process group: a terminal's Ctrl-C to the server must not reach machines.
            .process_group(0);
        let (netns_fd, info_fd) = (netns.as_raw_fd(), info.as_raw_fd());
        // SAFETY: only async-signal-safe calls (setns, write, dup2) run between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(netns_fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Cgroup::join_raw(&procs)?;
                if libc::dup2(info_fd, bwrap::INFO_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| ProviderError::Host(format!("bwrap: {e}")))?;
        drop((netns, info));
        let supervisor = Supervisor::new(layout.socket());
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        loop {
            if supervisor.ping().await.is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(ProviderError::Host(format!(
                    "the machine exited at start ({status}): {}",
                    log_tail(&layout.log())
                )));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ProviderError::Supervisor(format!(
                    "no answer within {} s: {}",
                    READY_TIMEOUT.as_secs(),
                    log_tail(&layout.log())
                )));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Kills a machine's processes: its cgroup when it has one, else its
    /// PID namespace (killing the namespace's init ends every process in it).
    async fn kill(&self, layout: &Layout, cgroup: Option<&Cgroup>) {
        if let Some(pid) = init_pid(layout) {
            // SAFETY: plain kill(2) of a pid checked to be this machine's bwrap.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            for _ in 0..500 {
                if !is_bwrap(pid) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        if let Some(cg) = cgroup {
            cg.kill_all();
            cg.remove();
        }
        let _ = std::fs::remove_file(layout.info());
        let _ = std::fs::remove_file(layout.socket());
    }

    async fn stop_machine(&self, id: Uuid) {
        let layout = self.layout(id);
        let live = self.take_live(id);
        let cgroup = self.cgroups.as_ref().and_then(|c| c.open(&id.to_string()));
        self.kill(&layout, cgroup.as_ref()).await;
        let lease = match live {
            Some(l) => {
                l.proxy.stop();
                Some(l.lease)
            }
            None => self.net.adopt(id),
        };
        if let Some(lease) = lease {
            self.net.release(&lease).await;
        }
    }

    async fn offline(&self, id: Uuid, argv: &[String], env: &BTreeMap<String, String>) -> ProviderResult<ExecOutput> {
        let layout = self.layout(id);
        if !layout.disk().is_dir() {
            return Err(ProviderError::Host("the machine has no disk".into()));
        }
        let hostname = std::fs::read_to_string(layout.etc().join("hostname")).unwrap_or_default();
        let mut cmd = tokio::process::Command::new("bwrap");
        cmd.args(bwrap::args(&layout, hostname.trim(), &self.cfg.sandboxd, &self.cfg.ro_binds, Payload::Offline(argv)))
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let child = cmd.spawn().map_err(|e| ProviderError::Host(format!("bwrap: {e}")))?;
        match tokio::time::timeout(OFFLINE_TIMEOUT, child.wait_with_output()).await {
            Ok(out) => {
                let out = out?;
                let truncated = out.stdout.len() > OFFLINE_MAX_OUTPUT || out.stderr.len() > OFFLINE_MAX_OUTPUT;
                let mut stdout = out.stdout;
                let mut stderr = out.stderr;
                stdout.truncate(OFFLINE_MAX_OUTPUT);
                stderr.truncate(OFFLINE_MAX_OUTPUT);
                let exit = ExecExit { code: out.status.code(), signal: None, timed_out: false, truncated };
                Ok(ExecOutput { stdout, stderr, exit })
            }
            Err(_) => Ok(ExecOutput {
                stdout: Vec::new(),
                stderr: Vec::new(),
                exit: ExecExit { code: None, signal: None, timed_out: true, truncated: false },
            }),
        }
    }
}

fn sandbox_url(lease: &Lease) -> String {
    format!("http://{}", lease.sandbox_ip)
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

/// The host pid of a machine's bwrap init, from bwrap's `--info-fd` output.
fn init_pid(layout: &Layout) -> Option<i32> {
    let text = std::fs::read_to_string(layout.info()).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let pid = i32::try_from(value.get("child-pid")?.as_i64()?).ok()?;
    is_bwrap(pid).then_some(pid)
}

/// Guards against a recycled pid: only ever signal a bwrap process.
fn is_bwrap(pid: i32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    argv0.ends_with(b"bwrap")
}

impl SandboxProvider for LocalProvider {
    fn name(&self) -> &'static str {
        "local"
    }

    fn start<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<Started>> {
        Box::pin(async move {
            // A machine still up (say, a start that lost its caller) is stopped first.
            self.stop_machine(spec.id).await;
            let layout = self.layout(spec.id);
            if !spec.persistent {
                let _ = std::fs::remove_dir_all(layout.disk());
            }
            self.prepare_disk(&layout, &spec.hostname)?;
            let lease = self.net.create(spec.id, spec.network == NetworkPolicy::Unrestricted).await?;
            let proxy = match self.open_proxy(spec.id, &lease, &spec.network).await {
                Ok(p) => p,
                Err(e) => {
                    self.net.release(&lease).await;
                    return Err(e.into());
                }
            };
            let cgroup = match self.cgroups.as_ref().map(|c| c.create(&spec.id.to_string(), &limits(&spec.limits))) {
                Some(Ok(cg)) => Some(cg),
                Some(Err(e)) => {
                    tracing::warn!(sandbox = %spec.id, "no cgroup for this machine: {e}");
                    None
                }
                None => None,
            };
            let url = sandbox_url(&lease);
            let launched = self.launch(spec, &layout, &lease, cgroup.as_ref()).await;
            self.put_live(spec.id, Live { lease, proxy });
            if let Err(e) = launched {
                self.stop_machine(spec.id).await;
                return Err(e);
            }
            Ok(Started { url: Some(url) })
        })
    }

    fn reattach<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<bool>> {
        Box::pin(async move {
            let layout = self.layout(spec.id);
            let alive = Supervisor::new(layout.socket()).ping().await.is_ok();
            let lease = self.net.adopt(spec.id);
            let (true, Some(lease)) = (alive, lease) else {
                self.stop_machine(spec.id).await;
                return Ok(false);
            };
            let proxy = self.open_proxy(spec.id, &lease, &spec.network).await?;
            self.put_live(spec.id, Live { lease, proxy });
            Ok(true)
        })
    }

    fn set_network<'a>(&'a self, id: Uuid, policy: &'a NetworkPolicy) -> BoxFut<'a, ProviderResult<()>> {
        Box::pin(async move {
            let (lease, unrestricted) = {
                let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
                let live = live.get(&id).ok_or_else(|| ProviderError::Host("the machine is not running".into()))?;
                live.proxy.set_policy(self.policy(policy));
                (live.lease.clone(), *policy == NetworkPolicy::Unrestricted)
            };
            self.net.set_unrestricted(&lease, unrestricted).await?;
            Ok(())
        })
    }

    fn stop(&self, id: Uuid) -> BoxFut<'_, ()> {
        Box::pin(self.stop_machine(id))
    }

    fn checkpoint(&self, id: Uuid) -> BoxFut<'_, ProviderResult<CheckpointInfo>> {
        Box::pin(async move {
            let layout = self.layout(id);
            let info = CheckpointInfo { id: Uuid::now_v7().to_string(), at: OffsetDateTime::now_utc() };
            let fresh = layout.root.join(format!("checkpoint-{}", info.id));
            self.checkpointer.snapshot(&layout.disk(), &fresh).await?;
            let old = layout.checkpoint();
            if old.exists() {
                let doomed = layout.root.join("checkpoint-old");
                let _ = tokio::fs::remove_dir_all(&doomed).await;
                tokio::fs::rename(&old, &doomed).await?;
                tokio::fs::rename(&fresh, &old).await?;
                let _ = tokio::fs::remove_dir_all(&doomed).await;
            } else {
                tokio::fs::rename(&fresh, &old).await?;
            }
            let meta = serde_json::to_vec(&info).map_err(std::io::Error::other)?;
            tokio::fs::write(layout.checkpoint_meta(), meta).await?;
            Ok(info)
        })
    }

    fn restore(&self, id: Uuid) -> BoxFut<'_, ProviderResult<()>> {
        Box::pin(async move {
            let layout = self.layout(id);
            if !layout.checkpoint().is_dir() {
                return Err(ProviderError::NoCheckpoint);
            }
            self.checkpointer.restore(&layout.checkpoint(), &layout.disk()).await?;
            Ok(())
        })
    }

    fn destroy(&self, id: Uuid) -> BoxFut<'_, ()> {
        Box::pin(async move {
            self.stop_machine(id).await;
            let layout = self.layout(id);
            let _ = tokio::fs::remove_dir_all(&layout.root).await;
            let _ = tokio::fs::remove_dir_all(layout.run()).await;
        })
    }

    fn state(&self, id: Uuid) -> BoxFut<'_, MachineState> {
        Box::pin(async move {
            let layout = self.layout(id);
            if Supervisor::new(layout.socket()).ping().await.is_ok() {
                MachineState::Running
            } else if layout.disk().is_dir() {
                MachineState::Stopped
            } else {
                MachineState::Missing
            }
        })
    }

    fn served(&self) -> Vec<Uuid> {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).keys().copied().collect()
    }

    fn let_go(&self, id: Uuid) {
        // Dropping a proxy's handle closes its listener.
        self.take_live(id);
    }

    fn supervisor(&self, id: Uuid) -> Supervisor {
        Supervisor::new(self.layout(id).socket())
    }

    fn exec_offline<'a>(
        &'a self,
        id: Uuid,
        argv: &'a [String],
        env: &'a BTreeMap<String, String>,
    ) -> BoxFut<'a, ProviderResult<ExecOutput>> {
        Box::pin(self.offline(id, argv, env))
    }
}

fn limits(l: &Limits) -> cgroup::Limits {
    cgroup::Limits { memory_bytes: l.memory_bytes, cpu_millis: l.cpu_millis, pids: l.pids }
}

/// Stops every machine under `machines_dir` and frees their network, without
/// a running server (tests' teardown, an operator's cleanup).
pub fn purge_blocking(machines_dir: &Path, run_dir: &Path, lease_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(machines_dir) else { return };
    let cgroups = Cgroups::detect();
    for entry in entries.flatten() {
        let Some(id) = entry.file_name().to_str().and_then(|s| s.parse::<Uuid>().ok()) else { continue };
        let layout = Layout::new(machines_dir, run_dir, id);
        if let Some(pid) = init_pid(&layout) {
            // SAFETY: plain kill(2) of a pid checked to be this machine's bwrap.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if let Some(cg) = cgroups.as_ref().and_then(|c| c.open(&id.to_string())) {
            cg.kill_all();
            cg.remove();
        }
        net::release_blocking(lease_dir, id);
        let _ = std::fs::remove_dir_all(layout.run());
    }
}
