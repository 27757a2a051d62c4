//! The extension contract.
//!
//! An extension is a value implementing [`Extension`], submitted with
//! `inventory::submit! { acs_core::extension::Registration(&MyExtension) }`.
//! At start the server walks the inventory (sorted by name), mounts each
//! extension's routes, merges their OpenAPI paths and spawns their workers.
//! A compiled-in extension whose runtime flag (`features.<name>`) is off keeps
//! its routes, which answer `404 <name>_not_enabled`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

use crate::config::{ConfigError, Loaded};
use crate::events::hooks::OnAppend;
use crate::state::AppState;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A long-running task; it must end soon after `state.shutdown` is cancelled.
pub type Worker = BoxFuture<'static, ()>;

pub trait Extension: Send + Sync + 'static {
    /// Unique name; also its runtime flag (`features.<name>`) and config section.
    fn name(&self) -> &'static str;

    /// Whether the runtime flag is on when the configuration says nothing.
    fn enabled_by_default(&self) -> bool {
        true
    }

    /// Defaults of the extension's `[<name>]` configuration section, if it has one.
    fn config_defaults(&self) -> Option<serde_json::Value> {
        None
    }

    /// Checks its section when the configuration is loaded, whether or not
    /// its flag is on (typically `loaded.section::<ItsConfig>(name)` and its
    /// rules): an unknown key or a bad value stops the start, naming it.
    fn check_config(&self, _loaded: &Loaded) -> Result<(), ConfigError> {
        Ok(())
    }

    /// Environment variables read as keys of its section: `(variable, key)`.
    fn env_aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Runs inside every event append's transaction while the flag is on
    /// (`events::hooks`): what must commit with the events.
    fn on_append(&self) -> Option<Arc<dyn OnAppend>> {
        None
    }

    /// Routes, all behind bearer authentication, documented in `/api/docs`.
    fn routes(&self) -> OpenApiRouter<AppState>;

    /// Runs once before the server accepts requests; an error stops the start.
    fn on_start<'a>(&'a self, _state: &'a AppState) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }

    /// Runs once after the server stopped accepting requests.
    fn on_stop<'a>(&'a self, _state: &'a AppState) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Runs when an account is deleted, before its rows are removed.
    fn on_account_deleted<'a>(
        &'a self,
        _state: &'a AppState,
        _account_id: Uuid,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }

    /// Background workers, spawned after `on_start` when the flag is on.
    fn workers(&self, _state: &AppState) -> Vec<Worker> {
        Vec::new()
    }
}

/// What an extension submits to the inventory.
pub struct Registration(pub &'static dyn Extension);

inventory::collect!(Registration);

/// Every compiled-in extension, sorted by name (inventory order is not fixed).
pub fn all() -> Vec<&'static dyn Extension> {
    let mut v: Vec<&'static dyn Extension> = inventory::iter::<Registration>.into_iter().map(|r| r.0).collect();
    v.sort_by_key(|e| e.name());
    v
}

/// Refuses two extensions with one name, so a flag or section is never ambiguous.
pub fn check_unique(exts: &[&'static dyn Extension]) -> Result<(), String> {
    for pair in exts.windows(2) {
        if pair[0].name() == pair[1].name() {
            return Err(format!("two extensions are named `{}`", pair[0].name()));
        }
    }
    Ok(())
}
