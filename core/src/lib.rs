//! acs core: everything every build of the Agent Computer Service has.
//!
//! Extensions (crates under `extensions/`) plug into the server through the
//! [`extension::Extension`] trait and `inventory`; see `DESIGN.md` section 2.

pub mod accounts;
pub mod agents;
pub mod audit;
pub mod auth;
pub mod catalog;
pub mod conversations;
pub mod credentials;
pub mod credits;
pub mod docs;
pub mod environments;
pub mod error;
pub mod events;
pub mod extension;
pub mod health;
pub mod http;
pub mod inference;
pub mod keys;
pub mod queue;
pub mod ratelimit;
pub mod replicas;
pub mod sandboxes;
pub mod search;
pub mod server;
pub mod state;
pub mod team;
pub mod vaults;

// The lower layers, under the paths every module of this crate (and the
// tests) already use.
pub use acs_machine::{acp, egress, provider, runtimes};
pub use acs_store::{blocklist, cache, db, mail, metrics, refusal, secrets, time_fmt};

/// The configuration of this build: acs-store's, with the sections and
/// flags of the compiled-in extensions.
pub mod config {
    use std::path::Path;

    pub use acs_store::config::*;

    pub fn sections() -> Vec<Section> {
        crate::extension::all()
            .iter()
            .map(|e| Section {
                name: e.name(),
                enabled_by_default: e.enabled_by_default(),
                defaults: e.config_defaults(),
                env_aliases: e.env_aliases(),
            })
            .collect()
    }

    /// Defaults, then the file, then the environment.
    pub fn figment(file: Option<&Path>) -> figment::Figment {
        figment_with(file, &sections())
    }

    /// Loads and checks the configuration, every extension's section included.
    pub fn load(file: Option<&Path>) -> Result<Loaded, ConfigError> {
        check_extensions(load_with(file, &sections())?)
    }

    /// Checks a figment stack, every extension's section included.
    pub fn from_figment(figment: figment::Figment) -> Result<Loaded, ConfigError> {
        check_extensions(from_figment_with(figment, &sections())?)
    }

    /// Each compiled-in extension checks its section, whether its flag is on
    /// or not: a flag turned on later must not meet a section that was never valid.
    fn check_extensions(loaded: Loaded) -> Result<Loaded, ConfigError> {
        for ext in crate::extension::all() {
            ext.check_config(&loaded)?;
        }
        Ok(loaded)
    }
}

pub use error::{ApiError, ApiResult};
pub use extension::Extension;
pub use state::AppState;

/// Re-exported so extensions submit with the same `inventory` version as core.
pub use inventory;
