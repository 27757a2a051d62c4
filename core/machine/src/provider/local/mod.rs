//! The `local` provider: bubblewrap namespaces on this host.
//!
//! Each machine is a bwrap process tree (own user, PID, IPC, UTS and mount
//! namespaces) started inside its own network namespace, whose only way out
//! is the egress proxy on the host end of its veth pair. bwrap runs as the
//! machine's own unprivileged host uid (`owner.rs`), under a seccomp filter
//! (`seccomp.rs`), on a size-limited disk (`disk.rs`). Its first process is
//! `sandboxd`, listening on a socket the server bound outside the machine;
//! bwrap is started in its own process group and without
//! `--die-with-parent`, so machines outlive a server restart and the next
//! server reattaches to them. Limits come from a cgroup per machine when the
//! host allows it. See `docs/sandboxes.md`.

pub mod bwrap;
pub mod cgroup;
pub mod checkpoint;
pub mod disk;
pub mod net;
mod netlink;
pub mod owner;
pub mod seccomp;

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use time::OffsetDateTime;
use tokio::io::AsyncReadExt;
use uuid::Uuid;

use self::bwrap::Layout;
use self::cgroup::{Cgroup, Cgroups};
use self::checkpoint::Checkpointer;
use self::disk::Disks;
use self::net::{HostNet, Lease, NetConfig};
use self::owner::Owners;
use super::container::engine::{self, Engine};
use super::{
    BoxFut, CheckpointInfo, ExecOutput, Limits, MachineSpec, MachineState, NetworkPolicy, ProviderError,
    ProviderResult, SandboxProvider, Started, Supervisor,
};
use crate::egress::broker::BrokerRef;
use crate::egress::{self, EgressSink, ProxyHandle};
use acs_store::blocklist::AddressRules;
use sandboxd::client::{ExecExit, Peer};

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
    /// Egress decisions of enabled extensions, after each machine's policy.
    pub egress_hooks: crate::egress::hook::EgressHooks,
    /// Names the proxy resolves to a fixed address (`sandbox.host_overrides`).
    pub host_overrides: Vec<(String, std::net::IpAddr)>,
    pub request_timeout: Duration,
    /// Size of each machine's disk (`sandbox.disk_mb`); 0: no limit.
    pub disk_mb: u64,
    /// The first of the host uids machines run as (`sandbox.uid_base`).
    pub uid_base: u32,
    /// A supervisor no server has spoken to for this long parks its machine (0: never).
    pub watchdog_seconds: u64,
    /// Where `<hostname>` links to each running machine's disk (a runner's
    /// `<root>/<machine_name>`, for its owner to look into); `None`: nowhere.
    pub names_dir: Option<PathBuf>,
}

/// What the provider holds for a running machine (its cgroup, if any, is
/// found again by name).
struct Live {
    lease: Lease,
    proxy: ProxyHandle,
    /// Kept for the policies `set_network` makes.
    broker: Option<BrokerRef>,
    /// Whether the kernel lets the machine out directly (its address in the
    /// nftables set), when known: `set_network` skips a set change that would
    /// change nothing (a build without clone or packages starts under its final policy).
    unrestricted: Option<bool>,
}

pub struct LocalProvider {
    cfg: LocalConfig,
    /// Machines are containers of this engine instead of bwrap trees (the `container` provider).
    engine: Option<Arc<Engine>>,
    net: HostNet,
    cgroups: Option<Cgroups>,
    checkpointer: Checkpointer,
    disks: Disks,
    owners: Owners,
    /// The supervisor binary machines bind: a root-owned copy every machine's uid can read.
    sandboxd: PathBuf,
    /// bwrap, found once on the server's PATH (a machine's own PATH is no place to look for it).
    bwrap: PathBuf,
    sink: Arc<dyn EgressSink>,
    live: Mutex<HashMap<Uuid, Live>>,
    /// Each running machine's supervisor as the kernel identified it, checked on every connection.
    peers: Mutex<HashMap<Uuid, Peer>>,
}

/// The checks `acs serve` runs before it starts: a clear message per missing
/// part. Returns the bwrap it found.
pub fn check_host(cfg: &LocalConfig) -> Result<PathBuf, String> {
    let bwrap = which("bwrap").ok_or(
        "the local sandbox provider needs bubblewrap (`bwrap`): install it with \
         `apt-get install bubblewrap` (or run scripts/setup)",
    )?;
    if !cfg.sandboxd.is_file() {
        return Err(format!(
            "the sandbox supervisor binary was not found at {} (build it with `cargo build --bin sandboxd`, \
             or set sandbox.sandboxd_path)",
            cfg.sandboxd.display()
        ));
    }
    for (host, _) in &cfg.ro_binds {
        reachable_by_machines(host).map_err(|e| format!("sandbox.ro_binds / runtimes.dir: {e}"))?;
    }
    Ok(bwrap)
}

