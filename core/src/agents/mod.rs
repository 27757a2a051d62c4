//! Agents: reusable configuration of a runtime and a model (DESIGN section
//! 5). Every change writes a version; any version can be read whole and
//! rolled back to (which writes a new version equal to it).

pub mod credentials;
pub mod limits;
pub mod rules;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::any::AnyRow;
use sqlx::{Any, Row};
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::db::RowExt;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Validator;
use crate::http::{Data, Json, Path, created, ok};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

/// The runtime an agent runs on (DESIGN section 1); `acp` runs the agent's `command`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    Acp,
    Claude,
    Codex,
    Gemini,
    Opencode,
}

impl Runtime {
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Acp => "acp",
            Runtime::Claude => "claude",
            Runtime::Codex => "codex",
            Runtime::Gemini => "gemini",
            Runtime::Opencode => "opencode",
        }
    }
}

/// `ephemeral`: one conversation's machine, reclaimed with it; `persistent`:
/// the agent's home, shared and kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    #[default]
    Ephemeral,
    Persistent,
}

/// Every configurable field of an agent: what a version holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AgentSpec {
    /// 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// At most 2000 characters.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    pub runtime: Runtime,
    /// argv of the agent program: required for `acp`, an override for the others.
    pub command: Option<Vec<String>>,
    /// `provider/model_id`; not for `acp`.
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    pub inference_credential_id: Option<Uuid>,
    pub sandbox_mode: SandboxMode,
    /// Where its machines run; null: the server's default provider (`sandbox.provider`).
    #[serde(default)]
    pub provider: Option<MachineProvider>,
    /// The account's runner, with `provider: runner` (and only then).
    #[serde(default)]
    pub runner_id: Option<Uuid>,
    /// Tool title or ACP tool kind (or `default`) -> `auto_allow` | `ask` | `auto_deny`; optional `ask_timeout` seconds.
    #[schema(value_type = Option<PermissionPolicy>)]
    pub permission_policy: Option<Map<String, Value>>,
    /// Adapter option id -> string (1 to 200) or boolean; at most 16.
    #[schema(value_type = Option<SessionConfig>)]
    pub session_config: Option<Map<String, Value>>,
    pub allowed_environment_ids: Option<Vec<Uuid>>,
    pub allowed_vault_ids: Option<Vec<Uuid>>,
    /// null permits any owned set, `[]` only the agent's own, a list those.
    pub allowed_inference_credential_ids: Option<Vec<Uuid>>,
    #[schema(value_type = Option<ExecutionLimits>)]
    pub execution_limits: Option<Map<String, Value>>,
    #[schema(value_type = Vec<McpServerEntry>)]
    pub mcp_servers: Vec<Map<String, Value>>,
    #[schema(value_type = Vec<Value>)]
    pub skills: Vec<Value>,
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
}

/// An agent: its current version's fields plus identity.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Agent {
    pub id: Uuid,
    #[serde(flatten)]
    pub spec: AgentSpec,
    /// Starts at 1; every change adds one.
    pub version: i64,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// One version of an agent, whole.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentVersion {
    pub version: i64,
    pub agent: Agent,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
}

/// Where an agent's machines run: a hosted provider of this server, or
/// `runner`, a user's own computer (with `runner_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MachineProvider {
    Local,
    Container,
    Kubernetes,
    Runner,
}

impl MachineProvider {
    pub fn as_str(self) -> &'static str {
        match self {
            MachineProvider::Local => "local",
            MachineProvider::Container => "container",
            MachineProvider::Kubernetes => "kubernetes",
            MachineProvider::Runner => "runner",
        }
    }
}

