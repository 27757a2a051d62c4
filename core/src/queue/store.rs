//! Queries of `sandbox_requests`. A request is moved only by the claim that
//! holds it (a token fencing its writes, with a lease), so replicas never
//! start one twice; an account's line is counted and extended under its
//! account row's lock.

use sqlx::Row;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::model::{SandboxRequest, Status};
use super::rules::{self, Place};
use crate::conversations::model::ConversationCreateRequest;
use crate::db::{Backend, Db, RowExt};
use crate::time_fmt::{from_micros, now_micros};

/// A stored request.
#[derive(Debug, Clone)]
pub struct RequestRow {
    pub id: Uuid,
    pub account_id: Uuid,
    pub status: String,
    /// The create body as sent (JSON).
    pub body: String,
    pub agent_id: Uuid,
    pub channel_id: Option<String>,
    pub team: bool,
    pub autonomous: bool,
    pub schedule_id: Option<Uuid>,
    pub fresh_conversation_id: Uuid,
    pub conversation_id: Option<Uuid>,
    pub error: Option<String>,
    pub began_at: Option<i64>,
    pub inserted_at: i64,
    pub updated_at: i64,
    pub expires_at: i64,
}

const COLUMNS: &str = "id, account_id, status, body, agent_id, channel_id, team, autonomous, schedule_id, \
    fresh_conversation_id, conversation_id, error, began_at, inserted_at, updated_at, expires_at";

/// An account's latest start from the queue (0: none), the round-robin key.
const SERVED_AT: &str = "(SELECT COALESCE(MAX(s.started_at), 0) FROM sandbox_requests s \
    WHERE s.account_id = r.account_id AND s.started_at IS NOT NULL)";

impl RequestRow {
    fn from_row(r: &AnyRow) -> Result<RequestRow, sqlx::Error> {
        Ok(RequestRow {
            id: r.uuid("id")?,
            account_id: r.uuid("account_id")?,
            status: r.try_get("status")?,
            body: r.try_get("body")?,
            agent_id: r.uuid("agent_id")?,
            channel_id: r.try_get("channel_id")?,
            team: r.flag("team")?,
            autonomous: r.flag("autonomous")?,
            schedule_id: r.opt_uuid("schedule_id")?,
            fresh_conversation_id: r.uuid("fresh_conversation_id")?,
            conversation_id: r.opt_uuid("conversation_id")?,
            error: r.try_get("error")?,
            began_at: r.try_get("began_at")?,
            inserted_at: r.try_get("inserted_at")?,
            updated_at: r.try_get("updated_at")?,
            expires_at: r.try_get("expires_at")?,
        })
    }

    pub fn place(&self) -> Place {
        (self.inserted_at, self.id)
    }

    pub fn queued(&self) -> bool {
        self.status == Status::Queued.as_str()
    }

    /// The create body; a body that no longer reads is refused at its start.
    pub fn request(&self) -> Result<ConversationCreateRequest, serde_json::Error> {
        serde_json::from_str(&self.body)
    }

    /// The API object; `line` holds the places of the account's queued requests.
    pub fn to_api(&self, line: &[Place]) -> SandboxRequest {
        SandboxRequest {
            id: self.id,
            status: self.status.clone(),
            position: self.queued().then(|| rules::position(self.place(), line)),
            conversation_id: self.conversation_id,
            error: self.error.clone(),
            agent_id: self.agent_id,
            channel_id: self.channel_id.clone(),
            inserted_at: from_micros(self.inserted_at),
            updated_at: from_micros(self.updated_at),
            expires_at: from_micros(self.expires_at),
        }
    }
}

/// A request to add to an account's line.
pub struct NewRequest<'a> {
    pub account_id: Uuid,
    pub request: &'a ConversationCreateRequest,
    pub team: bool,
    pub autonomous: bool,
    pub schedule_id: Option<Uuid>,
    pub fresh_conversation_id: Uuid,
}

