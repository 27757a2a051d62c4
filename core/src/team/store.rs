//! Queries of `team_members`, `team_schedules` and of the team's
//! conversations. Firing a schedule is a compare-and-set on `next_run_at`,
//! so of several replicas (or a restarted server) exactly one runs it.

use sqlx::Row;
use sqlx::any::AnyRow;
use uuid::Uuid;

use crate::conversations::store::{self as conversations, ConversationRow};
use crate::db::{Db, RowExt};

/// A teammate as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberRow {
    pub agent_id: Uuid,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    pub inserted_at: i64,
    pub updated_at: i64,
}

impl MemberRow {
    fn from_row(r: &AnyRow) -> Result<MemberRow, sqlx::Error> {
        Ok(MemberRow {
            agent_id: r.uuid("agent_id")?,
            environment_id: r.opt_uuid("environment_id")?,
            vault_id: r.opt_uuid("vault_id")?,
            inserted_at: r.try_get("inserted_at")?,
            updated_at: r.try_get("updated_at")?,
        })
    }
}

const MEMBER_COLUMNS: &str = "agent_id, environment_id, vault_id, inserted_at, updated_at";

fn text(id: Option<Uuid>) -> Option<String> {
    id.map(|u| u.to_string())
}

/// The account's teammates, in the order they joined.
pub async fn members(db: &Db, account_id: Uuid) -> Result<Vec<MemberRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {MEMBER_COLUMNS} FROM team_members WHERE account_id = $1 ORDER BY inserted_at, agent_id"
    ));
    let rows = sqlx::query(sql).bind(account_id.to_string()).fetch_all(&db.pool).await?;
    rows.iter().map(MemberRow::from_row).collect()
}

pub async fn member(db: &Db, account_id: Uuid, agent_id: Uuid) -> Result<Option<MemberRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {MEMBER_COLUMNS} FROM team_members WHERE account_id = $1 AND agent_id = $2"
    ));
    let row = sqlx::query(sql).bind(account_id.to_string()).bind(agent_id.to_string()).fetch_optional(&db.pool).await?;
    row.as_ref().map(MemberRow::from_row).transpose()
}

/// Adds the teammate, or sets its bindings when it is one; true when added.
pub async fn put_member(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    account_id: Uuid,
    m: &MemberRow,
) -> Result<bool, sqlx::Error> {
    let updated = sqlx::query(
        "UPDATE team_members SET environment_id = $3, vault_id = $4, updated_at = $5 \
         WHERE account_id = $1 AND agent_id = $2",
    )
    .bind(account_id.to_string())
    .bind(m.agent_id.to_string())
    .bind(text(m.environment_id))
    .bind(text(m.vault_id))
    .bind(m.updated_at)
    .execute(&mut **tx)
    .await?;
    if updated.rows_affected() == 1 {
        return Ok(false);
    }
    sqlx::query(
        "INSERT INTO team_members (account_id, agent_id, environment_id, vault_id, inserted_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $5)",
    )
    .bind(account_id.to_string())
    .bind(m.agent_id.to_string())
    .bind(text(m.environment_id))
    .bind(text(m.vault_id))
    .bind(m.updated_at)
    .execute(&mut **tx)
    .await?;
    Ok(true)
}

/// Removes the teammate (its schedules go with it); false when it was none.
pub async fn delete_member(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    account_id: Uuid,
    agent_id: Uuid,
) -> Result<bool, sqlx::Error> {
    // Said outright, not left to the foreign key, so it holds whatever the connection's settings.
    sqlx::query("DELETE FROM team_schedules WHERE account_id = $1 AND agent_id = $2")
        .bind(account_id.to_string())
        .bind(agent_id.to_string())
        .execute(&mut **tx)
        .await?;
    let done = sqlx::query("DELETE FROM team_members WHERE account_id = $1 AND agent_id = $2")
        .bind(account_id.to_string())
        .bind(agent_id.to_string())
        .execute(&mut **tx)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// A teammate's team conversations, newest first: the live ones only, or all
/// (then only those on `sandbox` when given, for a sandbox key).
pub async fn team_conversations(
    db: &Db,
    account_id: Uuid,
    agent_id: Uuid,
    live_only: bool,
    sandbox: Option<Uuid>,
) -> Result<Vec<ConversationRow>, sqlx::Error> {
    let live = if live_only { "AND status <> 'terminated'" } else { "" };
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {} FROM conversations WHERE agent_id = $1 AND team = 1 AND account_id = $2 {live} \
         AND ($3 = '' OR sandbox_id = $3) ORDER BY created_at DESC, id DESC LIMIT 1000",
        conversations::COLUMNS
    ));
    let rows = sqlx::query(sql)
        .bind(agent_id.to_string())
        .bind(account_id.to_string())
        .bind(sandbox.map(|s| s.to_string()).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(ConversationRow::from_row).collect()
}

