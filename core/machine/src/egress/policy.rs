//! The network policy of one sandbox: which hosts it may name and which
//! addresses the proxy may dial for it. Pure rules; the proxy applies them.

use std::net::IpAddr;

use super::target::{Target, normalize_host};
use acs_store::blocklist::AddressRules;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Networking type `unrestricted` (and provisioning): every host may be named.
    pub allow_all: bool,
    /// Networking type `limited`: an exact host, or `*.example.com` for any subdomain (not the
    /// apex); case-insensitive, trailing dot ignored. Empty denies every host.
    pub allowed_hosts: Vec<String>,
    /// `host:port` pairs always reachable, also past `addresses` (the acs API origin).
    pub always_allowed: Vec<String>,
    /// Which resolved addresses may be dialed, unless the destination is in `always_allowed`.
    pub addresses: AddressRules,
    /// `host:port` names the proxy maps to a fixed address instead of looking
    /// them up (the acs API as machines see it); always allowed.
    pub aliases: Vec<(String, std::net::SocketAddr)>,
    /// Hosts resolved to a fixed address instead of looked up, like a hosts
    /// file (`sandbox.host_overrides`); the address rules still apply.
    pub overrides: Vec<(String, IpAddr)>,
    /// Decisions extensions add once the policy allowed a host.
    pub hooks: super::hook::EgressHooks,
    /// The egress broker, on a brokered machine.
    pub broker: Option<super::broker::BrokerRef>,
}

impl Policy {
    /// Whether the sandbox may name this destination at all.
    pub fn host_allowed(&self, target: &Target) -> bool {
        self.allow_all
            || self.is_always_allowed(target)
            || self.allowed_hosts.iter().any(|pattern| host_matches(pattern, target.host()))
    }

    pub fn is_always_allowed(&self, target: &Target) -> bool {
        self.alias(target).is_some()
            || self.always_allowed.iter().any(|entry| Target::parse(entry, None).as_ref() == Some(target))
    }

    /// The fixed address of an aliased target.
    pub fn alias(&self, target: &Target) -> Option<std::net::SocketAddr> {
        self.aliases.iter().find(|(name, _)| Target::parse(name, None).as_ref() == Some(target)).map(|(_, a)| *a)
    }

    /// The fixed address of an overridden host.
    pub fn override_of(&self, host: &str) -> Option<IpAddr> {
        self.overrides.iter().find(|(name, _)| normalize_host(name) == host).map(|(_, ip)| *ip)
    }

    /// Whether the proxy may connect to `ip` on the way to `target`.
    pub fn address_allowed(&self, target: &Target, ip: IpAddr) -> bool {
        self.is_always_allowed(target) || self.addresses.allows(ip)
    }
}

/// `pattern` is an exact host or `*.suffix` (any subdomain of suffix, not suffix itself);
/// `host` is already normalised.
pub fn host_matches(pattern: &str, host: &str) -> bool {
    let pattern = normalize_host(pattern);
    match pattern.strip_prefix("*.") {
        Some(suffix) => host
            .strip_suffix(suffix)
            .and_then(|labels| labels.strip_suffix('.'))
            .is_some_and(|labels| !labels.is_empty() && !labels.ends_with('.')),
        None => !pattern.is_empty() && pattern == host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limited(hosts: &[&str]) -> Policy {
        Policy {
            allow_all: false,
            allowed_hosts: hosts.iter().map(|h| h.to_string()).collect(),
            always_allowed: vec![],
            addresses: AddressRules::exempting(vec![]),
            aliases: vec![],
            overrides: vec![],
            hooks: Default::default(),
            broker: None,
        }
    }

    fn target(s: &str) -> Target {
        Target::parse(s, Some(443)).unwrap()
    }

    #[test]
    fn host_matching_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("example.com", "example.com", true),
            ("example.com", "www.example.com", false),
            ("example.com", "example.org", false),
            ("example.com", "notexample.com", false),
            ("Example.COM", "example.com", true),
            ("example.com.", "example.com", true),
            ("*.example.com", "www.example.com", true),
            ("*.example.com", "a.b.example.com", true),
            ("*.example.com", "example.com", false),
            ("*.example.com", "badexample.com", false),
            ("*.example.com", ".example.com", false),
            ("*.Example.com.", "api.example.com", true),
            ("*", "example.com", false),
            ("", "example.com", false),
        ];
        for (pattern, host, want) in cases {
            assert_eq!(host_matches(pattern, host), *want, "{pattern} vs {host}");
        }
    }

    #[test]
    fn policy_host_rules() {
        let policy = limited(&["api.github.com", "*.pypi.org"]);
        assert!(policy.host_allowed(&target("API.GitHub.com.")));
        assert!(policy.host_allowed(&target("files.pypi.org")));
        assert!(!policy.host_allowed(&target("pypi.org")));
        assert!(!policy.host_allowed(&target("github.com")));

        assert!(!limited(&[]).host_allowed(&target("example.com")), "empty list denies all");

        let open = Policy { allow_all: true, ..limited(&[]) };
        assert!(open.host_allowed(&target("anything.example")));

        let aliased =
            Policy { aliases: vec![("acs-api:8080".into(), "127.0.0.1:8080".parse().unwrap())], ..limited(&[]) };
        assert!(aliased.host_allowed(&target("acs-api:8080")));
        assert_eq!(aliased.alias(&target("acs-api:8080")), Some("127.0.0.1:8080".parse().unwrap()));
        assert!(!aliased.host_allowed(&target("acs-api:8081")), "an alias names a port");
        let api = Policy { always_allowed: vec!["acs.example:8443".into()], ..limited(&[]) };
        assert!(api.host_allowed(&target("ACS.example:8443")));
        assert!(!api.host_allowed(&target("acs.example:443")), "always_allowed names a port");
    }

    #[test]
    fn address_rules() {
        let policy = limited(&["localhost"]);
        let local = target("localhost:80");
        for blocked in [
            "127.0.0.1",
            "::1",
            "169.254.169.254",
            "0.0.0.0",
            "::",
            "224.0.0.1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "10.0.0.1",
        ] {
            assert!(!policy.address_allowed(&local, blocked.parse().unwrap()), "{blocked}");
        }
        for fine in ["93.184.216.34", "2606:4700::1"] {
            assert!(policy.address_allowed(&local, fine.parse().unwrap()), "{fine}");
        }
        let api = Policy { always_allowed: vec!["localhost:80".into()], ..policy };
        assert!(api.address_allowed(&local, "127.0.0.1".parse().unwrap()));
        assert!(!api.address_allowed(&target("localhost:81"), "127.0.0.1".parse().unwrap()));
    }
}
