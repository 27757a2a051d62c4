//! Egress decisions that are not the machine's own policy: an extension (the
//! egress broker, for one) sees every request the policy allowed and may
//! refuse it. Hooks run in order; the first refusal wins.

use std::sync::Arc;

use hyper::Method;
use uuid::Uuid;

use super::refusal::Refusal;
use super::target::Target;

pub trait EgressHook: Send + Sync {
    /// `None` lets the request go on; `Some` refuses it with that answer.
    fn decide(&self, sandbox_id: Uuid, method: &Method, target: &Target) -> Option<Refusal>;
}

/// The hooks a proxy consults, compared by identity.
#[derive(Clone, Default)]
pub struct EgressHooks(pub Vec<Arc<dyn EgressHook>>);

impl EgressHooks {
    pub fn decide(&self, sandbox_id: Uuid, method: &Method, target: &Target) -> Option<Refusal> {
        self.0.iter().find_map(|hook| hook.decide(sandbox_id, method, target))
    }
}

impl std::fmt::Debug for EgressHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EgressHooks({})", self.0.len())
    }
}

impl PartialEq for EgressHooks {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

impl Eq for EgressHooks {}
