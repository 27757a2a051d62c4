//! The egress proxy every sandbox's HTTP(S) traffic passes.
//!
//! Each sandbox gets its own proxy on the host side of its veth pair; the
//! firewall lets the sandbox reach nothing else. The proxy forwards
//! absolute-form HTTP requests and tunnels CONNECT, enforces the sandbox's
//! [`Policy`] by hostname and by resolved address, and reports every request
//! to an [`EgressSink`] as one [`EgressRecord`].
//!
//! Per request: parse the destination ([`Target`]), [`decide`] (tunnel,
//! forward or refuse), then dial. The egress broker (credentials attached at
//! approved destinations) belongs in the decision step, which consults the
//! [`hook::EgressHooks`] extensions register after the policy.

mod body;
pub mod broker;
mod decide;
mod dial;
mod forward;
mod headers;
pub mod hook;
mod policy;
mod proxy;
mod record;
mod refusal;
mod target;
mod tunnel;

#[cfg(test)]
mod broker_tests;
#[cfg(test)]
mod tests;

pub use decide::{Decision, decide};
pub use policy::{Policy, host_matches};
pub use proxy::{ProxyHandle, spawn};
pub use record::{EgressRecord, EgressSink};
pub use refusal::Refusal;
pub use target::Target;
