//! What an export holds (DESIGN 9.3): the account, its keys, agents with
//! versions, environments and vaults (secret keys only), credential sets
//! (provider kinds only), teammates with schedules, conversations with their
//! turns and events, the extensions' lists (webhooks, ...), and the audit log.
//! Columns are chosen one by one: no secret value, ciphertext, key hash or
//! token is ever selected. Large tables are read in pages by keyset, so
//! memory stays flat however large the account is.

use serde_json::{Map, Value};
use sqlx::Row;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::writer::{ChunkStore, Writer};
use crate::boxed::{BoxError, BoxFuture};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

/// Rows per page of the large tables.
const PAGE: i64 = 500;
/// Events per page (the bulk of most accounts).
const EVENT_PAGE: i64 = 2000;

/// How a column becomes JSON.
#[derive(Clone, Copy)]
enum K {
    Text,
    Int,
    /// Microseconds since the epoch, shown as RFC 3339.
    Time,
    /// INTEGER 0/1.
    Flag,
    /// JSON kept as text.
    Json,
}

fn rfc3339(micros: i64) -> Value {
    from_micros(micros).format(&time::format_description::well_known::Rfc3339).map(Value::String).unwrap_or(Value::Null)
}

/// The row's columns as a JSON object, each read as `K` says (nulls stay null).
fn object(row: &AnyRow, cols: &[(&str, K)]) -> Result<Map<String, Value>, BoxError> {
    let mut m = Map::new();
    for &(name, kind) in cols {
        let v = match kind {
            K::Text => row.try_get::<Option<String>, _>(name)?.map(Value::String).unwrap_or(Value::Null),
            K::Int => row.try_get::<Option<i64>, _>(name)?.map(Value::from).unwrap_or(Value::Null),
            K::Time => row.try_get::<Option<i64>, _>(name)?.map(rfc3339).unwrap_or(Value::Null),
            K::Flag => row.try_get::<Option<i64>, _>(name)?.map(|i| Value::Bool(i != 0)).unwrap_or(Value::Null),
            K::Json => match row.try_get::<Option<String>, _>(name)? {
                Some(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
                None => Value::Null,
            },
        };
        m.insert(name.to_owned(), v);
    }
    Ok(m)
}

fn columns(cols: &[(&str, K)]) -> String {
    cols.iter().map(|(c, _)| *c).collect::<Vec<_>>().join(", ")
}

/// Keyset paging over rows ordered by (`created_at`, `id`) of one owner column.
struct Pager {
    after: Option<(i64, String)>,
}

impl Pager {
    fn new() -> Self {
        Pager { after: None }
    }

    /// The next page of `table` rows whose `owner` column is `value`: the chosen `cols`
    /// plus `created_at` and `id` (for the key).
    async fn next(
        &mut self,
        state: &AppState,
        table: &str,
        owner: &str,
        value: &str,
        cols: &[(&str, K)],
    ) -> Result<Vec<AnyRow>, BoxError> {
        let (at, id) = self.after.clone().unwrap_or((i64::MIN, String::new()));
        let sql = format!(
            "SELECT {}, created_at AS page_at, id AS page_id FROM {table} WHERE {owner} = $1 \
             AND (created_at > $2 OR (created_at = $2 AND id > $3)) ORDER BY created_at, id LIMIT $4",
            columns(cols)
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(value.to_owned())
            .bind(at)
            .bind(id)
            .bind(PAGE)
            .fetch_all(&state.db.pool)
            .await?;
        if let Some(last) = rows.last() {
            self.after = Some((last.try_get("page_at")?, last.try_get("page_id")?));
        }
        Ok(rows)
    }
}

const ACCOUNT: &[(&str, K)] = &[
    ("id", K::Text),
    ("email", K::Text),
    ("email_verified", K::Flag),
    ("pending_email", K::Text),
    ("credit_balance", K::Int),
    ("comped", K::Flag),
    ("onboarding_completed_at", K::Time),
    ("inserted_at", K::Time),
    ("updated_at", K::Time),
];
// The key's display prefix is what the API lists too; the digest never leaves.
const KEYS: &[(&str, K)] = &[
    ("id", K::Text),
    ("name", K::Text),
    ("prefix", K::Text),
    ("scope", K::Text),
    ("sandbox_id", K::Text),
    ("expires_at", K::Time),
    ("last_used_at", K::Time),
    ("inserted_at", K::Time),
];
// Public clients: nothing of them is secret.
const OAUTH_CLIENTS: &[(&str, K)] = &[
    ("id", K::Text),
    ("name", K::Text),
    ("redirect_uris", K::Json),
    ("published_at", K::Time),
    ("inserted_at", K::Time),
    ("updated_at", K::Time),
];
const AGENTS: &[(&str, K)] =
    &[("id", K::Text), ("version", K::Int), ("spec", K::Json), ("inserted_at", K::Time), ("updated_at", K::Time)];
const ENVIRONMENTS: &[(&str, K)] =
    &[("id", K::Text), ("name", K::Text), ("spec", K::Json), ("inserted_at", K::Time), ("updated_at", K::Time)];
const VAULTS: &[(&str, K)] = &[
    ("id", K::Text),
    ("name", K::Text),
    ("description", K::Text),
    ("metadata", K::Json),
    ("inserted_at", K::Time),
    ("updated_at", K::Time),
];
// A binding names its source; no value is ever stored with it.
const SECRET_BINDINGS: &[(&str, K)] = &[
    ("id", K::Text),
    ("name", K::Text),
    ("host", K::Text),
    ("header", K::Text),
    ("template", K::Text),
    ("source_kind", K::Text),
    ("source_id", K::Text),
    ("source_key", K::Text),
    ("enabled", K::Flag),
    ("inserted_at", K::Time),
    ("updated_at", K::Time),
];
const CREDENTIAL_SETS: &[(&str, K)] = &[
    ("id", K::Text),
    ("name", K::Text),
    ("is_default", K::Flag),
    ("openai_grant_id", K::Text),
    ("inserted_at", K::Time),
    ("updated_at", K::Time),
];
const SCHEDULES: &[(&str, K)] = &[
    ("id", K::Text),
    ("agent_id", K::Text),
    ("name", K::Text),
    ("cron", K::Text),
    ("prompt", K::Text),
    ("one_off", K::Flag),
    ("enabled", K::Flag),
    ("next_run_at", K::Time),
    ("last_run_at", K::Time),
    ("last_conversation_id", K::Text),
    ("last_error", K::Text),
    ("inserted_at", K::Time),
    ("updated_at", K::Time),
];
const CONVERSATIONS: &[(&str, K)] = &[
    ("id", K::Text),
    ("agent_id", K::Text),
    ("sandbox_id", K::Text),
    ("runtime", K::Text),
    ("status", K::Text),
    ("title", K::Text),
    ("labels", K::Json),
    ("model", K::Text),
    ("session_config", K::Json),
    ("environment_id", K::Text),
    ("vault_id", K::Text),
    ("inference_credential_id", K::Text),
    ("channel_id", K::Text),
    ("permission_policy", K::Json),
    ("sandbox_mode", K::Text),
    ("machine_name", K::Text),
    ("sandbox_api_access", K::Text),
    ("team", K::Flag),
    ("inserted_at", K::Time),
    ("updated_at", K::Time),
    ("ended_at", K::Time),
];
const TURNS: &[(&str, K)] = &[
    ("id", K::Text),
    ("prompt", K::Text),
    ("status", K::Text),
    ("origin", K::Text),
    ("client_request_id", K::Text),
    ("stop_reason", K::Text),
    ("limit_reason", K::Text),
    ("exit_code", K::Int),
    ("error", K::Text),
    ("inference", K::Json),
    ("model_selection", K::Json),
    ("config_selection", K::Json),
    ("usage", K::Json),
    ("inserted_at", K::Time),
    ("finished_at", K::Time),
];
// Event data was redacted when it was written (secret values read `[REDACTED]`).
const EVENTS: &[(&str, K)] = &[
    ("id", K::Int),
    ("kind", K::Text),
    ("ts", K::Time),
    ("stream", K::Text),
    ("stage", K::Text),
    ("state", K::Text),
    ("data", K::Text),
    ("turn_id", K::Text),
    ("sandbox_id", K::Text),
    ("duration_ms", K::Int),
    ("blocks", K::Json),
];
const AUDIT: &[(&str, K)] = &[
    ("id", K::Int),
    ("actor_type", K::Text),
    ("actor_id", K::Text),
    ("action", K::Text),
    ("target_type", K::Text),
    ("target_id", K::Text),
    ("ip", K::Text),
    ("at", K::Time),
];

/// Writes the whole document of `account_id`.
pub async fn write<S: ChunkStore>(state: &AppState, account_id: Uuid, w: &mut Writer<S>) -> Result<(), BoxError> {
    let id = account_id.to_string();
    w.begin_object();
    w.field("format", "acs.account-export")?;
    w.field("version", &1)?;
    w.field("exported_at", &rfc3339(now_micros()))?;
    account(state, &id, w).await?;
    keys(state, &id, w).await?;
    list_section(state, w, "oauth_clients", ("oauth_clients", "account_id", &id), OAUTH_CLIENTS, plain).await?;
    agents(state, &id, w).await?;
    environments(state, &id, w).await?;
    vaults(state, &id, w).await?;
    list_section(state, w, "secret_bindings", ("secret_bindings", "account_id", &id), SECRET_BINDINGS, plain).await?;
    credential_sets(state, &id, w).await?;
    team(state, &id, w).await?;
    conversations(state, &id, w).await?;
    for ext in crate::extension::all() {
        ext.on_export(state, account_id, w).await.map_err(|e| format!("extension {}: {e}", ext.name()))?;
    }
    audit(state, &id, w).await?;
    w.end_object();
    Ok(())
}

async fn account<S: ChunkStore>(state: &AppState, id: &str, w: &mut Writer<S>) -> Result<(), BoxError> {
    let sql = format!(
        "SELECT {}, (SELECT media_type FROM account_avatars WHERE account_id = accounts.id) AS avatar_media_type \
         FROM accounts WHERE id = $1",
        columns(ACCOUNT).replace("inserted_at", "created_at AS inserted_at")
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id.to_owned())
        .fetch_optional(&state.db.pool)
        .await?
        .ok_or("the account is gone")?;
    let mut obj = object(&row, ACCOUNT)?;
    obj.insert("avatar_media_type".into(), row.try_get::<Option<String>, _>("avatar_media_type")?.into());
    w.field("account", &obj)
}

/// Renames `created_at` to `inserted_at` in a select list (the API's name).
fn select_of(cols: &[(&'static str, K)]) -> Vec<(String, K)> {
    cols.iter()
        .map(|&(c, k)| if c == "inserted_at" { ("created_at AS inserted_at".to_owned(), k) } else { (c.to_owned(), k) })
        .collect()
}

/// Streams the rows of `table` owned by `value` as a list under `name`, each extended by
/// `extend` (children read per row). Pages of [`PAGE`] rows.
async fn list_section<S, F>(
    state: &AppState,
    w: &mut Writer<S>,
    name: &str,
    (table, owner, value): (&str, &str, &str),
    cols: &[(&'static str, K)],
    mut extend: F,
) -> Result<(), BoxError>
where
    S: ChunkStore,
    F: for<'a> FnMut(&'a AppState, &'a mut Writer<S>, Map<String, Value>) -> BoxFuture<'a, Result<(), BoxError>>,
{
    let select = select_of(cols);
    let select: Vec<(&str, K)> = select.iter().map(|(c, k)| (c.as_str(), *k)).collect();
    w.key(name)?;
    w.begin_array();
    let mut pager = Pager::new();
    loop {
        let rows = pager.next(state, table, owner, value, &select).await?;
        if rows.is_empty() {
            break;
        }
        for row in &rows {
            let obj = object(row, cols)?;
            extend(state, w, obj).await?;
            w.flush_if_full().await?;
        }
    }
    w.end_array();
    Ok(())
}

/// Writes `obj` as it is.
fn plain<'a, S: ChunkStore>(
    _: &'a AppState,
    w: &'a mut Writer<S>,
    obj: Map<String, Value>,
) -> BoxFuture<'a, Result<(), BoxError>> {
    let r = w.value(&obj);
    Box::pin(async move { r })
}

async fn keys<S: ChunkStore>(state: &AppState, id: &str, w: &mut Writer<S>) -> Result<(), BoxError> {
    list_section(state, w, "keys", ("api_keys", "account_id", id), KEYS, plain).await
}

/// Small child lists read whole (an agent's versions, a vault's secret keys).
async fn children(
    state: &AppState,
    sql: &'static str,
    parent: &str,
    cols: &[(&str, K)],
) -> Result<Vec<Map<String, Value>>, BoxError> {
    let rows = sqlx::query(sql).bind(parent.to_owned()).fetch_all(&state.db.pool).await?;
    rows.iter().map(|r| object(r, cols)).collect()
}

fn id_of(obj: &Map<String, Value>) -> String {
    obj.get("id").and_then(Value::as_str).unwrap_or_default().to_owned()
}

async fn agents<S: ChunkStore>(state: &AppState, id: &str, w: &mut Writer<S>) -> Result<(), BoxError> {
    list_section(state, w, "agents", ("agents", "account_id", id), AGENTS, agent_item::<S>).await
}

fn agent_item<'a, S: ChunkStore>(
    state: &'a AppState,
    w: &'a mut Writer<S>,
    obj: Map<String, Value>,
) -> BoxFuture<'a, Result<(), BoxError>> {
    Box::pin(async move {
        // The agent as the API shows it: the spec's fields flattened beside its identity.
        let mut agent = Map::new();
        agent.insert("id".into(), obj["id"].clone());
        if let Some(Value::Object(spec)) = obj.get("spec") {
            agent.extend(spec.clone());
        }
        for k in ["version", "inserted_at", "updated_at"] {
            agent.insert(k.into(), obj[k].clone());
        }
        let versions = children(
            state,
            "SELECT version, spec, created_at AS inserted_at FROM agent_versions WHERE agent_id = $1 ORDER BY version",
            &id_of(&obj),
            &[("version", K::Int), ("spec", K::Json), ("inserted_at", K::Time)],
        )
        .await?;
        agent.insert("versions".into(), Value::Array(versions.into_iter().map(Value::Object).collect()));
        w.value(&agent)
    })
}

async fn environments<S: ChunkStore>(state: &AppState, id: &str, w: &mut Writer<S>) -> Result<(), BoxError> {
    list_section(state, w, "environments", ("environments", "account_id", id), ENVIRONMENTS, environment_item::<S>)
        .await
}

fn environment_item<'a, S: ChunkStore>(
    state: &'a AppState,
    w: &'a mut Writer<S>,
    obj: Map<String, Value>,
) -> BoxFuture<'a, Result<(), BoxError>> {
    Box::pin(async move {
        let mut env = Map::new();
        for k in ["id", "name"] {
            env.insert(k.into(), obj[k].clone());
        }
        if let Some(Value::Object(spec)) = obj.get("spec") {
            env.extend(spec.clone());
        }
        for k in ["inserted_at", "updated_at"] {
            env.insert(k.into(), obj[k].clone());
        }
        // Keys only: values are write-only.
        let secrets = children(
            state,
            "SELECT id, key, created_at AS inserted_at, updated_at FROM environment_secrets \
                 WHERE environment_id = $1 ORDER BY key",
            &id_of(&obj),
            &[("id", K::Text), ("key", K::Text), ("inserted_at", K::Time), ("updated_at", K::Time)],
        )
        .await?;
        env.insert("secrets".into(), Value::Array(secrets.into_iter().map(Value::Object).collect()));
        w.value(&env)
    })
}