/// The teammate's conversation: the newest live team conversation, else the
/// newest finished (one-off runs, which carry their schedule's channel, aside).
pub async fn shown_conversation(
    db: &Db,
    account_id: Uuid,
    agent_id: Uuid,
) -> Result<Option<ConversationRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {} FROM conversations WHERE agent_id = $1 AND team = 1 AND account_id = $2 AND channel_id IS NULL \
         ORDER BY CASE WHEN status = 'terminated' THEN 1 ELSE 0 END, created_at DESC, id DESC LIMIT 1",
        conversations::COLUMNS
    ));
    let row = sqlx::query(sql).bind(agent_id.to_string()).bind(account_id.to_string()).fetch_optional(&db.pool).await?;
    row.as_ref().map(ConversationRow::from_row).transpose()
}

/// A conversation's agent, and whether it is a team conversation; `None`
/// when no such conversation is stored (yet).
pub async fn team_of(db: &Db, conversation_id: Uuid) -> Result<Option<(Uuid, bool)>, sqlx::Error> {
    let row = sqlx::query("SELECT agent_id, team FROM conversations WHERE id = $1")
        .bind(conversation_id.to_string())
        .fetch_optional(&db.pool)
        .await?;
    row.map(|r| Ok((r.uuid("agent_id")?, r.flag("team")?))).transpose()
}

// ---- schedules ----

#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRow {
    pub id: Uuid,
    pub account_id: Uuid,
    pub agent_id: Uuid,
    pub name: Option<String>,
    pub cron: String,
    pub prompt: String,
    pub one_off: bool,
    pub enabled: bool,
    pub next_run_at: Option<i64>,
    pub last_run_at: Option<i64>,
    pub last_conversation_id: Option<Uuid>,
    pub last_error: Option<String>,
    pub inserted_at: i64,
    pub updated_at: i64,
}

const SCHEDULE_COLUMNS: &str = "id, account_id, agent_id, name, cron, prompt, one_off, enabled, next_run_at, \
    last_run_at, last_conversation_id, last_error, inserted_at, updated_at";

impl ScheduleRow {
    fn from_row(r: &AnyRow) -> Result<ScheduleRow, sqlx::Error> {
        Ok(ScheduleRow {
            id: r.uuid("id")?,
            account_id: r.uuid("account_id")?,
            agent_id: r.uuid("agent_id")?,
            name: r.try_get("name")?,
            cron: r.try_get("cron")?,
            prompt: r.try_get("prompt")?,
            one_off: r.flag("one_off")?,
            enabled: r.flag("enabled")?,
            next_run_at: r.try_get("next_run_at")?,
            last_run_at: r.try_get("last_run_at")?,
            last_conversation_id: r.opt_uuid("last_conversation_id")?,
            last_error: r.try_get("last_error")?,
            inserted_at: r.try_get("inserted_at")?,
            updated_at: r.try_get("updated_at")?,
        })
    }
}

/// A teammate's schedules, oldest first.
pub async fn schedules(db: &Db, account_id: Uuid, agent_id: Uuid) -> Result<Vec<ScheduleRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {SCHEDULE_COLUMNS} FROM team_schedules WHERE account_id = $1 AND agent_id = $2 \
         ORDER BY inserted_at, id"
    ));
    let rows = sqlx::query(sql).bind(account_id.to_string()).bind(agent_id.to_string()).fetch_all(&db.pool).await?;
    rows.iter().map(ScheduleRow::from_row).collect()
}

pub async fn schedule(db: &Db, id: Uuid) -> Result<Option<ScheduleRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {SCHEDULE_COLUMNS} FROM team_schedules WHERE id = $1"));
    let row = sqlx::query(sql).bind(id.to_string()).fetch_optional(&db.pool).await?;
    row.as_ref().map(ScheduleRow::from_row).transpose()
}

