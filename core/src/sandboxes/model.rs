//! Sandbox objects of spec 2.3 and their rows.

use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::agents::SandboxMode;
use crate::db::RowExt;
use crate::time_fmt::from_micros;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    Pending,
    Starting,
    Ready,
    Suspended,
    Terminated,
    Failed,
}

impl SandboxState {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxState::Pending => "pending",
            SandboxState::Starting => "starting",
            SandboxState::Ready => "ready",
            SandboxState::Suspended => "suspended",
            SandboxState::Terminated => "terminated",
            SandboxState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> SandboxState {
        match s {
            "pending" => SandboxState::Pending,
            "starting" => SandboxState::Starting,
            "ready" => SandboxState::Ready,
            "suspended" => SandboxState::Suspended,
            "terminated" => SandboxState::Terminated,
            _ => SandboxState::Failed,
        }
    }
}

/// `owner` gives the machine its callback key; `none` leaves it out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApiAccess {
    #[default]
    Owner,
    None,
}

impl ApiAccess {
    pub fn as_str(self) -> &'static str {
        match self {
            ApiAccess::Owner => "owner",
            ApiAccess::None => "none",
        }
    }
}

/// Where a sandbox runs: `runner` (the user's own machine) or a hosted provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Runner,
    Local,
    Container,
    Kubernetes,
}

impl ProviderKind {
    pub fn parse(s: &str) -> ProviderKind {
        match s {
            "runner" => ProviderKind::Runner,
            "container" => ProviderKind::Container,
            "kubernetes" => ProviderKind::Kubernetes,
            _ => ProviderKind::Local,
        }
    }
}

/// The checkpoint taken the last time the home parked.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Checkpoint {
    pub id: String,
    #[serde(with = "time::serde::rfc3339::option")]
    pub at: Option<OffsetDateTime>,
}

