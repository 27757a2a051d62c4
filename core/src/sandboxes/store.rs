//! Queries of the `sandboxes` table and the conversations a sandbox holds.

use sqlx::Row;
use uuid::Uuid;

use super::model::{COLUMNS, ConversationStatus, SandboxConversation, SandboxRow, SandboxState};
use crate::agents::Runtime;
use crate::db::{Db, RowExt};
use crate::time_fmt::{from_micros, now_micros};

pub struct NewSandbox<'a> {
    pub id: Uuid,
    pub account_id: Uuid,
    pub machine_name: &'a str,
    pub mode: &'a str,
    pub provider: &'a str,
    pub agent_id: Uuid,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    pub runtime: &'a str,
    pub api_access: &'a str,
    pub fingerprint: Option<&'a str>,
    pub runner_id: Option<Uuid>,
    /// The warm pool the machine is built for (`None`: for its launch).
    pub pool: Option<&'a str>,
}

/// Inserts a machine row (inside the transaction that checked the ceilings).
pub async fn insert<'e>(
    ex: impl sqlx::Executor<'e, Database = sqlx::Any>,
    s: &NewSandbox<'_>,
) -> Result<(), sqlx::Error> {
    let now = now_micros();
    sqlx::query(
        "INSERT INTO sandboxes (id, account_id, machine_name, status, mode, provider, agent_id, environment_id, \
         vault_id, runtime, sandbox_api_access, fingerprint, touched_at, created_at, updated_at, runner_id, pool) \
         VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $12, $13, $14)",
    )
    .bind(s.id.to_string())
    .bind(s.account_id.to_string())
    .bind(s.machine_name.to_owned())
    .bind(s.mode.to_owned())
    .bind(s.provider.to_owned())
    .bind(s.agent_id.to_string())
    .bind(s.environment_id.map(|v| v.to_string()))
    .bind(s.vault_id.map(|v| v.to_string()))
    .bind(s.runtime.to_owned())
    .bind(s.api_access.to_owned())
    .bind(s.fingerprint.map(str::to_owned))
    .bind(now)
    .bind(s.runner_id.map(|v| v.to_string()))
    .bind(s.pool.map(str::to_owned))
    .execute(ex)
    .await?;
    Ok(())
}

pub async fn get(db: &Db, id: Uuid) -> Result<Option<SandboxRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM sandboxes WHERE id = $1"));
    let row = sqlx::query(sql).bind(id.to_string()).fetch_optional(&db.pool).await?;
    row.as_ref().map(SandboxRow::from_row).transpose()
}

/// A machine's status and the server that owns it, for operator tools.
pub async fn status_and_owner(db: &Db, id: Uuid) -> Result<Option<(SandboxState, Option<Uuid>)>, sqlx::Error> {
    let row: Option<(String, Option<String>)> = sqlx::query_as("SELECT status, server_id FROM sandboxes WHERE id = $1")
        .bind(id.to_string())
        .fetch_optional(&db.pool)
        .await?;
    Ok(row.map(|(status, owner)| (SandboxState::parse(&status), owner.and_then(|o| o.parse().ok()))))
}

/// The account's sandboxes, newest first; only `only` when given (a sandbox key).
pub async fn list(db: &Db, account_id: Uuid, only: Option<Uuid>) -> Result<Vec<SandboxRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM sandboxes WHERE account_id = $1 AND ($2 = '' OR id = $2) AND pool IS NULL \
         ORDER BY created_at DESC, id DESC LIMIT 1000"
    ));
    let rows = sqlx::query(sql)
        .bind(account_id.to_string())
        .bind(only.map(|u| u.to_string()).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(SandboxRow::from_row).collect()
}

