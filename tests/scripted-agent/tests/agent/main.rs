//! Integration tests: spawn the built agent and assert the exact JSON-RPC lines it writes.

mod protocol;
mod support;
mod turns;
