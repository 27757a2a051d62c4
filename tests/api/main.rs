//! Black-box tests: the real server on 127.0.0.1:0, spoken to over HTTP,
//! each test once on SQLite and once on a fresh PostgreSQL database.

mod common;

pub use acs_testkit::both;

mod accounts;
mod admin;
mod agents;
mod apply;
mod attach;
mod broker;
mod callback_key;
mod capacity;
mod claimable;
mod cli;
mod console;
mod console_pages;
mod conversations;
mod credentials;
mod credits;
mod docs;
mod environments;
mod errors;
mod escape;
mod escape_network;
mod events;
mod health_audit;
mod isolation;
mod keys;
mod lifecycle;
mod limits;
mod migrations;
mod oauth;
mod permissions;
mod pools;
mod queue;
mod reapply;
mod receiver;
mod redaction;
mod replicas;
mod runners;
mod runtimes;
mod sandboxes;
mod schedules;
mod search;
mod selection;
mod session_config;
mod sessions;
mod team;
mod turns;
mod vaults;
