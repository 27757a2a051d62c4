//! Configuration: one figment stack of built-in defaults, a TOML file, then
//! `ACS_` environment variables (nested keys joined with `__`).
//!
//! Every key is checked: an unknown or mistyped key stops the start with a
//! message naming it. Extensions own a top-level section named after them.

use std::collections::BTreeMap;
use std::path::Path;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use figment::value::{Dict, Value};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// How many host uids above `sandbox.uid_base` machines are given.
pub const SANDBOX_UID_SPAN: u32 = 1 << 24;

/// What the configuration knows of a compiled-in extension: its section and
/// its runtime flag. The server's extension host supplies the list.
#[derive(Debug, Clone)]
pub struct Section {
    pub name: &'static str,
    /// Where its configuration section is: `name`, or a dotted path such as
    /// `<topic>.<vendor>` when the design names the keys so.
    pub section: &'static str,
    pub enabled_by_default: bool,
    /// The defaults of `[<name>]`, when the extension has a section.
    pub defaults: Option<serde_json::Value>,
    /// Environment variables read as keys of the section (`(variable, key)`), after
    /// the `ACS_` ones: names a specification fixes, such as `WEBHOOK_ALLOW_HTTP`.
    pub env_aliases: &'static [(&'static str, &'static str)],
}

/// Environment variables with the `ACS_` prefix that belong to a sandbox's
/// inside (DESIGN section 5), not to the server's configuration.
const SANDBOX_ENV: &[&str] = &["API_KEY", "API_URL"];