/// Create body: `name` and `runtime` are required.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AgentCreate {
    pub name: String,
    pub runtime: Runtime,
    pub description: Option<String>,
    pub command: Option<Vec<String>>,
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    pub inference_credential_id: Option<Uuid>,
    pub sandbox_mode: Option<SandboxMode>,
    pub provider: Option<MachineProvider>,
    pub runner_id: Option<Uuid>,
    #[schema(value_type = Option<PermissionPolicy>)]
    pub permission_policy: Option<Map<String, Value>>,
    /// A malformed map (not an object included) is 422 `session_config_invalid`.
    #[schema(value_type = Option<SessionConfig>)]
    pub session_config: Option<Value>,
    pub allowed_environment_ids: Option<Vec<Uuid>>,
    pub allowed_vault_ids: Option<Vec<Uuid>>,
    pub allowed_inference_credential_ids: Option<Vec<Uuid>>,
    #[schema(value_type = Option<ExecutionLimits>)]
    pub execution_limits: Option<Map<String, Value>>,
    #[schema(value_type = Option<Vec<McpServerEntry>>)]
    pub mcp_servers: Option<Vec<Map<String, Value>>>,
    #[schema(value_type = Option<Vec<Value>>)]
    pub skills: Option<Vec<Value>>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// PATCH body: an omitted field is unchanged; null clears a nullable field
/// (and resets `sandbox_mode`, `mcp_servers`, `skills`, `metadata` to their defaults).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(default)]
pub struct AgentUpdate {
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub name: Option<Option<String>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Runtime>)]
    pub runtime: Option<Option<Runtime>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Vec<String>>)]
    pub command: Option<Option<Vec<String>>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub model: Option<Option<String>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub system_prompt: Option<Option<String>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub environment_id: Option<Option<Uuid>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub vault_id: Option<Option<Uuid>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub inference_credential_id: Option<Option<Uuid>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<SandboxMode>)]
    pub sandbox_mode: Option<Option<SandboxMode>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<MachineProvider>)]
    pub provider: Option<Option<MachineProvider>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub runner_id: Option<Option<Uuid>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<PermissionPolicy>)]
    pub permission_policy: Option<Option<Map<String, Value>>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<SessionConfig>)]
    pub session_config: Option<Option<Value>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Vec<Uuid>>)]
    pub allowed_environment_ids: Option<Option<Vec<Uuid>>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Vec<Uuid>>)]
    pub allowed_vault_ids: Option<Option<Vec<Uuid>>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Vec<Uuid>>)]
    pub allowed_inference_credential_ids: Option<Option<Vec<Uuid>>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<ExecutionLimits>)]
    pub execution_limits: Option<Option<Map<String, Value>>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Vec<McpServerEntry>>)]
    pub mcp_servers: Option<Option<Vec<Map<String, Value>>>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Vec<Value>>)]
    pub skills: Option<Option<Vec<Value>>>,
    #[serde(deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Option<Map<String, Value>>>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct AgentRollbackRequest {
    pub version: i64,
}

/// A session config as sent: an object, else 422 `session_config_invalid`.
fn session_config_map(value: Option<Value>) -> ApiResult<Option<Map<String, Value>>> {
    match value {
        None => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(rules::session_config_error(
            "session_config must be an object mapping option ids to a string or a boolean.".into(),
        )),
    }
}

impl TryFrom<AgentCreate> for AgentSpec {
    type Error = ApiError;

    fn try_from(c: AgentCreate) -> ApiResult<Self> {
        Ok(AgentSpec {
            name: c.name.trim().to_owned(),
            description: c.description,
            runtime: c.runtime,
            command: c.command,
            model: c.model,
            system_prompt: c.system_prompt,
            environment_id: c.environment_id,
            vault_id: c.vault_id,
            inference_credential_id: c.inference_credential_id,
            sandbox_mode: c.sandbox_mode.unwrap_or_default(),
            provider: c.provider,
            runner_id: c.runner_id,
            permission_policy: c.permission_policy,
            session_config: session_config_map(c.session_config)?,
            allowed_environment_ids: c.allowed_environment_ids,
            allowed_vault_ids: c.allowed_vault_ids,
            allowed_inference_credential_ids: c.allowed_inference_credential_ids,
            execution_limits: c.execution_limits,
            mcp_servers: c.mcp_servers.unwrap_or_default(),
            skills: c.skills.unwrap_or_default(),
            metadata: c.metadata.unwrap_or_default(),
        })
    }
}

