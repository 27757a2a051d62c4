//! Concurrency ceilings (spec 4.1 create rule 8, section 7): a tenant may
//! hold `limits.sandboxes_per_account` active hosted machines and the fleet
//! `limits.sandboxes_fleet` (0 = no ceiling). Active means `pending`,
//! `starting` or `ready`; parked, failed and ended machines and a user's own
//! `runner` machines do not count.
//!
//! A start (a new machine row, or a parked one woken) counts and writes in
//! one transaction that first locks the account row and then the `fleet`
//! row of `capacity_locks`. Two starts of one tenant, or two starts
//! anywhere once the fleet lock is taken, therefore count one after the
//! other, on every replica. On SQLite the transaction holds the database's
//! write lock from its first statement, which serialises them the same way.
//!
//! A machine waiting in a warm pool holds a place in the fleet but none of
//! its account's: it becomes the tenant's when a conversation claims it.

use sqlx::{Any, Transaction};
use uuid::Uuid;

use crate::config::LimitsConfig;
use crate::error::ApiError;
use crate::refusal::{Capacity, Refusal};

/// The statuses that occupy a place under the ceilings.
const ACTIVE: &str = "'pending', 'starting', 'ready'";

/// The rule: a start is admitted while both counts are under their ceilings
/// (0 = no ceiling). The tenant's own cap is told first: it is the one the
/// caller can act on.
pub fn check(tenant_active: i64, fleet_active: i64, limits: &LimitsConfig) -> Result<(), Capacity> {
    let full = |active: i64, limit: u32| limit > 0 && active >= i64::from(limit);
    if full(tenant_active, limits.sandboxes_per_account) {
        return Err(Capacity::Tenant { active: tenant_active, limit: limits.sandboxes_per_account });
    }
    if full(fleet_active, limits.sandboxes_fleet) {
        return Err(Capacity::Fleet { active: fleet_active, limit: limits.sandboxes_fleet });
    }
    Ok(())
}

/// Which ceilings a start is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A new machine of the account, or one woken: both.
    Start,
    /// A machine built for a warm pool: the fleet's alone.
    Pool,
    /// A pooled machine a conversation claims: the tenant's alone (its fleet place is held).
    Claim,
}

/// Active hosted machines of one account (its claimed ones), or of the fleet (`None`).
pub async fn active<'e>(ex: impl sqlx::Executor<'e, Database = Any>, account_id: Option<Uuid>) -> sqlx::Result<i64> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM sandboxes WHERE status IN ({ACTIVE}) AND provider <> 'runner' \
         AND ($1 = '' OR (account_id = $1 AND pool IS NULL))"
    ));
    sqlx::query_scalar(sql).bind(account_id.map(|a| a.to_string()).unwrap_or_default()).fetch_one(ex).await
}

/// Why a start was not admitted.
#[derive(Debug)]
pub enum Reserve {
    Full(Capacity),
    Db(sqlx::Error),
}

impl From<sqlx::Error> for Reserve {
    fn from(e: sqlx::Error) -> Self {
        Reserve::Db(e)
    }
}

impl From<Reserve> for ApiError {
    fn from(r: Reserve) -> Self {
        match r {
            Reserve::Full(c) => Refusal::Capacity(c).into(),
            Reserve::Db(e) => e.into(),
        }
    }
}

/// Takes the ceiling locks in `tx` and checks that one more machine of
/// `account_id` may start. The caller writes the start in the same
/// transaction and commits; the locks hold until then.
pub async fn reserve(
    tx: &mut Transaction<'static, Any>,
    limits: &LimitsConfig,
    account_id: Uuid,
    place: Place,
) -> Result<(), Reserve> {
    let tenant_counts = place != Place::Pool && limits.sandboxes_per_account > 0;
    let fleet_counts = place != Place::Claim && limits.sandboxes_fleet > 0;
    if !tenant_counts && !fleet_counts {
        return Ok(());
    }
    // Always the account first, then the fleet: one order, no deadlock.
    sqlx::query("UPDATE accounts SET updated_at = updated_at WHERE id = $1")
        .bind(account_id.to_string())
        .execute(&mut **tx)
        .await?;
    let tenant = if tenant_counts { active(&mut **tx, Some(account_id)).await? } else { 0 };
    let fleet = if fleet_counts {
        sqlx::query("UPDATE capacity_locks SET name = name WHERE name = 'fleet'").execute(&mut **tx).await?;
        active(&mut **tx, None).await?
    } else {
        0
    };
    check(tenant, fleet, limits).map_err(Reserve::Full)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(tenant: u32, fleet: u32) -> LimitsConfig {
        LimitsConfig { sandboxes_per_account: tenant, sandboxes_fleet: fleet, ..LimitsConfig::default() }
    }

    #[test]
    fn a_start_is_admitted_below_each_ceiling_and_refused_at_it() {
        let l = limits(2, 5);
        assert_eq!(check(1, 4, &l), Ok(()));
        assert_eq!(check(2, 0, &l), Err(Capacity::Tenant { active: 2, limit: 2 }));
        assert_eq!(check(0, 5, &l), Err(Capacity::Fleet { active: 5, limit: 5 }));
        assert_eq!(check(2, 5, &l), Err(Capacity::Tenant { active: 2, limit: 2 }), "the tenant's cap is told first");
    }

    #[test]
    fn zero_means_no_ceiling() {
        assert_eq!(check(1_000, 1_000_000, &limits(0, 0)), Ok(()));
    }

    #[test]
    fn refusals_render_the_spec_codes() {
        use axum::http::StatusCode;

        use crate::error::FLEET_RETRY_AFTER_SECONDS;

        let e = ApiError::from(Refusal::Capacity(Capacity::Tenant { active: 3, limit: 3 }));
        assert_eq!((e.status, e.error.as_str()), (StatusCode::TOO_MANY_REQUESTS, "sandbox_quota_exceeded"));
        assert_eq!(e.body()["active_sandboxes"], 3);
        assert_eq!(e.body()["limit"], 3);
        let e = ApiError::from(Refusal::Capacity(Capacity::Fleet { active: 9, limit: 9 }));
        assert_eq!((e.status, e.error.as_str()), (StatusCode::SERVICE_UNAVAILABLE, "fleet_at_capacity"));
        assert_eq!(e.retry_after, Some(FLEET_RETRY_AFTER_SECONDS));
    }
}
