//! The connections extension's black-box tests: the real server, with this
//! extension linked, on 127.0.0.1:0, each test once on SQLite and once on a
//! fresh PostgreSQL database (acs-testkit), against a real OAuth provider
//! (panva's oidc-provider, `tests/provider`; `npm ci` there first).

// Linked for its `inventory` registration.
use acs_ext_connections as _;

pub use acs_testkit::both;

mod broker;
mod common;
mod flow;
mod providers;
mod refresh;
