//! Queries of the `conversations` and `turns` tables. Status moves that
//! decide a race (opening a turn, taking a queued prompt) are conditional
//! updates, so two requests or two replicas never both win.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use sqlx::Row;
use sqlx::any::AnyRow;
use uuid::Uuid;

use crate::db::{Db, RowExt};
use crate::sandboxes::model::ConversationStatus;
use crate::time_fmt::now_micros;

pub type Labels = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq)]
pub struct ConversationRow {
    pub id: Uuid,
    pub account_id: Uuid,
    pub agent_id: Uuid,
    pub sandbox_id: Option<Uuid>,
    pub runtime: String,
    pub status: ConversationStatus,
    pub title: Option<String>,
    pub labels: Labels,
    pub model: Option<String>,
    pub session_config: Option<Map<String, Value>>,
    /// What the runtime advertised before the latest prompt.
    pub session_config_options: Option<Value>,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    pub channel_id: Option<String>,
    pub permission_policy: Option<Map<String, Value>>,
    pub sandbox_mode: Option<String>,
    pub machine_name: Option<String>,
    pub api_access: String,
    /// The credential set chosen at create (the first place inference resolution looks).
    pub inference_credential_id: Option<Uuid>,
    pub acp_session_id: Option<String>,
    pub agent_offset: i64,
    pub pending_prompt: Option<Value>,
    pub mid_turn: bool,
    /// A teammate's conversation.
    pub team: bool,
    pub created_at: i64,
    pub updated_at: i64,
    pub ended_at: Option<i64>,
}

impl ConversationRow {
    /// What credential resolution reads of this conversation.
    pub fn holder(&self) -> crate::inference::Holder {
        crate::inference::Holder {
            account_id: self.account_id,
            sandbox_id: self.sandbox_id,
            inference_credential_id: self.inference_credential_id,
        }
    }
}

pub(crate) const COLUMNS: &str = "id, account_id, agent_id, sandbox_id, runtime, status, title, labels, model, session_config, \
    session_config_options, environment_id, vault_id, channel_id, permission_policy, sandbox_mode, machine_name, \
    sandbox_api_access, inference_credential_id, acp_session_id, agent_offset, pending_prompt, mid_turn, team, created_at, updated_at, ended_at";

fn status_of(s: &str) -> ConversationStatus {
    serde_json::from_value(Value::String(s.to_owned())).unwrap_or(ConversationStatus::Failed)
}

pub fn status_str(s: ConversationStatus) -> &'static str {
    match s {
        ConversationStatus::Pending => "pending",
        ConversationStatus::Running => "running",
        ConversationStatus::Idle => "idle",
        ConversationStatus::Failed => "failed",
        ConversationStatus::Terminated => "terminated",
    }
}

fn object(v: Option<Value>) -> Option<Map<String, Value>> {
    match v {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    }
}

impl ConversationRow {
    pub(crate) fn from_row(r: &AnyRow) -> Result<ConversationRow, sqlx::Error> {
        let labels: String = r.try_get("labels")?;
        Ok(ConversationRow {
            id: r.uuid("id")?,
            account_id: r.uuid("account_id")?,
            agent_id: r.uuid("agent_id")?,
            sandbox_id: r.opt_uuid("sandbox_id")?,
            runtime: r.try_get("runtime")?,
            status: status_of(&r.try_get::<String, _>("status")?),
            title: r.try_get("title")?,
            labels: serde_json::from_str(&labels).unwrap_or_default(),
            model: r.try_get("model")?,
            session_config: object(r.json("session_config")?),
            session_config_options: r.json("session_config_options")?,
            environment_id: r.opt_uuid("environment_id")?,
            vault_id: r.opt_uuid("vault_id")?,
            channel_id: r.try_get("channel_id")?,
            permission_policy: object(r.json("permission_policy")?),
            sandbox_mode: r.try_get("sandbox_mode")?,
            machine_name: r.try_get("machine_name")?,
            api_access: r.try_get("sandbox_api_access")?,
            inference_credential_id: r.opt_uuid("inference_credential_id")?,
            acp_session_id: r.try_get("acp_session_id")?,
            agent_offset: r.try_get("agent_offset")?,
            pending_prompt: r.json("pending_prompt")?,
            mid_turn: r.flag("mid_turn")?,
            team: r.flag("team")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
            ended_at: r.try_get("ended_at")?,
        })
    }