async fn vaults<S: ChunkStore>(state: &AppState, id: &str, w: &mut Writer<S>) -> Result<(), BoxError> {
    list_section(state, w, "vaults", ("vaults", "account_id", id), VAULTS, vault_item::<S>).await
}

fn vault_item<'a, S: ChunkStore>(
    state: &'a AppState,
    w: &'a mut Writer<S>,
    mut obj: Map<String, Value>,
) -> BoxFuture<'a, Result<(), BoxError>> {
    Box::pin(async move {
        let secrets = children(
            state,
            "SELECT id, key, expires_at, created_at AS inserted_at, updated_at FROM vault_secrets \
                 WHERE vault_id = $1 ORDER BY key",
            &id_of(&obj),
            &[
                ("id", K::Text),
                ("key", K::Text),
                ("expires_at", K::Time),
                ("inserted_at", K::Time),
                ("updated_at", K::Time),
            ],
        )
        .await?;
        obj.insert("secrets".into(), Value::Array(secrets.into_iter().map(Value::Object).collect()));
        w.value(&obj)
    })
}

async fn credential_sets<S: ChunkStore>(state: &AppState, id: &str, w: &mut Writer<S>) -> Result<(), BoxError> {
    let section = ("inference_credential_sets", "account_id", id);
    list_section(state, w, "inference_credential_sets", section, CREDENTIAL_SETS, credential_set_item::<S>).await
}

