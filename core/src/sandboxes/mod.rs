//! Sandboxes: the API resource, provisioning and lifecycle.

pub mod git;
pub mod names;
pub mod redact;