    pub fn ended(&self) -> bool {
        self.status == ConversationStatus::Terminated
    }
}

/// A conversation to insert; it starts `pending`.
#[derive(Debug, Clone, Default)]
pub struct NewConversation {
    pub id: Uuid,
    pub account_id: Uuid,
    pub agent_id: Uuid,
    /// Set by the engine when it stores the row (the machine is launched first).
    pub sandbox_id: Option<Uuid>,
    /// `pending` while the machine is built, `idle` when it is up.
    pub status: Option<ConversationStatus>,
    pub runtime: String,
    pub title: Option<String>,
    pub labels: Labels,
    pub model: Option<String>,
    pub session_config: Option<Map<String, Value>>,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    pub channel_id: Option<String>,
    pub permission_policy: Option<Map<String, Value>>,
    pub sandbox_mode: Option<String>,
    pub machine_name: Option<String>,
    pub api_access: String,
    /// A teammate's conversation.
    pub team: bool,
    /// The create body's credential set.
    pub inference_credential_id: Option<Uuid>,
}

fn json_text(v: Option<&Map<String, Value>>) -> Option<String> {
    v.map(|m| Value::Object(m.clone()).to_string())
}

pub async fn insert(db: &Db, c: &NewConversation) -> Result<(), sqlx::Error> {
    let now = now_micros();
    sqlx::query(
        "INSERT INTO conversations (id, account_id, agent_id, runtime, title, labels, model, session_config, \
         environment_id, vault_id, channel_id, permission_policy, sandbox_mode, machine_name, sandbox_api_access, \
         created_at, updated_at, status, sandbox_id, team, inference_credential_id) VALUES ($1, $2, $3, $4, $5, $6, $7, \
         $8, $9, $10, $11, $12, $13, $14, $15, $16, $16, $17, $18, $19, $20)",
    )
    .bind(c.id.to_string())
    .bind(c.account_id.to_string())
    .bind(c.agent_id.to_string())
    .bind(c.runtime.clone())
    .bind(c.title.clone())
    .bind(serde_json::to_string(&c.labels).unwrap_or_else(|_| "{}".into()))
    .bind(c.model.clone())
    .bind(json_text(c.session_config.as_ref()))
    .bind(c.environment_id.map(|v| v.to_string()))
    .bind(c.vault_id.map(|v| v.to_string()))
    .bind(c.channel_id.clone())
    .bind(json_text(c.permission_policy.as_ref()))
    .bind(c.sandbox_mode.clone())
    .bind(c.machine_name.clone())
    .bind(c.api_access.clone())
    .bind(now)
    .bind(status_str(c.status.unwrap_or(ConversationStatus::Pending)))
    .bind(c.sandbox_id.map(|s| s.to_string()))
    .bind(i32::from(c.team))
    .bind(c.inference_credential_id.map(|v| v.to_string()))
    .execute(&db.pool)
    .await?;
    Ok(())
}

pub async fn get(db: &Db, id: Uuid) -> Result<Option<ConversationRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM conversations WHERE id = $1"));
    let row = sqlx::query(sql).bind(id.to_string()).fetch_optional(&db.pool).await?;
    row.as_ref().map(ConversationRow::from_row).transpose()
}

/// The account's conversations, newest first; only those on `sandbox` when given (a sandbox key).
pub async fn list(db: &Db, account_id: Uuid, sandbox: Option<Uuid>) -> Result<Vec<ConversationRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM conversations WHERE account_id = $1 AND ($2 = '' OR sandbox_id = $2) \
         ORDER BY created_at DESC, id DESC LIMIT 1000"
    ));
    let rows = sqlx::query(sql)
        .bind(account_id.to_string())
        .bind(sandbox.map(|s| s.to_string()).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(ConversationRow::from_row).collect()
}

