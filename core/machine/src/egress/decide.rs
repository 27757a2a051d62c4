//! The per-request decision: what the proxy does with a request once it knows
//! the destination. The egress broker extends this step (attach bound
//! credentials at approved destinations) without touching the transport.

use hyper::Method;
use uuid::Uuid;

use super::policy::Policy;
use super::refusal::Refusal;
use super::target::Target;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// CONNECT: open a byte tunnel to the destination.
    Tunnel,
    /// Absolute-form request: send it upstream and stream the answer back.
    Forward,
    Refuse(Refusal),
}

pub fn decide(policy: &Policy, sandbox_id: Uuid, method: &Method, target: &Target) -> Decision {
    if !policy.host_allowed(target) {
        Decision::Refuse(Refusal::HostNotAllowed)
    } else if let Some(refusal) = policy.hooks.decide(sandbox_id, method, target) {
        Decision::Refuse(refusal)
    } else if method == Method::CONNECT {
        Decision::Tunnel
    } else {
        Decision::Forward
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions() {
        let policy = Policy {
            allow_all: false,
            allowed_hosts: vec!["example.com".into()],
            always_allowed: vec![],
            addresses: acs_store::blocklist::AddressRules::blocking(vec![]),
            aliases: vec![],
            hooks: Default::default(),
        };
        let allowed = Target::parse("example.com:443", None).unwrap();
        let other = Target::parse("example.org:443", None).unwrap();
        assert_eq!(decide(&policy, Uuid::nil(), &Method::CONNECT, &allowed), Decision::Tunnel);
        assert_eq!(decide(&policy, Uuid::nil(), &Method::POST, &allowed), Decision::Forward);
        assert_eq!(decide(&policy, Uuid::nil(), &Method::GET, &other), Decision::Refuse(Refusal::HostNotAllowed));
        assert_eq!(decide(&policy, Uuid::nil(), &Method::CONNECT, &other), Decision::Refuse(Refusal::HostNotAllowed));
    }
}
