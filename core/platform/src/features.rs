//! Runtime flags an operator sets while the deployment runs (DESIGN 9.4):
//! stored in the database over the configuration's `features.<name>`, read
//! by every replica at start and then every second ([`watch`]), so a change
//! made on one replica holds on all of them within two seconds. Each change
//! is kept in `feature_flag_changes`, never rewritten.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use sqlx::Row;

use crate::db::{Db, RowExt};
use crate::state::AppState;
use crate::time_fmt::now_micros;

/// The flag of core's egress broker and secret bindings (DESIGN 9.5).
pub const BROKERAGE: &str = "brokerage";

/// How often a replica reads the stored flags.
pub const REFRESH: Duration = Duration::from_secs(1);

/// An operator's choice for one flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub name: String,
    pub enabled: bool,
    pub updated_at: i64,
    pub updated_by: String,
}

/// Who changed a flag, as the change history keeps it: `operator:<id>` for
/// an operator on the API, `cli` for `acs admin features`.
#[derive(Debug, Clone)]
pub struct Changer {
    pub actor: String,
    pub ip: Option<IpAddr>,
}

pub async fn stored(db: &Db) -> Result<Vec<Stored>, sqlx::Error> {
    let rows = sqlx::query("SELECT name, enabled, updated_at, updated_by FROM feature_flags ORDER BY name")
        .fetch_all(&db.pool)
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Stored {
                name: r.try_get("name")?,
                enabled: r.flag("enabled")?,
                updated_at: r.try_get("updated_at")?,
                updated_by: r.try_get("updated_by")?,
            })
        })
        .collect()
}

/// Stores `enabled` for `name` (`None` removes the operator's choice, so
/// the configuration's value holds again), with its history row, in one
/// transaction.
pub async fn store(db: &Db, name: &str, enabled: Option<bool>, by: &Changer) -> Result<(), sqlx::Error> {
    let at = now_micros();
    let mut tx = db.begin().await?;
    match enabled {
        Some(on) => {
            sqlx::query(
                "INSERT INTO feature_flags (name, enabled, updated_at, updated_by) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at, \
                 updated_by = excluded.updated_by",
            )
            .bind(name.to_owned())
            .bind(i64::from(on))
            .bind(at)
            .bind(by.actor.clone())
            .execute(&mut *tx)
            .await?;
        }
        None => {
            sqlx::query("DELETE FROM feature_flags WHERE name = $1").bind(name.to_owned()).execute(&mut *tx).await?;
        }
    }
    sqlx::query("INSERT INTO feature_flag_changes (name, enabled, actor, ip, at) VALUES ($1, $2, $3, $4, $5)")
        .bind(name.to_owned())
        .bind(enabled.map(i64::from))
        .bind(by.actor.clone())
        .bind(by.ip.map(|ip| ip.to_string()))
        .bind(at)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// The configuration's flags with the stored choices over them; a stored
/// name this build does not know (another build's extension) is skipped.
pub fn effective(configured: &BTreeMap<String, bool>, stored: &[Stored]) -> BTreeMap<String, bool> {
    let mut flags = configured.clone();
    for s in stored {
        if let Some(on) = flags.get_mut(&s.name) {
            *on = s.enabled;
        }
    }
    flags
}

/// Applies the stored flags to this server's now: after a change here, and
/// from [`watch`] for changes another replica made.
pub async fn refresh(state: &AppState) -> Result<(), sqlx::Error> {
    let now = effective(&state.config().features, &stored(&state.db).await?);
    for (name, on) in now {
        if state.features.set(&name, on) {
            tracing::info!(flag = %name, enabled = on, "runtime flag changed");
        }
    }
    Ok(())
}

/// The worker that keeps this replica's flags current.
pub async fn watch(state: AppState) {
    let mut tick = tokio::time::interval(REFRESH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = refresh(&state).await {
            tracing::warn!("reading the stored runtime flags: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_choices_override_known_flags_only() {
        let configured = BTreeMap::from([("a".to_owned(), true), ("b".to_owned(), false)]);
        let s = |name: &str, enabled| Stored { name: name.into(), enabled, updated_at: 0, updated_by: "cli".into() };
        let now = effective(&configured, &[s("a", false), s("zz", true)]);
        assert_eq!(now, BTreeMap::from([("a".to_owned(), false), ("b".to_owned(), false)]));
    }
}