fn credential_set_item<'a, S: ChunkStore>(
    state: &'a AppState,
    w: &'a mut Writer<S>,
    mut obj: Map<String, Value>,
) -> BoxFuture<'a, Result<(), BoxError>> {
    Box::pin(async move {
        // Which providers hold a credential; never the credential.
        let providers = children(
            state,
            "SELECT provider FROM inference_credentials WHERE set_id = $1 ORDER BY provider",
            &id_of(&obj),
            &[("provider", K::Text)],
        )
        .await?;
        let kinds = providers.into_iter().filter_map(|mut p| p.remove("provider")).collect();
        obj.insert("providers".into(), Value::Array(kinds));
        w.value(&obj)
    })
}

async fn team<S: ChunkStore>(state: &AppState, id: &str, w: &mut Writer<S>) -> Result<(), BoxError> {
    let rows = sqlx::query(
        "SELECT agent_id, environment_id, vault_id, inserted_at, updated_at FROM team_members \
         WHERE account_id = $1 ORDER BY inserted_at, agent_id",
    )
    .bind(id.to_owned())
    .fetch_all(&state.db.pool)
    .await?;
    w.key("team")?;
    w.begin_array();
    for row in &rows {
        let member_cols = [
            ("agent_id", K::Text),
            ("environment_id", K::Text),
            ("vault_id", K::Text),
            ("inserted_at", K::Time),
            ("updated_at", K::Time),
        ];
        let mut member = object(row, &member_cols)?;
        let agent_id = member.get("agent_id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let sql = format!(
            "SELECT {} FROM team_schedules WHERE account_id = $1 AND agent_id = $2 ORDER BY inserted_at, id",
            columns(SCHEDULES)
        );
        let schedules = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id.to_owned())
            .bind(agent_id)
            .fetch_all(&state.db.pool)
            .await?
            .iter()
            .map(|r| object(r, SCHEDULES).map(Value::Object))
            .collect::<Result<Vec<_>, _>>()?;
        member.insert("schedules".into(), Value::Array(schedules));
        w.value(&member)?;
        w.flush_if_full().await?;
    }
    w.end_array();
    Ok(())
}

