//! The shared harness lives in the `acs-testkit` crate, so extension crates test with it too.

pub use acs_testkit::*;