/// The latest live conversation of a channel (the resume key: agent, environment, vault, channel).
pub async fn channel_latest(
    db: &Db,
    account_id: Uuid,
    agent_id: Uuid,
    environment_id: Option<Uuid>,
    vault_id: Option<Uuid>,
    channel_id: &str,
) -> Result<Option<ConversationRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM conversations WHERE account_id = $1 AND agent_id = $2 AND channel_id = $3 \
         AND COALESCE(environment_id, '') = $4 AND COALESCE(vault_id, '') = $5 AND status <> 'terminated' \
         ORDER BY created_at DESC, id DESC LIMIT 1"
    ));
    let row = sqlx::query(sql)
        .bind(account_id.to_string())
        .bind(agent_id.to_string())
        .bind(channel_id.to_owned())
        .bind(environment_id.map(|v| v.to_string()).unwrap_or_default())
        .bind(vault_id.map(|v| v.to_string()).unwrap_or_default())
        .fetch_optional(&db.pool)
        .await?;
    row.as_ref().map(ConversationRow::from_row).transpose()
}

/// Conversations in any of `statuses` (server start: reattach).
pub async fn in_statuses(db: &Db, statuses: &[ConversationStatus]) -> Result<Vec<ConversationRow>, sqlx::Error> {
    in_statuses_of(db, None, statuses).await
}

/// [`in_statuses`], of one account's conversations only when `account_id` is given.
pub async fn in_statuses_of(
    db: &Db,
    account_id: Option<Uuid>,
    statuses: &[ConversationStatus],
) -> Result<Vec<ConversationRow>, sqlx::Error> {
    let list: Vec<String> = statuses.iter().map(|s| format!("'{}'", status_str(*s))).collect();
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM conversations WHERE status IN ({}) AND ($1 = '' OR account_id = $1) ORDER BY created_at",
        list.join(", ")
    ));
    let rows = sqlx::query(sql).bind(account_id.map(|a| a.to_string()).unwrap_or_default()).fetch_all(&db.pool).await?;
    rows.iter().map(ConversationRow::from_row).collect()
}

/// Live conversations on a sandbox with a prompt waiting for it.
pub async fn waiting_on(db: &Db, sandbox_id: Uuid) -> Result<Vec<Uuid>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id FROM conversations WHERE sandbox_id = $1 AND pending_prompt IS NOT NULL AND status <> 'terminated' \
         ORDER BY created_at",
    )
    .bind(sandbox_id.to_string())
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| r.uuid("id")).collect()
}

pub async fn set_labels(db: &Db, id: Uuid, labels: &Labels) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE conversations SET labels = $2, updated_at = $3 WHERE id = $1")
        .bind(id.to_string())
        .bind(serde_json::to_string(labels).unwrap_or_else(|_| "{}".into()))
        .bind(now_micros())
        .execute(&db.pool)
        .await?;
    Ok(())
}

pub async fn set_sandbox(db: &Db, id: Uuid, sandbox_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE conversations SET sandbox_id = $2, acp_session_id = NULL, agent_offset = 0, updated_at = $3 \
         WHERE id = $1",
    )
    .bind(id.to_string())
    .bind(sandbox_id.to_string())
    .bind(now_micros())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Moves the status unless the conversation ended; returns whether it moved.
