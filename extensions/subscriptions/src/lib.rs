//! The `openai_subscriptions` extension (DESIGN 9.6, docs/subscriptions.md):
//! an account's openai subscriptions, linked by device-code sign-in
//! (RFC 8628) at the vendor's sign-in service, tokens sealed at rest and
//! refreshed, exhaustion checked with the vendor, and the tokens offered to
//! core through the platform's [`GrantSource`] ([`source::Subscriptions`]):
//! credential sets name a subscription, codex runs on it, the broker
//! attaches its token.

pub mod config;
mod error;
pub mod model;
mod poller;
mod routes;
pub mod rules;
mod source;
mod store;
mod tokens;
mod vendor;

use std::sync::Arc;

use acs_platform::config::{ConfigError, Loaded};
use acs_platform::db::Backend;
use acs_platform::extension::{
    BoxError, BoxFuture, ExportSink, Extension, Field, GrantSource, Registration, RouteGroup, Worker,
};
use acs_platform::state::AppState;
use sqlx::migrate::Migrator;
use uuid::Uuid;

use config::SubscriptionsConfig;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// The extension's name: its flag, section, migration history and 404.
pub const NAME: &str = "openai_subscriptions";
/// Where its configuration is (DESIGN 9.6): `[subscriptions.openai]`.
pub const SECTION: &str = "subscriptions.openai";
/// Core's flag for the egress broker, which attaches the tokens.
pub const BROKERAGE: &str = "brokerage";

/// A new link may start: the flag and the broker are on.
pub fn linking_enabled(state: &AppState) -> bool {
    state.feature_enabled(NAME) && state.feature_enabled(BROKERAGE)
}

pub struct Subscriptions;

inventory::submit! { Registration(&Subscriptions) }

impl Extension for Subscriptions {
    fn name(&self) -> &'static str {
        NAME
    }

    fn enabled_by_default(&self) -> bool {
        false
    }

    fn config_section(&self) -> &'static str {
        SECTION
    }

    fn config_defaults(&self) -> Option<serde_json::Value> {
        serde_json::to_value(SubscriptionsConfig::default()).ok()
    }

    fn check_config(&self, loaded: &Loaded) -> Result<(), ConfigError> {
        let config: SubscriptionsConfig = loaded.section(SECTION)?;
        let invalid = |key: &str, message: &str| ConfigError::Invalid {
            key: format!("{SECTION}.{key}"),
            message: message.to_owned(),
        };
        for (key, url) in
            [("device_url", &config.device_url), ("token_url", &config.token_url), ("usage_url", &config.usage_url)]
        {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(invalid(key, "must be an http(s) address"));
            }
        }
        if config.poll_interval < 1 {
            return Err(invalid("poll_interval", "must be at least 1"));
        }
        if config.attempt_ttl_seconds < 1 {
            return Err(invalid("attempt_ttl_seconds", "must be at least 1"));
        }
        if config.renew_every_seconds < 1 {
            return Err(invalid("renew_every_seconds", "must be at least 1"));
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
        &[("openai-subscriptions", "openai subscriptions linked by device-code sign-in, for codex runs")]
    }

    fn routes(&self) -> Vec<RouteGroup> {
        // Only starting a sign-in needs the flag (a reconnect does not); the
        // handler checks it, so the group is served with the flag off.
        vec![RouteGroup::account(routes::router()).ungated()]
    }

    fn grant_source(&self) -> Option<Arc<dyn GrantSource>> {
        Some(Arc::new(source::Subscriptions))
    }

    fn me_fields(&self) -> Vec<Field> {
        vec![Field::boolean(
            "openai_subscriptions_enabled",
            // The description the host gives the field when no extension supplies it:
            // the answer's schema is the same in every build.
            "Linking openai subscriptions is on.",
            |state, _| linking_enabled(state),
        )]
    }

    fn workers(&self, state: &AppState) -> Vec<Worker> {
        vec![Box::pin(poller::run(state.clone()))]
    }

    fn on_account_deleted<'a>(&'a self, state: &'a AppState, account_id: Uuid) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move { Ok(store::delete_account(state, account_id).await?) })
    }

    /// The account's subscriptions as the API shows them: never a token.
    fn on_export<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        out: &'a mut dyn ExportSink,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            out.begin_list("openai_subscriptions").await?;
            for row in store::subscriptions(state, account_id).await? {
                out.item(&serde_json::to_value(row.view())?).await?;
            }
            out.end_list().await
        })
    }
}
