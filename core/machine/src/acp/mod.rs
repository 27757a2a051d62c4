//! The client side of the Agent Client Protocol, as the server speaks it to an agent in a sandbox.
//!
//! We own the types ([`types`]) instead of using the `agent-client-protocol` crate: real runtimes send
//! fields the newest schema lacks (`models`, `_meta.quota`, unknown update kinds), so every type here is
//! lenient. [`rpc`] is a JSON-RPC 2.0 line connection over any transport, [`attach`] adapts a sandboxd
//! attachment to it, and [`client`] drives one agent session (handshake, config, turns).

pub mod attach;
pub mod client;
mod lines;
pub mod rpc;
pub mod types;

#[cfg(test)]
mod fake_agent;