pub async fn set_status(db: &Db, id: Uuid, status: ConversationStatus) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE conversations SET status = $2, mid_turn = 0, updated_at = $3 WHERE id = $1 AND status <> 'terminated'",
    )
    .bind(id.to_string())
    .bind(status_str(status))
    .bind(now_micros())
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A conversation whose machine came up leaves `pending`.
pub async fn mark_idle_if_pending(db: &Db, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE conversations SET status = 'idle', updated_at = $2 WHERE id = $1 AND status = 'pending'")
        .bind(id.to_string())
        .bind(now_micros())
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Every conversation waiting for a machine that came up leaves `pending`.
pub async fn mark_idle_on(db: &Db, sandbox_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE conversations SET status = 'idle', updated_at = $2 WHERE sandbox_id = $1 AND status = 'pending'",
    )
    .bind(sandbox_id.to_string())
    .bind(now_micros())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// A machine failed to start: conversations waiting for it fail, their queued prompts dropped.
pub async fn fail_waiting_on(db: &Db, sandbox_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE conversations SET status = CASE WHEN status = 'running' THEN status ELSE 'failed' END, \
         pending_prompt = NULL, updated_at = $2 WHERE sandbox_id = $1 AND status IN ('pending', 'idle', 'failed') \
         AND (status = 'pending' OR pending_prompt IS NOT NULL)",
    )
    .bind(sandbox_id.to_string())
    .bind(now_micros())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Claims the conversation for a turn run by `server`: true for the one caller that moved it to `running`.
pub async fn claim_turn(db: &Db, id: Uuid, server: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE conversations SET status = 'running', mid_turn = 1, server_id = $3, updated_at = $2 \
         WHERE id = $1 AND status IN ('pending', 'idle', 'failed')",
    )
    .bind(id.to_string())
    .bind(now_micros())
    .bind(server.to_string())
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Claims the conversation for the prompt queued on it, for `server`: true
/// for the one caller that moved it to `running`, false when no prompt waits
/// (so a caller finding nothing never holds the conversation, even briefly).
pub async fn claim_queued_turn(db: &Db, id: Uuid, server: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE conversations SET status = 'running', mid_turn = 1, server_id = $3, updated_at = $2 \
         WHERE id = $1 AND status IN ('pending', 'idle', 'failed') AND pending_prompt IS NOT NULL",
    )
    .bind(id.to_string())
    .bind(now_micros())
    .bind(server.to_string())
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records the agent session a live process holds (and the options it advertised).
pub async fn set_session(
    db: &Db,
    id: Uuid,
    session_id: Option<&str>,
    options: Option<&Value>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE conversations SET acp_session_id = $2, session_config_options = COALESCE($3, session_config_options), \
         agent_offset = CASE WHEN $2 IS NULL THEN 0 ELSE agent_offset END, updated_at = $4 WHERE id = $1",
    )
    .bind(id.to_string())
    .bind(session_id.map(str::to_owned))
    .bind(options.map(Value::to_string))
    .bind(now_micros())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Records the config options the runtime advertised before the latest prompt.
pub async fn set_config_options(db: &Db, id: Uuid, options: &Value) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE conversations SET session_config_options = $2, updated_at = $3 WHERE id = $1")
        .bind(id.to_string())
        .bind(options.to_string())
        .bind(now_micros())
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Queues a prompt for when the machine is up; false when one already waits (the later one is dropped).
pub async fn put_pending(db: &Db, id: Uuid, prompt: &Value) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE conversations SET pending_prompt = $2, updated_at = $3 \
         WHERE id = $1 AND pending_prompt IS NULL AND status <> 'terminated'",
    )
    .bind(id.to_string())
    .bind(prompt.to_string())
    .bind(now_micros())
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Takes the waiting prompt, if any; only one caller gets it.
pub async fn take_pending(db: &Db, id: Uuid) -> Result<Option<Value>, sqlx::Error> {
    let row = sqlx::query("SELECT pending_prompt FROM conversations WHERE id = $1")
        .bind(id.to_string())
        .fetch_optional(&db.pool)
        .await?;
    let Some(text) = row.map(|r| r.try_get::<Option<String>, _>("pending_prompt")).transpose()?.flatten() else {
        return Ok(None);
    };
    let done = sqlx::query("UPDATE conversations SET pending_prompt = NULL WHERE id = $1 AND pending_prompt = $2")
        .bind(id.to_string())
        .bind(text.clone())
        .execute(&db.pool)
        .await?;
    Ok((done.rows_affected() == 1).then(|| serde_json::from_str(&text).ok()).flatten())
}

