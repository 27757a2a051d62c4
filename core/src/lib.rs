//! acs core: the domain every build of the Agent Computer Service has.
//! Agents, environments, vaults and credential sets, sandboxes, model
//! credential resolution, conversations and their engine, the sandbox
//! queue, teammates and schedules, replicas, search and the catalog, and
//! the server assembly that hosts the extensions. It stands on
//! `acs-platform`, whose modules it re-exports under the same paths, so
//! `acs_core::http`, `acs_core::events`, ... name one thing in every crate
//! (docs/architecture.md, "Layers").

pub mod account;
pub mod agents;
pub mod apply;
pub mod broker;
pub mod catalog;
pub mod claimable;
pub mod console;
pub mod conversations;
pub mod credentials;
pub mod environments;
pub mod health;
pub mod inference;
pub mod queue;
pub mod replicas;
pub mod runners;
pub mod sandboxes;
pub mod search;
pub mod server;
pub mod team;
pub mod vaults;

pub use acs_platform::{
    ApiError, ApiResult, AppState, Extension, accounts, acp, audit, auth, blocklist, boxed, cache, config, credits, db,
    device, docs, egress, error, events, extension, features, http, inventory, journal, keys, mail, metrics, oauth,
    principal, provider, ratelimit, refusal, runtimes, secrets, session, state, time_fmt,
};