/// Applies a PATCH to `spec`. `name` and `runtime` may not be null.
pub fn apply_update(mut spec: AgentSpec, u: AgentUpdate) -> ApiResult<AgentSpec> {
    let mut v = Validator::default();
    match u.name {
        Some(Some(name)) => spec.name = name.trim().to_owned(),
        Some(None) => v.check(false, "name", "can't be null"),
        None => {}
    }
    match u.runtime {
        Some(Some(runtime)) => spec.runtime = runtime,
        Some(None) => v.check(false, "runtime", "can't be null"),
        None => {}
    }
    v.finish()?;
    macro_rules! nullable_fields {
        ($($f:ident),*) => { $( if let Some(value) = u.$f { spec.$f = value; } )* };
    }
    nullable_fields!(
        description,
        command,
        model,
        system_prompt,
        environment_id,
        vault_id,
        inference_credential_id,
        provider,
        runner_id,
        permission_policy,
        allowed_environment_ids,
        allowed_vault_ids,
        allowed_inference_credential_ids,
        execution_limits
    );
    if let Some(config) = u.session_config {
        spec.session_config = session_config_map(config)?;
    }
    if let Some(mode) = u.sandbox_mode {
        spec.sandbox_mode = mode.unwrap_or_default();
    }
    if let Some(servers) = u.mcp_servers {
        spec.mcp_servers = servers.unwrap_or_default();
    }
    if let Some(skills) = u.skills {
        spec.skills = skills.unwrap_or_default();
    }
    if let Some(metadata) = u.metadata {
        spec.metadata = metadata.unwrap_or_default();
    }
    Ok(spec)
}

/// Checks a whole agent spec (create, and the merged result of a PATCH).
/// `providers`: the sandbox providers this server offers.
pub fn validate(spec: &AgentSpec, providers: &[String]) -> ApiResult<()> {
    let runtime = spec.runtime.as_str();
    if let Some(model) = &spec.model {
        rules::check_model(runtime, model)
            .map_err(|m| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "model_invalid", m))?;
    }
    if let Some(config) = &spec.session_config {
        rules::validate_session_config(config).map_err(rules::session_config_error)?;
    }
    let mut v = Validator::default();
    rules::check_name(&mut v, &spec.name);
    if let Some(d) = &spec.description {
        v.check(d.chars().count() <= rules::MAX_DESCRIPTION, "description", "should be at most 2000 character(s)");
    }
    if let Some(p) = &spec.system_prompt {
        v.check(
            p.chars().count() <= rules::MAX_SYSTEM_PROMPT,
            "system_prompt",
            "should be at most 100000 character(s)",
        );
    }
    rules::check_command(&mut v, runtime, spec.command.as_deref());
    rules::check_provider(&mut v, spec.provider, spec.runner_id, providers);
    if let Some(policy) = &spec.permission_policy
        && let Err(m) = rules::validate_permission_policy(policy)
    {
        v.check(false, "permission_policy", &m);
    }
    v.finish()
}

/// The ids an agent names must be the caller's own (another account's id is
/// 404). Only ids that differ from `current` are checked: an environment,
/// vault or set deleted after the agent named it does not block other edits.
async fn check_references(
    tx: &mut sqlx::Transaction<'_, Any>,
    account_id: Uuid,
    spec: &AgentSpec,
    current: Option<&AgentSpec>,
) -> ApiResult<()> {
    let refs = [
        (
            spec.environment_id,
            current.and_then(|c| c.environment_id),
            "SELECT id FROM environments WHERE id = $1 AND account_id = $2",
            "Environment",
        ),
        (
            spec.vault_id,
            current.and_then(|c| c.vault_id),
            "SELECT id FROM vaults WHERE id = $1 AND account_id = $2",
            "Vault",
        ),
        (
            spec.inference_credential_id,
            current.and_then(|c| c.inference_credential_id),
            "SELECT id FROM inference_credential_sets WHERE id = $1 AND account_id = $2",
            "Inference credential set",
        ),
        (
            spec.runner_id,
            current.and_then(|c| c.runner_id),
            "SELECT id FROM runners WHERE id = $1 AND account_id = $2",
            "Runner",
        ),
    ];
    for (id, before, sql, what) in refs {
        if let Some(id) = id
            && before != Some(id)
        {
            let found =
                sqlx::query(sql).bind(id.to_string()).bind(account_id.to_string()).fetch_optional(&mut **tx).await?;
            if found.is_none() {
                return Err(ApiError::not_found(what));
            }
        }
    }
    Ok(())
}