/// Ends the conversation; false when it had already ended.
pub async fn terminate(db: &Db, id: Uuid) -> Result<bool, sqlx::Error> {
    let now = now_micros();
    let done = sqlx::query(
        "UPDATE conversations SET status = 'terminated', mid_turn = 0, pending_prompt = NULL, ended_at = $2, \
         updated_at = $2 WHERE id = $1 AND status <> 'terminated'",
    )
    .bind(id.to_string())
    .bind(now)
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

// ---- turns ----

#[derive(Debug, Clone, PartialEq)]
pub struct TurnRow {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub prompt: String,
    /// `running`, `done`, `failed` or `interrupted`.
    pub status: String,
    pub origin: String,
    pub client_request_id: Option<String>,
    pub stop_reason: Option<String>,
    pub limit_reason: Option<String>,
    pub exit_code: Option<i64>,
    pub error: Option<String>,
    pub inference: Option<Value>,
    pub model_selection: Option<String>,
    pub config_selection: Option<Value>,
    pub usage: Option<Value>,
    pub rpc_id: Option<i64>,
    pub inserted_at: i64,
    pub finished_at: Option<i64>,
}

const TURN_COLUMNS: &str = "id, conversation_id, prompt, status, origin, client_request_id, stop_reason, limit_reason, \
    exit_code, error, inference, model_selection, config_selection, usage, rpc_id, inserted_at, finished_at";

impl TurnRow {
    fn from_row(r: &AnyRow) -> Result<TurnRow, sqlx::Error> {
        Ok(TurnRow {
            id: r.uuid("id")?,
            conversation_id: r.uuid("conversation_id")?,
            prompt: r.try_get("prompt")?,
            status: r.try_get("status")?,
            origin: r.try_get("origin")?,
            client_request_id: r.try_get("client_request_id")?,
            stop_reason: r.try_get("stop_reason")?,
            limit_reason: r.try_get("limit_reason")?,
            exit_code: r.try_get("exit_code")?,
            error: r.try_get("error")?,
            inference: r.json("inference")?,
            model_selection: r.try_get("model_selection")?,
            config_selection: r.json("config_selection")?,
            usage: r.json("usage")?,
            rpc_id: r.try_get("rpc_id")?,
            inserted_at: r.try_get("inserted_at")?,
            finished_at: r.try_get("finished_at")?,
        })
    }
}

#[derive(Debug, Clone)]
pub struct NewTurn {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub account_id: Uuid,
    pub prompt: String,
    pub origin: String,
    pub client_request_id: Option<String>,
    pub model_selection: Option<String>,
    /// The turn's `inference` object, resolved as it starts.
    pub inference: Option<Value>,
}

pub async fn insert_turn(db: &Db, t: &NewTurn) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO turns (id, conversation_id, account_id, prompt, status, origin, client_request_id, \
         model_selection, inserted_at, inference) VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8, $9)",
    )
    .bind(t.id.to_string())
    .bind(t.conversation_id.to_string())
    .bind(t.account_id.to_string())
    .bind(t.prompt.clone())
    .bind(t.origin.clone())
    .bind(t.client_request_id.clone())
    .bind(t.model_selection.clone())
    .bind(now_micros())
    .bind(t.inference.as_ref().map(Value::to_string))
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Records the turn's `config_selection` (what was asked for and what the runtime confirmed).
pub async fn set_turn_config_selection(db: &Db, id: Uuid, selection: &Value) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE turns SET config_selection = $2 WHERE id = $1")
        .bind(id.to_string())
        .bind(selection.to_string())
        .execute(&db.pool)
        .await?;
    Ok(())
}

pub async fn set_turn_rpc(db: &Db, id: Uuid, rpc_id: i64) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE turns SET rpc_id = $2 WHERE id = $1")
        .bind(id.to_string())
        .bind(rpc_id)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// How a turn ended.
#[derive(Debug, Clone, Default)]
pub struct TurnEnd {
    pub status: &'static str,
    pub stop_reason: Option<String>,
    pub limit_reason: Option<String>,
    pub exit_code: Option<i64>,
    pub error: Option<String>,
    pub usage: Option<Value>,
}

/// Records the end of a running turn; false when it had already ended.
pub async fn finish_turn(db: &Db, id: Uuid, end: &TurnEnd) -> Result<bool, sqlx::Error> {
    let mut tx = db.begin().await?;
    let done = finish_turn_in(&mut tx, id, end).await?;
    tx.commit().await?;
    Ok(done)
}

