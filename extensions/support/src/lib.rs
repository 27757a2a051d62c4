//! The `support` extension: problem reports from users, forwarded to an
//! operator-configured issue tracker endpoint by a background worker.
//!
//! It is also the smallest whole extension: routes, a config section, a
//! flag, its own table, `init` state, an account-deletion hook and a worker.

mod forward;
mod reports;
mod triage;

use std::sync::Arc;

use acs_platform::AppState;
use acs_platform::config::{ConfigError, Loaded};
use acs_platform::db::Backend;
use acs_platform::extension::{BoxError, BoxFuture, Extension, ExtensionState, Registration, RouteGroup, Worker};
use serde::{Deserialize, Serialize};
use sqlx::migrate::Migrator;
use tokio::sync::Notify;
use uuid::Uuid;

/// The `[support]` configuration section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SupportConfig {
    /// Where reports are POSTed as JSON; unset keeps reports in `new`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward_url: Option<String>,
    /// Sent as `Authorization: Bearer <token>` to the tracker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward_token: Option<String>,
    /// First retry delay; it doubles with each failed attempt.
    pub retry_seconds: u64,
    /// Attempts before a report stays `failed`.
    pub max_attempts: i64,
}

impl Default for SupportConfig {
    fn default() -> Self {
        SupportConfig { forward_url: None, forward_token: None, retry_seconds: 60, max_attempts: 8 }
    }
}

/// Per-server runtime state.
pub(crate) struct Runtime {
    pub config: SupportConfig,
    /// Wakes the forwarding worker when a report arrives.
    pub wake: Notify,
}

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// The extension's name: its flag, section and migration history.
pub(crate) const NAME: &str = "support";

pub struct Support;

inventory::submit! { Registration(&Support) }

impl Extension for Support {
    fn name(&self) -> &'static str {
        NAME
    }

    fn config_defaults(&self) -> Option<serde_json::Value> {
        serde_json::to_value(SupportConfig::default()).ok()
    }

    fn tags(&self) -> &'static [(&'static str, &'static str)] {
        &[("support", "Problem reports, forwarded to the operator's tracker; operators triage them")]
    }

    fn routes(&self) -> Vec<RouteGroup> {
        vec![RouteGroup::account(reports::router()), RouteGroup::operator(triage::router())]
    }

    fn migrations(&self, backend: Backend) -> Option<&'static Migrator> {
        Some(match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        })
    }

    fn check_config(&self, loaded: &Loaded) -> Result<(), ConfigError> {
        let config: SupportConfig = loaded.section("support")?;
        let invalid = |key: &str, message: String| ConfigError::Invalid { key: format!("support.{key}"), message };
        if let Some(url) = &config.forward_url {
            reqwest::Url::parse(url).map_err(|e| invalid("forward_url", e.to_string()))?;
        }
        if config.max_attempts < 1 || config.retry_seconds < 1 {
            return Err(invalid("max_attempts", "max_attempts and retry_seconds must be at least 1".into()));
        }
        Ok(())
    }

    fn init<'a>(&'a self, state: &'a AppState) -> BoxFuture<'a, Result<Option<ExtensionState>, BoxError>> {
        // Checked when the configuration was loaded.
        Box::pin(async move {
            let config: SupportConfig = state.loaded.section("support")?;
            Ok(Some(Arc::new(Runtime { config, wake: Notify::new() }) as ExtensionState))
        })
    }

    fn on_account_deleted<'a>(&'a self, state: &'a AppState, account_id: Uuid) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            sqlx::query("DELETE FROM support_reports WHERE account_id = $1")
                .bind(account_id.to_string())
                .execute(&state.db.pool)
                .await?;
            Ok(())
        })
    }

    fn workers(&self, state: &AppState) -> Vec<Worker> {
        match state.get::<Runtime>() {
            Some(rt) => vec![Box::pin(forward::run(state.clone(), rt))],
            None => Vec::new(),
        }
    }
}

pub(crate) fn runtime(state: &AppState) -> Option<Arc<Runtime>> {
    state.get::<Runtime>()
}