fn spec_json(spec: &AgentSpec) -> String {
    serde_json::to_string(spec).expect("an agent spec always serializes")
}

fn parse_spec(text: &str) -> Result<AgentSpec, sqlx::Error> {
    serde_json::from_str(text).map_err(|e| sqlx::Error::ColumnDecode { index: "spec".into(), source: Box::new(e) })
}

fn from_row(row: &AnyRow) -> Result<Agent, sqlx::Error> {
    Ok(Agent {
        id: row.uuid("id")?,
        spec: parse_spec(&row.try_get::<String, _>("spec")?)?,
        version: row.try_get("version")?,
        inserted_at: from_micros(row.try_get("created_at")?),
        updated_at: from_micros(row.try_get("updated_at")?),
    })
}

async fn find(ex: impl sqlx::Executor<'_, Database = Any>, account_id: Uuid, id: Uuid) -> ApiResult<Agent> {
    let row =
        sqlx::query("SELECT id, spec, version, created_at, updated_at FROM agents WHERE id = $1 AND account_id = $2")
            .bind(id.to_string())
            .bind(account_id.to_string())
            .fetch_optional(ex)
            .await?
            .ok_or_else(|| ApiError::not_found("Agent"))?;
    Ok(from_row(&row)?)
}

/// Loads one of the caller's agents (404 when it is not theirs).
pub async fn get_agent(state: &AppState, account_id: Uuid, id: Uuid) -> ApiResult<Agent> {
    find(&state.db.pool, account_id, id).await
}

