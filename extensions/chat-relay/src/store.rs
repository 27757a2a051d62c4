//! The identities table and the claims of answered messages.

use acs_platform::db::RowExt;
use acs_platform::state::AppState;
use acs_platform::time_fmt::{from_micros, now_micros};
use sqlx::any::AnyRow;
use sqlx::{Any, Row as _, Transaction};
use uuid::Uuid;

use crate::model::{ChatRelayIdentity, RespondTo, SandboxMode};

/// An identity as stored, with what the API never shows (the sealed key,
/// the owner, the harness's cursor). Not `Debug`: it carries the sealed key.
#[derive(Clone)]
pub struct Row {
    pub id: Uuid,
    pub account_id: Uuid,
    pub name: String,
    pub display_name: Option<String>,
    pub agent_id: Uuid,
    pub environment_id: Option<Uuid>,
    pub vault_id: Uuid,
    pub pubkey: String,
    pub sealed_nsec: String,
    pub auth_tag: String,
    pub owner_pubkey: String,
    pub relay_url: String,
    pub respond_to: RespondTo,
    pub allowlist: Vec<String>,
    pub sandbox_mode: Option<SandboxMode>,
    pub enabled: bool,
    /// Unix seconds of the newest event the harness saw.
    pub cursor_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, account_id, name, display_name, agent_id, environment_id, vault_id, pubkey, sealed_nsec, \
    auth_tag, owner_pubkey, relay_url, respond_to, respond_to_allowlist, sandbox_mode, enabled, cursor_at, created_at, updated_at";

fn decode_err(col: &str, what: &str) -> sqlx::Error {
    sqlx::Error::ColumnDecode { index: col.to_owned(), source: format!("not a {what}").into() }
}

impl Row {
    fn from_row(r: &AnyRow) -> Result<Row, sqlx::Error> {
        let respond_to: String = r.try_get("respond_to")?;
        let sandbox_mode: Option<String> = r.try_get("sandbox_mode")?;
        let allowlist: String = r.try_get("respond_to_allowlist")?;
        Ok(Row {
            id: r.uuid("id")?,
            account_id: r.uuid("account_id")?,
            name: r.try_get("name")?,
            display_name: r.try_get("display_name")?,
            agent_id: r.uuid("agent_id")?,
            environment_id: r.opt_uuid("environment_id")?,
            vault_id: r.uuid("vault_id")?,
            pubkey: r.try_get("pubkey")?,
            sealed_nsec: r.try_get("sealed_nsec")?,
            auth_tag: r.try_get("auth_tag")?,
            owner_pubkey: r.try_get("owner_pubkey")?,
            relay_url: r.try_get("relay_url")?,
            respond_to: RespondTo::parse(&respond_to).ok_or_else(|| decode_err("respond_to", "respond_to mode"))?,
            allowlist: serde_json::from_str(&allowlist).map_err(|_| decode_err("respond_to_allowlist", "key list"))?,
            sandbox_mode: sandbox_mode
                .map(|m| SandboxMode::parse(&m).ok_or_else(|| decode_err("sandbox_mode", "sandbox mode")))
                .transpose()?,
            enabled: r.flag("enabled")?,
            cursor_at: r.try_get("cursor_at")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
        })
    }

    /// The identity as the API shows it.
    pub fn view(&self) -> ChatRelayIdentity {
        ChatRelayIdentity {
            id: self.id,
            name: self.name.clone(),
            display_name: self.display_name.clone(),
            agent_id: self.agent_id,
            environment_id: self.environment_id,
            vault_id: self.vault_id,
            pubkey: self.pubkey.clone(),
            relay_url: self.relay_url.clone(),
            respond_to: self.respond_to,
            respond_to_allowlist: self.allowlist.clone(),
            sandbox_mode: self.sandbox_mode,
            enabled: self.enabled,
            inserted_at: from_micros(self.created_at),
            updated_at: from_micros(self.updated_at),
        }
    }
}

/// What seals an identity's private key: the row it belongs to.
pub fn nsec_aad(id: Uuid) -> String {
    format!("chat_relay identity {id}")
}

/// The account's identities, newest first.
pub async fn of_account(state: &AppState, account_id: Uuid) -> Result<Vec<Row>, sqlx::Error> {
    let sql =
        format!("SELECT {COLUMNS} FROM chat_relay_identities WHERE account_id = $1 ORDER BY created_at DESC, id DESC");
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(account_id.to_string()).fetch_all(&state.db.pool).await?;
    rows.iter().map(Row::from_row).collect()
}

/// The account's identity `id`.
pub async fn find(state: &AppState, account_id: Uuid, id: Uuid) -> Result<Option<Row>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM chat_relay_identities WHERE id = $1 AND account_id = $2");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?;
    row.as_ref().map(Row::from_row).transpose()
}