/// Inserts a schedule, or replaces its settings (its run history stays).
pub async fn save_schedule(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    s: &ScheduleRow,
    insert: bool,
) -> Result<(), sqlx::Error> {
    let sql = if insert {
        "INSERT INTO team_schedules (id, account_id, agent_id, name, cron, prompt, one_off, enabled, next_run_at, \
         inserted_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)"
    } else {
        "UPDATE team_schedules SET name = $4, cron = $5, prompt = $6, one_off = $7, enabled = $8, next_run_at = $9, \
         updated_at = $10 WHERE id = $1 AND account_id = $2 AND agent_id = $3"
    };
    sqlx::query(sql)
        .bind(s.id.to_string())
        .bind(s.account_id.to_string())
        .bind(s.agent_id.to_string())
        .bind(s.name.clone())
        .bind(s.cron.clone())
        .bind(s.prompt.clone())
        .bind(i32::from(s.one_off))
        .bind(i32::from(s.enabled))
        .bind(s.next_run_at)
        .bind(s.updated_at)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub async fn delete_schedule(tx: &mut sqlx::Transaction<'static, sqlx::Any>, id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("DELETE FROM team_schedules WHERE id = $1").bind(id.to_string()).execute(&mut **tx).await?;
    Ok(done.rows_affected() == 1)
}

/// Enabled schedules due at `now`, soonest first.
pub async fn due(db: &Db, now: i64, limit: i64) -> Result<Vec<ScheduleRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {SCHEDULE_COLUMNS} FROM team_schedules WHERE next_run_at <= $1 AND enabled = 1 \
         ORDER BY next_run_at LIMIT $2"
    ));
    let rows = sqlx::query(sql).bind(now).bind(limit).fetch_all(&db.pool).await?;
    rows.iter().map(ScheduleRow::from_row).collect()
}

/// One due run to claim: the schedule, its due time as read, its next time,
/// and the id of the run if it is won.
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    pub id: Uuid,
    pub due: i64,
    pub next: Option<i64>,
    pub run_id: Uuid,
}

/// Takes the runs of `claims` in one statement: each moves `next_run_at` on
/// to its next time, stamps `last_run_at` and puts its run in hand until
/// `lease_until`, only if `next_run_at` still holds the due time read (nobody
/// else fired it, no PATCH changed it). Returns the schedules won.
pub async fn claim(db: &Db, claims: &[Claim], now: i64, lease_until: i64) -> Result<Vec<Uuid>, sqlx::Error> {
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    if db.backend == crate::db::Backend::Sqlite {
        return claim_each(db, claims, now, lease_until).await;
    }
    let rows: Vec<String> = (0..claims.len())
        .map(|i| {
            let p = 3 + 4 * i;
            // PostgreSQL types a VALUES column from its first row: cast what a NULL could leave open.
            format!("(${}, CAST(${} AS BIGINT), CAST(${} AS BIGINT), ${})", p, p + 1, p + 2, p + 3)
        })
        .collect();
    let sql = sqlx::AssertSqlSafe(format!(
        "WITH v(vid, vdue, vnext, vrun) AS (VALUES {}) \
         UPDATE team_schedules SET next_run_at = v.vnext, last_run_at = $1, run_id = v.vrun, run_lease_until = $2 \
         FROM v WHERE team_schedules.id = v.vid AND team_schedules.next_run_at = v.vdue \
         AND team_schedules.enabled = 1 RETURNING id",
        rows.join(", ")
    ));
    let mut q = sqlx::query(sql).bind(now).bind(lease_until);
    for c in claims {
        q = q.bind(c.id.to_string()).bind(c.due).bind(c.next).bind(c.run_id.to_string());
    }
    let won = q.fetch_all(&db.pool).await?;
    won.iter().map(|r| r.uuid("id")).collect()
}

/// SQLite plans the joined UPDATE as a scan of every schedule per claimed
/// row; one compare-and-set per row by key, in one transaction (one commit),
/// is as atomic and far faster there.
async fn claim_each(db: &Db, claims: &[Claim], now: i64, lease_until: i64) -> Result<Vec<Uuid>, sqlx::Error> {
    let mut tx = db.begin().await?;
    let mut won = Vec::new();
    for c in claims {
        let done = sqlx::query(
            "UPDATE team_schedules SET next_run_at = $3, last_run_at = $4, run_id = $5, run_lease_until = $6 \
             WHERE id = $1 AND next_run_at = $2 AND enabled = 1",
        )
        .bind(c.id.to_string())
        .bind(c.due)
        .bind(c.next)
        .bind(now)
        .bind(c.run_id.to_string())
        .bind(lease_until)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 1 {
            won.push(c.id);
        }
    }
    tx.commit().await?;
    Ok(won)
}