/// Writes `spec` as the agent's next version and makes it current.
async fn write_version(
    tx: &mut sqlx::Transaction<'_, Any>,
    account_id: Uuid,
    id: Uuid,
    version: i64,
    spec: &AgentSpec,
    now: i64,
) -> Result<(), sqlx::Error> {
    let json = spec_json(spec);
    sqlx::query(
        "UPDATE agents SET name = $1, description = $2, runtime = $3, environment_id = $4, vault_id = $5, \
         inference_credential_id = $6, version = $7, spec = $8, updated_at = $9 WHERE id = $10 AND account_id = $11",
    )
    .bind(spec.name.clone())
    .bind(spec.description.clone())
    .bind(spec.runtime.as_str())
    .bind(spec.environment_id.map(|i| i.to_string()))
    .bind(spec.vault_id.map(|i| i.to_string()))
    .bind(spec.inference_credential_id.map(|i| i.to_string()))
    .bind(version)
    .bind(json.clone())
    .bind(now)
    .bind(id.to_string())
    .bind(account_id.to_string())
    .execute(&mut **tx)
    .await?;
    sqlx::query("INSERT INTO agent_versions (agent_id, version, spec, created_at) VALUES ($1, $2, $3, $4)")
        .bind(id.to_string())
        .bind(version)
        .bind(json)
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Makes `next(current)` the agent's next version, checked whole. A PATCH
/// that changes nothing writes no version; a rollback always writes one, so
/// the history shows it. The row lock taken by the first UPDATE serialises
/// concurrent edits of one agent.
async fn change(
    state: &AppState,
    p: &Principal,
    id: Uuid,
    action: &str,
    next: impl FnOnce(AgentSpec) -> ApiResult<AgentSpec>,
) -> ApiResult<Agent> {
    let mut tx = state.db.begin().await?;
    sqlx::query("UPDATE agents SET updated_at = updated_at WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(p.account_id.to_string())
        .execute(&mut *tx)
        .await?;
    let current = find(&mut *tx, p.account_id, id).await?;
    let spec = next(current.spec.clone())?;
    validate(&spec, &state.config().sandbox.providers)?;
    // Limits kept as they were are not judged again by a configuration changed since.
    if spec.execution_limits != current.spec.execution_limits {
        limits::check_agent(&state.config().limits.execution, spec.execution_limits.as_ref())?;
    }
    if spec == current.spec && action == "agent.updated" {
        return Ok(current);
    }
    check_references(&mut tx, p.account_id, &spec, Some(&current.spec)).await?;
    write_version(&mut tx, p.account_id, id, current.version + 1, &spec, now_micros()).await?;
    audit::record(&mut *tx, &Actor::key(p), action, Some(("agent", id))).await?;
    let agent = find(&mut *tx, p.account_id, id).await?;
    tx.commit().await?;
    Ok(agent)
}

/// The account's agents, newest first.
#[utoipa::path(get, path = "/api/agents", operation_id = "listAgents", tag = "agents", responses((status = 200, description = "The account's agents, newest first", body = Data<Vec<Agent>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<Agent>>> {
    let rows = sqlx::query(
        "SELECT id, spec, version, created_at, updated_at FROM agents WHERE account_id = $1 ORDER BY created_at DESC, id DESC",
    )
    .bind(p.account_id.to_string())
    .fetch_all(&state.db.pool)
    .await?;
    Ok(ok(rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// Creates an agent (version 1).
#[utoipa::path(post, path = "/api/agents", operation_id = "createAgent", tag = "agents", request_body = AgentCreate,
    responses((status = 201, description = "Created (version 1)", body = Data<Agent>),
        (status = 404, description = "An environment, vault or credential set the caller does not own", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed`, `model_invalid`, `session_config_invalid`, `execution_limits_invalid` or `execution_limits_widen`", body = crate::error::ErrorBody)))]
async fn create(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<AgentCreate>,
) -> ApiResult<(StatusCode, Data<Agent>)> {
    let spec = AgentSpec::try_from(req)?;
    validate(&spec, &state.config().sandbox.providers)?;
    limits::check_agent(&state.config().limits.execution, spec.execution_limits.as_ref())?;
    let id = Uuid::now_v7();
    let now = now_micros();
    let json = spec_json(&spec);
    let mut tx = state.db.begin().await?;
    check_references(&mut tx, p.account_id, &spec, None).await?;
    sqlx::query(
        "INSERT INTO agents (id, account_id, name, description, runtime, environment_id, vault_id, \
         inference_credential_id, version, spec, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $10, $10)",
    )
    .bind(id.to_string())
    .bind(p.account_id.to_string())
    .bind(spec.name.clone())
    .bind(spec.description.clone())
    .bind(spec.runtime.as_str())
    .bind(spec.environment_id.map(|i| i.to_string()))
    .bind(spec.vault_id.map(|i| i.to_string()))
    .bind(spec.inference_credential_id.map(|i| i.to_string()))
    .bind(json.clone())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    sqlx::query("INSERT INTO agent_versions (agent_id, version, spec, created_at) VALUES ($1, 1, $2, $3)")
        .bind(id.to_string())
        .bind(json)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    audit::record(&mut *tx, &Actor::key(&p), "agent.created", Some(("agent", id))).await?;
    tx.commit().await?;
    let at = from_micros(now);
    Ok(created(Agent { id, spec, version: 1, inserted_at: at, updated_at: at }))
}

/// One agent.
#[utoipa::path(get, path = "/api/agents/{id}", operation_id = "getAgent", tag = "agents", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The agent", body = Data<Agent>)))]
async fn get_one(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<Agent>> {
    Ok(ok(get_agent(&state, p.account_id, id).await?))
}

/// Changes an agent; a change writes a new version, a no-op writes none.
#[utoipa::path(patch, path = "/api/agents/{id}", operation_id = "updateAgent", tag = "agents", params(("id" = Uuid, Path)), request_body = AgentUpdate,
    responses((status = 200, description = "The agent; a new version when something changed", body = Data<Agent>),
        (status = 422, description = "`validation_failed`, `model_invalid`, `session_config_invalid`, `execution_limits_invalid` or `execution_limits_widen`", body = crate::error::ErrorBody)))]
async fn update(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<AgentUpdate>,
) -> ApiResult<Data<Agent>> {
    Ok(ok(change(&state, &p, id, "agent.updated", |spec| apply_update(spec, req)).await?))
}

/// Deletes an agent and its versions.
#[utoipa::path(delete, path = "/api/agents/{id}", operation_id = "deleteAgent", tag = "agents", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such agent", body = crate::error::ErrorBody)))]
async fn delete(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    let done = sqlx::query("DELETE FROM agents WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(p.account_id.to_string())
        .execute(&mut *tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(ApiError::not_found("Agent"));
    }
    audit::record(&mut *tx, &Actor::key(&p), "agent.deleted", Some(("agent", id))).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Every version of an agent, whole, newest first.
#[utoipa::path(get, path = "/api/agents/{id}/versions", operation_id = "listAgentVersions", tag = "agents", params(("id" = Uuid, Path)),
    responses((status = 200, description = "Every version, newest first", body = Data<Vec<AgentVersion>>)))]
async fn versions(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<Vec<AgentVersion>>> {
    let agent = get_agent(&state, p.account_id, id).await?;
    let rows =
        sqlx::query("SELECT version, spec, created_at FROM agent_versions WHERE agent_id = $1 ORDER BY version DESC")
            .bind(id.to_string())
            .fetch_all(&state.db.pool)
            .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let version: i64 = row.try_get("version")?;
        let at = from_micros(row.try_get("created_at")?);
        out.push(AgentVersion {
            version,
            agent: Agent {
                id,
                spec: parse_spec(&row.try_get::<String, _>("spec")?)?,
                version,
                inserted_at: agent.inserted_at,
                updated_at: at,
            },
            inserted_at: at,
        });
    }
    Ok(ok(out))
}

/// Makes a new version equal to an earlier one.
#[utoipa::path(post, path = "/api/agents/{id}/rollback", operation_id = "rollbackAgent", tag = "agents", params(("id" = Uuid, Path)),
    request_body = AgentRollbackRequest, responses((status = 200, description = "The agent at its new version", body = Data<Agent>),
        (status = 404, description = "No such agent or version", body = crate::error::ErrorBody)))]
async fn rollback(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<AgentRollbackRequest>,
) -> ApiResult<Data<Agent>> {
    get_agent(&state, p.account_id, id).await?;
    let row = sqlx::query("SELECT spec FROM agent_versions WHERE agent_id = $1 AND version = $2")
        .bind(id.to_string())
        .bind(req.version)
        .fetch_optional(&state.db.pool)
        .await?
        .ok_or_else(|| ApiError::not_found("Agent version"))?;
    let old = parse_spec(&row.try_get::<String, _>("spec")?)?;
    Ok(ok(change(&state, &p, id, "agent.rolled_back", |_| Ok(old)).await?))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(versions))
        .routes(routes!(rollback))
}

/// `session_config` (spec 2.9): adapter option id -> value, at most 16.
pub struct SessionConfig;

impl utoipa::PartialSchema for SessionConfig {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        let value = ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Boolean]))
            .description(Some("A string of 1 to 200 characters, or a boolean."));
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(value))
            .max_properties(Some(16))
            .description(Some("Adapter option id -> value, applied before each prompt; at most 16."))
            .into()
    }
}

impl ToSchema for SessionConfig {}

/// `permission_policy`: what a tool call may do without asking.
pub struct PermissionPolicy;

impl utoipa::PartialSchema for PermissionPolicy {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let verdict =
            ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["auto_allow", "ask", "auto_deny"]));
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "ask_timeout",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1))
                    .description(Some("Seconds an `ask` waits for an answer.")),
            )
            .additional_properties(Some(verdict))
            .description(Some("Tool title or ACP tool kind (or `default`) -> `auto_allow`, `ask` or `auto_deny`."))
            .into()
    }
}

impl ToSchema for PermissionPolicy {}

/// `execution_limits`: the known limit keys, each an integer above zero.
pub struct ExecutionLimits;

impl utoipa::PartialSchema for ExecutionLimits {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
        let mut limits = ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(AdditionalProperties::FreeForm(false)))
            .description(Some("Limits of a turn or conversation; 422 `execution_limits_invalid` on another key."));
        for key in limits::KEYS {
            limits = limits.property(
                key,
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(utoipa::openapi::schema::SchemaFormat::KnownFormat(
                        utoipa::openapi::schema::KnownFormat::Int64,
                    )))
                    .minimum(Some(1)),
            );
        }
        limits.into()
    }
}

impl ToSchema for ExecutionLimits {}

/// One entry of `mcp_servers`, passed to the runtime as ACP `session/new`
/// `mcpServers` as written (docs/runtimes.md).
pub struct McpServerEntry;

impl utoipa::PartialSchema for McpServerEntry {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ArrayBuilder, ObjectBuilder, Type};
        let string = || ObjectBuilder::new().schema_type(Type::String);
        let pairs = || {
            ArrayBuilder::new().items(
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .property("name", string())
                    .property("value", string())
                    .required("name")
                    .required("value"),
            )
        };
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("name", string())
            .property("type", string().description(Some("`http` or `sse` for a remote server; absent for a program")))
            .property("command", string().description(Some("A program in the machine")))
            .property("args", ArrayBuilder::new().items(string()))
            .property("env", pairs())
            .property("url", string().description(Some("A remote server's address")))
            .property("headers", pairs())
            .required("name")
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .description(Some(
                "ACP's shapes: `{name, command, args, env}` for a program in the machine, \
                 `{type: \"http\", name, url, headers}` for a remote server.",
            ))
            .into()
    }
}

impl ToSchema for McpServerEntry {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(body: Value) -> AgentSpec {
        AgentSpec::try_from(serde_json::from_value::<AgentCreate>(body).unwrap()).unwrap()
    }

    #[test]
    fn patch_distinguishes_absent_from_null() {
        let base = spec(json!({"name": "a", "runtime": "claude", "model": "anthropic/x", "allowed_vault_ids": []}));
        let same = apply_update(base.clone(), serde_json::from_value(json!({})).unwrap()).unwrap();
        assert_eq!(same, base);
        let cleared = apply_update(
            base.clone(),
            serde_json::from_value(json!({"model": null, "allowed_vault_ids": null})).unwrap(),
        )
        .unwrap();
        assert_eq!(cleared.model, None);
        assert_eq!(cleared.allowed_vault_ids, None);
        assert!(apply_update(base, serde_json::from_value(json!({"name": null})).unwrap()).is_err());
    }

    fn validate_local(spec: &AgentSpec) -> ApiResult<()> {
        validate(spec, &["local".to_owned()])
    }

    #[test]
    fn provider_is_one_the_server_offers() {
        let container = spec(json!({"name": "a", "runtime": "acp", "command": ["x"], "provider": "container"}));
        let e = validate_local(&container).unwrap_err();
        assert!(e.errors.as_ref().unwrap().contains_key("provider"));
        assert!(validate(&container, &["local".to_owned(), "container".to_owned()]).is_ok());
    }

    #[test]
    fn whole_spec_validation() {
        assert!(validate_local(&spec(json!({"name": "a", "runtime": "acp", "command": ["agent"]}))).is_ok());
        let e = validate_local(&spec(json!({"name": "a", "runtime": "acp"}))).unwrap_err();
        assert!(e.errors.as_ref().unwrap().contains_key("command"));
        let e = validate_local(&spec(json!({"name": "a", "runtime": "acp", "command": ["x"], "model": "anthropic/x"})))
            .unwrap_err();
        assert_eq!(e.error, "model_invalid");
        let e = validate_local(&spec(json!({"name": "a", "runtime": "claude", "session_config": {"model": "x"}})))
            .unwrap_err();
        assert_eq!(e.error, "session_config_invalid");
        let e =
            validate_local(&spec(json!({"name": "a", "runtime": "claude", "permission_policy": {"execute": "maybe"}})))
                .unwrap_err();
        assert!(e.errors.as_ref().unwrap().contains_key("permission_policy"));
    }
}
