//! The `acs` binary's library: core plus the extensions chosen by Cargo
//! features, and the command line. Integration tests link this crate, so
//! they see exactly the extensions the binary has.

pub mod cli;

pub use acs_core as core;

// An extension crate that is not named here is not linked, and its
// `inventory::submit!` would silently vanish (DESIGN section 8).
#[cfg(feature = "support")]
use acs_ext_support as _;
#[cfg(feature = "webhooks")]
use acs_ext_webhooks as _;
