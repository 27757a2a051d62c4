//! Sandboxes: the API resource (spec 2.3, DESIGN section 3), provisioning
//! and lifecycle. Handlers are thin; the moves live in `service`, the
//! build stages in `provision`, the reads in `reads`.

pub mod git;
pub mod names;
pub mod redact;
#[cfg(any())]
mod api;