/// A sandbox's self-hosted runner (provider `runner` only).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Runner {
    pub online: bool,
    pub id: Option<Uuid>,
    pub name: Option<String>,
    pub hostname: Option<String>,
    pub path: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Sandbox {
    pub id: Uuid,
    pub machine_name: String,
    pub status: SandboxState,
    pub mode: SandboxMode,
    pub provider: ProviderKind,
    pub agent_id: Option<Uuid>,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    /// The sandbox's own HTTP endpoint; also `SANDBOX_URL` inside.
    pub url: Option<String>,
    pub checkpoint: Option<Checkpoint>,
    pub runner: Option<Runner>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConversationStatus {
    Pending,
    Running,
    Idle,
    Failed,
    Terminated,
}

/// A conversation as listed on its sandbox.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxConversation {
    pub id: Uuid,
    pub status: ConversationStatus,
    /// True while a turn runs.
    pub mid_turn: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    pub runtime: crate::agents::Runtime,
    pub title: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxDetail {
    #[serde(flatten)]
    pub sandbox: Sandbox,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_resumed_at: Option<OffsetDateTime>,
    /// Every conversation ever opened on the machine, newest first.
    pub conversations: Vec<SandboxConversation>,
}

/// Whether the machine's processes run, beside its recorded status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MachineStateView {
    Running,
    Stopped,
    Missing,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxStatus {
    pub id: Uuid,
    pub status: SandboxState,
    /// What the provider reports of the machine right now.
    pub machine: MachineStateView,
    /// True while a turn runs on the machine.
    pub mid_turn: bool,
    /// The last failure (provisioning, reattach), if the sandbox failed.
    pub error: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_resumed_at: Option<OffsetDateTime>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxStatusResponse {
    pub data: SandboxStatus,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxFile {
    pub path: String,
    /// Bytes of the whole file.
    pub size: u64,
    /// True when `content` is shorter than the file (`max_bytes`, or redaction grew the text past it).
    pub truncated: bool,
    /// `utf-8`, or `base64` when the bytes are not valid UTF-8.
    #[schema(value_type = FileEncoding)]
    pub encoding: String,
    pub content: String,
    /// Present only when the sandbox is parked and the answer comes from its snapshot.
    #[serde(skip_serializing_if = "Option::is_none", with = "time::serde::rfc3339::option")]
    pub snapshot_at: Option<OffsetDateTime>,
}

/// A directory's entries (`GET /api/sandboxes/{id}/directory`), names redacted.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxDirectory {
    pub path: String,
    /// Directories first, then by name; at most 1000.
    pub entries: Vec<DirectoryEntry>,
    /// True when the directory holds more entries than listed.
    pub truncated: bool,
    /// Present only when the sandbox is parked and the answer comes from its snapshot.
    #[serde(skip_serializing_if = "Option::is_none", with = "time::serde::rfc3339::option")]
    pub snapshot_at: Option<OffsetDateTime>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct DirectoryEntry {
    pub name: String,
    #[schema(value_type = EntryKind)]
    pub kind: &'static str,
    /// Bytes (of the link itself for a symlink).
    pub size: u64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxDiff {
    pub path: String,
    pub repo_root: String,
    pub staged: bool,
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// Unified diff of tracked content, no colour.
    pub diff: String,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none", with = "time::serde::rfc3339::option")]
    pub snapshot_at: Option<OffsetDateTime>,
}

/// One outbound HTTP request through the egress proxy.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EgressEvent {
    pub id: i64,
    pub method: String,
    /// Host and port as dialed.
    pub host: String,
    /// Always `/[REDACTED]`.
    pub path: String,
    pub credential_keys: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    pub service: Option<String>,
    pub status: Option<i64>,
    pub latency_ms: Option<i64>,
    pub error: Option<String>,
}

/// A `sandboxes` row.
#[derive(Debug, Clone)]
pub struct SandboxRow {
    pub id: Uuid,
    pub account_id: Uuid,
    pub machine_name: String,
    pub status: SandboxState,
    pub mode: SandboxMode,
    pub provider: String,
    pub agent_id: Option<Uuid>,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    pub runtime: String,
    pub api_access: ApiAccess,
    pub url: Option<String>,
    pub checkpoint_id: Option<String>,
    pub checkpoint_at: Option<i64>,
    pub error: Option<String>,
    pub busy: bool,
    pub last_resumed_at: Option<i64>,
    pub created_at: i64,
    /// The runner a `runner` machine lives on.
    pub runner_id: Option<Uuid>,
    /// The broker CA the machine trusts (it started brokered).
    pub broker_ca_id: Option<Uuid>,
    /// The warm pool the machine waits in, until a conversation claims it.
    pub pool: Option<String>,
}

pub const COLUMNS: &str = "id, account_id, machine_name, status, mode, provider, agent_id, environment_id, vault_id, \
    runtime, sandbox_api_access, url, checkpoint_id, checkpoint_at, error, busy, last_resumed_at, created_at, runner_id, \
    broker_ca_id, pool";

impl SandboxRow {
    pub fn from_row(row: &AnyRow) -> Result<SandboxRow, sqlx::Error> {
        let status: String = row.try_get("status")?;
        let mode: String = row.try_get("mode")?;
        let access: String = row.try_get("sandbox_api_access")?;
        Ok(SandboxRow {
            id: row.uuid("id")?,
            account_id: row.uuid("account_id")?,
            machine_name: row.try_get("machine_name")?,
            status: SandboxState::parse(&status),
            mode: if mode == "persistent" { SandboxMode::Persistent } else { SandboxMode::Ephemeral },
            provider: row.try_get("provider")?,
            agent_id: row.opt_uuid("agent_id")?,
            environment_id: row.opt_uuid("environment_id")?,
            vault_id: row.opt_uuid("vault_id")?,
            runtime: row.try_get("runtime")?,
            api_access: if access == "none" { ApiAccess::None } else { ApiAccess::Owner },
            url: row.try_get("url")?,
            checkpoint_id: row.try_get("checkpoint_id")?,
            checkpoint_at: row.try_get("checkpoint_at")?,
            error: row.try_get("error")?,
            busy: row.flag("busy")?,
            last_resumed_at: row.try_get("last_resumed_at")?,
            created_at: row.try_get("created_at")?,
            runner_id: row.opt_uuid("runner_id")?,
            broker_ca_id: row.opt_uuid("broker_ca_id")?,
            pool: row.try_get("pool")?,
        })
    }

    pub fn view(&self) -> Sandbox {
        Sandbox {
            id: self.id,
            machine_name: self.machine_name.clone(),
            status: self.status,
            mode: self.mode,
            provider: ProviderKind::parse(&self.provider),
            agent_id: self.agent_id,
            environment_id: self.environment_id,
            vault_id: self.vault_id,
            url: self.url.clone(),
            checkpoint: self.checkpoint_id.clone().map(|id| Checkpoint { id, at: self.checkpoint_at.map(from_micros) }),
            runner: None,
        }
    }

    pub fn persistent(&self) -> bool {
        self.mode == SandboxMode::Persistent
    }
}

acs_platform::string_enum!(
    EntryKind,
    "What a directory entry is: `file`, `directory`, `symlink`, or `other` (a socket, a device, a pipe).",
    ["file", "directory", "symlink", "other"]
);

acs_platform::string_enum!(
    FileEncoding,
    "`utf-8`, or `base64` when the bytes are not valid UTF-8.",
    ["utf-8", "base64"]
);