// Not `deny_unknown_fields`: serde cannot combine it with `flatten`; unknown
// top-level keys land in `extensions` and are refused in `from_figment`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Address the HTTP server binds.
    pub listen: String,
    /// The URL callers use to reach this instance; shown in emails and the catalog.
    pub public_url: Option<String>,
    pub database: DatabaseConfig,
    pub auth: AuthConfig,
    pub email: EmailConfig,
    pub limits: LimitsConfig,
    pub sandbox: SandboxConfig,
    pub queue: QueueConfig,
    pub exports: ExportsConfig,
    pub team: TeamConfig,
    pub conversations: ConversationsConfig,
    pub credits: CreditsConfig,
    pub inference: InferenceConfig,
    pub runtimes: RuntimesConfig,
    pub secrets: SecretsConfig,
    pub metrics: MetricsConfig,
    pub log: LogConfig,
    pub oauth: OAuthConfig,
    pub cors: CorsConfig,
    pub broker: BrokerConfig,
    pub container: ContainerConfig,
    /// Runtime flags by name; each compiled-in extension has one.
    pub features: BTreeMap<String, bool>,
    /// Sections owned by extensions, checked by each extension at start.
    #[serde(flatten, skip_serializing)]
    pub extensions: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    /// `sqlite://FILE` (created on first start) or `postgres://...`.
    pub url: String,
    pub max_connections: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// When set, registration requires this code.
    pub access_code: Option<String>,
    /// How long a replica may reuse a resolved API key or account identity
    /// (0 disables). A key revoked on one replica stops at once there and
    /// within this many seconds on the others.
    pub cache_seconds: u64,
    /// How long a browser session (`acs_session` cookie) lasts after sign-in.
    pub session_hours: u64,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig { access_code: None, cache_seconds: 5, session_hours: 168 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MailTransport {
    /// Write each message to the log (the embedded default).
    Log,
    /// Write each message as a JSON file into `email.outbox_dir`.
    File,
    /// Send over SMTP to `email.smtp_url`.
    Smtp,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmailConfig {
    pub transport: MailTransport,
    pub from: String,
    /// e.g. `smtps://user:password@mail.example.com:465` or `smtp://localhost:25`.
    pub smtp_url: Option<String>,
    pub outbox_dir: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// API requests per key per window.
    pub requests_per_key: u32,
    /// Failed authentications per client address per window.
    pub failed_auth_per_address: u32,
    /// Every request from one client address per window, counted before authentication.
    pub requests_per_address: u32,
    /// Window length; the spec's is one minute. Tests shorten it.
    pub window_seconds: u64,
    /// Peers whose `X-Forwarded-For` is believed (CIDR blocks).
    pub trusted_proxies: Vec<IpNet>,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Concurrent hosted sandboxes (pending, starting, ready) per account; 0 = no ceiling.
    pub sandboxes_per_account: u32,
    /// Concurrent hosted sandboxes across every account and replica; 0 = no ceiling.
    pub sandboxes_fleet: u32,
    /// Execution limit ceilings and policy keys (docs/conversations.md).
    pub execution: ExecutionLimitsConfig,
}

/// `[limits.execution]`: host ceilings of the execution limits an agent may
/// ask for (unset = no ceiling), and the keys the deployment sets as policy.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExecutionLimitsConfig {
    pub max_turn_seconds: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub max_turns: Option<u64>,
    /// Limit keys a request may not set (the deployment configures them itself).
    pub policy: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// Default hosted sandbox provider.
    pub provider: String,
    /// Providers this instance offers.
    pub providers: Vec<String>,
    /// Machines' disks and checkpoints live under `<dir>/machines`.
    pub dir: String,
    /// The supervisor binary; empty looks beside the running executable.
    pub sandboxd_path: String,
    /// Host paths bound read-only into every machine, `host[:inside]` (tools, toolchains).
    pub ro_binds: Vec<String>,
    /// A ready machine with no turn for this long parks (persistent) or is reclaimed (ephemeral).
    pub idle_seconds: u64,
    /// Deadline of a whole provisioning, whatever each stage's own timeout.
    pub provision_timeout_seconds: u64,
    /// Per-machine ceilings (0 = none).
    pub memory_mb: u64,
    pub cpu_millis: u32,
    pub pids: u32,
    /// Each machine's disk, `/home/agent` and `/workspace` together (0 = no limit).
    pub disk_mb: u64,
    /// Machines run as their own host uids, from this one up.
    pub uid_base: u32,
    /// A supervisor no server has spoken to for this long parks its machine (0 = never).
    pub watchdog_seconds: u64,
    /// How long a turn on a runner's machine waits for the runner's socket to come back.
    pub runner_reconnect_seconds: u64,
    /// Private addresses carved into a /30 per machine.
    pub subnet: ipnet::Ipv4Net,
    /// Host-wide leases of those addresses, shared by every acs server on the host.
    pub lease_dir: String,
    /// Supervisor sockets, one short directory per machine.
    pub run_dir: String,
    /// The egress proxy's port on each machine's host-side address.
    pub proxy_port: u16,
    /// Seconds an egress request may take before the proxy answers 504.
    pub egress_timeout_seconds: u64,
    /// Addresses the egress proxy never dials; the default is the shared block list
    /// (`blocklist::shared`). A block left out is exempted in the proxy only, never in the
    /// kernel floor. The host's own public addresses are refused whatever this says.
    pub blocked_cidrs: Vec<IpNet>,
    /// Default `max_bytes` of file and diff reads.
    pub read_max_bytes: u64,
    /// `host=address` entries the egress proxy and broker resolve to a fixed
    /// address instead of looking the name up, like a hosts file; the address
    /// rules still apply.
    pub host_overrides: Vec<String>,
    /// Machines kept built, with their agent started, for new conversations to claim
    /// (docs/scale.md, "Warm pools").
    pub warm_pools: Vec<WarmPoolConfig>,
}

/// The `container` sandbox provider (`[container]`, docs/sandboxes.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContainerConfig {
    /// The Docker Engine API socket of Podman's service (`podman system service`).
    pub socket: String,
    /// The machine image; imported into the engine when it lacks it (docs/sandboxes.md).
    pub image: String,
}

impl Default for ContainerConfig {
    fn default() -> Self {
        ContainerConfig { socket: "/run/podman/podman.sock".into(), image: "localhost/acs-machine:1".into() }
    }
}

/// One warm pool (`[[sandbox.warm_pools]]`). A pool belongs to one account and
/// is keyed by one of its agents: that agent's environment (and its build),
/// vault and runtime. Every replica keeps its own `size` machines.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WarmPoolConfig {
    /// Names the pool in logs and metrics.
    pub name: String,
    pub account_id: uuid::Uuid,
    pub agent_id: uuid::Uuid,
    /// Machines kept ready, their agent process started.
    pub size: u32,
    /// A pool no conversation claimed from for this long gives its machines back; the next
    /// conversation that would have claimed from it fills it again.
    #[serde(default = "default_pool_idle_seconds")]
    pub idle_seconds: u64,
}

