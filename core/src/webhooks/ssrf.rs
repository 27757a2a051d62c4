//! Address rules applied before every webhook attempt (spec 6.1 URL checks).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// Which addresses a webhook may reach: publicly routable ones, plus the operator's exemptions.
#[derive(Debug, Clone, Default)]
pub struct AddressRules {
    pub exempt: Vec<IpNet>,
}

impl AddressRules {
    pub fn allows(&self, ip: IpAddr) -> bool {
        // An exemption of an IPv4 block also covers the same address written IPv4-mapped.
        let canonical = ip.to_canonical();
        self.exempt.iter().any(|net| net.contains(&ip) || net.contains(&canonical)) || is_public(ip)
    }
}

/// Not publicly routable: private, shared, loopback, link-local, documentation, benchmarking,
/// multicast and reserved IPv4 blocks (docs/webhooks.md, "Address checks").
const BLOCKED_V4: [Ipv4Net; 16] = [
    v4(0, 0, 0, 0, 8),
    v4(10, 0, 0, 0, 8),
    v4(100, 64, 0, 0, 10),
    v4(127, 0, 0, 0, 8),
    v4(169, 254, 0, 0, 16),
    v4(172, 16, 0, 0, 12),
    v4(192, 0, 0, 0, 24),
    v4(192, 0, 2, 0, 24),
    v4(192, 88, 99, 0, 24),
    v4(192, 168, 0, 0, 16),
    v4(198, 18, 0, 0, 15),
    v4(198, 51, 100, 0, 24),
    v4(203, 0, 113, 0, 24),
    v4(224, 0, 0, 0, 4),
    v4(240, 0, 0, 0, 4),
    v4(255, 255, 255, 255, 32),
];

/// The IPv6 counterparts; mapped and NAT64 addresses are judged by their IPv4 address instead.
const BLOCKED_V6: [Ipv6Net; 9] = [
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8),
];

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

const fn v6(s: [u16; 8], len: u8) -> Ipv6Net {
    Ipv6Net::new_assert(Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]), len)
}

/// Whether `ip` is publicly routable.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => !BLOCKED_V4.iter().any(|net| net.contains(&ip)),
        IpAddr::V6(ip) => match carried_v4(ip) {
            Some(v4) => is_public(IpAddr::V4(v4)),
            None => !BLOCKED_V6.iter().any(|net| net.contains(&ip)),
        },
    }
}

/// The IPv4 address inside `::ffff:0:0/96` (IPv4-mapped) or `64:ff9b::/96` (NAT64), whose
/// packets end up at that IPv4 address.
fn carried_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    match ip.segments() {
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))),
        _ => ip.to_ipv4_mapped(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_blocks_and_their_edges() {
        // Each block's first and last address, and where cheap the public neighbours just outside.
        let cases: &[(&str, bool)] = &[
            ("0.0.0.0", false),
            ("0.255.255.255", false),
            ("1.0.0.0", true),
            ("9.255.255.255", true),
            ("10.0.0.0", false),
            ("10.255.255.255", false),
            ("11.0.0.0", true),
            ("100.63.255.255", true),
            ("100.64.0.0", false),
            ("100.127.255.255", false),
            ("100.128.0.0", true),
            ("126.255.255.255", true),
            ("127.0.0.0", false),
            ("127.0.0.1", false),
            ("127.255.255.255", false),
            ("128.0.0.0", true),
            ("169.253.255.255", true),
            ("169.254.0.0", false),
            ("169.254.169.254", false),
            ("169.254.255.255", false),
            ("169.255.0.0", true),
            ("172.15.255.255", true),
            ("172.16.0.0", false),
            ("172.31.255.255", false),
            ("172.32.0.0", true),
            ("191.255.255.255", true),
            ("192.0.0.0", false),
            ("192.0.0.255", false),
            ("192.0.1.0", true),
            ("192.0.2.0", false),
            ("192.0.2.255", false),
            ("192.0.3.0", true),
            ("192.88.98.255", true),
            ("192.88.99.0", false),
            ("192.88.99.255", false),
            ("192.88.100.0", true),
            ("192.167.255.255", true),
            ("192.168.0.0", false),
            ("192.168.255.255", false),
            ("192.169.0.0", true),
            ("198.17.255.255", true),
            ("198.18.0.0", false),
            ("198.19.255.255", false),
            ("198.20.0.0", true),
            ("198.51.99.255", true),
            ("198.51.100.0", false),
            ("198.51.100.255", false),
            ("198.51.101.0", true),
            ("203.0.112.255", true),
            ("203.0.113.0", false),
            ("203.0.113.255", false),
            ("203.0.114.0", true),
            ("223.255.255.255", true),
            ("224.0.0.0", false),
            ("239.255.255.255", false),
            ("240.0.0.0", false),
            ("255.255.255.254", false),
            ("255.255.255.255", false),
            ("::", false),
            ("::1", false),
            ("100::", false),
            ("100::ffff:ffff:ffff:ffff", false),
            ("100:0:0:1::", true),
            ("2000:ffff::", true),
            ("2001::", false),
            ("2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("2001:200::", true),
            ("2001:db8::", false),
            ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("2001:db9::", true),
            ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("fc00::", false),
            ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("fe00::", true),
            ("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("fe80::", false),
            ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("fec0::", false),
            ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("ff00::", false),
            ("ff02::1", false),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
        ];
        for (ip, public) in cases {
            assert_eq!(is_public(ip.parse().unwrap()), *public, "{ip}");
        }
    }

    #[test]
    fn public_addresses() {
        for ip in ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700::1111", "2a00:1450:4001::200e"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
            assert!(AddressRules::default().allows(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn mapped_and_nat64_addresses_are_judged_by_their_ipv4() {
        let cases: &[(&str, bool)] = &[
            ("::ffff:127.0.0.1", false),
            ("::ffff:10.1.2.3", false),
            ("::ffff:169.254.169.254", false),
            ("::ffff:0.0.0.0", false),
            ("::ffff:8.8.8.8", true),
            ("64:ff9b::7f00:1", false),
            ("64:ff9b::10.0.0.1", false),
            ("64:ff9b::c0a8:101", false),
            ("64:ff9b::8.8.8.8", true),
            ("64:ff9b::1.1.1.1", true),
        ];
        for (ip, public) in cases {
            assert_eq!(is_public(ip.parse().unwrap()), *public, "{ip}");
        }
    }

    #[test]
    fn exemptions() {
        let rules = AddressRules { exempt: vec!["127.0.0.0/8".parse().unwrap(), "fd00::/8".parse().unwrap()] };
        for ip in ["127.0.0.1", "127.255.0.9", "::ffff:127.0.0.1", "fd00::1", "8.8.8.8"] {
            assert!(rules.allows(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["10.0.0.1", "::1", "::ffff:10.0.0.1", "fc00::1", "169.254.169.254"] {
            assert!(!rules.allows(ip.parse().unwrap()), "{ip}");
        }
        assert!(!AddressRules::default().allows("127.0.0.1".parse().unwrap()));
    }
}
