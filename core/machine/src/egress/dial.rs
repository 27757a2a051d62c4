//! Resolve once, check every address, connect to a checked address: the name
//! is never looked up a second time, so DNS cannot swap in a blocked address.

use std::net::SocketAddr;

use tokio::net::TcpStream;

use super::policy::Policy;
use super::refusal::Refusal;
use super::target::Target;

pub(crate) async fn dial(policy: &Policy, target: &Target) -> Result<TcpStream, Refusal> {
    if let Some(addr) = policy.alias(target) {
        return connect(&[addr]).await;
    }
    let addrs = match policy.override_of(target.host()) {
        Some(ip) => vec![SocketAddr::new(ip, target.port())],
        None => resolve(target).await?,
    };
    check_addresses(policy, target, &addrs)?;
    connect(&addrs).await
}

async fn resolve(target: &Target) -> Result<Vec<SocketAddr>, Refusal> {
    if let Some(ip) = target.ip() {
        return Ok(vec![SocketAddr::new(ip, target.port())]);
    }
    let addrs: Vec<SocketAddr> =
        tokio::net::lookup_host((target.host(), target.port())).await.map_err(|_| Refusal::HostUnresolved)?.collect();
    if addrs.is_empty() { Err(Refusal::HostUnresolved) } else { Ok(addrs) }
}

/// Refuses when any address is blocked: a name that also points inside is not trusted.
pub(crate) fn check_addresses(policy: &Policy, target: &Target, addrs: &[SocketAddr]) -> Result<(), Refusal> {
    if addrs.iter().all(|addr| policy.address_allowed(target, addr.ip())) {
        Ok(())
    } else {
        Err(Refusal::AddressNotAllowed)
    }
}

async fn connect(addrs: &[SocketAddr]) -> Result<TcpStream, Refusal> {
    for addr in addrs {
        if let Ok(stream) = TcpStream::connect(addr).await {
            // Small request/response exchanges must not wait for Nagle.
            let _ = stream.set_nodelay(true);
            return Ok(stream);
        }
    }
    Err(Refusal::UpstreamUnreachable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use acs_store::blocklist::AddressRules;

    fn policy(blocked: &[&str], always: &[&str]) -> Policy {
        Policy {
            allow_all: true,
            allowed_hosts: vec![],
            always_allowed: always.iter().map(|s| s.to_string()).collect(),
            addresses: AddressRules::blocking(blocked.iter().map(|n| n.parse().unwrap()).collect()),
            aliases: vec![],
            overrides: vec![],
            hooks: Default::default(),
            broker: None,
        }
    }

    #[test]
    fn one_blocked_address_refuses_the_name() {
        let target = Target::parse("mixed.example:80", None).unwrap();
        let addrs: Vec<SocketAddr> = vec!["93.184.216.34:80".parse().unwrap(), "127.0.0.1:80".parse().unwrap()];
        let strict = policy(&["127.0.0.0/8"], &[]);
        assert_eq!(check_addresses(&strict, &target, &addrs), Err(Refusal::AddressNotAllowed));
        assert_eq!(check_addresses(&strict, &target, &addrs[..1]), Ok(()));
        let api = policy(&["127.0.0.0/8"], &["mixed.example:80"]);
        assert_eq!(check_addresses(&api, &target, &addrs), Ok(()));
    }

    #[tokio::test]
    async fn ip_literal_is_checked_without_lookup() {
        let target = Target::parse("127.0.0.1:9", None).unwrap();
        let refused = dial(&policy(&["127.0.0.0/8"], &[]), &target).await;
        assert_eq!(refused.err(), Some(Refusal::AddressNotAllowed));
    }

    #[tokio::test]
    async fn closed_port_is_unreachable() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let target = Target::new("127.0.0.1", port).unwrap();
        assert_eq!(dial(&policy(&[], &[]), &target).await.err(), Some(Refusal::UpstreamUnreachable));
    }
}
