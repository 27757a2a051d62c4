//! The meter of hosted sandbox time. A machine that starts while credits
//! are on gets `metered_at` = the start; a worker charges each active
//! machine for the whole seconds since, and a machine that leaves the
//! active states (park, reclaim, failure) gets a final charge and a null
//! `metered_at`. Each charge is claimed by a conditional update of
//! `metered_at` (from the value read to the value after exactly the seconds
//! charged), in the transaction that writes the ledger, so two replicas
//! never charge one interval and no fraction of a second drifts.

use std::time::Duration;

use sqlx::{Any, Row};
use uuid::Uuid;

use super::ledger::{self, Change, Reason};
use crate::db::RowExt;
use crate::state::AppState;
use crate::time_fmt::now_micros;

const MICROS: i64 = 1_000_000;

/// A charge of `seconds` whole seconds starting at `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub seconds: i64,
    /// `metered_at` after the charge: `from` plus exactly the seconds charged.
    pub next: i64,
}

/// The whole seconds between `from` and `until` (none when `until` is not later).
pub fn interval(from: i64, until: i64) -> Interval {
    let seconds = (until - from).max(0) / MICROS;
    Interval { seconds, next: from + seconds * MICROS }
}

/// Credits for `seconds` at `rate` per second (saturating: a balance cannot wrap).
pub fn cost(seconds: i64, rate: i64) -> i64 {
    seconds.saturating_mul(rate)
}

/// Starts the meter of a machine that just became active (same transaction
/// as its insert or wake). Nothing is metered while credits are off.
pub async fn started(state: &AppState, tx: &mut sqlx::Transaction<'static, Any>, sandbox_id: Uuid) -> sqlx::Result<()> {
    if !state.config().credits.enabled {
        return Ok(());
    }
    sqlx::query("UPDATE sandboxes SET metered_at = $2 WHERE id = $1 AND provider <> 'runner'")
        .bind(sandbox_id.to_string())
        .bind(now_micros())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// A metered machine as the meter reads it.
#[derive(Debug, Clone)]
struct Metered {
    id: Uuid,
    account_id: Uuid,
    active: bool,
    metered_at: i64,
    updated_at: i64,
}

const METERED: &str =
    "SELECT id, account_id, status, metered_at, updated_at FROM sandboxes WHERE metered_at IS NOT NULL";

fn metered(r: &sqlx::any::AnyRow) -> sqlx::Result<Metered> {
    let status: String = r.try_get("status")?;
    Ok(Metered {
        id: r.uuid("id")?,
        account_id: r.uuid("account_id")?,
        active: matches!(status.as_str(), "pending" | "starting" | "ready"),
        metered_at: r.try_get("metered_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Charges `m` up to `until`; `close` ends its meter (a final charge).
/// False when another charge claimed the interval first.
async fn charge(state: &AppState, m: &Metered, until: i64, close: bool) -> sqlx::Result<bool> {
    let span = interval(m.metered_at, until);
    if span.seconds == 0 && !close {
        return Ok(true);
    }
    let credits = &state.config().credits;
    // With credits off a meter left from before only closes.
    let amount = if credits.enabled { cost(span.seconds, credits.sandbox_per_second) } else { 0 };
    let mut tx = state.db.begin().await?;
    // The balance first, then the machine: the order starts lock them in.
    if amount > 0 {
        let mut change = Change::new(m.account_id, -amount, Reason::SandboxTime);
        change.sandbox_id = Some(m.id);
        ledger::apply(&mut tx, &change).await?;
    }
    let claimed = sqlx::query("UPDATE sandboxes SET metered_at = $3 WHERE id = $1 AND metered_at = $2")
        .bind(m.id.to_string())
        .bind(m.metered_at)
        .bind((!close).then_some(span.next))
        .execute(&mut *tx)
        .await?
        .rows_affected()
        == 1;
    if claimed {
        tx.commit().await?;
    }
    Ok(claimed)
}

/// The final charge of a machine that left the active states (called right
/// after its status moved); the part of a second since the last whole one is
/// not charged.
pub async fn settle(state: &AppState, sandbox_id: Uuid) {
    if let Err(e) = settle_now(state, sandbox_id).await {
        tracing::error!(sandbox = %sandbox_id, "final sandbox time charge failed: {e}");
    }
}

async fn settle_now(state: &AppState, sandbox_id: Uuid) -> sqlx::Result<()> {
    let sql = format!("{METERED} AND id = $1");
    // A worker's charge may claim the interval between our read and our
    // claim; the next read sees what it left.
    for _ in 0..5 {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .bind(sandbox_id.to_string())
            .fetch_optional(&state.db.pool)
            .await?;
        let Some(m) = row.as_ref().map(metered).transpose()? else { return Ok(()) };
        if m.active || charge(state, &m, now_micros(), true).await? {
            return Ok(());
        }
    }
    Ok(())
}

/// One pass: charges every active machine up to now, and closes the meter
/// of one that left the active states without its final charge (a server
/// stopped in between) at the time its status last moved.
pub async fn pass(state: &AppState) -> sqlx::Result<()> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(METERED)).fetch_all(&state.db.pool).await?;
    let now = now_micros();
    for m in rows.iter().map(metered) {
        let m = m?;
        let until = if m.active { now } else { m.updated_at.min(now) };
        charge(state, &m, until, !m.active).await?;
    }
    Ok(())
}

/// The meter worker: a pass every `credits.meter_interval_seconds` while credits are on.
pub async fn run(state: AppState) {
    let credits = &state.config().credits;
    if !credits.enabled {
        return;
    }
    let every = Duration::from_secs(credits.meter_interval_seconds.max(1));
    loop {
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        if let Err(e) = pass(&state).await {
            tracing::warn!("sandbox time meter: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_are_charged_and_the_rest_carries_over() {
        let from = 1_000 * MICROS + 250_000;
        let i = interval(from, from + 2_999_999);
        assert_eq!(i, Interval { seconds: 2, next: from + 2 * MICROS });
        // The 0.999999 s left is charged by the next pass, not lost or rounded.
        assert_eq!(interval(i.next, from + 3 * MICROS), Interval { seconds: 1, next: from + 3 * MICROS });
    }

    #[test]
    fn no_time_or_a_clock_step_back_charges_nothing() {
        assert_eq!(interval(5 * MICROS, 5 * MICROS + 999_999).seconds, 0);
        assert_eq!(interval(5 * MICROS, MICROS), Interval { seconds: 0, next: 5 * MICROS });
    }

    #[test]
    fn cost_is_seconds_times_rate_without_wrapping() {
        assert_eq!(cost(60, 3), 180);
        assert_eq!(cost(0, 3), 0);
        assert_eq!(cost(i64::MAX / 2, 3), i64::MAX);
    }
}
