//! The container engine behind the `container` provider, through the Docker
//! Engine API (`bollard`) as Podman's compatible service (`podman system
//! service`) serves it. Docker serves the API too, but not the `ns:`
//! network mode that puts a container in the machine's namespace.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::errors::Error as ApiError;
use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig, ResourcesUlimits};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, RemoveContainerOptionsBuilder,
};
use futures::StreamExt;
use uuid::Uuid;

use super::super::{Limits, ProviderError, ProviderResult};

/// The API version asked for: the newest Podman 4 serves, which every
/// Docker since 20.10 serves too.
const API_VERSION: bollard::ClientVersion = bollard::ClientVersion { major_version: 1, minor_version: 41 };
/// Seconds an API call may take.
const API_TIMEOUT: u64 = 60;
/// Podman lowers its own process limit to this at start, and root here
/// lacks CAP_SYS_RESOURCE to give a container more than the engine has.
const NPROC_CEILING: u64 = 32_768;

/// One machine's container, as the provider asks for it.
pub struct Launch<'a> {
    pub id: Uuid,
    pub hostname: &'a str,
    /// The machine's host uid: the container runs as it (and its gid).
    pub uid: u32,
    pub env: &'a BTreeMap<String, String>,
    /// `host:inside[:ro]` binds.
    pub binds: Vec<String>,
    pub entrypoint: Vec<String>,
    pub limits: &'a Limits,
    /// The machine's network namespace (`/run/netns/<name>`), made by the provider.
    pub netns: &'a Path,
    pub workdir: &'a str,
    /// Where the container's output goes (the `local` machine's log file).
    pub log: &'a Path,
}

pub struct Engine {
    docker: Docker,
    image: String,
    /// The machines' seccomp profile (`local::seccomp`), which Podman reads from this path.
    profile: PathBuf,
    profile_text: String,
    /// Per machine: a start and a removal never overlap.
    locks: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>,
}

fn api(what: &str, e: ApiError) -> ProviderError {
    ProviderError::Host(format!("container engine: {what}: {e}"))
}

