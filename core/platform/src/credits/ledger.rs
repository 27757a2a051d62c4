//! The balance and its append-only ledger. Every change of a balance is one
//! transaction that moves `accounts.credit_balance` and appends the row that
//! explains it, with the balance after it.

use serde::Serialize;
use sqlx::any::AnyRow;
use sqlx::{Any, Row};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::{Db, RowExt};
use crate::time_fmt::{from_micros, now_micros};

/// Why a balance moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The credits of a new account.
    InitialGrant,
    /// An operator's grant (a negative one corrects a mistake).
    Grant,
    /// Whole seconds of a hosted sandbox.
    SandboxTime,
    /// A turn on the deployment's platform credentials.
    PlatformTurn,
}

impl Reason {
    pub const ALL: [Reason; 4] = [Reason::InitialGrant, Reason::Grant, Reason::SandboxTime, Reason::PlatformTurn];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::InitialGrant => "initial_grant",
            Reason::Grant => "grant",
            Reason::SandboxTime => "sandbox_time",
            Reason::PlatformTurn => "platform_turn",
        }
    }

    /// Spending skips a comped account (no ledger row); grants never do.
    fn is_spending(self) -> bool {
        matches!(self, Reason::SandboxTime | Reason::PlatformTurn)
    }
}

/// One change of a balance.
#[derive(Debug, Clone)]
pub struct Change {
    pub account_id: Uuid,
    /// Signed: grants positive, spending negative.
    pub amount: i64,
    pub reason: Reason,
    pub sandbox_id: Option<Uuid>,
    pub conversation_id: Option<Uuid>,
    pub turn_id: Option<Uuid>,
    /// Who made the row by hand (`operator`, its id) and why; `None` for the service's own.
    pub actor: Option<(&'static str, Uuid)>,
    pub note: Option<String>,
}

impl Change {
    pub fn new(account_id: Uuid, amount: i64, reason: Reason) -> Change {
        Change {
            account_id,
            amount,
            reason,
            sandbox_id: None,
            conversation_id: None,
            turn_id: None,
            actor: None,
            note: None,
        }
    }
}

/// Applies a change inside `tx`: moves the balance and appends its row.
/// Returns the balance after it, or `None` when nothing was written (a
/// spending of a comped account, or an account that no longer exists).
pub async fn apply(tx: &mut sqlx::Transaction<'static, Any>, c: &Change) -> sqlx::Result<Option<i64>> {
    let sql = if c.reason.is_spending() {
        "UPDATE accounts SET credit_balance = credit_balance + $2 WHERE id = $1 AND comped = 0 RETURNING credit_balance"
    } else {
        "UPDATE accounts SET credit_balance = credit_balance + $2 WHERE id = $1 RETURNING credit_balance"
    };
    let balance: Option<i64> =
        sqlx::query_scalar(sql).bind(c.account_id.to_string()).bind(c.amount).fetch_optional(&mut **tx).await?;
    let Some(balance) = balance else { return Ok(None) };
    sqlx::query(
        "INSERT INTO credit_ledger (account_id, amount, balance_after, reason, sandbox_id, conversation_id, turn_id, \
         inserted_at, actor_type, actor_id, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(c.account_id.to_string())
    .bind(c.amount)
    .bind(balance)
    .bind(c.reason.as_str())
    .bind(c.sandbox_id.map(|v| v.to_string()))
    .bind(c.conversation_id.map(|v| v.to_string()))
    .bind(c.turn_id.map(|v| v.to_string()))
    .bind(now_micros())
    .bind(c.actor.map(|(kind, _)| kind))
    .bind(c.actor.map(|(_, id)| id.to_string()))
    .bind(c.note.clone())
    .execute(&mut **tx)
    .await?;
    Ok(Some(balance))
}

/// [`apply`] in a transaction of its own.
pub async fn apply_now(db: &Db, c: &Change) -> sqlx::Result<Option<i64>> {
    let mut tx = db.begin().await?;
    let balance = apply(&mut tx, c).await?;
    tx.commit().await?;
    Ok(balance)
}

/// An account's balance and whether it is comped; `None` for no such account.
pub async fn standing(db: &Db, account_id: Uuid) -> sqlx::Result<Option<(i64, bool)>> {
    let row = sqlx::query("SELECT credit_balance, comped FROM accounts WHERE id = $1")
        .bind(account_id.to_string())
        .fetch_optional(&db.pool)
        .await?;
    row.map(|r| Ok((r.try_get("credit_balance")?, r.flag("comped")?))).transpose()
}

/// One ledger row.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = CreditLedgerEntry)]
pub struct Entry {
    /// Cursor for `before`.
    pub id: i64,
    /// Signed: grants positive, spending negative.
    pub amount: i64,
    pub balance_after: i64,
    /// `initial_grant`, `grant`, `sandbox_time` or `platform_turn`.
    #[schema(value_type = LedgerReason)]
    pub reason: String,
    pub sandbox_id: Option<Uuid>,
    pub conversation_id: Option<Uuid>,
    pub turn_id: Option<Uuid>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
}

fn entry(r: &AnyRow) -> sqlx::Result<Entry> {
    Ok(Entry {
        id: r.try_get("id")?,
        amount: r.try_get("amount")?,
        balance_after: r.try_get("balance_after")?,
        reason: r.try_get("reason")?,
        sandbox_id: r.opt_uuid("sandbox_id")?,
        conversation_id: r.opt_uuid("conversation_id")?,
        turn_id: r.opt_uuid("turn_id")?,
        inserted_at: from_micros(r.try_get("inserted_at")?),
    })
}

/// Up to `limit + 1` rows older than `before`, newest first (the extra one
/// tells whether another page follows).
pub async fn page(db: &Db, account_id: Uuid, before: Option<i64>, limit: i64) -> sqlx::Result<Vec<Entry>> {
    let rows = sqlx::query(
        "SELECT id, amount, balance_after, reason, sandbox_id, conversation_id, turn_id, inserted_at \
         FROM credit_ledger WHERE account_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3",
    )
    .bind(account_id.to_string())
    .bind(before.unwrap_or(i64::MAX))
    .bind(limit + 1)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(entry).collect()
}

crate::string_enum!(LedgerReason, "Why the balance moved.", Reason::ALL.map(Reason::as_str));