/// Identity `id` of whichever account (the harness).
pub async fn find_any(state: &AppState, id: Uuid) -> Result<Option<Row>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM chat_relay_identities WHERE id = $1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id.to_string()).fetch_optional(&state.db.pool).await?;
    row.as_ref().map(Row::from_row).transpose()
}

/// The account's identity with public key `pubkey` (provisioning is idempotent on it).
pub async fn by_pubkey(state: &AppState, account_id: Uuid, pubkey: &str) -> Result<Option<Row>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM chat_relay_identities WHERE account_id = $1 AND pubkey = $2");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(account_id.to_string())
        .bind(pubkey)
        .fetch_optional(&state.db.pool)
        .await?;
    row.as_ref().map(Row::from_row).transpose()
}

/// Every enabled identity of every account: what the harness serves.
pub async fn enabled(state: &AppState) -> Result<Vec<Row>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM chat_relay_identities WHERE enabled = 1");
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&state.db.pool).await?;
    rows.iter().map(Row::from_row).collect()
}

pub async fn insert(tx: &mut Transaction<'_, Any>, row: &Row) -> Result<(), sqlx::Error> {
    let sql = format!(
        "INSERT INTO chat_relay_identities ({COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(row.id.to_string())
        .bind(row.account_id.to_string())
        .bind(&row.name)
        .bind(&row.display_name)
        .bind(row.agent_id.to_string())
        .bind(row.environment_id.map(|e| e.to_string()))
        .bind(row.vault_id.to_string())
        .bind(&row.pubkey)
        .bind(&row.sealed_nsec)
        .bind(&row.auth_tag)
        .bind(&row.owner_pubkey)
        .bind(&row.relay_url)
        .bind(row.respond_to.as_str())
        .bind(allowlist_json(&row.allowlist))
        .bind(row.sandbox_mode.map(SandboxMode::as_str))
        .bind(i64::from(row.enabled))
        .bind(row.cursor_at)
        .bind(row.created_at)
        .bind(row.updated_at)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Writes every field an owner may change (not the cursor, which is the harness's).
pub async fn update(tx: &mut Transaction<'_, Any>, row: &Row) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE chat_relay_identities SET name = $1, display_name = $2, agent_id = $3, environment_id = $4, \
         vault_id = $5, sealed_nsec = $6, auth_tag = $7, owner_pubkey = $8, relay_url = $9, respond_to = $10, \
         respond_to_allowlist = $11, sandbox_mode = $12, enabled = $13, updated_at = $14 WHERE id = $15",
    )
    .bind(&row.name)
    .bind(&row.display_name)
    .bind(row.agent_id.to_string())
    .bind(row.environment_id.map(|e| e.to_string()))
    .bind(row.vault_id.to_string())
    .bind(&row.sealed_nsec)
    .bind(&row.auth_tag)
    .bind(&row.owner_pubkey)
    .bind(&row.relay_url)
    .bind(row.respond_to.as_str())
    .bind(allowlist_json(&row.allowlist))
    .bind(row.sandbox_mode.map(SandboxMode::as_str))
    .bind(i64::from(row.enabled))
    .bind(row.updated_at)
    .bind(row.id.to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub async fn delete(tx: &mut Transaction<'_, Any>, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM chat_relay_identities WHERE id = $1").bind(id.to_string()).execute(&mut **tx).await?;
    Ok(())
}

/// Removes an account's identities and claims (account deletion).
pub async fn delete_account(state: &AppState, account_id: Uuid) -> Result<(), sqlx::Error> {
    let mut tx = state.db.begin().await?;
    for table in ["chat_relay_answered", "chat_relay_identities"] {
        let sql = format!("DELETE FROM {table} WHERE account_id = $1");
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(account_id.to_string()).execute(&mut *tx).await?;
    }
    tx.commit().await
}

/// Moves the harness's cursor forward to `at` (never back).
pub async fn advance_cursor(state: &AppState, id: Uuid, at: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE chat_relay_identities SET cursor_at = $1 WHERE id = $2 AND (cursor_at IS NULL OR cursor_at < $1)",
    )
    .bind(at)
    .bind(id.to_string())
    .execute(&state.db.pool)
    .await?;
    Ok(())
}

/// Claims the direct message `event_id` to `pubkey` for an answer: true for
/// the one caller (on any replica, before or after a restart) that gets it.
pub async fn claim(state: &AppState, account_id: Uuid, pubkey: &str, event_id: &str) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO chat_relay_answered (pubkey, event_id, account_id, claimed_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (pubkey, event_id) DO NOTHING",
    )
    .bind(pubkey)
    .bind(event_id)
    .bind(account_id.to_string())
    .bind(now_micros())
    .execute(&state.db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

fn allowlist_json(keys: &[String]) -> String {
    serde_json::Value::from(keys.to_vec()).to_string()
}
