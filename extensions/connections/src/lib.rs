//! The `connections` extension (DESIGN 9.5, docs/connections.md): an
//! account's OAuth providers, connections made by signing in to them in a
//! browser (authorization code with PKCE), tokens sealed at rest and
//! refreshed before they expire, and those tokens offered to core's secret
//! bindings as `{"connection_id": ...}` values ([`source::Connections`]).

pub mod config;
mod connections;
mod error;
mod flow;
pub mod model;
mod providers;
mod refresh;
pub mod rules;
mod source;
mod store;
mod upstream;

use std::sync::Arc;

use acs_platform::auth::Scope;
use acs_platform::config::{ConfigError, Loaded};
use acs_platform::db::Backend;
use acs_platform::extension::{
    BindingSource, BoxError, BoxFuture, ExportSink, Extension, Field, Registration, RouteGroup, Worker,
};
use acs_platform::state::AppState;
use sqlx::migrate::Migrator;
use uuid::Uuid;

use config::ConnectionsConfig;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// The extension's name: its flag, section, migration history and 404.
pub const NAME: &str = "connections";

pub struct Connections;

inventory::submit! { Registration(&Connections) }

impl Extension for Connections {
    fn name(&self) -> &'static str {
        NAME
    }

    fn enabled_by_default(&self) -> bool {
        false
    }

    fn config_defaults(&self) -> Option<serde_json::Value> {
        serde_json::to_value(ConnectionsConfig::default()).ok()
    }

    fn check_config(&self, loaded: &Loaded) -> Result<(), ConfigError> {
        let config: ConnectionsConfig = loaded.section(NAME)?;
        let invalid = |key: &str, message: &str| ConfigError::Invalid {
            key: format!("{NAME}.{key}"),
            message: message.to_owned(),
        };
        if config.poll_seconds < 1 {
            return Err(invalid("poll_seconds", "must be at least 1"));
        }
        if config.attempt_ttl_seconds < 60 {
            return Err(invalid("attempt_ttl_seconds", "must be at least 60"));
        }
        Ok(())
    }

    fn migrations(&self, backend: Backend) -> Option<&'static Migrator> {
        Some(match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        })
    }

    fn tags(&self) -> &'static [(&'static str, &'static str)] {
        &[("connections", "Connections: OAuth sign-ins to third-party providers whose tokens secret bindings attach")]
    }

    fn routes(&self) -> Vec<RouteGroup> {
        vec![
            // Creating, changing and discovering a provider need the flag;
            // the handlers check it, since reads and deletes on the same
            // paths stay open with it off.
            RouteGroup::account(providers::router().merge(connections::router())).ungated(),
            RouteGroup::session(flow::router()),
        ]
    }

    fn binding_source(&self) -> Option<Arc<dyn BindingSource>> {
        Some(Arc::new(source::Connections))
    }

    fn me_fields(&self) -> Vec<Field> {
        vec![
            Field::boolean("connections_enabled", "Connection providers are on.", |state, _| {
                state.feature_enabled(NAME)
            }),
            Field::boolean("connections_manageable", "Connections are on and this key may manage them.", |state, p| {
                state.feature_enabled(NAME) && p.scope == Scope::Full && p.sandbox_id.is_none()
            }),
        ]
    }

    fn workers(&self, state: &AppState) -> Vec<Worker> {
        vec![Box::pin(refresh::run(state.clone()))]
    }

    fn on_account_deleted<'a>(&'a self, state: &'a AppState, account_id: Uuid) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move { Ok(store::delete_account(state, account_id).await?) })
    }

    /// The account's providers and connections as the API shows them: never
    /// a client secret or a token.
    fn on_export<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        out: &'a mut dyn ExportSink,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            out.begin_list("connection_providers").await?;
            for row in store::providers(state, account_id).await? {
                out.item(&serde_json::to_value(row.view())?).await?;
            }
            out.end_list().await?;
            out.begin_list("connections").await?;
            for row in store::connections(state, account_id).await? {
                out.item(&serde_json::to_value(row.view())?).await?;
            }
            out.end_list().await
        })
    }
}