/// The soonest time an enabled schedule is due, if any.
pub async fn soonest(db: &Db) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT MIN(next_run_at) FROM team_schedules WHERE enabled = 1").fetch_one(&db.pool).await
}

/// Runs still in hand after their lease ran out (their server died before
/// handing them on): schedule id, run id and lease.
pub async fn stale_runs(db: &Db, now: i64, limit: i64) -> Result<Vec<(Uuid, Uuid, i64)>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, run_id, run_lease_until FROM team_schedules WHERE run_lease_until <= $1 AND run_id IS NOT NULL \
         ORDER BY run_lease_until LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| Ok((r.uuid("id")?, r.uuid("run_id")?, r.try_get("run_lease_until")?))).collect()
}

/// Takes up a stale run: a new lease, only if nobody else took it first.
pub async fn retake(db: &Db, id: Uuid, run_id: Uuid, lease: i64, lease_until: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE team_schedules SET run_lease_until = $4 WHERE id = $1 AND run_id = $2 AND run_lease_until = $3",
    )
    .bind(id.to_string())
    .bind(run_id.to_string())
    .bind(lease)
    .bind(lease_until)
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The run has been handed on (or has failed): it is no longer in hand.
pub async fn release(db: &Db, id: Uuid, run_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE team_schedules SET run_id = NULL, run_lease_until = NULL WHERE id = $1 AND run_id = $2")
        .bind(id.to_string())
        .bind(run_id.to_string())
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// What a run cut short left behind, found by its id (the turn it opens,
/// or the conversation it opens, see `scheduler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trace {
    /// Nothing: the run was never handed on.
    None,
    /// Its turn exists, or waits on a conversation whose machine wakes.
    Delivered(Uuid),
    /// Its conversation exists but holds no turn and no waiting prompt.
    Opened(Uuid),
    /// Its start waits in the sandbox queue.
    Queued,
}

pub async fn trace(db: &Db, agent_id: Uuid, run_id: Uuid) -> Result<Trace, sqlx::Error> {
    let id = run_id.to_string();
    if let Some(r) =
        sqlx::query("SELECT conversation_id FROM turns WHERE id = $1").bind(&id).fetch_optional(&db.pool).await?
    {
        return Ok(Trace::Delivered(r.uuid("conversation_id")?));
    }
    // A prompt waiting for its machine is stored whole, its turn id with it.
    let waiting = sqlx::query("SELECT id FROM conversations WHERE agent_id = $1 AND pending_prompt LIKE $2")
        .bind(agent_id.to_string())
        .bind(format!("%{id}%"))
        .fetch_optional(&db.pool)
        .await?;
    if let Some(r) = waiting {
        return Ok(Trace::Delivered(r.uuid("id")?));
    }
    let opened = sqlx::query(
        "SELECT c.id, c.pending_prompt, (SELECT COUNT(*) FROM turns t WHERE t.conversation_id = c.id) AS turns \
         FROM conversations c WHERE c.id = $1",
    )
    .bind(&id)
    .fetch_optional(&db.pool)
    .await?;
    if let Some(r) = opened {
        let pending: Option<String> = r.try_get("pending_prompt")?;
        let turns: i64 = r.try_get("turns")?;
        return Ok(if pending.is_some() || turns > 0 { Trace::Delivered(run_id) } else { Trace::Opened(run_id) });
    }
    let queued = sqlx::query("SELECT id FROM sandbox_requests WHERE fresh_conversation_id = $1")
        .bind(&id)
        .fetch_optional(&db.pool)
        .await?;
    Ok(if queued.is_some() { Trace::Queued } else { Trace::None })
}

/// Records how a run went: a conversation (and no error), or an error (and no conversation).
pub async fn record_run(db: &Db, id: Uuid, outcome: &Result<Uuid, String>) -> Result<(), sqlx::Error> {
    let (conversation, error) = match outcome {
        Ok(c) => (Some(c.to_string()), None),
        Err(e) => (None, Some(e.clone())),
    };
    sqlx::query("UPDATE team_schedules SET last_conversation_id = $2, last_error = $3 WHERE id = $1")
        .bind(id.to_string())
        .bind(conversation)
        .bind(error)
        .execute(&db.pool)
        .await?;
    Ok(())
}