/// Machines run as their own unprivileged uids, and bwrap opens what it
/// binds as that uid: every directory on the way must let other users pass
/// (`o+x`) and the path itself be readable by them.
fn reachable_by_machines(path: &Path) -> Result<(), String> {
    let path = fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for dir in path.ancestors().skip(1) {
        let mode = fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?.mode();
        if mode & 0o001 == 0 {
            return Err(format!(
                "{} is not reachable by the machines' unprivileged users: {} is mode {:o} (it needs o+x; \
                 or move the path somewhere other users may reach)",
                path.display(),
                dir.display(),
                mode & 0o7777
            ));
        }
    }
    let meta = fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let need = if meta.is_dir() { 0o005 } else { 0o004 };
    if meta.mode() & need != need {
        return Err(format!(
            "{} is not readable by the machines' unprivileged users (mode {:o})",
            path.display(),
            meta.mode() & 0o7777
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

fn mkdir(path: &Path, mode: u32) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(mode).create(path)?;
    // An existing directory (made by an older version, or with another umask) gets the mode too.
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

/// How long a refill of spares (disks, networks) waits before it starts:
/// after the start that took a spare rather than beside it, since both want
/// the two cores.
const REFILL_DELAY: Duration = Duration::from_millis(50);

/// Waits for an exclusive flock on `file` and returns it, holding the lock until dropped.
fn flock(file: File) -> io::Result<File> {
    loop {
        // SAFETY: flock on a descriptor owned here.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Takes an exclusive flock on `file` if no one holds one: true when taken
/// (held until the file is closed), false when another holder has it.
fn try_flock(file: &File) -> bool {
    // SAFETY: flock on a descriptor the caller owns.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// A root-owned copy of the supervisor under the run directory, named by its
/// content: machines bind it from there whatever the mode of the directory
/// the server's own binaries live in, and a rebuilt binary never changes
/// under a running machine. Copies unused for a day go (a running machine
/// keeps its own: a bind holds the file, not the name).
fn install_sandboxd(src: &Path, run_dir: &Path) -> Result<PathBuf, String> {
    let bin = run_dir.join(".bin");
    mkdir(&bin, 0o755).map_err(|e| format!("{}: {e}", bin.display()))?;
    let dst = bin.join(format!("sandboxd-{}", content_digest(src)?));
    if dst.is_file() {
        // Marks it in use, for the clean-up below.
        File::options().append(true).open(&dst).and_then(|f| f.set_modified(std::time::SystemTime::now())).ok();
    } else {
        let tmp = bin.join(format!(".sandboxd-{}", Uuid::new_v4().simple()));
        let written = fs::copy(src, &tmp)
            .and_then(|_| fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755)))
            .and_then(|()| fs::rename(&tmp, &dst));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(format!("{}: {e}", dst.display()));
        }
    }
    let day = std::time::Duration::from_secs(86_400);
    for entry in fs::read_dir(&bin).into_iter().flatten().flatten() {
        let stale = entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().unwrap_or_default() > day);
        if stale && entry.path() != dst {
            let _ = fs::remove_file(entry.path());
        }
    }
    Ok(dst)
}

/// A short digest of a file's content, computed once per file version in this process.
fn content_digest(path: &Path) -> Result<String, String> {
    use sha2::Digest;
    type Version = (PathBuf, u64, std::time::SystemTime);
    static SEEN: Mutex<Vec<(Version, String)>> = Mutex::new(Vec::new());
    let meta = fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let key = (path.to_owned(), meta.len(), meta.modified().map_err(|e| e.to_string())?);
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, digest)) = seen.iter().find(|(k, _)| *k == key) {
        return Ok(digest.clone());
    }
    let bytes = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let digest = hex::encode(&sha2::Sha256::digest(&bytes)[..8]);
    seen.push((key, digest.clone()));
    Ok(digest)
}

/// A unix socket bound at `path` but not listening: the supervisor inherits
/// it and calls listen(2) itself, which makes it the peer the kernel reports.
fn bound_socket(path: &Path) -> io::Result<OwnedFd> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: plain data; all-zero is a valid sockaddr_un.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("socket path too long: {}", path.display())));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    // SAFETY: socket(2); the descriptor is owned by the OwnedFd at once.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let len = (std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1) as libc::socklen_t;
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
    if unsafe { libc::bind(sock.as_raw_fd(), (&raw const addr).cast(), len) } != 0 {
        return Err(io::Error::last_os_error());
    }
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
    Ok(sock)
}