/// Adds a request at the end of its account's line unless `max` already wait (`None`).
/// The account row is locked first, so concurrent submits count one after the other.
pub async fn enqueue(
    db: &Db,
    new: &NewRequest<'_>,
    max: u32,
    max_wait_seconds: u64,
) -> sqlx::Result<Option<RequestRow>> {
    let body = serde_json::to_string(new.request).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let mut tx = db.begin().await?;
    sqlx::query("UPDATE accounts SET updated_at = updated_at WHERE id = $1")
        .bind(new.account_id.to_string())
        .execute(&mut *tx)
        .await?;
    let waiting: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM sandbox_requests WHERE account_id = $1 AND status = 'queued'")
            .bind(new.account_id.to_string())
            .fetch_one(&mut *tx)
            .await?;
    if waiting >= i64::from(max) {
        return Ok(None);
    }
    let id = Uuid::now_v7();
    let now = now_micros();
    sqlx::query(
        "INSERT INTO sandbox_requests (id, account_id, status, body, agent_id, channel_id, team, autonomous, \
         schedule_id, fresh_conversation_id, inserted_at, updated_at, expires_at) \
         VALUES ($1, $2, 'queued', $3, $4, $5, $6, $7, $8, $9, $10, $10, $11)",
    )
    .bind(id.to_string())
    .bind(new.account_id.to_string())
    .bind(body)
    .bind(new.request.agent_id.to_string())
    .bind(new.request.channel_id.clone())
    .bind(i32::from(new.team))
    .bind(i32::from(new.autonomous))
    .bind(new.schedule_id.map(|s| s.to_string()))
    .bind(new.fresh_conversation_id.to_string())
    .bind(now)
    .bind(rules::expires_at(now, max_wait_seconds))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    get(db, new.account_id, id).await
}

/// The request `id` of `account_id`.
pub async fn get(db: &Db, account_id: Uuid, id: Uuid) -> sqlx::Result<Option<RequestRow>> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM sandbox_requests WHERE id = $1 AND account_id = $2"));
    let row = sqlx::query(sql).bind(id.to_string()).bind(account_id.to_string()).fetch_optional(&db.pool).await?;
    row.as_ref().map(RequestRow::from_row).transpose()
}

/// The account's queued requests, first in line first.
pub async fn line(db: &Db, account_id: Uuid) -> sqlx::Result<Vec<RequestRow>> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM sandbox_requests WHERE account_id = $1 AND status = 'queued' ORDER BY inserted_at, id"
    ));
    let rows = sqlx::query(sql).bind(account_id.to_string()).fetch_all(&db.pool).await?;
    rows.iter().map(RequestRow::from_row).collect()
}

/// Whether the account has any request waiting.
pub async fn has_line(db: &Db, account_id: Uuid) -> sqlx::Result<bool> {
    let row = sqlx::query("SELECT id FROM sandbox_requests WHERE account_id = $1 AND status = 'queued' LIMIT 1")
        .bind(account_id.to_string())
        .fetch_optional(&db.pool)
        .await?;
    Ok(row.is_some())
}

/// The account's requests that left the queue, most recently settled first.
pub async fn settled(db: &Db, account_id: Uuid, limit: i64) -> sqlx::Result<Vec<RequestRow>> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM sandbox_requests WHERE account_id = $1 AND status <> 'queued' \
         ORDER BY updated_at DESC, id DESC LIMIT $2"
    ));
    let rows = sqlx::query(sql).bind(account_id.to_string()).bind(limit).fetch_all(&db.pool).await?;
    rows.iter().map(RequestRow::from_row).collect()
}

/// Cancels a queued request no worker is starting. False when it is not queued, or a
/// start holds it (a live claim, or one whose server died after the start began: the
/// worker that takes it over finds out what happened).
pub async fn cancel(db: &Db, account_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let now = now_micros();
    let done = sqlx::query(
        "UPDATE sandbox_requests SET status = 'cancelled', claim = NULL, lease_until = NULL, updated_at = $3, \
         ended_at = $3 WHERE id = $1 AND account_id = $2 AND status = 'queued' \
         AND (claim IS NULL OR (lease_until < $3 AND began_at IS NULL))",
    )
    .bind(id.to_string())
    .bind(account_id.to_string())
    .bind(now)
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A head of a line, claimed by one worker.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub row: RequestRow,
    pub claim: String,
    /// The account's latest start from the queue (0: none).
    pub served_at: i64,
}

