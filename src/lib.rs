//! The `acs` binary's library: core plus the extensions chosen by Cargo
//! features, and the command line. Integration tests link this crate, so
//! they see exactly the extensions the binary has.

pub mod cli;
pub mod client;
pub mod runner;

pub use acs_core as core;

// An extension crate that is not named here is not linked, and its
// `inventory::submit!` would silently vanish (DESIGN section 8).
#[cfg(feature = "admin")]
use acs_ext_admin as _;
#[cfg(feature = "chat-relay")]
use acs_ext_chat_relay as _;
#[cfg(feature = "connections")]
use acs_ext_connections as _;
#[cfg(feature = "subscriptions")]
use acs_ext_subscriptions as _;
#[cfg(feature = "support")]
use acs_ext_support as _;
#[cfg(feature = "webhooks")]
use acs_ext_webhooks as _;

// Fields the interface specification names on `GET /api/auth/me` that belong
// to extensions this build may lack (connections, subscriptions): `false`
// until a compiled-in extension supplies them.
use acs_core::extension::{Answer, SpecField};
acs_core::inventory::submit! {
    SpecField { answer: Answer::Me, name: "connections_enabled", description: "Connection providers are on." }
}
acs_core::inventory::submit! {
    SpecField {
        answer: Answer::Me,
        name: "connections_manageable",
        description: "Connections are on and this key may manage them.",
    }
}
acs_core::inventory::submit! {
    SpecField {
        answer: Answer::Me,
        name: "openai_subscriptions_enabled",
        description: "Linking openai subscriptions is on.",
    }
}