/// The seccomp program in a memory file, for bwrap's `--seccomp`.
fn seccomp_fd() -> io::Result<File> {
    // SAFETY: memfd_create with a static name; the descriptor is owned by the File at once.
    let fd = unsafe { libc::memfd_create(c"acs-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(&seccomp::program_bytes())?;
    io::Seek::seek(&mut file, io::SeekFrom::Start(0))?;
    Ok(file)
}

/// In the child between fork and exec (async-signal-safe calls only): into
/// the machine's network namespace and cgroup while still root, hand the
/// listed descriptors down, then become the machine's uid for good.
fn enter_machine(netns_fd: i32, procs: &[CString], keep: &[i32], uid: u32) -> io::Result<()> {
    // SAFETY: setns, fcntl, setgroups, setresgid and setresuid are async-signal-safe system calls.
    unsafe {
        if netns_fd >= 0 && libc::setns(netns_fd, libc::CLONE_NEWNET) != 0 {
            return Err(io::Error::last_os_error());
        }
        Cgroup::join_raw(procs)?;
        for fd in keep {
            if libc::fcntl(*fd, libc::F_SETFD, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if libc::setgroups(0, std::ptr::null()) != 0
            || libc::setresgid(uid, uid, uid) != 0
            || libc::setresuid(uid, uid, uid) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

impl LocalProvider {
    pub fn new(cfg: LocalConfig, sink: Arc<dyn EgressSink>) -> Result<LocalProvider, String> {
        Self::with_engine(cfg, sink, None)
    }

    /// With `engine`, machines are its containers (limits are then the engine's, not a cgroup of ours).
    pub(crate) fn with_engine(
        cfg: LocalConfig,
        sink: Arc<dyn EgressSink>,
        engine: Option<Arc<Engine>>,
    ) -> Result<LocalProvider, String> {
        let bwrap = check_host(&cfg)?;
        // Root only: disks, checkpoints and records are nobody else's business.
        mkdir(&cfg.machines_dir, 0o700)
            .map_err(|e| format!("sandbox directory {}: {e}", cfg.machines_dir.display()))?;
        // Machines' uids pass through to their own directory (and may not list it).
        mkdir(&cfg.run_dir, 0o711).map_err(|e| format!("sandbox run directory {}: {e}", cfg.run_dir.display()))?;
        let sandboxd = install_sandboxd(&cfg.sandboxd, &cfg.run_dir)?;
        reachable_by_machines(&sandboxd)?;
        let disks = Disks::new(&cfg.machines_dir, cfg.disk_mb)?;
        let owners = Owners::new(&cfg.net.lease_dir, cfg.uid_base);
        let net = HostNet::init(cfg.net.clone())?;
        let cgroups = if engine.is_some() { None } else { Cgroups::detect() };
        if cgroups.is_none() && engine.is_none() {
            tracing::warn!("cgroups are not usable here: sandboxes run without memory, CPU and process limits");
        }
        if cgroups.is_some()
            && let Err(e) = cgroup::favor_dynmods(&cfg.run_dir.join(format!(".favordynmods-{}", std::process::id())))
        {
            tracing::info!(
                "cgroup favordynmods is not available ({e}): each machine start waits for the kernel longer"
            );
        }
        let checkpointer = Checkpointer::probe(&cfg.machines_dir);
        Ok(LocalProvider {
            cfg,
            engine,
            net,
            cgroups,
            checkpointer,
            disks,
            owners,
            sandboxd,
            bwrap,
            sink,
            live: Mutex::new(HashMap::new()),
            peers: Mutex::new(HashMap::new()),
        })
    }

    /// `<names_dir>/<hostname>` -> the machine's mounted disk. Machine names
    /// are letters, digits, `-` and `_`, never a path.
    fn link_name(&self, spec: &MachineSpec, layout: &Layout) {
        let Some(dir) = &self.cfg.names_dir else { return };
        let link = dir.join(&spec.hostname);
        let made = fs::remove_file(&link)
            .or_else(|e| if e.kind() == io::ErrorKind::NotFound { Ok(()) } else { Err(e) })
            .and_then(|()| std::os::unix::fs::symlink(layout.mount(), &link));
        if let Err(e) = made {
            tracing::warn!(sandbox = %spec.id, "{}: {e}", link.display());
        }
    }

    fn unlink_name(&self, layout: &Layout) {
        let Some(dir) = &self.cfg.names_dir else { return };
        let mount = layout.mount();
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            if fs::read_link(entry.path()).is_ok_and(|target| target == mount)
                && let Err(e) = fs::remove_file(entry.path())
            {
                tracing::warn!("{}: {e}", entry.path().display());
            }
        }
    }

    fn layout(&self, id: Uuid) -> Layout {
        Layout::new(&self.cfg.machines_dir, &self.cfg.run_dir, id)
    }

    fn policy(&self, policy: &NetworkPolicy, broker: Option<&BrokerRef>) -> egress::Policy {
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
            overrides: self.cfg.host_overrides.clone(),
            hooks: self.cfg.egress_hooks.clone(),
            broker: broker.cloned(),
        }
    }

    fn take_live(&self, id: Uuid) -> Option<Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).remove(&id)
    }

    fn put_live(&self, id: Uuid, live: Live) {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).insert(id, live);
    }

    fn peer(&self, id: Uuid) -> Option<Peer> {
        self.peers.lock().unwrap_or_else(|p| p.into_inner()).get(&id).copied()
    }

    fn set_peer(&self, id: Uuid, peer: Option<Peer>) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        match peer {
            Some(p) => peers.insert(id, p),
            None => peers.remove(&id),
        };
    }

    async fn open_proxy(&self, spec: &MachineSpec, lease: &Lease) -> std::io::Result<ProxyHandle> {
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
        let policy = self.policy(&spec.network, spec.broker.as_ref());
        Ok(egress::spawn(listener, spec.id, policy, self.sink.clone(), self.cfg.request_timeout))
    }

    /// The machine's directories, its uid and its mounted disk, ready for
    /// bwrap. Returns the uid.
    async fn prepare_disk(&self, id: Uuid, layout: &Layout, hostname: &str, fresh: bool) -> ProviderResult<u32> {
        mkdir(&layout.root, 0o700)?;
        mkdir(&layout.run(), 0o711)?;
        mkdir(&layout.ctl(), 0o700)?;
        mkdir(&layout.etc(), 0o755)?;
        let _lock = disk::lock(layout).await?;
        let (disks, owners, layout, id) = (self.disks.clone(), self.owners.clone(), layout.clone(), id);
        let hostname = hostname.to_owned();
        let container = self.engine.is_some();
        let uid = tokio::task::spawn_blocking(move || -> io::Result<u32> {
            if fresh {
                remove_disk(&layout)?;
            }
            let recorded = owner::recorded(&layout.owner());
            let uid = owners.take(id, recorded)?;
            if recorded != Some(uid) {
                owner::record(&layout.owner(), uid)?;
            }
            disks.attach(&layout, uid)?;
            disk::settle(&layout, uid)?;
            fs::write(layout.hostname(), format!("{hostname}\n"))?;
            write_etc(&layout, &hostname, if container { uid } else { bwrap::AGENT_UID })?;
            if container {
                // The supervisor binds its socket there itself, as the machine's uid.
                std::os::unix::fs::chown(layout.ctl(), Some(uid), Some(uid))?;
            }
            Ok(uid)
        })
        .await
        .map_err(io::Error::other)??;
        Ok(uid)
    }

    async fn launch(
        &self,
        spec: &MachineSpec,
        layout: &Layout,
        lease: &Lease,
        cgroup: Option<&Cgroup>,
        uid: u32,
    ) -> ProviderResult<Peer> {
        let mut env = spec.env.clone();
        let proxy = format!("http://{}:{}", lease.host_ip, self.cfg.net.proxy_port);
        for key in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"] {
            env.insert(key.into(), proxy.clone());
        }
        env.insert("no_proxy".into(), "localhost,127.0.0.1".into());
        env.insert("NO_PROXY".into(), "localhost,127.0.0.1".into());
        env.insert("SANDBOX_URL".into(), sandbox_url(lease));
        let mut binds = self.cfg.ro_binds.clone();
        if let Some(broker) = &spec.broker {
            binds.extend(trust_broker(layout, &broker.0.ca_pem, &mut env)?);
        }
        if !self.sandboxd.is_file() {
            // Something cleared the run directory (an operator, a reboot's tmpfs): put it back.
            install_sandboxd(&self.cfg.sandboxd, &self.cfg.run_dir).map_err(ProviderError::Host)?;
        }
        if let Some(engine) = &self.engine {
            return self.launch_container(engine, spec, layout, lease, uid, &env, &binds).await;
        }
        etc_mount_points(layout, &binds)?;
        let netns = File::open(&lease.netns_path)?;
        let info = File::create(layout.info())?;
        let log = fs::OpenOptions::new().create(true).append(true).open(layout.log())?;
        let socket = bound_socket(&layout.socket())?;
        let seccomp = seccomp_fd()?;
        let (ready, ready_writer) = std::io::pipe()?;
        let procs: Vec<CString> = cgroup.map(|c| c.procs_files()).unwrap_or_default();
        let (netns_fd, info_fd, listen_fd, seccomp_fd, ready_fd) =
            (netns.as_raw_fd(), info.as_raw_fd(), socket.as_raw_fd(), seccomp.as_raw_fd(), ready_writer.as_raw_fd());
        let payload =
            bwrap::Payload::Supervisor { listen_fd, info_fd, ready_fd, watchdog_seconds: self.cfg.watchdog_seconds };
        let mut cmd = tokio::process::Command::new(&self.bwrap);
        cmd.args(bwrap::args(layout, &spec.hostname, &self.sandboxd, &binds, seccomp_fd, payload))
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Own process group: a terminal's Ctrl-C to the server must not reach machines.
            .process_group(0);
        let keep = [info_fd, listen_fd, seccomp_fd, ready_fd];
        // SAFETY: `enter_machine` makes only async-signal-safe calls.
        unsafe {
            cmd.pre_exec(move || enter_machine(netns_fd, &procs, &keep, uid));
        }
        let mut child = cmd.spawn().map_err(|e| ProviderError::Host(format!("bwrap: {e}")))?;
        // The supervisor holds the socket now; the server's copy would keep it alive past the machine.
        // The pipe's writing end is the machine's alone: its end reads as the machine's exit.
        drop((netns, info, socket, seccomp, ready_writer));
        let mut ready = tokio::net::unix::pipe::Receiver::from_owned_fd(ready.into())?;
        let mut byte = [0u8; 1];
        match tokio::time::timeout(READY_TIMEOUT, ready.read(&mut byte)).await {
            Ok(Ok(1)) => {}
            Ok(_) => {
                // Every writer is gone, bwrap's own copy with it: bwrap has exited or is exiting.
                let status = match tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
                    Ok(Ok(status)) => status.to_string(),
                    _ => "status unknown".to_owned(),
                };
                return Err(ProviderError::Host(format!(
                    "the machine exited at start ({status}): {}",
                    log_tail(&layout.log())
                )));
            }
            Err(_) => return Err(no_answer(layout)),
        }
        let peer = supervisor_peer(layout, uid).ok_or_else(|| no_answer(layout))?;
        Supervisor::new(layout.socket()).with_peer(peer).ping().await.map_err(|_| no_answer(layout))?;
        Ok(peer)
    }

    /// The machine as a container of `engine`: its init's host pid is
    /// recorded where bwrap's would be, so that finding the supervisor,
    /// reattach and a kill without a server stay the same.
    #[allow(clippy::too_many_arguments)]
    async fn launch_container(
        &self,
        engine: &Arc<Engine>,
        spec: &MachineSpec,
        layout: &Layout,
        lease: &Lease,
        uid: u32,
        env: &BTreeMap<String, String>,
        binds: &[(PathBuf, String)],
    ) -> ProviderResult<Peer> {
        let launch = engine::Launch {
            id: spec.id,
            hostname: &spec.hostname,
            uid,
            env,
            binds: super::container::binds(layout, uid, &self.sandboxd, binds),
            entrypoint: super::container::entrypoint(layout, self.cfg.watchdog_seconds),
            limits: &spec.limits,
            netns: &lease.netns_path,
            workdir: "/workspace",
            log: &layout.log(),
        };
        // Recorded in the start's own task, so that a kill finds the init whatever becomes of this caller.
        let info = layout.info();
        let pid =
            engine.run(launch, move |pid| fs::write(info, serde_json::json!({ "child-pid": pid }).to_string())).await?;
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        let mut daemon_seen = false;
        loop {
            // The init's first child is the daemon: nothing else runs in the machine yet.
            if !daemon_seen
                && let [(_, inside)] = init_children(pid, uid).as_slice()
                && layout.socket().exists()
            {
                let info = serde_json::json!({ "child-pid": pid, "daemon-pid": inside.parse::<u64>().ok() });
                fs::write(layout.info(), info.to_string())?;
                // The socket and its directory become root's, as a bwrap machine's are: the agent,
                // though the daemon's uid, can then neither reach, move nor replace them.
                for path in [layout.socket(), layout.ctl()] {
                    std::os::unix::fs::chown(&path, Some(0), Some(0))?;
                }
                daemon_seen = true;
            }
            if daemon_seen
                && let Some(peer) = supervisor_peer(layout, uid)
                && Supervisor::new(layout.socket()).with_peer(peer).ping().await.is_ok()
            {
                return Ok(peer);
            }
            // Not `is_machine_init`: the runtime's own process may not have executed the supervisor yet.
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return Err(ProviderError::Host(format!("the machine exited at start: {}", log_tail(&layout.log()))));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(no_answer(layout));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    async fn stop_machine(&self, id: Uuid) {
        let layout = self.layout(id);
        let live = self.take_live(id);
        self.set_peer(id, None);
        let cgroup = self.cgroups.as_ref().and_then(|c| c.open(&id.to_string()));
        kill(&layout, cgroup.as_ref()).await;
        if let Some(engine) = &self.engine {
            engine.remove(id).await;
        }
        if layout.root.is_dir() {
            match disk::lock(&layout).await {
                Ok(_lock) => disk::unmount(&layout.mount()),
                Err(e) => tracing::warn!(sandbox = %id, "locking the disk to unmount it: {e}"),
            }
        }
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
        let Some(kind) = disk::kind(&layout) else {
            return Err(ProviderError::Host("the machine has no disk".into()));
        };
        let uid =
            owner::recorded(&layout.owner()).ok_or_else(|| ProviderError::Host("the machine has no owner".into()))?;
        let hostname = fs::read_to_string(layout.hostname()).unwrap_or_default().trim().to_owned();
        let _lock = disk::lock(&layout).await?;
        let mounted_here = {
            let layout = layout.clone();
            tokio::task::spawn_blocking(move || -> io::Result<bool> {
                mkdir(&layout.run(), 0o711)?;
                mkdir(&layout.etc(), 0o755)?;
                write_etc(&layout, &hostname, bwrap::AGENT_UID)?;
                if disk::is_mounted(&layout.mount()) {
                    return Ok(false);
                }
                disk::mount(&layout, kind, true)?;
                Ok(true)
            })
            .await
            .map_err(io::Error::other)??
        };
        let result = self.run_offline(&layout, uid, argv, env).await;
        if mounted_here {
            disk::unmount(&layout.mount());
        }
        result
    }

    async fn run_offline(
        &self,
        layout: &Layout,
        uid: u32,
        argv: &[String],
        env: &BTreeMap<String, String>,
    ) -> ProviderResult<ExecOutput> {
        let hostname = fs::read_to_string(layout.hostname()).unwrap_or_default();
        etc_mount_points(layout, &self.cfg.ro_binds)?;
        let seccomp = seccomp_fd()?;
        let seccomp_fd = seccomp.as_raw_fd();
        let mut cmd = tokio::process::Command::new(&self.bwrap);
        cmd.args(bwrap::args(
            layout,
            hostname.trim(),
            &self.sandboxd,
            &self.cfg.ro_binds,
            seccomp_fd,
            bwrap::Payload::Offline(argv),
        ))
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
        let keep = [seccomp_fd];
        // SAFETY: `enter_machine` makes only async-signal-safe calls.
        unsafe {
            cmd.pre_exec(move || enter_machine(-1, &[], &keep, uid));
        }
        let child = cmd.spawn().map_err(|e| ProviderError::Host(format!("bwrap: {e}")))?;
        drop(seccomp);
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

/// Writes the generated `/etc` files bwrap binds.
/// The system bundle every TLS client inside reads (curl, git's GnuTLS,
/// Python's ssl), and where the broker's CA alone is put for Node.
const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
const BROKER_CA: &str = "/etc/acs/broker-ca.pem";

/// Makes a brokered machine trust the broker's CA: the host's system bundle
/// with the CA appended, bound over the system bundle inside, and the
/// variables runtimes read for extra roots. Returns the binds to add.
fn trust_broker(
    layout: &Layout,
    ca_pem: &str,
    env: &mut BTreeMap<String, String>,
) -> io::Result<Vec<(PathBuf, String)>> {
    let system = match fs::read_to_string(SYSTEM_BUNDLE) {
        Ok(pem) => pem,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let (bundle, ca) = (layout.etc().join("ca-certificates.crt"), layout.etc().join("broker-ca.pem"));
    fs::write(&bundle, format!("{}\n{ca_pem}", system.trim_end()))?;
    fs::write(&ca, ca_pem)?;
    for key in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"] {
        env.insert(key.into(), SYSTEM_BUNDLE.into());
    }
    env.insert("NODE_EXTRA_CA_CERTS".into(), BROKER_CA.into());
    Ok(vec![(bundle, SYSTEM_BUNDLE.into()), (ca, BROKER_CA.into())])
}

/// Under bwrap that directory is the machine's whole `/etc`: the host's
/// `ETC_BINDS` files are copied in (their content, a symlink followed, as
/// a bind would show it) and its directories get their mount points.
fn write_etc(layout: &Layout, hostname: &str, agent_uid: u32) -> io::Result<()> {
    let etc = layout.etc();
    for name in bwrap::ETC_BINDS {
        let (host, own) = (Path::new("/etc").join(name), etc.join(name));
        match fs::metadata(&host) {
            Ok(m) if m.is_dir() => mkdir(&own, 0o755)?,
            Ok(m) if m.is_file() => {
                fs::copy(&host, &own).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", host.display())))?;
            }
            _ => {}
        }
    }
    for (name, content) in bwrap::etc_files(hostname, agent_uid) {
        fs::write(etc.join(name), content)?;
    }
    Ok(())
}

/// The mount points of binds into the machine's `/etc` (the broker's CA,
/// an operator's `sandbox.ro_binds`), made in its etc directory: bwrap
/// binds that directory read-only before the binds into it, so it cannot
/// make them itself. Binds into a host directory bound there (`ssl`, ...)
/// find theirs in it.
fn etc_mount_points(layout: &Layout, binds: &[(PathBuf, String)]) -> io::Result<()> {
    let host_dirs: Vec<&str> = bwrap::host_etc_dirs().collect();
    for (host, inside) in binds {
        let Some(rel) = inside.strip_prefix("/etc/") else { continue };
        if rel.split('/').next().is_some_and(|first| host_dirs.contains(&first)) {
            continue;
        }
        let point = layout.etc().join(rel);
        if let Some(parent) = point.parent() {
            mkdir(parent, 0o755)?;
        }
        if host.is_dir() {
            mkdir(&point, 0o755)?;
        } else if !point.exists() {
            File::create(&point)?;
        }
    }
    Ok(())
}

/// Removes a machine's disk (an ephemeral machine starts on a new one); it must not be mounted.
fn remove_disk(layout: &Layout) -> io::Result<()> {
    match disk::kind(layout) {
        Some(disk::Kind::Image) => fs::remove_file(layout.image()),
        Some(disk::Kind::Dir) => fs::remove_dir_all(layout.disk_dir()),
        None => Ok(()),
    }
}

/// Kills a machine's processes: its cgroup when it has one, else its
/// PID namespace (killing the namespace's init ends every process in it).
async fn kill(layout: &Layout, cgroup: Option<&Cgroup>) {
    if let Some(pid) = init_pid(layout) {
        // SAFETY: plain kill(2) of a pid checked to be this machine's init.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        for _ in 0..500 {
            if !is_machine_init(pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    if let Some(cg) = cgroup {
        cg.kill_all();
        cg.remove();
    }
    let _ = fs::remove_file(layout.info());
    let _ = fs::remove_file(layout.socket());
}

fn sandbox_url(lease: &Lease) -> String {
    format!("http://{}", lease.sandbox_ip)
}

/// A start whose supervisor did not answer within `READY_TIMEOUT`, with what the machine logged.
fn no_answer(layout: &Layout) -> ProviderError {
    ProviderError::Supervisor(format!("no answer within {} s: {}", READY_TIMEOUT.as_secs(), log_tail(&layout.log())))
}

fn log_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

/// The host pid of a machine's init, from bwrap's `--info-fd` output.
fn init_pid(layout: &Layout) -> Option<i32> {
    let text = fs::read_to_string(layout.info()).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let pid = i32::try_from(value.get("child-pid")?.as_i64()?).ok()?;
    is_machine_init(pid).then_some(pid)
}

/// Guards against a recycled pid: only ever signal a machine's init (the
/// supervisor, started by bwrap as the namespace's first process; bwrap's
/// own reaper on machines started before it was).
fn is_machine_init(pid: i32) -> bool {
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    argv0.ends_with(b"bwrap") || argv0 == bwrap::SANDBOXD_PATH.as_bytes()
}

/// The machine's supervisor as the host sees it: the child of the
/// machine's init that is the daemon's pid in the machine (2 under bwrap:
/// the daemon the supervisor's init forked first; a container's runtime
/// may use a few pids first, so its start records the one it saw; orphans
/// the init adopts can never take it while the daemon lives), running as
/// the machine's uid. Read from `/proc` once per start or reattach; every
/// connection then compares the socket's peer with it.
fn supervisor_peer(layout: &Layout, uid: u32) -> Option<Peer> {
    let init = init_pid(layout)?;
    let want = recorded_daemon_pid(layout).unwrap_or(2).to_string();
    init_children(init, uid).into_iter().find_map(|(pid, inside)| (inside == want).then_some(Peer { uid, pid }))
}

/// The children of `init` running as `uid`: (host pid, pid in the machine).
fn init_children(init: i32, uid: u32) -> Vec<(i32, String)> {
    let children = fs::read_to_string(format!("/proc/{init}/task/{init}/children")).unwrap_or_default();
    children
        .split_whitespace()
        .filter_map(|c| c.parse::<i32>().ok())
        .filter_map(|pid| {
            let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(str::to_owned);
            let real_uid: u32 = field("Uid:")?.split_whitespace().next()?.parse().ok()?;
            let inside = field("NSpid:")?.split_whitespace().last()?.to_owned();
            (real_uid == uid).then_some((pid, inside))
        })
        .collect()
}

/// The daemon's pid in the machine, when its start recorded one (containers).
fn recorded_daemon_pid(layout: &Layout) -> Option<u64> {
    let text = fs::read_to_string(layout.info()).ok()?;
    serde_json::from_str::<serde_json::Value>(&text).ok()?.get("daemon-pid")?.as_u64()
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
            // The disk (loop device and ext4 mount) and the network (namespace, veth,
            // nftables, proxy) do not depend on each other: made side by side, the
            // disk's few milliseconds hide behind the network's.
            let began = std::time::Instant::now();
            let network = async {
                let lease = self.net.create(spec.id, spec.network == NetworkPolicy::Unrestricted).await?;
                match self.open_proxy(spec, &lease).await {
                    Ok(proxy) => Ok((lease, proxy, began.elapsed())),
                    Err(e) => {
                        self.net.release(&lease).await;
                        Err(ProviderError::from(e))
                    }
                }
            };
            let disk = async {
                let uid = self.prepare_disk(spec.id, &layout, &spec.hostname, !spec.persistent).await?;
                Ok::<_, ProviderError>((uid, began.elapsed()))
            };
            let (disk, network) = tokio::join!(disk, network);
            let made = match (disk, network) {
                (Ok((uid, disk_took)), Ok((lease, proxy, net_took))) => Ok((uid, lease, proxy, disk_took, net_took)),
                (Err(e), Ok((lease, proxy, _))) => {
                    proxy.stop();
                    self.net.release(&lease).await;
                    Err(e)
                }
                (_, Err(e)) => Err(e),
            };
            let (uid, lease, proxy, disk_took, net_took) = match made {
                Ok(parts) => parts,
                Err(e) => {
                    self.stop_machine(spec.id).await;
                    return Err(e);
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
            let prepared = began.elapsed();
            let launched = self.launch(spec, &layout, &lease, cgroup.as_ref(), uid).await;
            let unrestricted = Some(spec.network == NetworkPolicy::Unrestricted);
            self.put_live(spec.id, Live { lease, proxy, broker: spec.broker.clone(), unrestricted });
            match launched {
                Ok(peer) => self.set_peer(spec.id, Some(peer)),
                Err(e) => {
                    self.stop_machine(spec.id).await;
                    return Err(e);
                }
            }
            self.link_name(spec, &layout);
            // Where a start's time goes (disk and network are made side by side).
            tracing::debug!(
                sandbox = %spec.id,
                disk_ms = disk_took.as_secs_f64() * 1e3,
                network_ms = net_took.as_secs_f64() * 1e3,
                prepared_ms = prepared.as_secs_f64() * 1e3,
                total_ms = began.elapsed().as_secs_f64() * 1e3,
                "machine started"
            );
            Ok(Started { url: Some(url) })
        })
    }

    fn reattach<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<bool>> {
        Box::pin(async move {
            let layout = self.layout(spec.id);
            let peer = owner::recorded(&layout.owner()).and_then(|uid| supervisor_peer(&layout, uid));
            let alive = match peer {
                Some(p) => Supervisor::new(layout.socket()).with_peer(p).ping().await.is_ok(),
                None => false,
            };
            let lease = self.net.adopt(spec.id);
            let (true, Some(lease)) = (alive, lease) else {
                self.stop_machine(spec.id).await;
                return Ok(false);
            };
            let proxy = self.open_proxy(spec, &lease).await?;
            self.put_live(spec.id, Live { lease, proxy, broker: spec.broker.clone(), unrestricted: None });
            self.set_peer(spec.id, peer);
            Ok(true)
        })
    }

    fn set_network<'a>(&'a self, id: Uuid, policy: &'a NetworkPolicy) -> BoxFut<'a, ProviderResult<()>> {
        Box::pin(async move {
            let unrestricted = *policy == NetworkPolicy::Unrestricted;
            let lease = {
                let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
                let live = live.get(&id).ok_or_else(|| ProviderError::Host("the machine is not running".into()))?;
                live.proxy.set_policy(self.policy(policy, live.broker.as_ref()));
                if live.unrestricted == Some(unrestricted) {
                    return Ok(());
                }
                live.lease.clone()
            };
            let applied = self.net.set_unrestricted(&lease, unrestricted).await;
            if let Some(live) = self.live.lock().unwrap_or_else(|p| p.into_inner()).get_mut(&id) {
                // A failed run may have changed the set or not: unknown until the next one works.
                live.unrestricted = applied.is_ok().then_some(unrestricted);
            }
            Ok(applied?)
        })
    }

    fn stop(&self, id: Uuid) -> BoxFut<'_, ()> {
        Box::pin(self.stop_machine(id))
    }

    fn checkpoint(&self, id: Uuid) -> BoxFut<'_, ProviderResult<CheckpointInfo>> {
        Box::pin(async move {
            let layout = self.layout(id);
            let _lock = disk::lock(&layout).await?;
            let unit = disk::unit(&layout).ok_or_else(|| ProviderError::Host("the machine has no disk".into()))?;
            // A snapshot of a mounted image could catch it mid-write: the machine is stopped, so nothing is.
            disk::unmount(&layout.mount());
            let info = CheckpointInfo { id: Uuid::now_v7().to_string(), at: OffsetDateTime::now_utc() };
            let fresh = layout.root.join(format!("checkpoint-{}", info.id));
            self.checkpointer.snapshot(&unit, &fresh).await?;
            let old = layout.checkpoint();
            if fs::symlink_metadata(&old).is_ok() {
                let doomed = layout.root.join("checkpoint-old");
                let _ = checkpoint::remove_any_async(&doomed).await;
                tokio::fs::rename(&old, &doomed).await?;
                tokio::fs::rename(&fresh, &old).await?;
                let _ = checkpoint::remove_any_async(&doomed).await;
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
            if fs::symlink_metadata(layout.checkpoint()).is_err() {
                return Err(ProviderError::NoCheckpoint);
            }
            let _lock = disk::lock(&layout).await?;
            let unit = disk::unit(&layout).ok_or_else(|| ProviderError::Host("the machine has no disk".into()))?;
            disk::unmount(&layout.mount());
            self.checkpointer.restore(&layout.checkpoint(), &unit).await?;
            Ok(())
        })
    }

    fn destroy(&self, id: Uuid) -> BoxFut<'_, ()> {
        Box::pin(async move {
            self.stop_machine(id).await;
            let layout = self.layout(id);
            self.unlink_name(&layout);
            if let Some(uid) = owner::recorded(&layout.owner()) {
                self.owners.release(id, uid);
            }
            let _ = tokio::fs::remove_dir_all(&layout.root).await;
            if !disk::is_mounted(&layout.mount()) {
                let _ = tokio::fs::remove_dir_all(layout.run()).await;
            }
        })
    }

    fn state(&self, id: Uuid) -> BoxFut<'_, MachineState> {
        Box::pin(async move {
            let layout = self.layout(id);
            if self.supervisor(id).ping().await.is_ok() {
                MachineState::Running
            } else if disk::kind(&layout).is_some() {
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
        self.set_peer(id, None);
    }

    fn supervisor(&self, id: Uuid) -> Supervisor {
        let layout = self.layout(id);
        let peer = self.peer(id).or_else(|| {
            let found = owner::recorded(&layout.owner()).and_then(|uid| supervisor_peer(&layout, uid));
            if let Some(p) = found
                && self.live.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&id)
            {
                self.set_peer(id, Some(p));
            }
            found
        });
        // Never an unchecked supervisor: without one found, no listener matches.
        Supervisor::new(layout.socket()).with_peer(peer.unwrap_or(Peer { uid: u32::MAX, pid: -1 }))
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

/// Drops the spare disks kept mounted under `machines_dir` and the spare
/// networks of servers that are gone (`acs sandboxes reap`). A server still
/// running keeps its spare networks, and mounts its disks' images at its
/// next claims.
pub fn drop_spares_blocking(machines_dir: &Path, lease_dir: &Path) {
    disk::drop_mounted_spares(machines_dir, false);
    net::drop_spares_blocking(lease_dir);
}

/// Stops every machine under `machines_dir` and frees their network, mounts
/// and uids, and drops the spare disks kept mounted and the host's spare
/// networks, without a running server (tests' teardown, an operator's cleanup).
pub fn purge_blocking(machines_dir: &Path, run_dir: &Path, lease_dir: &Path) {
    disk::drop_mounted_spares(machines_dir, true);
    net::drop_spares_blocking(lease_dir);
    let Ok(entries) = fs::read_dir(machines_dir) else { return };
    for entry in entries.flatten() {
        let Some(id) = entry.file_name().to_str().and_then(|s| s.parse::<Uuid>().ok()) else { continue };
        stop_blocking(machines_dir, run_dir, lease_dir, id);
        let layout = Layout::new(machines_dir, run_dir, id);
        if let Some(uid) = owner::recorded(&layout.owner()) {
            Owners::new(lease_dir, 0).release(id, uid);
        }
    }
}

/// Stops one machine without a running server: its processes, cgroups,
/// disk mount and network. The disk itself stays.
pub fn stop_blocking(machines_dir: &Path, run_dir: &Path, lease_dir: &Path, id: Uuid) {
    let layout = Layout::new(machines_dir, run_dir, id);
    if let Some(pid) = init_pid(&layout) {
        // SAFETY: plain kill(2) of a pid checked to be this machine's init.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        for _ in 0..500 {
            if !is_machine_init(pid) {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    if let Some(cg) = Cgroups::detect().as_ref().and_then(|c| c.open(&id.to_string())) {
        cg.kill_all();
        cg.remove();
    }
    net::release_blocking(lease_dir, id);
    disk::unmount(&layout.mount());
    let _ = fs::remove_file(layout.info());
    if !disk::is_mounted(&layout.mount()) {
        let _ = fs::remove_dir_all(layout.run());
    }
}

/// What the host shows of one machine, without a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspected {
    pub id: Uuid,
    pub running: bool,
    /// Its disk is mounted or its network namespace is there (what a stop frees).
    pub held: bool,
    pub uid: Option<u32>,
    /// Bytes the disk takes on the host (an image's allocated blocks, a directory's files).
    pub disk_bytes: u64,
}

/// The machines under `machines_dir`, by id.
pub fn inspect_all(machines_dir: &Path, run_dir: &Path) -> Vec<Inspected> {
    let Ok(entries) = fs::read_dir(machines_dir) else { return Vec::new() };
    let mut out: Vec<Inspected> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<Uuid>().ok())
        .map(|id| {
            let layout = Layout::new(machines_dir, run_dir, id);
            let disk_bytes = disk::unit(&layout).map(|u| allocated(&u)).unwrap_or(0);
            let held = disk::is_mounted(&layout.mount()) || net::exists(id);
            let (running, uid) = (init_pid(&layout).is_some(), owner::recorded(&layout.owner()));
            Inspected { id, running, held, uid, disk_bytes }
        })
        .collect();
    out.sort_by_key(|m| m.id);
    out
}

fn allocated(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else { return 0 };
    let own = meta.blocks() * 512;
    if !meta.is_dir() {
        return own;
    }
    own + fs::read_dir(path).map(|d| d.flatten().map(|e| allocated(&e.path())).sum()).unwrap_or(0)
}

/// Stops a machine without a server and removes everything of it on this
/// host: disk, checkpoints, records, its uid.
pub fn destroy_blocking(machines_dir: &Path, run_dir: &Path, lease_dir: &Path, id: Uuid) -> io::Result<()> {
    stop_blocking(machines_dir, run_dir, lease_dir, id);
    let layout = Layout::new(machines_dir, run_dir, id);
    if let Some(uid) = owner::recorded(&layout.owner()) {
        Owners::new(lease_dir, 0).release(id, uid);
    }
    if disk::is_mounted(&layout.mount()) {
        return Err(io::Error::other(format!("{} is still mounted", layout.mount().display())));
    }
    match fs::remove_dir_all(&layout.root) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
