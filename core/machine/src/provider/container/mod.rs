//! The `container` provider: each machine is a container of a Docker
//! Engine API engine (Podman's compatible service).
//!
//! Only the machine's processes differ from the `local` provider: the disk
//! (`local::disk`), checkpoints, the per-machine host uid, the network
//! namespace with its veth, nftables rules and egress proxy (`local::net`),
//! reads of a parked machine and reattach are the same code, run by a
//! `LocalProvider` that starts a container where it would start bwrap. The
//! container joins the machine's network namespace (`ns:` network mode), so
//! the same egress policy applies and the proxy stays the only way out; it
//! runs as the machine's host uid with every capability dropped,
//! `no-new-privileges`, a read-only root of the host's `/usr` and curated
//! `/etc` (the binds bwrap makes), the engine's seccomp profile, and the
//! engine's memory, CPU and process limits. Its first process is
//! `sandboxd`, which binds its socket in a host directory bound in, so the
//! `Supervisor` client works unchanged. See `docs/sandboxes.md`.

pub mod engine;
pub mod image;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use uuid::Uuid;

use self::engine::Engine;
use super::local::bwrap::{self, Layout};
use super::local::{LocalConfig, LocalProvider};
use super::{
    BoxFut, CheckpointInfo, ExecOutput, MachineSpec, MachineState, NetworkPolicy, ProviderResult, SandboxProvider,
    Started, Supervisor,
};
use crate::egress::EgressSink;

#[derive(Debug, Clone)]
pub struct ContainerConfig {
    /// The engine's API socket (`container.socket`).
    pub socket: PathBuf,
    /// The machine image (`container.image`); imported when the engine lacks it.
    pub image: String,
}

/// Where the supervisor's socket directory is bound inside: root's once the
/// supervisor has bound its socket there (the agent cannot enter it).
const SOCKET_DIR: &str = "/opt/acs/ctl";

pub struct ContainerProvider {
    inner: LocalProvider,
}

impl ContainerProvider {
    /// Fails with a clear message when the engine cannot be reached or the
    /// host lacks what the shared `local` parts need.
    pub async fn new(
        local: LocalConfig,
        cfg: &ContainerConfig,
        sink: Arc<dyn EgressSink>,
    ) -> Result<ContainerProvider, String> {
        let profile = local.run_dir.join(".bin").join("seccomp.json");
        let engine = Engine::connect(&cfg.socket, &cfg.image, &profile).await?;
        Ok(ContainerProvider { inner: LocalProvider::with_engine(local, sink, Some(Arc::new(engine)))? })
    }
}

/// The container's binds, those bwrap makes for a `local` machine: the
/// host's `/usr` and curated `/etc` read-only, the generated `/etc` files,
/// the disk's home and workspace, the operator's read-only binds, the
/// supervisor binary and the supervisor's socket directory.
pub(crate) fn binds(layout: &Layout, agent_uid: u32, sandboxd: &Path, ro_binds: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = vec!["/usr:/usr:ro".to_owned()];
    for name in bwrap::ETC_BINDS {
        let host = format!("/etc/{name}");
        if Path::new(&host).exists() {
            out.push(format!("{host}:{host}:ro"));
        }
    }
    for (name, _) in bwrap::etc_files("", agent_uid) {
        out.push(format!("{}:/etc/{name}:ro", layout.etc().join(name).display()));
    }
    out.push(format!("{}:/home/agent", layout.home().display()));
    out.push(format!("{}:/workspace", layout.workspace().display()));
    for (host, inside) in ro_binds {
        out.push(format!("{}:{inside}:ro", host.display()));
    }
    out.push(format!("{}:{}:ro", sandboxd.display(), bwrap::SANDBOXD_PATH));
    out.push(format!("{}:{SOCKET_DIR}", layout.ctl().display()));
    out
}