async fn conversations<S: ChunkStore>(state: &AppState, id: &str, w: &mut Writer<S>) -> Result<(), BoxError> {
    let section = ("conversations", "account_id", id);
    list_section(state, w, "conversations", section, CONVERSATIONS, conversation_item::<S>).await
}

fn conversation_item<'a, S: ChunkStore>(
    state: &'a AppState,
    w: &'a mut Writer<S>,
    obj: Map<String, Value>,
) -> BoxFuture<'a, Result<(), BoxError>> {
    Box::pin(async move {
        let conv_id = id_of(&obj);
        // The conversation's fields, then its turns and events streamed inside it.
        w.begin_object();
        for (k, v) in &obj {
            w.field(k, v)?;
        }
        w.key("turns")?;
        w.begin_array();
        let mut pager = TurnPager { after: None };
        while let Some(rows) = pager.next(state, &conv_id).await? {
            for row in &rows {
                w.value(&object(row, TURNS)?)?;
            }
            w.flush_if_full().await?;
        }
        w.end_array();
        w.key("events")?;
        w.begin_array();
        by_integer_id(state, w, ("events", "conversation_id", &conv_id), EVENTS).await?;
        w.end_array();
        w.end_object();
        Ok(())
    })
}

/// Turns of one conversation by (`inserted_at`, `id`).
struct TurnPager {
    after: Option<(i64, String)>,
}

