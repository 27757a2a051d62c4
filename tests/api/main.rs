//! Black-box tests: the real server on 127.0.0.1:0, spoken to over HTTP,
//! each test once on SQLite and once on a fresh PostgreSQL database.

mod common;

mod accounts;
mod agents;
mod cli;
mod conversations;
mod credentials;
mod docs;
mod environments;
mod errors;
mod events;
mod health_audit;
mod isolation;
mod keys;
mod limits;
mod receiver;
mod sandboxes;
mod search;
mod support;
mod turns;
mod vaults;
mod webhooks;
