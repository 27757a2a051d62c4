//! acs core: everything every build of the Agent Computer Service has.
//!
//! Extensions (crates under `extensions/`) plug into the server through the
//! [`extension::Extension`] trait and `inventory`; see `DESIGN.md` section 2.

pub mod accounts;
pub mod acp;
pub mod agents;
pub mod audit;
pub mod auth;
pub mod blocklist;
pub mod cache;
pub mod catalog;
pub mod config;
pub mod conversations;
pub mod credentials;
pub mod credits;
pub mod db;
pub mod docs;
pub mod egress;
pub mod environments;
pub mod error;
pub mod events;
pub mod extension;
pub mod health;
pub mod http;
pub mod inference;
pub mod keys;
pub mod mail;
pub mod metrics;
pub mod provider;
pub mod queue;
pub mod ratelimit;
pub mod replicas;
pub mod runtimes;
pub mod sandboxes;
pub mod search;
pub mod secrets;
pub mod server;
pub mod state;
pub mod team;
pub mod time_fmt;
pub mod vaults;
pub mod webhooks;

pub use error::{ApiError, ApiResult};
pub use extension::Extension;
pub use state::AppState;

/// Re-exported so extensions submit with the same `inventory` version as core.
pub use inventory;
