//! acs types and storage: the lowest layer. Configuration, the database
//! layer over SQLite and PostgreSQL, secrets sealed at rest, mail, small
//! shared pieces (a TTL cache, metrics, time formats) and rules every
//! layer above shares, such as the address block list. It knows nothing of
//! HTTP, machines or the domain above it (docs/architecture.md).

pub mod blocklist;
pub mod cache;
pub mod config;
pub mod db;
pub mod mail;
pub mod metrics;
pub mod refusal;
pub mod secrets;
pub mod time_fmt;