/// The live persistent home of an agent identity, if any.
pub async fn find_home(
    db: &Db,
    account_id: Uuid,
    agent_id: Uuid,
    environment_id: Option<Uuid>,
    vault_id: Option<Uuid>,
) -> Result<Option<SandboxRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM sandboxes WHERE account_id = $1 AND agent_id = $2 AND mode = 'persistent' \
         AND COALESCE(environment_id, '') = $3 AND COALESCE(vault_id, '') = $4 AND status <> 'terminated' \
         ORDER BY created_at DESC LIMIT 1"
    ));
    let row = sqlx::query(sql)
        .bind(account_id.to_string())
        .bind(agent_id.to_string())
        .bind(environment_id.map(|u| u.to_string()).unwrap_or_default())
        .bind(vault_id.map(|u| u.to_string()).unwrap_or_default())
        .fetch_optional(&db.pool)
        .await?;
    row.as_ref().map(SandboxRow::from_row).transpose()
}

/// An SQL list of status literals; they come from the enum, never from input.
fn status_list(states: &[SandboxState]) -> String {
    states.iter().map(|s| format!("'{}'", s.as_str())).collect::<Vec<_>>().join(", ")
}

/// Sandboxes in these states (for reattach at start and the idle sweep).
pub async fn in_states(db: &Db, states: &[SandboxState]) -> Result<Vec<SandboxRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM sandboxes WHERE status IN ({}) ORDER BY created_at",
        status_list(states)
    ));
    let rows = sqlx::query(sql).fetch_all(&db.pool).await?;
    rows.iter().map(SandboxRow::from_row).collect()
}

/// Ready, idle machines untouched since `before` (microseconds).
pub async fn idle(db: &Db, before: i64, server: Uuid) -> Result<Vec<Uuid>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id FROM sandboxes WHERE status = 'ready' AND busy = 0 AND touched_at < $1 AND server_id = $2 \
         AND pool IS NULL",
    )
    .bind(before)
    .bind(server.to_string())
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| r.uuid("id")).collect()
}

/// Moves a sandbox to `to` only from one of `from`; false when it was elsewhere.
pub async fn transition(db: &Db, id: Uuid, from: &[SandboxState], to: SandboxState) -> Result<bool, sqlx::Error> {
    transition_in(&db.pool, id, from, to).await
}

/// [`transition`] on the caller's connection or transaction.
pub async fn transition_in<'e>(
    ex: impl sqlx::Executor<'e, Database = sqlx::Any>,
    id: Uuid,
    from: &[SandboxState],
    to: SandboxState,
) -> Result<bool, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "UPDATE sandboxes SET status = $1, updated_at = $2 WHERE id = $3 AND status IN ({})",
        status_list(from)
    ));
    let done = sqlx::query(sql).bind(to.as_str()).bind(now_micros()).bind(id.to_string()).execute(ex).await?;
    Ok(done.rows_affected() == 1)
}

pub async fn set_ready(db: &Db, id: Uuid, url: Option<&str>) -> Result<(), sqlx::Error> {
    let now = now_micros();
    sqlx::query(
        "UPDATE sandboxes SET status = 'ready', url = $1, error = NULL, last_resumed_at = $2, touched_at = $2, \
         updated_at = $2 WHERE id = $3",
    )
    .bind(url.map(str::to_owned))
    .bind(now)
    .bind(id.to_string())
    .execute(&db.pool)
    .await?;
    Ok(())
}

pub async fn set_failed(db: &Db, id: Uuid, error: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sandboxes SET status = 'failed', error = $1, updated_at = $2 WHERE id = $3")
        .bind(error.to_owned())
        .bind(now_micros())
        .bind(id.to_string())
        .execute(&db.pool)
        .await?;
    Ok(())
}