fn default_pool_idle_seconds() -> u64 {
    1800
}

/// The largest `size` of one warm pool.
pub const WARM_POOL_MAX_SIZE: u32 = 1000;

/// The egress broker (`[broker]`, docs/broker.md); the runtime flag
/// `features.brokerage` turns brokering on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BrokerConfig {
    /// A broker on another host (`acs broker`), as `http://host:port`;
    /// unset: the broker runs inside `acs serve`.
    pub url: Option<String>,
    /// Where `acs broker` listens.
    pub listen: Option<String>,
    /// PEM bundle trusted for upstream TLS besides the system's roots.
    pub upstream_ca_file: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecretsConfig {
    /// Master keys in base64 (32 bytes each), current first. When empty,
    /// keys come from `master_key_file`.
    pub master_keys: Vec<String>,
    /// Key file, created (mode 0600) on first start when missing.
    pub master_key_file: String,
}

impl Default for SecretsConfig {
    fn default() -> Self {
        SecretsConfig { master_keys: Vec::new(), master_key_file: "acs.key".into() }
    }
}

/// Teammates' cron schedules (docs/team.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TeamConfig {
    /// Pause between two looks for due schedules (seconds, fractions allowed).
    pub tick_seconds: f64,
    /// Test switch: seconds added to the wall clock for schedule times (due, next and last run),
    /// so a test can start a server whose clock reads just before a minute. Keep 0 in production.
    pub clock_offset_seconds: f64,
}

impl Default for TeamConfig {
    fn default() -> Self {
        TeamConfig { tick_seconds: 1.0, clock_offset_seconds: 0.0 }
    }
}

/// Conversations and their turns (docs/conversations.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConversationsConfig {
    /// Seconds an `ask` permission request waits for an answer when neither the agent's nor the
    /// launch's policy sets `ask_timeout`; then it is denied (1 to 31536000).
    pub permission_timeout_seconds: u64,
}

impl Default for ConversationsConfig {
    fn default() -> Self {
        ConversationsConfig { permission_timeout_seconds: 3600 }
    }
}

/// Credits (docs/credits.md). Off by default: a self-hosted instance spends
/// nothing and never answers 402. Amounts are whole credits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CreditsConfig {
    /// Keep balances, spend them, and refuse hosted work (402) once spent.
    pub enabled: bool,
    /// Credits a new account starts with (granted at registration while enabled).
    pub initial_grant: i64,
    /// Credits per whole second a hosted sandbox is active (pending, starting or ready).
    pub sandbox_per_second: i64,
    /// Credits per turn that runs on the deployment's platform credentials.
    pub platform_turn: i64,
    /// Where a refused caller buys more; sent as `upgrade_url` with 402 (null when unset).
    pub upgrade_url: Option<String>,
    /// Pause between two runs of the sandbox-time meter.
    pub meter_interval_seconds: u64,
}

impl Default for CreditsConfig {
    fn default() -> Self {
        CreditsConfig {
            enabled: false,
            initial_grant: 10_000,
            sandbox_per_second: 1,
            platform_turn: 100,
            upgrade_url: None,
            meter_interval_seconds: 60,
        }
    }
}

/// Model-provider access (docs/credits.md, inference resolution).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InferenceConfig {
    /// The deployment's own credentials, used by turns whose account has none for the
    /// runtime (such turns spend `credits.platform_turn`). Empty by default.
    pub platform: PlatformCredentials,
    /// Where the named runtimes send model requests; empty: the vendor's own.
    pub base_urls: BaseUrls,
}

/// One base URL per model provider, as each vendor's SDK takes it (OpenAI's with `/v1`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BaseUrls {
    pub anthropic: String,
    pub openai: String,
    pub google: String,
}

/// The named agent runtimes (docs/runtimes.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimesConfig {
    /// Host directory holding one npm prefix per runtime; bound read-only into every machine.
    pub dir: String,
}

impl Default for RuntimesConfig {
    fn default() -> Self {
        RuntimesConfig { dir: "runtimes".into() }
    }
}

/// One optional value per provider credential kind (DESIGN section 1).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlatformCredentials {
    pub anthropic_api_key: Option<String>,
    pub claude_code_oauth_token: Option<String>,
    pub openai_api_key: Option<String>,
    pub gemini_api_key: Option<String>,
}

