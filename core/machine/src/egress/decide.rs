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
    /// CONNECT to a host with an enabled secret binding: the broker
    /// terminates TLS and attaches the credential.
    Intercept,
    Refuse(Refusal),
}

/// `bound`: the broker has an enabled binding for the host, which then needs
/// no `allowed_hosts` entry.
pub fn decide(policy: &Policy, sandbox_id: Uuid, method: &Method, target: &Target, bound: bool) -> Decision {
    if !bound && !policy.host_allowed(target) {
        Decision::Refuse(Refusal::HostNotAllowed)
    } else if let Some(refusal) = policy.hooks.decide(sandbox_id, method, target) {
        Decision::Refuse(refusal)
    } else if bound {
        Decision::Intercept
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
            overrides: vec![],
            hooks: Default::default(),
            broker: None,
        };
        let allowed = Target::parse("example.com:443", None).unwrap();
        let other = Target::parse("example.org:443", None).unwrap();
        let id = Uuid::nil();
        assert_eq!(decide(&policy, id, &Method::CONNECT, &allowed, false), Decision::Tunnel);
        assert_eq!(decide(&policy, id, &Method::POST, &allowed, false), Decision::Forward);
        assert_eq!(decide(&policy, id, &Method::GET, &other, false), Decision::Refuse(Refusal::HostNotAllowed));
        assert_eq!(decide(&policy, id, &Method::CONNECT, &other, false), Decision::Refuse(Refusal::HostNotAllowed));
        assert_eq!(
            decide(&policy, id, &Method::CONNECT, &other, true),
            Decision::Intercept,
            "a bound host needs no entry"
        );
        assert_eq!(decide(&policy, id, &Method::CONNECT, &allowed, true), Decision::Intercept);
    }
}
