//! Sandbox providers: the machines conversations run on.

pub mod local;
