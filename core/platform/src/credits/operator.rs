//! Operator tools (`acs credits grant|comp`): they work on the configured
//! database directly, without a running server.

use sqlx::Row;
use uuid::Uuid;

use super::ledger::{self, Change, Reason};
use crate::audit::{self, Actor};
use crate::db::{Db, RowExt};

/// The operator acts as the service in the account's audit log.
fn operator(account_id: Uuid) -> Actor {
    Actor { account_id, kind: "service", id: None, ip: None }
}

#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("no account has the email {0}")]
    NoAccount(String),
    #[error("the amount must not be zero")]
    ZeroAmount,
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
}

async fn account_by_email(db: &Db, email: &str) -> Result<Uuid, OperatorError> {
    let email = email.trim().to_lowercase();
    let row =
        sqlx::query("SELECT id FROM accounts WHERE email = $1").bind(email.clone()).fetch_optional(&db.pool).await?;
    row.map(|r| r.uuid("id")).transpose()?.ok_or(OperatorError::NoAccount(email))
}

/// Adds `amount` credits (negative corrects a mistake) with a `grant`
/// ledger row; returns the balance after it.
pub async fn grant(db: &Db, email: &str, amount: i64) -> Result<i64, OperatorError> {
    let account_id = account_by_email(db, email).await?;
    grant_to(db, account_id, amount, &operator(account_id), None).await
}

/// [`grant`] by account id, made by `actor` (an operator through the admin
/// extension, recorded on the ledger row too) with an optional `note`.
pub async fn grant_to(
    db: &Db,
    account_id: Uuid,
    amount: i64,
    actor: &Actor,
    note: Option<String>,
) -> Result<i64, OperatorError> {
    if amount == 0 {
        return Err(OperatorError::ZeroAmount);
    }
    let mut tx = db.begin().await?;
    let mut change = Change::new(account_id, amount, Reason::Grant);
    change.actor = actor.id.map(|id| (actor.kind, id));
    change.note = note;
    let balance =
        ledger::apply(&mut tx, &change).await?.ok_or_else(|| OperatorError::NoAccount(account_id.to_string()))?;
    audit::record(&mut *tx, actor, "credits.granted", Some(("account", account_id))).await?;
    tx.commit().await?;
    Ok(balance)
}

/// Comps an account (it spends nothing and is never refused for credits) or
/// ends the comp; returns the balance, which a comp leaves as it is.
pub async fn set_comped(db: &Db, email: &str, comped: bool) -> Result<i64, OperatorError> {
    let account_id = account_by_email(db, email).await?;
    set_comped_for(db, account_id, comped, &operator(account_id)).await
}

/// [`set_comped`] by account id, made by `actor`.
pub async fn set_comped_for(db: &Db, account_id: Uuid, comped: bool, actor: &Actor) -> Result<i64, OperatorError> {
    let mut tx = db.begin().await?;
    let row = sqlx::query("UPDATE accounts SET comped = $2 WHERE id = $1 RETURNING credit_balance")
        .bind(account_id.to_string())
        .bind(i32::from(comped))
        .fetch_optional(&mut *tx)
        .await?;
    let row = row.ok_or_else(|| OperatorError::NoAccount(account_id.to_string()))?;
    let action = if comped { "credits.comped" } else { "credits.uncomped" };
    audit::record(&mut *tx, actor, action, Some(("account", account_id))).await?;
    tx.commit().await?;
    Ok(row.try_get("credit_balance")?)
}
