//! The one list of address blocks that no connection acs makes on someone
//! else's behalf may reach: every block that is not publicly routable
//! (loopback, link-local with the cloud metadata service, private, shared,
//! documentation, benchmarking, multicast and reserved, IPv4 and IPv6), plus
//! the host's own addresses, asked of the routing table when a decision is made.
//!
//! Three places apply it (docs/sandboxes.md, "Network"; docs/webhooks.md):
//! the webhook sender and the egress proxy through [`AddressRules`], and the
//! kernel floor of `local` machines through nftables sets built from
//! [`kernel_v4`] and [`kernel_v6`], which no configuration changes.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

const BLOCKED_V4: [Ipv4Net; 17] = [
    v4(0, 0, 0, 0, 8),     // "this network"
    v4(10, 0, 0, 0, 8),    // private (RFC 1918)
    v4(100, 64, 0, 0, 10), // carrier-grade NAT (RFC 6598)
    v4(127, 0, 0, 0, 8),   // loopback
    // Azure's platform endpoint (WireServer): a metadata service outside link-local.
    v4(168, 63, 129, 16, 32),
    v4(169, 254, 0, 0, 16),     // link-local, with the 169.254.169.254 metadata service
    v4(172, 16, 0, 0, 12),      // private
    v4(192, 0, 0, 0, 24),       // IETF protocol assignments
    v4(192, 0, 2, 0, 24),       // documentation
    v4(192, 88, 99, 0, 24),     // deprecated 6to4 relay anycast
    v4(192, 168, 0, 0, 16),     // private
    v4(198, 18, 0, 0, 15),      // benchmarking
    v4(198, 51, 100, 0, 24),    // documentation
    v4(203, 0, 113, 0, 24),     // documentation
    v4(224, 0, 0, 0, 4),        // multicast
    v4(240, 0, 0, 0, 4),        // reserved
    v4(255, 255, 255, 255, 32), // limited broadcast
];

/// The IPv6 counterparts. Forms that carry an IPv4 address (mapped, NAT64, 6to4) are judged by
/// that address instead ([`canonical`]).
const BLOCKED_V6: [Ipv6Net; 11] = [
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128),         // unspecified
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128),         // loopback
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48),  // local-use NAT64 (RFC 8215)
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64),      // discard
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23),     // IETF protocol assignments
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), // documentation
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20),     // documentation (RFC 9637)
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),      // unique local
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10),     // link-local
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10),     // deprecated site-local
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8),      // multicast
];

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

const fn v6(s: [u16; 8], len: u8) -> Ipv6Net {
    Ipv6Net::new_assert(Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]), len)
}

/// The whole list, IPv4 then IPv6: the default of `sandbox.blocked_cidrs`.
pub fn shared() -> Vec<IpNet> {
    BLOCKED_V4.iter().map(|&n| IpNet::V4(n)).chain(BLOCKED_V6.iter().map(|&n| IpNet::V6(n))).collect()
}

/// Whether `ip` is publicly routable, i.e. outside the list.
pub fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(ip) => !BLOCKED_V4.iter().any(|net| net.contains(&ip)),
        IpAddr::V6(ip) => !BLOCKED_V6.iter().any(|net| net.contains(&ip)),
    }
}

/// The IPv4 address an IPv6 address carries, if it is one whose packets end up there:
/// IPv4-mapped (`::ffff:0:0/96`, what a dual-stack socket connects to), NAT64 (`64:ff9b::/96`)
/// and 6to4 (`2002::/16`). Any other address is returned as it is.
pub fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else { return ip };
    let carried = match v6.segments() {
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] | [0x2002, hi, lo, ..] => {
            Some(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)))
        }
        _ => v6.to_ipv4_mapped(),
    };
    carried.map_or(ip, IpAddr::V4)
}

/// The IPv4 blocks as the kernel floor's nftables set holds them.
pub fn kernel_v4() -> Vec<Ipv4Net> {
    BLOCKED_V4.to_vec()
}

/// The IPv6 blocks as the kernel floor's nftables set holds them: the packet filter cannot judge an
/// address by the IPv4 address it carries, so each IPv4 block is listed again in each carrying
/// form. The kernel and [`is_public`] then agree on every address.
pub fn kernel_v6() -> Vec<Ipv6Net> {
    // (prefix, where the IPv4 address starts counting from the left, in bits)
    const CARRIERS: [(u128, u8); 3] = [(0xffff << 32, 96), (0x0064_ff9b << 96, 96), (0x2002 << 112, 16)];
    let carried = CARRIERS.into_iter().flat_map(|(prefix, at)| {
        BLOCKED_V4.iter().map(move |net| {
            let bits = prefix | (u128::from(u32::from(net.network())) << (96 - at));
            Ipv6Net::new_assert(Ipv6Addr::from(bits), at + net.prefix_len())
        })
    });
    BLOCKED_V6.iter().copied().chain(carried).collect()
}