/// The container's first process: the supervisor, binding its socket in the bound socket directory.
pub(crate) fn entrypoint(layout: &Layout, watchdog_seconds: u64) -> Vec<String> {
    let socket = layout.socket();
    let name = socket.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    vec![
        bwrap::SANDBOXD_PATH.to_owned(),
        "--bind".to_owned(),
        format!("{SOCKET_DIR}/{name}"),
        "--watchdog".to_owned(),
        watchdog_seconds.to_string(),
    ]
}

impl SandboxProvider for ContainerProvider {
    fn name(&self) -> &'static str {
        "container"
    }
    fn start<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<Started>> {
        self.inner.start(spec)
    }
    fn reattach<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<bool>> {
        self.inner.reattach(spec)
    }
    fn set_network<'a>(&'a self, id: Uuid, policy: &'a NetworkPolicy) -> BoxFut<'a, ProviderResult<()>> {
        self.inner.set_network(id, policy)
    }
    fn stop(&self, id: Uuid) -> BoxFut<'_, ()> {
        self.inner.stop(id)
    }
    fn checkpoint(&self, id: Uuid) -> BoxFut<'_, ProviderResult<CheckpointInfo>> {
        self.inner.checkpoint(id)
    }
    fn restore(&self, id: Uuid) -> BoxFut<'_, ProviderResult<()>> {
        self.inner.restore(id)
    }
    fn destroy(&self, id: Uuid) -> BoxFut<'_, ()> {
        self.inner.destroy(id)
    }
    fn state(&self, id: Uuid) -> BoxFut<'_, MachineState> {
        self.inner.state(id)
    }
    fn served(&self) -> Vec<Uuid> {
        self.inner.served()
    }
    fn let_go(&self, id: Uuid) {
        self.inner.let_go(id)
    }
    fn supervisor(&self, id: Uuid) -> Supervisor {
        self.inner.supervisor(id)
    }
    /// Reads of a parked machine run under bwrap over its disk, as for `local`:
    /// a container start would cost a hundred times more for one command.
    fn exec_offline<'a>(
        &'a self,
        id: Uuid,
        argv: &'a [String],
        env: &'a BTreeMap<String, String>,
    ) -> BoxFut<'a, ProviderResult<ExecOutput>> {
        self.inner.exec_offline(id, argv, env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_binds_mirror_the_bwrap_machine() {
        let layout = Layout::new(Path::new("/var/acs/machines"), Path::new("/run/acs/m"), Uuid::nil());
        let ro = [(PathBuf::from("/opt/tools"), "/opt/tools".to_owned())];
        let b = binds(&layout, 100_123, Path::new("/run/acs/m/.bin/sandboxd-1"), &ro);
        let run = "/run/acs/m/00000000000000000000000000000000";
        assert_eq!(b[0], "/usr:/usr:ro");
        assert!(b.contains(&format!("{run}/disk/home:/home/agent")));
        assert!(b.contains(&format!("{run}/disk/workspace:/workspace")));
        assert!(b.contains(&format!("{run}/etc/passwd:/etc/passwd:ro")));
        assert!(b.contains(&"/opt/tools:/opt/tools:ro".to_owned()));
        assert!(b.contains(&"/run/acs/m/.bin/sandboxd-1:/opt/acs/sandboxd:ro".to_owned()));
        assert!(b.contains(&format!("{run}/ctl:/opt/acs/ctl")));
        // Never the host's users, secrets or the server's own directories.
        assert!(!b.iter().any(|s| s.starts_with("/etc/shadow") || s.starts_with("/etc:") || s.starts_with("/root")));
        assert!(!b.iter().any(|s| s.starts_with("/var/acs")));
        // Every bind but the disk and the socket directory is read-only.
        let writable: Vec<_> = b.iter().filter(|s| !s.ends_with(":ro")).collect();
        assert_eq!(writable.len(), 3, "{writable:?}");
        let e = entrypoint(&layout, 60);
        assert_eq!(e, ["/opt/acs/sandboxd", "--bind", "/opt/acs/ctl/sandboxd.sock", "--watchdog", "60"]);
    }
}