/// Ends a turn and moves its conversation (and its machine's `busy` flag) in
/// one transaction: whoever sees the turn ended finds the conversation free.
pub async fn end_turn(
    db: &Db,
    id: Uuid,
    (conversation_id, sandbox_id): (Uuid, Uuid),
    end: &TurnEnd,
    status: ConversationStatus,
) -> Result<bool, sqlx::Error> {
    let mut tx = db.begin().await?;
    let done = finish_turn_in(&mut tx, id, end).await?;
    sqlx::query(
        "UPDATE conversations SET status = $2, mid_turn = 0, updated_at = $3 WHERE id = $1 AND status <> 'terminated'",
    )
    .bind(conversation_id.to_string())
    .bind(status_str(status))
    .bind(now_micros())
    .execute(&mut *tx)
    .await?;
    sqlx::query(crate::sandboxes::store::REFRESH_BUSY)
        .bind(sandbox_id.to_string())
        .bind(now_micros())
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(done)
}

async fn finish_turn_in(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: Uuid,
    end: &TurnEnd,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE turns SET status = $2, stop_reason = $3, limit_reason = $4, exit_code = $5, error = $6, \
         usage = COALESCE($7, usage), finished_at = $8 WHERE id = $1 AND status = 'running'",
    )
    .bind(id.to_string())
    .bind(end.status)
    .bind(end.stop_reason.clone())
    .bind(end.limit_reason.clone())
    .bind(end.exit_code)
    .bind(end.error.clone())
    .bind(end.usage.as_ref().map(Value::to_string))
    .bind(now_micros())
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A conversation's turns, oldest first.
pub async fn turns(db: &Db, conversation_id: Uuid) -> Result<Vec<TurnRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = $1 ORDER BY inserted_at, id"
    ));
    let rows = sqlx::query(sql).bind(conversation_id.to_string()).fetch_all(&db.pool).await?;
    rows.iter().map(TurnRow::from_row).collect()
}

/// The turn still running on a conversation, if any.
pub async fn running_turn(db: &Db, conversation_id: Uuid) -> Result<Option<TurnRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = $1 AND status = 'running' \
         ORDER BY inserted_at DESC LIMIT 1"
    ));
    let row = sqlx::query(sql).bind(conversation_id.to_string()).fetch_optional(&db.pool).await?;
    row.as_ref().map(TurnRow::from_row).transpose()
}

/// One of a turn's `request` stage events or block events (see [`turn_requests`]).
#[derive(Debug, Clone, Default)]
pub struct RequestEvent {
    pub stage: Option<String>,
    pub state: Option<String>,
    pub data: String,
    pub blocks: Option<String>,
}

/// A turn's `request` stage events and its block events, oldest first: what a restart needs to
/// find the permission requests the turn left open.
pub async fn turn_requests(db: &Db, conversation_id: Uuid, turn_id: Uuid) -> Result<Vec<RequestEvent>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT stage, state, data, blocks FROM events WHERE conversation_id = $1 AND turn_id = $2 \
         AND (stage = 'request' OR blocks IS NOT NULL) ORDER BY id",
    )
    .bind(conversation_id.to_string())
    .bind(turn_id.to_string())
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(RequestEvent {
                stage: r.try_get("stage")?,
                state: r.try_get("state")?,
                data: r.try_get("data")?,
                blocks: r.try_get("blocks")?,
            })
        })
        .collect()
}

/// A conversation's newest turn, if any.
pub async fn last_turn(db: &Db, conversation_id: Uuid) -> Result<Option<TurnRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = $1 ORDER BY inserted_at DESC, id DESC LIMIT 1"
    ));
    let row = sqlx::query(sql).bind(conversation_id.to_string()).fetch_optional(&db.pool).await?;
    row.as_ref().map(TurnRow::from_row).transpose()
}

// ---- reapply ----

