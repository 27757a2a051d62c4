//! The `admin` extension: operators run the deployment from the API
//! (DESIGN 9.4). Operators are the accounts listed in `admin.operators`
//! (with a full-scope key) or holders of operator keys minted on the
//! database with `acs admin key create`; `/api/admin/*` refuses everyone
//! else with 403 `insufficient_scope`, and an operator key is no account's
//! key, so every account route refuses it (401). See `docs/admin.md`.

mod accounts;
mod cli;
mod features;
mod fleet;
mod operators;

use std::sync::Arc;

use acs_platform::AppState;
use acs_platform::auth::OperatorGate;
use acs_platform::config::{ConfigError, Loaded};
use acs_platform::db::Backend;
use acs_platform::extension::{BoxError, BoxFuture, CliCommand, Extension, ExtensionState, Registration, RouteGroup};
use serde::{Deserialize, Serialize};
use sqlx::migrate::Migrator;
use utoipa_axum::router::OpenApiRouter;

/// The `[admin]` configuration section.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminConfig {
    /// Emails of the accounts that are operators (compared without case).
    pub operators: Vec<String>,
}

/// What the gate reads while the flag is on.
pub(crate) struct Runtime {
    /// `admin.operators`, lower-cased.
    pub operators: Vec<String>,
}

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// The extension's name: its flag, section and migration history.
pub(crate) const NAME: &str = "admin";

pub struct Admin;

inventory::submit! { Registration(&Admin) }

impl Extension for Admin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn config_defaults(&self) -> Option<serde_json::Value> {
        serde_json::to_value(AdminConfig::default()).ok()
    }

    fn check_config(&self, loaded: &Loaded) -> Result<(), ConfigError> {
        let config: AdminConfig = loaded.section("admin")?;
        if let Some(bad) = config.operators.iter().find(|e| !e.contains('@')) {
            return Err(ConfigError::Invalid {
                key: "admin.operators".into(),
                message: format!("{bad:?} is not an email address"),
            });
        }
        Ok(())
    }

    fn tags(&self) -> &'static [(&'static str, &'static str)] {
        &[("admin", "Operators: accounts, credits and comps, OAuth client publishing, runtime flags, the fleet")]
    }

    fn routes(&self) -> Vec<RouteGroup> {
        let router = OpenApiRouter::new().merge(accounts::router()).merge(features::router()).merge(fleet::router());
        vec![RouteGroup::operator(router)]
    }

    fn migrations(&self, backend: Backend) -> Option<&'static Migrator> {
        Some(match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        })
    }

    fn init<'a>(&'a self, state: &'a AppState) -> BoxFuture<'a, Result<Option<ExtensionState>, BoxError>> {
        Box::pin(async move {
            let config: AdminConfig = state.loaded.section("admin")?;
            let operators = config.operators.iter().map(|e| e.trim().to_lowercase()).collect();
            state.put_any(Arc::new(OperatorGate(|state, token, ip| Box::pin(operators::admit(state, token, ip)))));
            Ok(Some(Arc::new(Runtime { operators }) as ExtensionState))
        })
    }

    fn commands(&self) -> Vec<CliCommand> {
        vec![CliCommand { command: cli::command, run: |loaded, matches| Box::pin(cli::run(loaded, matches)) }]
    }
}
