//! acs core: everything every build of the Agent Computer Service has.
//!
//! Extensions (crates under `extensions/`) plug into the server through the
//! [`extension::Extension`] trait and `inventory`; see `DESIGN.md` section 2.

pub mod accounts;
pub mod agents;
pub mod audit;
pub mod auth;
pub mod boxed;
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
pub mod journal;
pub mod keys;
pub mod principal;
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

/// Configuration types (acs-store's). Loading them with the compiled-in
/// extensions' sections is `extension::config`.
pub mod config {
    pub use acs_store::config::*;
}

pub use error::{ApiError, ApiResult};
pub use extension::Extension;
pub use state::AppState;

/// Re-exported so extensions submit with the same `inventory` version as core.
pub use inventory;
