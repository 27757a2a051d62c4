//! The webhook receiver lives in the `acs-testkit` crate.

pub use acs_testkit::receiver::*;