/// Whether the host's routing table says `ip` is one of the host's own addresses (a route of
/// type local): the question the kernel floor asks with `fib daddr type local`. One netlink
/// request, however many interfaces the host has; listing every address instead costs tens of
/// milliseconds on a host with a thousand machines' interfaces.
pub fn is_host_address(ip: IpAddr) -> io::Result<bool> {
    let (family, addr) = match ip {
        IpAddr::V4(ip) => (libc::AF_INET, ip.octets().to_vec()),
        IpAddr::V6(ip) => (libc::AF_INET6, ip.octets().to_vec()),
    };
    // nlmsghdr, rtmsg, then one RTA_DST attribute; every part is a multiple of 4 bytes long.
    let attr_len = 4 + addr.len();
    let len = 16 + 12 + attr_len;
    let mut request = Vec::with_capacity(len);
    request.extend_from_slice(&(len as u32).to_ne_bytes());
    request.extend_from_slice(&libc::RTM_GETROUTE.to_ne_bytes());
    request.extend_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    request.extend_from_slice(&[0; 8]); // sequence number and port id: the kernel fills the port
    request.extend_from_slice(&[family as u8, (addr.len() * 8) as u8, 0, 0, 0, 0, 0, 0]);
    request.extend_from_slice(&[0; 4]); // rtm_flags
    request.extend_from_slice(&(attr_len as u16).to_ne_bytes());
    request.extend_from_slice(&libc::RTA_DST.to_ne_bytes());
    request.extend_from_slice(&addr);

    // SAFETY: plain socket creation; the descriptor is owned below.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: the buffer is valid for its length.
    if unsafe { libc::send(socket.as_raw_fd(), request.as_ptr().cast(), request.len(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut answer = [0u8; 1024];
    // SAFETY: the buffer is valid for its length.
    let n = unsafe { libc::recv(socket.as_raw_fd(), answer.as_mut_ptr().cast(), answer.len(), 0) };
    let answer = &answer[..usize::try_from(n).map_err(|_| io::Error::last_os_error())?];
    let field =
        |at: usize, width: usize| answer.get(at..at + width).ok_or_else(|| io::Error::other("short netlink answer"));
    let kind = u16::from_ne_bytes(field(4, 2)?.try_into().map_err(io::Error::other)?);
    if i32::from(kind) == libc::NLMSG_ERROR {
        let errno = -i32::from_ne_bytes(field(16, 4)?.try_into().map_err(io::Error::other)?);
        return match errno {
            // No route at all (or no IPv6 on this host): certainly none of its addresses.
            libc::ENETUNREACH | libc::EHOSTUNREACH | libc::EAFNOSUPPORT => Ok(false),
            errno => Err(io::Error::from_raw_os_error(errno)),
        };
    }
    if kind != libc::RTM_NEWROUTE {
        return Err(io::Error::other(format!("unexpected netlink message type {kind}")));
    }
    // rtm_type, the eighth byte of the rtmsg after the 16-byte header.
    Ok(field(16 + 7, 1)?[0] == libc::RTN_LOCAL)
}

/// Which addresses one kind of outbound connection may reach: none in `blocked`, and none of the
/// host's own public addresses (its other addresses are in the list already), unless `exempt`
/// covers the address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressRules {
    blocked: Vec<IpNet>,
    exempt: Vec<IpNet>,
}

impl AddressRules {
    /// The shared list with the operator's exemptions (`webhooks.allowed_private_cidrs`).
    pub fn exempting(exempt: Vec<IpNet>) -> AddressRules {
        AddressRules { blocked: shared(), exempt }
    }

    /// A configured list instead of the shared one (`sandbox.blocked_cidrs`, whose default is the
    /// shared list): a block left out of it is exempted, the host's own addresses in it included.
    pub fn blocking(blocked: Vec<IpNet>) -> AddressRules {
        AddressRules { blocked, exempt: Vec::new() }
    }

    /// Asks the routing table about the host's own addresses only for a public address.
    pub fn allows(&self, ip: IpAddr) -> bool {
        self.allows_given(ip, is_host_address)
    }

    fn allows_given(&self, ip: IpAddr, is_host: impl FnOnce(IpAddr) -> io::Result<bool>) -> bool {
        let plain = canonical(ip);
        // A block written either way covers the address written either way.
        let covers = |nets: &[IpNet]| nets.iter().any(|net| net.contains(&ip) || net.contains(&plain));
        if covers(&self.exempt) {
            return true;
        }
        if covers(&self.blocked) {
            return false;
        }
        if !is_public(plain) {
            // A non-public block the configuration left out of `blocked`: exempted on purpose.
            return true;
        }
        match is_host(plain) {
            Ok(own) => !own,
            Err(e) => {
                // Fail closed: the address may well be the host's own.
                tracing::warn!("asking the routing table about {ip} failed ({e}): refused");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|n| n.parse().unwrap()).collect()
    }

    /// Each block's first and last address, and where cheap the public neighbours just outside.
    const EDGES: &[(&str, bool)] = &[
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
        ("168.63.129.15", true),
        ("168.63.129.16", false),
        ("168.63.129.17", true),
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
        ("64:ff9b:1::", false),
        ("64:ff9b:1:ffff:ffff:ffff:ffff:ffff", false),
        ("64:ff9b:2::", true),
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
        ("3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
        ("3fff::", false),
        ("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", false),
        ("3fff:1000::", true),
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

    /// IPv6 forms of IPv4 addresses, judged by the IPv4 address.
    const CARRIED: &[(&str, bool)] = &[
        ("::ffff:127.0.0.1", false),
        ("::ffff:10.1.2.3", false),
        ("::ffff:169.254.169.254", false),
        ("::ffff:0.0.0.0", false),
        ("::ffff:8.8.8.8", true),
        ("64:ff9b::7f00:1", false),
        ("64:ff9b::10.0.0.1", false),
        ("64:ff9b::c0a8:101", false),
        ("64:ff9b::a9fe:a9fe", false),
        ("64:ff9b::8.8.8.8", true),
        ("64:ff9b::1.1.1.1", true),
        ("2002:a9fe:a9fe::", false),
        ("2002:7f00:1:ffff:ffff:ffff:ffff:ffff", false),
        ("2002:c0a8:101::1", false),
        ("2002:808:808::1", true),
        ("2002:a9ff::", true),
    ];

    #[test]
    fn blocks_and_their_edges() {
        for (addr, public) in EDGES.iter().chain(CARRIED) {
            assert_eq!(is_public(ip(addr)), *public, "{addr}");
        }
        for addr in ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700::1111", "2a00:1450:4001::200e"] {
            assert!(is_public(ip(addr)), "{addr}");
        }
    }

    #[test]
    fn the_kernel_sets_agree_with_the_list_on_every_edge() {
        let (v4, v6) = (kernel_v4(), kernel_v6());
        for (addr, public) in EDGES.iter().chain(CARRIED) {
            let listed = match ip(addr) {
                IpAddr::V4(a) => v4.iter().any(|n| n.contains(&a)),
                IpAddr::V6(a) => v6.iter().any(|n| n.contains(&a)),
            };
            assert_eq!(listed, !public, "{addr}");
        }
        assert_eq!(v6.len(), BLOCKED_V6.len() + 3 * BLOCKED_V4.len());
        let mapped_metadata: Ipv6Net = "::ffff:169.254.0.0/112".parse().unwrap();
        let nat64_private: Ipv6Net = "64:ff9b::a00:0/104".parse().unwrap();
        let sixtofour_loopback: Ipv6Net = "2002:7f00::/24".parse().unwrap();
        for net in [mapped_metadata, nat64_private, sixtofour_loopback] {
            assert!(v6.contains(&net), "{net}");
        }
    }

    #[test]
    fn the_shared_list_is_every_block_once() {
        let list = shared();
        assert_eq!(list.len(), BLOCKED_V4.len() + BLOCKED_V6.len());
        for (addr, public) in EDGES {
            assert_eq!(list.iter().any(|n| n.contains(&ip(addr))), !public, "{addr}");
        }
    }

    #[test]
    fn canonical_unwraps_only_carrying_forms() {
        assert_eq!(canonical(ip("::ffff:1.2.3.4")), ip("1.2.3.4"));
        assert_eq!(canonical(ip("64:ff9b::102:304")), ip("1.2.3.4"));
        assert_eq!(canonical(ip("2002:102:304:5::6")), ip("1.2.3.4"));
        for same in ["1.2.3.4", "::1", "64:ff9b:1::102:304", "2001:db8::1", "::102:304"] {
            assert_eq!(canonical(ip(same)), ip(same), "{same}");
        }
    }

    /// The host's addresses as a test sets them.
    fn host(list: &'static [&'static str]) -> impl FnOnce(IpAddr) -> io::Result<bool> {
        move |addr| Ok(list.iter().any(|a| ip(a) == addr))
    }

    #[test]
    fn rules_refuse_the_list_and_the_hosts_own_public_addresses() {
        let own: &[&str] = &["127.0.0.1", "192.0.2.2", "93.184.216.34", "2606:4700::1111"];
        let rules = AddressRules::exempting(vec![]);
        for addr in ["127.0.0.1", "10.0.0.1", "169.254.169.254", "::ffff:10.0.0.1", "fd00::2", "192.0.2.2"] {
            assert!(!rules.allows_given(ip(addr), host(own)), "{addr}");
        }
        for addr in ["93.184.216.34", "::ffff:93.184.216.34", "64:ff9b::5db8:d822", "2606:4700::1111"] {
            assert!(!rules.allows_given(ip(addr), host(own)), "the host's own {addr}");
        }
        assert!(rules.allows_given(ip("8.8.8.8"), host(own)));
        assert!(rules.allows_given(ip("2606:4700::1"), host(own)));
        let unreadable = |_| Err(io::Error::other("no"));
        assert!(!rules.allows_given(ip("8.8.8.8"), unreadable), "fails closed");
        let never = |_| -> io::Result<bool> { panic!("a blocked address needs no routing lookup") };
        assert!(!rules.allows_given(ip("10.0.0.1"), never));
    }

    #[test]
    fn exemptions_open_blocks_and_host_addresses_they_cover() {
        let own: &[&str] = &["127.0.0.1", "93.184.216.34"];
        let rules = AddressRules::exempting(nets(&["127.0.0.0/8", "fd00::/8", "93.184.216.34/32"]));
        for addr in ["127.0.0.1", "127.255.0.9", "::ffff:127.0.0.1", "fd00::1", "8.8.8.8", "93.184.216.34"] {
            assert!(rules.allows_given(ip(addr), host(own)), "{addr}");
        }
        for addr in ["10.0.0.1", "::1", "::ffff:10.0.0.1", "fc00::1", "169.254.169.254"] {
            assert!(!rules.allows_given(ip(addr), host(own)), "{addr}");
        }
    }

    #[test]
    fn a_configured_list_replaces_the_shared_one() {
        let own: &[&str] = &["127.0.0.1", "10.1.0.5", "93.184.216.34"];
        // `sandbox.blocked_cidrs = []`: every block exempted, the host's loopback and private
        // addresses with them; its public addresses are still refused.
        let open = AddressRules::blocking(vec![]);
        for addr in ["127.0.0.1", "10.1.0.5", "169.254.169.254", "8.8.8.8"] {
            assert!(open.allows_given(ip(addr), host(own)), "{addr}");
        }
        assert!(!open.allows_given(ip("93.184.216.34"), host(own)));
        // An operator's own block, and one written as IPv4 that catches its IPv6 forms.
        let custom = AddressRules::blocking(nets(&["8.8.8.0/24", "169.254.0.0/16"]));
        for addr in ["8.8.8.8", "::ffff:8.8.8.8", "64:ff9b::a9fe:a9fe", "169.254.169.254"] {
            assert!(!custom.allows_given(ip(addr), host(own)), "{addr}");
        }
        assert!(custom.allows_given(ip("10.0.0.1"), host(own)));
        assert_eq!(AddressRules::blocking(shared()), AddressRules::exempting(vec![]));
    }

    #[test]
    fn the_routing_table_knows_the_hosts_own_addresses() {
        for own in ["127.0.0.1", "127.9.9.9"] {
            assert!(is_host_address(ip(own)).expect("netlink"), "{own}");
        }
        let v6_on = std::fs::read_to_string("/proc/sys/net/ipv6/conf/lo/disable_ipv6").is_ok_and(|v| v.trim() == "0");
        if v6_on {
            assert!(is_host_address(ip("::1")).expect("netlink"));
        }
        // TEST-NET-3 and a public resolver are on no interface of a test host.
        for other in ["203.0.113.77", "8.8.8.8", "2001:db8::77"] {
            assert!(!is_host_address(ip(other)).expect("netlink"), "{other}");
        }
        // The address of the default route's interface, whatever this host's is.
        let probe = std::net::UdpSocket::bind("0.0.0.0:0").and_then(|s| s.connect("8.8.8.8:53").map(|()| s));
        if let Ok(own) = probe.and_then(|s| s.local_addr()) {
            assert!(is_host_address(own.ip()).expect("netlink"), "{own}");
        }
    }
}
