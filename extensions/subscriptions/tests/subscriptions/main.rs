//! The subscriptions extension's black-box tests: the real server, with this
//! extension linked, on 127.0.0.1:0, each test once on SQLite and once on a
//! fresh PostgreSQL database (acs-testkit), against a fake vendor speaking
//! real RFC 8628 (panva's oidc-provider with the device flow, `tests/provider`;
//! `npm ci` there first).

// Linked for its `inventory` registration.
use acs_ext_subscriptions as _;

pub use acs_testkit::both;

mod attempts;
mod common;
mod config;
mod grants;
mod limits;
mod runtimes;
mod turns;