/// What the conversation was last applied with (JSON, see `reapply::Applied`); none before it was recorded.
pub async fn applied(db: &Db, id: Uuid) -> Result<Option<Value>, sqlx::Error> {
    let text: Option<String> = sqlx::query_scalar("SELECT applied FROM conversations WHERE id = $1")
        .bind(id.to_string())
        .fetch_optional(&db.pool)
        .await?
        .flatten();
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

pub async fn set_applied(db: &Db, id: Uuid, applied: &Value) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE conversations SET applied = $2 WHERE id = $1")
        .bind(id.to_string())
        .bind(applied.to_string())
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// A conversation's selection as a reapply sets it (overrides: `None` follows the agent).
#[derive(Debug, Clone)]
pub struct Selection {
    pub agent_id: Uuid,
    pub runtime: String,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    pub model: Option<String>,
    pub session_config: Option<Map<String, Value>>,
    pub applied: Value,
}

/// Writes a reapplied selection; false when the conversation has ended, runs
/// a turn or waits for its machine (the update is conditional, so a prompt
/// claiming a turn meanwhile and the reapply cannot both win).
pub async fn reapply<'e, E: sqlx::Executor<'e, Database = sqlx::Any>>(
    ex: E,
    id: Uuid,
    s: &Selection,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE conversations SET agent_id = $2, runtime = $3, environment_id = $4, vault_id = $5, model = $6, \
         session_config = $7, applied = $8, updated_at = $9 WHERE id = $1 AND status IN ('idle', 'failed')",
    )
    .bind(id.to_string())
    .bind(s.agent_id.to_string())
    .bind(s.runtime.clone())
    .bind(s.environment_id.map(|v| v.to_string()))
    .bind(s.vault_id.map(|v| v.to_string()))
    .bind(s.model.clone())
    .bind(json_text(s.session_config.as_ref()))
    .bind(s.applied.to_string())
    .bind(now_micros())
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The build fingerprint a sandbox was launched from, if recorded.
pub async fn sandbox_fingerprint(db: &Db, sandbox_id: Uuid) -> Result<Option<String>, sqlx::Error> {
    Ok(sqlx::query_scalar("SELECT fingerprint FROM sandboxes WHERE id = $1")
        .bind(sandbox_id.to_string())
        .fetch_optional(&db.pool)
        .await?
        .flatten())
}

/// The agents of the live conversations on a sandbox other than `except`.
pub async fn other_live_agents(db: &Db, sandbox_id: Uuid, except: Uuid) -> Result<Vec<Uuid>, sqlx::Error> {
    let rows =
        sqlx::query("SELECT agent_id FROM conversations WHERE sandbox_id = $1 AND id <> $2 AND status <> 'terminated'")
            .bind(sandbox_id.to_string())
            .bind(except.to_string())
            .fetch_all(&db.pool)
            .await?;
    rows.iter().map(|r| r.uuid("agent_id")).collect()
}

/// Gives a sandbox the selection its one conversation now holds (its
/// variables and secrets are read from these at each agent start and wake),
/// with the variables its running environment still holds beyond them
/// (JSON, see `reapply::RemovedVars`).
pub async fn retarget_sandbox<'e, E: sqlx::Executor<'e, Database = sqlx::Any>>(
    ex: E,
    sandbox_id: Uuid,
    (agent_id, environment_id, vault_id): (Uuid, Option<Uuid>, Option<Uuid>),
    removed_vars: &Value,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE sandboxes SET agent_id = $2, environment_id = $3, vault_id = $4, removed_vars = $5, updated_at = $6 \
         WHERE id = $1",
    )
    .bind(sandbox_id.to_string())
    .bind(agent_id.to_string())
    .bind(environment_id.map(|v| v.to_string()))
    .bind(vault_id.map(|v| v.to_string()))
    .bind(removed_vars.to_string())
    .bind(now_micros())
    .execute(ex)
    .await?;
    Ok(())
}

/// What `retarget_sandbox` last recorded as removed variables, if anything.
pub async fn removed_vars(db: &Db, sandbox_id: Uuid) -> Result<Option<Value>, sqlx::Error> {
    let text: Option<String> = sqlx::query_scalar("SELECT removed_vars FROM sandboxes WHERE id = $1")
        .bind(sandbox_id.to_string())
        .fetch_optional(&db.pool)
        .await?
        .flatten();
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}