/// The sandbox queue (spec 4.2; docs/queue.md). The spec's values are the defaults; tests
/// shorten the clocks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// Requests one account may have waiting at once; one more keeps the ceiling's error.
    pub max_per_account: u32,
    /// How long a request may wait; then it ends `failed` with `queue_wait_expired`.
    pub max_wait_seconds: u64,
    /// Pause between two looks at the queue when no doorbell rings (seconds, fractions
    /// allowed): other replicas' freed machines are noticed this way.
    pub poll_interval_seconds: f64,
    /// How long started, failed and cancelled requests stay readable.
    pub retention_seconds: u64,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            max_per_account: 10,
            max_wait_seconds: 3600,
            poll_interval_seconds: 1.0,
            retention_seconds: 86_400,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OAuthConfig {
    /// Lifetime of a key issued by the OAuth token exchange (default 30 days).
    pub token_ttl_seconds: u64,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig { token_ttl_seconds: 30 * 24 * 3600 }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CorsConfig {
    /// Origins (`https://app.example.com`, `http://localhost:3000`) allowed
    /// to call `/api` from a browser, besides those of registered OAuth
    /// clients' redirect URIs.
    pub allowed_origins: Vec<String>,
}

/// The origin `scheme://host[:port]` of an `http(s)` address written as an
/// origin: nothing after the authority but an optional `/`. Serialized as
/// browsers send `Origin`: lower case, without the scheme's default port.
pub fn parse_origin(text: &str) -> Option<String> {
    let (scheme, rest) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => ":80",
        "https" => ":443",
        _ => return None,
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest).to_ascii_lowercase();
    let valid = !authority.is_empty()
        && authority.chars().all(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(c))
        && !authority.starts_with(':');
    let authority = authority.strip_suffix(default_port).unwrap_or(&authority);
    valid.then(|| format!("{scheme}://{authority}"))
}

/// Account exports (DESIGN 9.3; docs/accounts.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExportsConfig {
    /// How long a finished export stays downloadable (hours, 1 to 8760).
    pub ttl_hours: u64,
}

impl Default for ExportsConfig {
    fn default() -> Self {
        ExportsConfig { ttl_hours: 24 }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Serve Prometheus metrics at `/metrics`.
    pub enabled: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `tracing` filter, e.g. `info` or `acs_core=debug,info`.
    pub level: String,
    /// Emit JSON lines instead of text.
    pub json: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:8080".into(),
            public_url: None,
            database: DatabaseConfig::default(),
            auth: AuthConfig::default(),
            email: EmailConfig::default(),
            limits: LimitsConfig::default(),
            sandbox: SandboxConfig::default(),
            queue: QueueConfig::default(),
            exports: ExportsConfig::default(),
            team: TeamConfig::default(),
            conversations: ConversationsConfig::default(),
            credits: CreditsConfig::default(),
            inference: InferenceConfig::default(),
            runtimes: RuntimesConfig::default(),
            secrets: SecretsConfig::default(),
            metrics: MetricsConfig::default(),
            oauth: OAuthConfig::default(),
            cors: CorsConfig::default(),
            broker: BrokerConfig::default(),
            container: ContainerConfig::default(),
            log: LogConfig::default(),
            features: BTreeMap::new(),
            extensions: BTreeMap::new(),
        }
    }
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        DatabaseConfig { url: "sqlite://acs.db".into(), max_connections: 16 }
    }
}

impl Default for EmailConfig {
    fn default() -> Self {
        EmailConfig {
            transport: MailTransport::Log,
            from: "acs <acs@localhost>".into(),
            smtp_url: None,
            outbox_dir: None,
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            requests_per_key: 600,
            failed_auth_per_address: 600,
            requests_per_address: 6000,
            window_seconds: 60,
            trusted_proxies: Vec::new(),
            max_body_bytes: 16 * 1024 * 1024,
            sandboxes_per_account: 10,
            sandboxes_fleet: 100,
            execution: ExecutionLimitsConfig::default(),
        }
    }
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            provider: "local".into(),
            providers: vec!["local".into()],
            dir: "sandboxes".into(),
            sandboxd_path: String::new(),
            ro_binds: Vec::new(),
            idle_seconds: 600,
            provision_timeout_seconds: 1800,
            memory_mb: 4096,
            cpu_millis: 2000,
            pids: 4096,
            disk_mb: 10240,
            uid_base: 1_000_000_000,
            watchdog_seconds: 3600,
            runner_reconnect_seconds: 120,
            subnet: "10.200.0.0/16".parse().expect("a valid subnet"),
            lease_dir: "/run/acs/net".into(),
            run_dir: "/run/acs/machines".into(),
            proxy_port: 3128,
            egress_timeout_seconds: 300,
            blocked_cidrs: crate::blocklist::shared(),
            read_max_bytes: 1 << 20,
            host_overrides: Vec::new(),
            warm_pools: Vec::new(),
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig { level: "info".into(), json: false }
    }
}

