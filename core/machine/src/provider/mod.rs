//! Sandbox providers: the machines conversations run on.
//!
//! A provider turns a [`MachineSpec`] into a running machine whose first
//! process is `sandboxd`, the supervisor (see the `sandboxd` crate). Every
//! later action on a live machine (commands, agent processes, file and git
//! reads) goes through the supervisor, so providers differ only in how they
//! start, stop, snapshot and connect to a machine. `docs/sandboxes.md`
//! describes how the `container` and `kubernetes` providers fit this trait.

pub mod container;
pub mod local;
pub mod remote;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

pub use sandboxd::client::Client as Supervisor;
pub use sandboxd::client::ExecOutput;

pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a provider needs to start (or restart) one machine.
#[derive(Debug, Clone)]
pub struct MachineSpec {
    pub id: Uuid,
    /// The machine name; also the hostname inside.
    pub hostname: String,
    /// Persistent machines keep their disk across park and wake.
    pub persistent: bool,
    /// The whole environment of the supervisor, inherited by everything it runs.
    pub env: BTreeMap<String, String>,
    pub network: NetworkPolicy,
    pub limits: Limits,
    /// The runner the machine runs on (provider `runner`); `None`: this host.
    pub runner: Option<Uuid>,
    /// The egress broker, on a brokered machine: its proxy intercepts bound
    /// hosts and the machine trusts the broker's CA.
    pub broker: Option<crate::egress::broker::BrokerRef>,
}

/// Egress policy. Provisioning runs `Open`; the `network` stage applies the
/// environment's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkPolicy {
    /// Provisioning: any public host through the egress proxy.
    Open,
    /// `networking_type: unrestricted`: proxy for HTTP(S) plus direct routed traffic.
    Unrestricted,
    /// `networking_type: limited`: only these hosts, only through the proxy.
    Limited(Vec<String>),
}

/// Resource ceilings; `None` leaves the host's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    pub memory_bytes: Option<u64>,
    /// Thousandths of a CPU.
    pub cpu_millis: Option<u32>,
    pub pids: Option<u32>,
}

/// What a started machine reports back.
#[derive(Debug, Clone)]
pub struct Started {
    /// The machine's own HTTP endpoint (`SANDBOX_URL`), if it has one.
    pub url: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CheckpointInfo {
    pub id: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// Whether a machine's processes are running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MachineState {
    Running,
    Stopped,
    /// No disk either: destroyed or never created.
    Missing,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The host cannot run the machine (missing tool, no privilege, limits).
    #[error("{0}")]
    Host(String),
    #[error("the supervisor did not answer: {0}")]
    Supervisor(String),
    #[error("no checkpoint to restore")]
    NoCheckpoint,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<sandboxd::client::Error> for ProviderError {
    fn from(e: sandboxd::client::Error) -> Self {
        ProviderError::Supervisor(e.to_string())
    }
}

pub type ProviderResult<T> = Result<T, ProviderError>;

/// One kind of machine. Every method is idempotent where that makes sense
/// (stop of a stopped machine, destroy of a missing one).
pub trait SandboxProvider: Send + Sync + 'static {
    /// The provider identifier shown on sandboxes (`local`, `container`, `kubernetes`).
    fn name(&self) -> &'static str;

    /// Creates the disk when missing (a persistent disk is reused), sets up
    /// the network with `spec.network`, starts the supervisor and waits until
    /// it answers.
    fn start<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<Started>>;

    /// After a server restart: takes over a machine that kept running
    /// (restores what lived in the old server process, such as the egress
    /// proxy). `Ok(false)` when it is not running any more.
    fn reattach<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<bool>>;

    /// Applies a new egress policy to a running machine.
    fn set_network<'a>(&'a self, id: Uuid, policy: &'a NetworkPolicy) -> BoxFut<'a, ProviderResult<()>>;

    /// Stops every process and releases the network; the disk stays (park).
    fn stop(&self, id: Uuid) -> BoxFut<'_, ()>;

    /// Snapshots the disk of a stopped machine, replacing the previous checkpoint.
    fn checkpoint(&self, id: Uuid) -> BoxFut<'_, ProviderResult<CheckpointInfo>>;

    /// Rolls the disk of a stopped machine back to its checkpoint.
    fn restore(&self, id: Uuid) -> BoxFut<'_, ProviderResult<()>>;

    /// Stops the machine and removes its disk and checkpoints.
    fn destroy(&self, id: Uuid) -> BoxFut<'_, ()>;

    fn state(&self, id: Uuid) -> BoxFut<'_, MachineState>;

    /// The machines this server serves (runs an egress proxy for).
    fn served(&self) -> Vec<Uuid>;

    /// Stops serving a machine without stopping it: at a clean stop, so that
    /// another server can take it over at once, and when another server
    /// stopped, reset or woke it (docs/replicas.md).
    fn let_go(&self, id: Uuid);

    /// The supervisor of a running machine: commands, agent processes, reads.
    fn supervisor(&self, id: Uuid) -> Supervisor;

    /// Runs a command over a stopped machine's disk, read-only and without
    /// network (reads of a parked sandbox). The `sandboxd` binary is at
    /// `/opt/acs/sandboxd` inside.
    fn exec_offline<'a>(
        &'a self,
        id: Uuid,
        argv: &'a [String],
        env: &'a BTreeMap<String, String>,
    ) -> BoxFut<'a, ProviderResult<ExecOutput>>;
}