impl TurnPager {
    async fn next(&mut self, state: &AppState, conv_id: &str) -> Result<Option<Vec<AnyRow>>, BoxError> {
        let (at, id) = self.after.clone().unwrap_or((i64::MIN, String::new()));
        let sql = format!(
            "SELECT {}, inserted_at AS page_at FROM turns WHERE conversation_id = $1 \
             AND (inserted_at > $2 OR (inserted_at = $2 AND id > $3)) ORDER BY inserted_at, id LIMIT $4",
            columns(TURNS)
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(conv_id.to_owned())
            .bind(at)
            .bind(id)
            .bind(PAGE)
            .fetch_all(&state.db.pool)
            .await?;
        let Some(last) = rows.last() else { return Ok(None) };
        self.after = Some((last.try_get("page_at")?, last.try_get("id")?));
        Ok(Some(rows))
    }
}

async fn audit<S: ChunkStore>(state: &AppState, id: &str, w: &mut Writer<S>) -> Result<(), BoxError> {
    w.key("audit")?;
    w.begin_array();
    by_integer_id(state, w, ("audit_events", "account_id", id), AUDIT).await?;
    w.end_array();
    Ok(())
}

/// Writes the rows of `table` whose `owner` column is `value` into the open
/// array, in pages of [`EVENT_PAGE`] by their integer `id` (the log tables).
async fn by_integer_id<S: ChunkStore>(
    state: &AppState,
    w: &mut Writer<S>,
    (table, owner, value): (&str, &str, &str),
    cols: &[(&'static str, K)],
) -> Result<(), BoxError> {
    let sql = format!("SELECT {} FROM {table} WHERE {owner} = $1 AND id > $2 ORDER BY id LIMIT $3", columns(cols));
    let mut after = 0i64;
    loop {
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .bind(value.to_owned())
            .bind(after)
            .bind(EVENT_PAGE)
            .fetch_all(&state.db.pool)
            .await?;
        let Some(last) = rows.last() else { break };
        after = last.try_get("id")?;
        for row in &rows {
            w.value(&object(row, cols)?)?;
        }
        w.flush_if_full().await?;
        if (rows.len() as i64) < EVENT_PAGE {
            break;
        }
    }
    Ok(())
}