/// The loaded configuration plus the figment it came from, so extensions
/// can read their own sections.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    pub figment: Figment,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration: {0}")]
    Figment(#[from] Box<figment::Error>),
    #[error("configuration: unknown key `{0}`")]
    UnknownKey(String),
    #[error("configuration: unknown feature flag `features.{0}` (known: {1})")]
    UnknownFeature(String, String),
    #[error("configuration: `{key}`: {message}")]
    Invalid { key: String, message: String },
}

/// Builds the figment stack: defaults (core and every section given),
/// the file (if any), then the environment.
pub fn figment_with(file: Option<&Path>, sections: &[Section]) -> Figment {
    let mut fig = Figment::from(Serialized::defaults(Config::default()));
    for ext in sections {
        fig = fig.merge(Serialized::default(&format!("features.{}", ext.name), ext.enabled_by_default));
        if let Some(defaults) = &ext.defaults {
            fig = fig.merge(Serialized::default(ext.section, defaults));
        }
    }
    if let Some(path) = file {
        fig = fig.merge(Toml::file_exact(path));
    }
    fig = fig.merge(
        Env::prefixed("ACS_").filter(|k| !SANDBOX_ENV.iter().any(|s| k.as_str().eq_ignore_ascii_case(s))).split("__"),
    );
    for ext in sections {
        for (var, key) in ext.env_aliases {
            let key = format!("{}.{key}", ext.section);
            fig = fig.merge(Env::raw().only(&[*var]).map(move |_| key.clone().into()));
        }
    }
    fig
}

/// Loads and checks the configuration.
pub fn load_with(file: Option<&Path>, sections: &[Section]) -> Result<Loaded, ConfigError> {
    check_file_exists(file)?;
    from_figment_with(figment_with(file, sections), sections)
}

fn check_credits(c: &CreditsConfig) -> Result<(), ConfigError> {
    let invalid =
        |key: &str, message: &str| Err(ConfigError::Invalid { key: format!("credits.{key}"), message: message.into() });
    for (key, value) in [
        ("initial_grant", c.initial_grant),
        ("sandbox_per_second", c.sandbox_per_second),
        ("platform_turn", c.platform_turn),
    ] {
        if value < 0 {
            return invalid(key, "must be zero or more");
        }
    }
    if c.meter_interval_seconds == 0 {
        return invalid("meter_interval_seconds", "must be at least 1");
    }
    Ok(())
}

fn check_warm_pools(pools: &[WarmPoolConfig]) -> Result<(), ConfigError> {
    let invalid = |message: String| Err(ConfigError::Invalid { key: "sandbox.warm_pools".into(), message });
    let mut names = std::collections::BTreeSet::new();
    for p in pools {
        if p.name.trim().is_empty() || p.name.len() > 100 {
            return invalid("each pool needs a name of 1 to 100 characters".into());
        }
        if !names.insert(p.name.as_str()) {
            return invalid(format!("two pools are named `{}`", p.name));
        }
        if !(1..=WARM_POOL_MAX_SIZE).contains(&p.size) {
            return invalid(format!("pool `{}`: size must be from 1 to {WARM_POOL_MAX_SIZE}", p.name));
        }
        if p.idle_seconds == 0 {
            return invalid(format!("pool `{}`: idle_seconds must be at least 1", p.name));
        }
    }
    Ok(())
}

fn check_file_exists(file: Option<&Path>) -> Result<(), ConfigError> {
    match file {
        Some(p) if !p.exists() => Err(ConfigError::Invalid {
            key: "--config".into(),
            message: format!("file {} does not exist", p.display()),
        }),
        _ => Ok(()),
    }
}