pub async fn set_checkpoint(db: &Db, id: Uuid, checkpoint_id: &str, at: i64) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sandboxes SET checkpoint_id = $1, checkpoint_at = $2, updated_at = $3 WHERE id = $4")
        .bind(checkpoint_id.to_owned())
        .bind(at)
        .bind(now_micros())
        .bind(id.to_string())
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Marks activity on a machine: the idle timer starts again.
pub async fn touch(db: &Db, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sandboxes SET touched_at = $1 WHERE id = $2")
        .bind(now_micros())
        .bind(id.to_string())
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Every conversation ever opened on a sandbox, newest first.
pub async fn conversations(db: &Db, sandbox_id: Uuid) -> Result<Vec<SandboxConversation>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, status, mid_turn, created_at, runtime, title FROM conversations WHERE sandbox_id = $1 \
         ORDER BY created_at DESC, id DESC",
    )
    .bind(sandbox_id.to_string())
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            let status: String = r.try_get("status")?;
            let runtime: String = r.try_get("runtime")?;
            Ok(SandboxConversation {
                id: r.uuid("id")?,
                status: serde_json::from_value(serde_json::Value::String(status)).unwrap_or(ConversationStatus::Failed),
                mid_turn: r.flag("mid_turn")?,
                inserted_at: from_micros(r.try_get("created_at")?),
                runtime: serde_json::from_value(serde_json::Value::String(runtime)).unwrap_or(Runtime::Acp),
                title: r.try_get("title")?,
            })
        })
        .collect()
}

/// Ids of the live conversations holding a sandbox (stage events go to each).
pub async fn holders(db: &Db, sandbox_id: Uuid) -> Result<Vec<Uuid>, sqlx::Error> {
    let rows = sqlx::query("SELECT id FROM conversations WHERE sandbox_id = $1 AND status <> 'terminated' ORDER BY id")
        .bind(sandbox_id.to_string())
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(|r| r.uuid("id")).collect()
}

/// Revokes a sandbox's callback keys; returns their ids (for the key cache).
pub async fn revoke_keys(db: &Db, sandbox_id: Uuid) -> Result<Vec<Uuid>, sqlx::Error> {
    // One statement: a key minted between a read and the delete would leave the cache unaware.
    let rows = sqlx::query("DELETE FROM api_keys WHERE sandbox_id = $1 RETURNING id")
        .bind(sandbox_id.to_string())
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(|r| r.uuid("id")).collect()
}

pub async fn egress_page(
    db: &Db,
    sandbox_id: Uuid,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<super::model::EgressEvent>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, method, host, credential_keys, service, status, latency_ms, error, at FROM egress_events \
         WHERE sandbox_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3",
    )
    .bind(sandbox_id.to_string())
    .bind(before.unwrap_or(i64::MAX))
    .bind(limit)
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            let keys: String = r.try_get("credential_keys")?;
            Ok(super::model::EgressEvent {
                id: r.try_get("id")?,
                method: r.try_get("method")?,
                host: r.try_get("host")?,
                path: "/[REDACTED]".into(),
                credential_keys: serde_json::from_str(&keys).unwrap_or_default(),
                at: from_micros(r.try_get("at")?),
                service: r.try_get("service")?,
                status: r.try_get::<Option<i64>, _>("status")?,
                latency_ms: r.try_get("latency_ms")?,
                error: r.try_get("error")?,
            })
        })
        .collect()
}

pub(crate) const REFRESH_BUSY: &str = "UPDATE sandboxes SET busy = CASE WHEN EXISTS (SELECT 1 FROM conversations \
    WHERE sandbox_id = $1 AND status = 'running') THEN 1 ELSE 0 END, touched_at = $2 WHERE id = $1";

/// Recomputes whether a turn runs on the machine (reset and park wait for
/// none), and restarts its idle timer.
pub async fn refresh_busy(db: &Db, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query(REFRESH_BUSY).bind(id.to_string()).bind(now_micros()).execute(&db.pool).await?;
    Ok(())
}

/// A live machine of a warm pool, as the pool keeper sees it.
#[derive(Debug, Clone)]
pub struct Pooled {
    pub id: Uuid,
    pub pool: String,
    pub environment_id: Option<Uuid>,
    pub fingerprint: Option<String>,
    pub vault_id: Option<Uuid>,
    /// Not claimable yet: being built, or its agent being started.
    pub building: bool,
}

