//! acs platform: what every server module and every extension builds on.
//! The server state, errors and the HTTP toolkit (extractors, envelopes,
//! middleware, OpenAPI finishing), identity (accounts, API keys,
//! authentication), the audit log, credits, the event log with its live
//! fan-out and hooks, and the extension contract. It knows nothing of
//! agents, machines' lifecycles or conversations (`acs-core`, above it);
//! extensions depend on this crate only (docs/architecture.md, "Layers").

pub mod accounts;
pub mod apply;
pub mod audit;
pub mod auth;
pub mod boxed;
pub mod console;
pub mod credits;
pub mod device;
pub mod docs;
pub mod error;
pub mod events;
pub mod extension;
pub mod features;
pub mod http;
pub mod journal;
pub mod keys;
pub mod oauth;
pub mod principal;
pub mod ratelimit;
pub mod session;
pub mod state;

// The lower layers, under the paths every module (and every extension) uses.
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

/// Re-exported so extensions submit with the same `inventory` version as the host.
pub use inventory;