/// Checks a figment stack: every key known, every value in range.
pub fn from_figment_with(figment: Figment, sections: &[Section]) -> Result<Loaded, ConfigError> {
    let config: Config = figment.extract().map_err(Box::new)?;
    let extension_names: Vec<&str> = sections.iter().map(|e| e.name).collect();
    // A section at a dotted path is a top-level key of its first segment.
    let section_roots: Vec<&str> = sections.iter().filter_map(|e| e.section.split('.').next()).collect();
    for key in config.extensions.keys() {
        if !section_roots.contains(&key.as_str()) {
            return Err(ConfigError::UnknownKey(key.clone()));
        }
    }
    for flag in config.features.keys() {
        if !extension_names.contains(&flag.as_str()) {
            return Err(ConfigError::UnknownFeature(flag.clone(), extension_names.join(", ")));
        }
    }
    if config.listen.parse::<std::net::SocketAddr>().is_err() {
        return Err(ConfigError::Invalid {
            key: "listen".into(),
            message: format!("`{}` is not an address such as 127.0.0.1:8080", config.listen),
        });
    }
    let url = &config.database.url;
    if !(url.starts_with("sqlite:") || url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(ConfigError::Invalid {
            key: "database.url".into(),
            message: "must start with sqlite: or postgres://".into(),
        });
    }
    if config.email.transport == MailTransport::Smtp && config.email.smtp_url.is_none() {
        return Err(ConfigError::Invalid {
            key: "email.smtp_url".into(),
            message: "is required when email.transport is smtp".into(),
        });
    }
    if config.email.transport == MailTransport::File && config.email.outbox_dir.is_none() {
        return Err(ConfigError::Invalid {
            key: "email.outbox_dir".into(),
            message: "is required when email.transport is file".into(),
        });
    }
    if config.limits.window_seconds == 0 {
        return Err(ConfigError::Invalid { key: "limits.window_seconds".into(), message: "must be at least 1".into() });
    }
    if !(60..=10 * 365 * 24 * 3600).contains(&config.oauth.token_ttl_seconds) {
        return Err(ConfigError::Invalid {
            key: "oauth.token_ttl_seconds".into(),
            message: "must be 60 to 315360000 (ten years)".into(),
        });
    }
    if let Some(bad) = config.cors.allowed_origins.iter().find(|o| parse_origin(o).is_none()) {
        return Err(ConfigError::Invalid {
            key: "cors.allowed_origins".into(),
            message: format!("`{bad}` is not an origin such as https://app.example.com or http://localhost:3000"),
        });
    }
    if !(1..=24 * 365).contains(&config.auth.session_hours) {
        return Err(ConfigError::Invalid { key: "auth.session_hours".into(), message: "must be 1 to 8760".into() });
    }
    // Machines' uids: above every ordinary account, and the whole range a valid uid.
    if config.sandbox.uid_base < 65536
        || u64::from(config.sandbox.uid_base) + u64::from(SANDBOX_UID_SPAN) >= u64::from(u32::MAX)
    {
        return Err(ConfigError::Invalid {
            key: "sandbox.uid_base".into(),
            message: format!("must be from 65536 to {}", u32::MAX - SANDBOX_UID_SPAN - 1),
        });
    }
    if !(config.queue.poll_interval_seconds > 0.0 && config.queue.poll_interval_seconds <= 3600.0) {
        return Err(ConfigError::Invalid {
            key: "queue.poll_interval_seconds".into(),
            message: "must be more than 0 and at most 3600".into(),
        });
    }
    check_credits(&config.credits)?;
    check_warm_pools(&config.sandbox.warm_pools)?;
    if !(1..=24 * 365).contains(&config.exports.ttl_hours) {
        return Err(ConfigError::Invalid { key: "exports.ttl_hours".into(), message: "must be 1 to 8760".into() });
    }
    if !(config.team.tick_seconds > 0.0 && config.team.clock_offset_seconds.is_finite()) {
        return Err(ConfigError::Invalid {
            key: "team.tick_seconds".into(),
            message: "must be more than 0 (and team.clock_offset_seconds a number)".into(),
        });
    }
    if !(1..=31_536_000).contains(&config.conversations.permission_timeout_seconds) {
        return Err(ConfigError::Invalid {
            key: "conversations.permission_timeout_seconds".into(),
            message: "must be from 1 to 31536000 (the range of ask_timeout)".into(),
        });
    }
    Ok(Loaded { config, figment })
}