fn status(e: &ApiError) -> Option<u16> {
    match e {
        ApiError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// Writes the profile where the engine reads it (root's, readable: it holds nothing secret).
fn write_profile(path: &Path, profile: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("{}.tmp", Uuid::new_v4().simple()));
    std::fs::write(&tmp, profile)?;
    std::fs::rename(&tmp, path)
}

/// The container of machine `id`.
pub fn container_name(id: Uuid) -> String {
    format!("acs-{}", id.simple())
}

impl Engine {
    /// Connects to the engine at `socket` and makes sure it has `image`
    /// (importing the built-in one when missing).
    /// Writes the machines' seccomp profile at `profile_path`.
    pub async fn connect(socket: &Path, image: &str, profile_path: &Path) -> Result<Engine, String> {
        let path = socket.to_str().ok_or_else(|| format!("container.socket {}: not UTF-8", socket.display()))?;
        let docker = Docker::connect_with_unix(path, API_TIMEOUT, &API_VERSION).map_err(|e| {
            format!(
                "the container provider cannot reach a container engine at {path} ({e}): start one (as root: \
                 `podman system service --time=0 unix://{path}`, or scripts/container-engine), or set container.socket"
            )
        })?;
        docker.ping().await.map_err(|e| {
            format!(
                "the container engine at {path} does not answer ({e}): start it (as root: `podman system service \
                 --time=0 unix://{path}`, or scripts/container-engine), or set container.socket"
            )
        })?;
        let version = docker.version().await.map_err(|e| format!("the container engine at {path}: {e}"))?;
        // Docker serves the API but has no `ns:` network mode (the machine's namespace) and
        // takes a seccomp profile's text where Podman reads a path: refused, not half run.
        if !version.components.unwrap_or_default().iter().any(|c| c.name.contains("Podman")) {
            return Err(format!(
                "the container engine at {path} is not Podman: the container provider joins each machine's \
                 network namespace by path, which only Podman's service does (docs/sandboxes.md)"
            ));
        }
        let profile_text = crate::provider::local::seccomp::oci_profile().to_string();
        write_profile(profile_path, &profile_text).map_err(|e| format!("{}: {e}", profile_path.display()))?;
        let engine = Engine {
            docker,
            image: image.to_owned(),
            profile: profile_path.to_owned(),
            profile_text,
            locks: Mutex::new(HashMap::new()),
        };
        engine.ensure_image().await.map_err(|e| e.to_string())?;
        Ok(engine)
    }

    async fn ensure_image(&self) -> ProviderResult<()> {
        match self.docker.inspect_image(&self.image).await {
            Ok(_) => return Ok(()),
            Err(e) if status(&e) == Some(404) => {}
            Err(e) => return Err(api(&format!("image {}", self.image), e)),
        }
        // The whole reference as `repo` (the API allows a tag there): Podman ignores `tag` on an import.
        let options = CreateImageOptionsBuilder::new().from_src("-").repo(&self.image).build();
        let tar = bytes::Bytes::from(super::image::rootfs_tar());
        let mut progress = self.docker.create_image(Some(options), Some(bollard::body_full(tar)), None);
        while let Some(step) = progress.next().await {
            step.map_err(|e| api(&format!("importing image {}", self.image), e))?;
        }
        tracing::info!(image = %self.image, "imported the machine image into the container engine");
        Ok(())
    }

    /// Creates and starts the machine's container, hands the host pid of
    /// its first process to `record` and returns it. In a task of its own
    /// and under the machine's lock: a caller that goes away (a provisioning
    /// deadline, a server stopping) cannot leave a container created but
    /// not started, or started but not recorded, and a `remove` waits for it.
    pub async fn run(
        self: &Arc<Self>,
        l: Launch<'_>,
        record: impl FnOnce(i32) -> std::io::Result<()> + Send + 'static,
    ) -> ProviderResult<i32> {
        if !self.profile.is_file() {
            // Something cleared the run directory (an operator, a reboot's tmpfs): put it back.
            write_profile(&self.profile, &self.profile_text)?;
        }
        let (engine, id, body, lock) = (self.clone(), l.id, self.body(&l), self.lock(l.id));
        let task = tokio::spawn(async move {
            let _held = lock.lock().await;
            let pid = engine.create_and_start(id, body).await?;
            record(pid)?;
            Ok(pid)
        });
        task.await.map_err(|e| ProviderError::Host(format!("starting the machine's container: {e}")))?
    }

    async fn create_and_start(&self, id: Uuid, body: ContainerCreateBody) -> ProviderResult<i32> {
        let name = container_name(id);
        let options = CreateContainerOptionsBuilder::new().name(&name).build();
        let mut tries = 0;
        loop {
            match self.docker.create_container(Some(options.clone()), body.clone()).await {
                Ok(_) => break,
                // The last container of this machine, on its way out (it removes itself): wait.
                Err(e) if status(&e) == Some(409) && tries < 100 => {
                    tries += 1;
                    self.remove_now(id).await;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(api("creating the machine's container", e)),
            }
        }
        if let Err(e) =
            self.docker.start_container(&name, None::<bollard::query_parameters::StartContainerOptions>).await
        {
            let err = api("starting the machine's container", e);
            self.remove_now(id).await;
            return Err(err);
        }
        let inspected = match self
            .docker
            .inspect_container(&name, None::<bollard::query_parameters::InspectContainerOptions>)
            .await
        {
            Ok(inspected) => inspected,
            // Podman names the state of a container that has already exited `stopped`, which
            // is not among Docker's states that bollard knows: the machine died at once.
            Err(ApiError::JsonDataError { .. }) => {
                return Err(ProviderError::Host(
                    "the machine exited at start: its container stopped before it was inspected".into(),
                ));
            }
            Err(e) => return Err(api("inspecting the machine's container", e)),
        };
        let pid = inspected.state.and_then(|s| s.pid).and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 0);
        // Started, yet without a process: it has exited already.
        pid.ok_or_else(|| ProviderError::Host("the machine exited at start: its container has no process".into()))
    }

    fn lock(&self, id: Uuid) -> Arc<tokio::sync::Mutex<()>> {
        self.locks.lock().unwrap_or_else(|p| p.into_inner()).entry(id).or_default().clone()
    }

    fn body(&self, l: &Launch<'_>) -> ContainerCreateBody {
        let own = |resource| {
            let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            // SAFETY: getrlimit fills the struct it is given.
            unsafe { libc::getrlimit(resource, &mut r) };
            (r.rlim_cur, r.rlim_max)
        };
        let ulimit = |name: &str, (soft, hard): (u64, u64)| ResourcesUlimits {
            name: Some(name.into()),
            soft: Some(i64::try_from(soft).unwrap_or(i64::MAX)),
            hard: Some(i64::try_from(hard).unwrap_or(i64::MAX)),
        };
        // The server's own limits, as a bwrap machine inherits them: the engine's
        // defaults are above what root may grant here.
        let nofile = own(libc::RLIMIT_NOFILE);
        let nproc = own(libc::RLIMIT_NPROC);
        let nproc = (nproc.0.min(NPROC_CEILING), nproc.1.min(NPROC_CEILING));
        let host_config = HostConfig {
            binds: Some(l.binds.clone()),
            network_mode: Some(format!("ns:{}", l.netns.display())),
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges".into(), format!("seccomp={}", self.profile.display())]),
            readonly_rootfs: Some(true),
            // Gone with its machine's processes: nothing of a stopped machine lives in the container.
            auto_remove: Some(true),
            // The machine's log file, as bwrap's: it outlives the container.
            log_config: Some(HostConfigLogConfig {
                typ: Some("k8s-file".into()),
                config: Some(HashMap::from([("path".to_owned(), l.log.display().to_string())])),
            }),
            tmpfs: Some(HashMap::from([("/tmp".to_owned(), "rw,nosuid,nodev,mode=1777".to_owned())])),
            ulimits: Some(vec![ulimit("nofile", nofile), ulimit("nproc", nproc)]),
            memory: l.limits.memory_bytes.and_then(|m| i64::try_from(m).ok()),
            nano_cpus: l.limits.cpu_millis.map(|m| i64::from(m) * 1_000_000),
            pids_limit: l.limits.pids.map(i64::from),
            ..Default::default()
        };
        ContainerCreateBody {
            image: Some(self.image.clone()),
            hostname: Some(l.hostname.to_owned()),
            user: Some(format!("{0}:{0}", l.uid)),
            env: Some(l.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            entrypoint: Some(l.entrypoint.clone()),
            cmd: Some(Vec::new()),
            working_dir: Some(l.workdir.to_owned()),
            host_config: Some(host_config),
            ..Default::default()
        }
    }

    /// Removes the machine's container, killing it if it runs, once a start
    /// under way has ended. A missing one is fine.
    pub async fn remove(&self, id: Uuid) {
        let lock = self.lock(id);
        let held = lock.lock().await;
        self.remove_now(id).await;
        drop(held);
        // Nobody else holds the lock: its entry goes (the next start makes another).
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        if locks.get(&id).is_some_and(|l| Arc::ptr_eq(l, &lock) && Arc::strong_count(l) == 2) {
            locks.remove(&id);
        }
    }

    async fn remove_now(&self, id: Uuid) {
        let options = RemoveContainerOptionsBuilder::new().force(true).v(true).build();
        match self.docker.remove_container(&container_name(id), Some(options)).await {
            Ok(()) => {}
            // Missing, or already on its way out (it removes itself when its init ends).
            Err(e) if matches!(status(&e), Some(404 | 409)) => {}
            Err(e) => tracing::warn!(sandbox = %id, "container engine: removing the machine's container: {e}"),
        }
    }
}