/// Claims up to `limit` heads of lines (each account's first queued request, while no other
/// worker holds it) for `lease_micros`, in round-robin order. A head whose start may have
/// begun under a claim that ran out is claimed even past its deadline, so that what happened
/// is found out. On PostgreSQL rows another replica is claiming are skipped, not waited on;
/// SQLite's single writer makes the statement exclusive.
pub async fn claim_heads(db: &Db, limit: usize, lease_micros: i64) -> sqlx::Result<Vec<Claimed>> {
    let now = now_micros();
    let token = Uuid::new_v4().to_string();
    let lock = if db.backend == Backend::Postgres { "FOR UPDATE OF r SKIP LOCKED" } else { "" };
    let sql = sqlx::AssertSqlSafe(format!(
        "UPDATE sandbox_requests SET claim = $1, lease_until = $2 WHERE id IN (\
         SELECT r.id FROM sandbox_requests r WHERE r.status = 'queued' \
         AND (r.expires_at > $3 OR r.began_at IS NOT NULL) AND (r.claim IS NULL OR r.lease_until < $3) \
         AND NOT EXISTS (SELECT 1 FROM sandbox_requests o WHERE o.account_id = r.account_id \
           AND o.status = 'queued' AND (o.inserted_at < r.inserted_at OR (o.inserted_at = r.inserted_at AND o.id < r.id))) \
         ORDER BY {SERVED_AT}, r.inserted_at, r.id LIMIT $4 {lock})"
    ));
    let claimed = sqlx::query(sql)
        .bind(token.clone())
        .bind(now + lease_micros)
        .bind(now)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .execute(&db.pool)
        .await?;
    if claimed.rows_affected() == 0 {
        return Ok(Vec::new());
    }
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS}, {SERVED_AT} AS served_at FROM sandbox_requests r WHERE r.claim = $1"
    ));
    let rows = sqlx::query(sql).bind(token.clone()).fetch_all(&db.pool).await?;
    let mut heads = rows
        .iter()
        .map(|r| {
            Ok(Claimed { row: RequestRow::from_row(r)?, claim: token.clone(), served_at: r.try_get("served_at")? })
        })
        .collect::<sqlx::Result<Vec<_>>>()?;
    rules::fair_order(&mut heads, |h| (h.served_at, h.row.place()));
    Ok(heads)
}

/// Marks the start of a claimed request as begun. False when the claim was lost.
pub async fn begin(db: &Db, c: &Claimed) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE sandbox_requests SET began_at = $3 WHERE id = $1 AND claim = $2")
        .bind(c.row.id.to_string())
        .bind(c.claim.clone())
        .bind(now_micros())
        .execute(&db.pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Puts a claimed request back in its place for a later pass.
pub async fn release(db: &Db, c: &Claimed) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE sandbox_requests SET claim = NULL, lease_until = NULL, began_at = NULL WHERE id = $1 AND claim = $2",
    )
    .bind(c.row.id.to_string())
    .bind(c.claim.clone())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Ends a claimed request `started` (with its conversation) or `failed`. False when the
/// claim was lost meanwhile.
pub async fn settle(
    db: &Db,
    c: &Claimed,
    status: Status,
    conversation_id: Option<Uuid>,
    error: Option<&str>,
) -> sqlx::Result<bool> {
    let now = now_micros();
    let done = sqlx::query(
        "UPDATE sandbox_requests SET status = $3, conversation_id = $4, error = $5, claim = NULL, \
         lease_until = NULL, updated_at = $6, ended_at = $6, started_at = $7 \
         WHERE id = $1 AND claim = $2 AND status = 'queued'",
    )
    .bind(c.row.id.to_string())
    .bind(c.claim.clone())
    .bind(status.as_str())
    .bind(conversation_id.map(|id| id.to_string()))
    .bind(error.map(str::to_owned))
    .bind(now)
    .bind((status == Status::Started).then_some(now))
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Fails the queued requests past their deadline that no start holds; returns their
/// schedules (the ones carrying one), to be told.
pub async fn expire(db: &Db) -> sqlx::Result<Vec<Uuid>> {
    let now = now_micros();
    let due = sqlx::query(
        "SELECT id, schedule_id FROM sandbox_requests WHERE status = 'queued' AND expires_at <= $1 \
         AND began_at IS NULL AND (claim IS NULL OR lease_until < $1)",
    )
    .bind(now)
    .fetch_all(&db.pool)
    .await?;
    let mut schedules = Vec::new();
    for r in &due {
        let done = sqlx::query(
            "UPDATE sandbox_requests SET status = 'failed', error = $2, claim = NULL, lease_until = NULL, \
             updated_at = $3, ended_at = $3 WHERE id = $1 AND status = 'queued' AND began_at IS NULL \
             AND (claim IS NULL OR lease_until < $3)",
        )
        .bind(r.uuid("id")?.to_string())
        .bind(rules::WAIT_EXPIRED)
        .bind(now)
        .execute(&db.pool)
        .await?;
        if done.rows_affected() == 1
            && let Some(schedule) = r.opt_uuid("schedule_id")?
        {
            schedules.push(schedule);
        }
    }
    Ok(schedules)
}

/// Deletes requests that left the queue more than `retention_seconds` ago.
pub async fn clean_up(db: &Db, retention_seconds: u64) -> sqlx::Result<u64> {
    let cutoff =
        now_micros().saturating_sub(i64::try_from(retention_seconds).unwrap_or(i64::MAX).saturating_mul(1_000_000));
    let done = sqlx::query("DELETE FROM sandbox_requests WHERE status <> 'queued' AND updated_at < $1")
        .bind(cutoff)
        .execute(&db.pool)
        .await?;
    Ok(done.rows_affected())
}