impl Loaded {
    /// An extension's own section, typed. Unknown keys in it are refused
    /// when `T` denies them.
    pub fn section<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<T, ConfigError> {
        self.figment.extract_inner(name).map_err(|e| ConfigError::Figment(Box::new(e)))
    }

    /// The effective configuration as TOML, with every secret masked.
    pub fn render_masked(&self) -> String {
        let dict: Dict = self.figment.extract().unwrap_or_default();
        let masked = mask(Value::from(dict));
        toml::to_string_pretty(&masked).unwrap_or_else(|e| format!("# cannot render: {e}"))
    }
}

fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["password", "secret", "token", "access_code", "master_key", "smtp_url", "api_key"].iter().any(|s| k.contains(s))
}

fn mask(value: Value) -> Value {
    match value {
        Value::Dict(tag, dict) => Value::Dict(
            tag,
            dict.into_iter()
                .map(|(k, v)| {
                    // Numbers and flags under such names (`token_ttl_seconds`) are settings, not secrets.
                    let v = if is_secret_key(&k) && !matches!(v, Value::Dict(..) | Value::Num(..) | Value::Bool(..)) {
                        Value::from("********")
                    } else {
                        mask(v)
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

// `Jail::expect_with` closures return figment's own (large) error type.
#[allow(clippy::result_large_err)]
#[cfg(test)]
mod tests {
    use super::*;
    use figment::Jail;

    fn load(file: Option<&Path>) -> Result<Loaded, ConfigError> {
        load_with(file, &[])
    }

    #[test]
    fn defaults_follow_the_spec_limits() {
        let c = Config::default();
        assert_eq!(c.limits.requests_per_key, 600);
        assert_eq!(c.limits.failed_auth_per_address, 600);
        assert_eq!(c.limits.requests_per_address, 6000);
        assert_eq!(c.limits.window_seconds, 60);
        assert_eq!(c.listen, "127.0.0.1:8080");
        assert_eq!(c.database.url, "sqlite://acs.db");
    }

    #[test]
    fn env_nesting_and_unknown_keys() {
        Jail::expect_with(|jail| {
            jail.set_env("ACS_DATABASE__URL", "postgres://x/y");
            jail.set_env("ACS_LIMITS__REQUESTS_PER_KEY", "5");
            let loaded = load(None).unwrap();
            assert_eq!(loaded.config.database.url, "postgres://x/y");
            assert_eq!(loaded.config.limits.requests_per_key, 5);

            jail.set_env("ACS_LIMITS__REQUEST_PER_KEY", "5");
            let err = load(None).unwrap_err().to_string();
            assert!(err.contains("request_per_key"), "{err}");
            Ok(())
        });
    }

    #[test]
    fn unknown_top_level_key_is_named() {
        Jail::expect_with(|jail| {
            jail.create_file("acs.toml", "listen = \"127.0.0.1:1\"\n[databse]\nurl = \"x\"\n")?;
            let err = load(Some(Path::new("acs.toml"))).unwrap_err().to_string();
            assert!(err.contains("databse"), "{err}");
            Ok(())
        });
    }

    #[test]
    fn sandbox_variables_are_not_configuration() {
        Jail::expect_with(|jail| {
            jail.set_env("ACS_API_KEY", "acs_x");
            jail.set_env("ACS_API_URL", "http://x");
            assert!(load(None).is_ok());
            Ok(())
        });
    }

    #[test]
    fn platform_credentials_are_masked() {
        Jail::expect_with(|jail| {
            jail.set_env("ACS_INFERENCE__PLATFORM__ANTHROPIC_API_KEY", "sk-ant-hunter2");
            let loaded = load(None).unwrap();
            assert_eq!(loaded.config.inference.platform.anthropic_api_key.as_deref(), Some("sk-ant-hunter2"));
            let out = loaded.render_masked();
            assert!(!out.contains("hunter2"), "{out}");
            Ok(())
        });
    }

    #[test]
    fn warm_pools_are_checked_at_start() {
        let pool = |name: &str, size: u32| WarmPoolConfig {
            name: name.into(),
            account_id: uuid::Uuid::nil(),
            agent_id: uuid::Uuid::nil(),
            size,
            idle_seconds: 60,
        };
        assert!(check_warm_pools(&[pool("a", 1), pool("b", WARM_POOL_MAX_SIZE)]).is_ok());
        for (pools, says) in [
            (vec![pool("a", 0)], "size must be from 1"),
            (vec![pool("a", WARM_POOL_MAX_SIZE + 1)], "size must be from 1"),
            (vec![pool("a", 1), pool("a", 2)], "two pools are named `a`"),
            (vec![pool(" ", 1)], "a name of 1 to 100"),
            (vec![WarmPoolConfig { idle_seconds: 0, ..pool("a", 1) }], "idle_seconds"),
        ] {
            let err = check_warm_pools(&pools).unwrap_err().to_string();
            assert!(err.contains("sandbox.warm_pools") && err.contains(says), "{err}");
        }
        Jail::expect_with(|jail| {
            jail.create_file(
                "acs.toml",
                "[[sandbox.warm_pools]]\nname = \"p\"\naccount_id = \"00000000-0000-0000-0000-000000000001\"\n\
                 agent_id = \"00000000-0000-0000-0000-000000000002\"\nsize = 3\n",
            )?;
            let loaded = load(Some(Path::new("acs.toml"))).unwrap();
            let pools = &loaded.config.sandbox.warm_pools;
            assert_eq!((pools.len(), pools[0].size, pools[0].idle_seconds), (1, 3, 1800));
            Ok(())
        });
    }

    #[test]
    fn negative_credit_amounts_are_refused() {
        Jail::expect_with(|jail| {
            jail.set_env("ACS_CREDITS__PLATFORM_TURN", "-1");
            let err = load(None).unwrap_err().to_string();
            assert!(err.contains("credits.platform_turn"), "{err}");
            Ok(())
        });
    }

    #[test]
    fn origins_are_read_as_browsers_send_them() {
        for (text, origin) in [
            ("https://App.Example.com/", "https://app.example.com"),
            ("http://localhost:3000", "http://localhost:3000"),
            ("https://a.example:443", "https://a.example"),
            ("http://a.example:80", "http://a.example"),
            ("https://a.example:4430", "https://a.example:4430"),
            ("http://[::1]:8080", "http://[::1]:8080"),
        ] {
            assert_eq!(parse_origin(text).as_deref(), Some(origin), "{text}");
        }
        for text in [
            "https://a.example/app",
            "ftp://a.example",
            "https://",
            "a.example",
            "https://u@a.example",
            "https://:1",
            "null",
        ] {
            assert_eq!(parse_origin(text), None, "{text}");
        }
    }

    #[test]
    fn oauth_and_cors_settings_are_checked_at_start() {
        Jail::expect_with(|jail| {
            for (ttl, ok) in [("59", false), ("60", true), ("315360000", true), ("315360001", false)] {
                jail.set_env("ACS_OAUTH__TOKEN_TTL_SECONDS", ttl);
                match load(None) {
                    Ok(l) => assert!(ok && l.config.oauth.token_ttl_seconds.to_string() == ttl, "{ttl}"),
                    Err(e) => assert!(!ok && e.to_string().contains("oauth.token_ttl_seconds"), "{ttl}: {e}"),
                }
            }
            jail.set_env("ACS_OAUTH__TOKEN_TTL_SECONDS", "2592000");
            jail.create_file(
                "acs.toml",
                "[cors]\nallowed_origins = [\"https://a.example\", \"https://b.example/app\"]\n",
            )?;
            let err = load(Some(Path::new("acs.toml"))).unwrap_err().to_string();
            assert!(err.contains("cors.allowed_origins") && err.contains("b.example/app"), "{err}");
            jail.create_file("acs.toml", "[cors]\nallowed_origins = [\"http://localhost:3000\"]\n")?;
            assert!(load(Some(Path::new("acs.toml"))).is_ok());
            Ok(())
        });
    }

    #[test]
    fn secrets_are_masked() {
        Jail::expect_with(|jail| {
            jail.set_env("ACS_AUTH__ACCESS_CODE", "hunter2");
            let out = load(None).unwrap().render_masked();
            assert!(!out.contains("hunter2"), "{out}");
            assert!(out.contains("access_code"), "{out}");
            // A number under a secret-sounding name is a setting, shown as it is.
            assert!(out.contains("token_ttl_seconds = 2592000"), "{out}");
            Ok(())
        });
    }
}