/// The unclaimed live machines of the warm pools this server serves.
pub async fn pooled_here(db: &Db, server: Uuid) -> Result<Vec<Pooled>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, pool, environment_id, fingerprint, vault_id, status, warm_at FROM sandboxes \
         WHERE pool IS NOT NULL AND status IN ('pending', 'starting', 'ready') AND server_id = $1 \
         ORDER BY created_at",
    )
    .bind(server.to_string())
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            let status: String = r.try_get("status")?;
            let warm_at: Option<i64> = r.try_get("warm_at")?;
            Ok(Pooled {
                id: r.uuid("id")?,
                pool: r.try_get("pool")?,
                environment_id: r.opt_uuid("environment_id")?,
                fingerprint: r.try_get("fingerprint")?,
                vault_id: r.opt_uuid("vault_id")?,
                building: status != "ready" || warm_at.is_none(),
            })
        })
        .collect()
}

/// What a claiming launch asks of a pooled machine: built for its account,
/// from the same environment (as it builds now) and vault, by this provider.
pub struct PoolKey {
    pub account_id: Uuid,
    pub environment_id: Option<Uuid>,
    pub fingerprint: Option<String>,
    pub vault_id: Option<Uuid>,
    pub provider: &'static str,
}

/// A claimable machine of this server for `key`: one a pool of `agent_id` built (its agent
/// waits started) before one of another pool of the same selection, the longest waiting first.
pub async fn find_pooled<'e>(
    ex: impl sqlx::Executor<'e, Database = sqlx::Any>,
    key: &PoolKey,
    server: Uuid,
    agent_id: Uuid,
) -> Result<Option<Pooled>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT id, pool FROM sandboxes WHERE pool IS NOT NULL AND warm_at IS NOT NULL AND status = 'ready' \
         AND server_id = $1 AND account_id = $2 AND COALESCE(environment_id, '') = $3 \
         AND COALESCE(fingerprint, '') = $4 AND COALESCE(vault_id, '') = $5 AND provider = $6 \
         ORDER BY CASE WHEN agent_id = $7 THEN 0 ELSE 1 END, created_at LIMIT 1",
    )
    .bind(server.to_string())
    .bind(key.account_id.to_string())
    .bind(key.environment_id.map(|u| u.to_string()).unwrap_or_default())
    .bind(key.fingerprint.clone().unwrap_or_default())
    .bind(key.vault_id.map(|u| u.to_string()).unwrap_or_default())
    .bind(key.provider)
    .bind(agent_id.to_string())
    .fetch_optional(ex)
    .await?;
    row.map(|r| {
        Ok(Pooled {
            id: r.uuid("id")?,
            pool: r.try_get("pool")?,
            environment_id: key.environment_id,
            fingerprint: key.fingerprint.clone(),
            vault_id: key.vault_id,
            building: false,
        })
    })
    .transpose()
}

/// Takes a pooled machine out of its pool for a conversation of `agent_id`;
/// false when another claim or the pool keeper took it first.
pub async fn claim_pooled<'e>(
    ex: impl sqlx::Executor<'e, Database = sqlx::Any>,
    id: Uuid,
    agent_id: Uuid,
    runtime: &str,
) -> Result<bool, sqlx::Error> {
    let now = now_micros();
    let done = sqlx::query(
        "UPDATE sandboxes SET pool = NULL, agent_id = $2, runtime = $3, touched_at = $4, updated_at = $4 \
         WHERE id = $1 AND pool IS NOT NULL AND status = 'ready'",
    )
    .bind(id.to_string())
    .bind(agent_id.to_string())
    .bind(runtime.to_owned())
    .bind(now)
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A pooled machine's agent is started (or its start failed): it may be claimed.
pub async fn set_warm(db: &Db, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sandboxes SET warm_at = $2 WHERE id = $1")
        .bind(id.to_string())
        .bind(now_micros())
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Ends a machine still waiting in its pool; false when it was claimed (or ended) meanwhile.
pub async fn retire_pooled(db: &Db, id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE sandboxes SET status = 'terminated', updated_at = $2 \
         WHERE id = $1 AND pool IS NOT NULL AND status IN ('ready', 'failed')",
    )
    .bind(id.to_string())
    .bind(now_micros())
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}
