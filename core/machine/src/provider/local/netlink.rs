//! A machine's network made in-process: the namespace by `unshare` on a
//! thread of its own, the veth pair, addresses and route over rtnetlink,
//! its address in or out of the nftables set over nfnetlink.
//! Running `ip` and `nft` for these cost a fork and exec each (8-20 ms for
//! `ip netns add` alone on the 2-core test host), against well under a
//! millisecond for the kernel's own work. Teardown, off the start's path,
//! still runs `ip`.

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_NEWADDR: u16 = 20;
const RTM_NEWROUTE: u16 = 24;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const IFLA_IFNAME: u16 = 3;
const IFLA_LINKINFO: u16 = 18;
const IFLA_NET_NS_FD: u16 = 28;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const VETH_INFO_PEER: u16 = 1;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RT_TABLE_MAIN: u8 = 254;
const RTPROT_BOOT: u8 = 3;
const RTN_UNICAST: u8 = 1;
const IFF_UP: u32 = 0x1;
const NETLINK_NETFILTER: i32 = 12;
const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
const NFNL_MSG_BATCH_END: u16 = 0x11;
const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFT_MSG_NEWSETELEM: u16 = 12;
const NFT_MSG_DELSETELEM: u16 = 14;
const NFTA_SET_ELEM_LIST_TABLE: u16 = 1;
const NFTA_SET_ELEM_LIST_SET: u16 = 2;
const NFTA_SET_ELEM_LIST_ELEMENTS: u16 = 3;
const NFTA_LIST_ELEM: u16 = 1;
const NFTA_SET_ELEM_KEY: u16 = 1;
const NFTA_DATA_VALUE: u16 = 1;
const NFPROTO_INET: u8 = 1;
const NLA_F_NESTED: u16 = 0x8000;

/// The index the machine's `eth0` is given in its fresh namespace, where only `lo` (1) exists.
pub const ETH0_INDEX: i32 = 2;
const LO_INDEX: i32 = 1;

/// One rtnetlink request being built: header, fixed part, attributes (4-byte aligned).
struct Msg {
    buf: Vec<u8>,
}

impl Msg {
    /// A request the kernel acknowledges.
    fn new(kind: u16, flags: u16) -> Msg {
        Msg::bare(kind, flags | NLM_F_ACK)
    }

    /// A request without an acknowledgement (a batch's begin and end).
    fn bare(kind: u16, flags: u16) -> Msg {
        let mut buf = vec![0u8; 16];
        buf[4..6].copy_from_slice(&kind.to_ne_bytes());
        buf[6..8].copy_from_slice(&(flags | NLM_F_REQUEST).to_ne_bytes());
        Msg { buf }
    }

    fn seq(&mut self, seq: u32) -> &mut Msg {
        self.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
        self
    }

    fn bytes(&mut self, data: &[u8]) -> &mut Msg {
        self.buf.extend_from_slice(data);
        self.align();
        self
    }

    fn align(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }

    fn attr(&mut self, kind: u16, data: &[u8]) -> &mut Msg {
        let len = u16::try_from(4 + data.len()).unwrap_or(u16::MAX);
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.bytes(data)
    }

    /// A nested attribute flagged as one (nfnetlink's attributes want the flag).
    fn nested(&mut self, kind: u16, fill: impl FnOnce(&mut Msg)) -> &mut Msg {
        self.nest(kind | NLA_F_NESTED, fill)
    }

    /// A nested attribute: its contents are what `fill` appends.
    fn nest(&mut self, kind: u16, fill: impl FnOnce(&mut Msg)) -> &mut Msg {
        let start = self.buf.len();
        self.attr(kind, &[]);
        fill(self);
        let len = u16::try_from(self.buf.len() - start).unwrap_or(u16::MAX);
        self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
        self
    }

    fn finish(&mut self) -> &[u8] {
        let len = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        &self.buf
    }
}

/// `struct ifinfomsg`.
fn ifinfo(index: i32, flags: u32, change: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[4..8].copy_from_slice(&index.to_ne_bytes());
    b[8..12].copy_from_slice(&flags.to_ne_bytes());
    b[12..16].copy_from_slice(&change.to_ne_bytes());
    b
}

fn name(text: &str) -> Vec<u8> {
    let mut v = text.as_bytes().to_vec();
    v.push(0);
    v
}

/// An rtnetlink socket of the calling thread's network namespace (it stays in that namespace).
pub struct Socket(OwnedFd);

impl Socket {
    /// rtnetlink: links, addresses, routes.
    pub fn open() -> io::Result<Socket> {
        Socket::of(libc::NETLINK_ROUTE)
    }

    fn of(protocol: i32) -> io::Result<Socket> {
        // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, protocol) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nothing else owns.
        Ok(Socket(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Sends one request and waits for the kernel's acknowledgement.
    fn request(&self, msg: &mut Msg, what: &str) -> io::Result<()> {
        self.send(msg.finish(), 1, what)
    }

    /// Sends `data` (one or more requests) and waits for `acks` acknowledgements; the first
    /// error the kernel answers is the result.
    fn send(&self, data: &[u8], mut acks: usize, what: &str) -> io::Result<()> {
        // SAFETY: sending a buffer this function borrows; the kernel is the default destination.
        let sent = unsafe { libc::send(self.0.as_raw_fd(), data.as_ptr().cast(), data.len(), 0) };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut reply = [0u8; 8192];
        while acks > 0 {
            // SAFETY: receiving into a buffer this function owns, at most its length.
            let n = unsafe { libc::recv(self.0.as_raw_fd(), reply.as_mut_ptr().cast(), reply.len(), 0) };
            if n < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(err);
            }
            let mut rest = &reply[..n as usize];
            while rest.len() >= 16 {
                let len = (u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize).clamp(16, rest.len());
                if u16::from_ne_bytes([rest[4], rest[5]]) == NLMSG_ERROR && len >= 20 {
                    let code = i32::from_ne_bytes([rest[16], rest[17], rest[18], rest[19]]);
                    if code != 0 {
                        let err = io::Error::from_raw_os_error(-code);
                        return Err(io::Error::new(err.kind(), format!("{what}: {err}")));
                    }
                    acks -= 1;
                }
                rest = &rest[len.next_multiple_of(4).min(rest.len())..];
            }
        }
        Ok(())
    }

    /// A veth pair: `host` here, `peer` (index `peer_index`) in the namespace `netns`.
    pub fn add_veth(&self, host: &str, peer: &str, peer_index: i32, netns: &File) -> io::Result<()> {
        self.request(&mut veth_request(host, peer, peer_index, netns.as_raw_fd()), &format!("adding veth {host}"))
    }

    /// `ip link del <name>`; a link already gone is not an error.
    pub fn del_link(&self, name: &str) -> io::Result<()> {
        let Ok(index) = index_of(name) else { return Ok(()) };
        let mut msg = Msg::new(RTM_DELLINK, 0);
        msg.bytes(&ifinfo(index, 0, 0));
        self.request(&mut msg, &format!("deleting link {name}"))
    }

    /// `ip link set <index> name <name>`. Linux 6.2 and later rename a link
    /// that is up; older kernels answer EBUSY, and then it is taken down for
    /// the rename and brought up again.
    pub fn rename_link(&self, index: i32, to: &str) -> io::Result<()> {
        let rename = || {
            let mut msg = Msg::new(RTM_NEWLINK, 0);
            msg.bytes(&ifinfo(index, 0, 0)).attr(IFLA_IFNAME, &name(to));
            self.request(&mut msg, &format!("renaming link {index} to {to}"))
        };
        match rename() {
            Err(e) if e.kind() == io::ErrorKind::ResourceBusy => {
                let mut down = Msg::new(RTM_NEWLINK, 0);
                down.bytes(&ifinfo(index, 0, IFF_UP));
                self.request(&mut down, "setting a link down")?;
                rename()?;
                self.link_up(index)
            }
            other => other,
        }
    }

    /// `ip addr add <ip>/<prefix> dev <index>`.
    pub fn add_address(&self, index: i32, ip: Ipv4Addr, prefix: u8) -> io::Result<()> {
        let mut msg = Msg::new(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
        let mut head = [0u8; 8];
        head[0] = libc::AF_INET as u8;
        head[1] = prefix;
        head[4..8].copy_from_slice(&index.to_ne_bytes());
        msg.bytes(&head).attr(IFA_LOCAL, &ip.octets()).attr(IFA_ADDRESS, &ip.octets());
        self.request(&mut msg, &format!("adding address {ip}/{prefix}"))
    }

    /// `ip link set <index> up`.
    pub fn link_up(&self, index: i32) -> io::Result<()> {
        let mut msg = Msg::new(RTM_NEWLINK, 0);
        msg.bytes(&ifinfo(index, IFF_UP, IFF_UP));
        self.request(&mut msg, "setting a link up")
    }

    /// `ip route add default via <gateway> dev <index>`.
    pub fn add_default_route(&self, gateway: Ipv4Addr, index: i32) -> io::Result<()> {
        let mut msg = Msg::new(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
        let mut head = [0u8; 12];
        head[0] = libc::AF_INET as u8;
        head[4] = RT_TABLE_MAIN;
        head[5] = RTPROT_BOOT;
        head[7] = RTN_UNICAST;
        msg.bytes(&head).attr(RTA_GATEWAY, &gateway.octets()).attr(RTA_OIF, &index.to_ne_bytes());
        self.request(&mut msg, &format!("adding the default route via {gateway}"))
    }
}

/// `ip link add <host> type veth peer name <peer> index <peer_index> netns <netns_fd>`.
fn veth_request(host: &str, peer: &str, peer_index: i32, netns_fd: i32) -> Msg {
    let mut msg = Msg::new(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    msg.bytes(&ifinfo(0, 0, 0)).attr(IFLA_IFNAME, &name(host)).nest(IFLA_LINKINFO, |m| {
        m.attr(IFLA_INFO_KIND, b"veth").nest(IFLA_INFO_DATA, |m| {
            m.nest(VETH_INFO_PEER, |m| {
                m.bytes(&ifinfo(peer_index, 0, 0))
                    .attr(IFLA_IFNAME, &name(peer))
                    .attr(IFLA_NET_NS_FD, &netns_fd.to_ne_bytes());
            });
        });
    });
    msg
}

/// `struct nfgenmsg`: family, version 0, resource id (big-endian).
fn nfgen(family: u8, res_id: u16) -> [u8; 4] {
    let id = res_id.to_be_bytes();
    [family, 0, id[0], id[1]]
}

/// One nftables transaction on the set `set` of table `inet <table>`: add
/// `ips` when `present`, else add then delete them (deleting a missing
/// element alone fails; the pair leaves them out either way), as `nft -f`
/// would, without its process.
pub fn set_elements(table: &str, set: &str, ips: &[Ipv4Addr], present: bool) -> io::Result<()> {
    let socket = Socket::of(NETLINK_NETFILTER)?;
    let element = |kind: u16, seq: u32| {
        let mut msg = Msg::new((NFNL_SUBSYS_NFTABLES << 8) | kind, NLM_F_CREATE);
        msg.seq(seq)
            .bytes(&nfgen(NFPROTO_INET, 0))
            .attr(NFTA_SET_ELEM_LIST_TABLE, &name(table))
            .attr(NFTA_SET_ELEM_LIST_SET, &name(set))
            .nested(NFTA_SET_ELEM_LIST_ELEMENTS, |m| {
                for ip in ips {
                    m.nested(NFTA_LIST_ELEM, |m| {
                        m.nested(NFTA_SET_ELEM_KEY, |m| {
                            m.attr(NFTA_DATA_VALUE, &ip.octets());
                        });
                    });
                }
            });
        msg
    };
    let mut batch = Vec::new();
    let mut begin = Msg::bare(NFNL_MSG_BATCH_BEGIN, 0);
    batch.extend_from_slice(begin.seq(1).bytes(&nfgen(0, NFNL_SUBSYS_NFTABLES)).finish());
    batch.extend_from_slice(element(NFT_MSG_NEWSETELEM, 2).finish());
    let mut acks = 1;
    if !present {
        batch.extend_from_slice(element(NFT_MSG_DELSETELEM, 3).finish());
        acks += 1;
    }
    let mut end = Msg::bare(NFNL_MSG_BATCH_END, 0);
    batch.extend_from_slice(end.seq(4).bytes(&nfgen(0, NFNL_SUBSYS_NFTABLES)).finish());
    socket.send(&batch, acks, &format!("nftables set {set} of inet {table}"))
}

/// The host-side index of an interface.
pub fn index_of(ifname: &str) -> io::Result<i32> {
    let c = CString::new(ifname).map_err(io::Error::other)?;
    // SAFETY: a NUL-terminated name this function owns.
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(io::Error::last_os_error()),
        i => i32::try_from(i).map_err(io::Error::other),
    }
}

/// `/run/netns` as `ip netns add` leaves it: a shared mount, so namespaces
/// named later reach other mount namespaces too.
fn share_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).create(dir)?;
    let c = CString::new(dir.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let shared = || {
        // SAFETY: mount(2) changing propagation of a path this function owns as a C string.
        unsafe {
            libc::mount(
                c"none".as_ptr(),
                c.as_ptr(),
                std::ptr::null(),
                libc::MS_SHARED | libc::MS_REC,
                std::ptr::null(),
            )
        }
    };
    if shared() == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() != Some(libc::EINVAL) {
        return Err(err);
    }
    // Not a mount point yet: make it one, then share it.
    // SAFETY: as above, a bind mount of the directory onto itself.
    if unsafe { libc::mount(c.as_ptr(), c.as_ptr(), c"none".as_ptr(), libc::MS_BIND | libc::MS_REC, std::ptr::null()) }
        != 0
        || shared() != 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What a new namespace comes with: its handle and an rtnetlink socket inside it.
pub struct Namespace {
    pub file: File,
    pub inside: Socket,
}

/// A new network namespace named by a bind mount at `path` (as `ip netns
/// add` makes it), with IPv6 off and `lo` up.
pub fn add_namespace(path: &Path) -> io::Result<Namespace> {
    if let Some(dir) = path.parent() {
        share_dir(dir)?;
    }
    // The mount point, as `ip` makes it; it fails when the name is taken.
    OpenOptions::new().read(true).write(true).create_new(true).mode(0o000).open(path)?;
    let target = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // A thread of its own: unshare moves only the calling thread, and this one ends here.
    let made = std::thread::spawn(move || -> io::Result<Namespace> {
        // SAFETY: unshare of the network namespace affects only this thread.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // Before eth0 arrives, so it never gets an IPv6 address: no link-local side door.
        for scope in ["default", "all"] {
            match fs::write(format!("/proc/sys/net/ipv6/conf/{scope}/disable_ipv6"), "1") {
                // A kernel without IPv6 has no side door to close.
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                other => other?,
            }
        }
        let inside = Socket::open()?;
        inside.link_up(LO_INDEX)?;
        let file = File::open("/proc/thread-self/ns/net")?;
        // Last, so that nothing after it can fail and leave a named namespace behind.
        // SAFETY: a bind mount of this thread's namespace onto the file made above.
        if unsafe {
            libc::mount(
                c"/proc/thread-self/ns/net".as_ptr(),
                target.as_ptr(),
                c"none".as_ptr(),
                libc::MS_BIND,
                std::ptr::null(),
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(Namespace { file, inside })
    })
    .join()
    .map_err(|_| io::Error::other("the namespace thread panicked"))?;
    made.inspect_err(|_| {
        if let Err(e) = fs::remove_file(path) {
            tracing::warn!("removing {}: {e}", path.display());
        }
    })
    .map_err(|e| io::Error::new(e.kind(), format!("creating the network namespace {}: {e}", path.display())))
}

/// Names the namespace bound at `from` also `to` (a new bind mount, as
/// `ip netns add` makes names), then drops the name `from`.
pub fn rename_namespace(from: &Path, to: &Path) -> io::Result<()> {
    OpenOptions::new().read(true).write(true).create_new(true).mode(0o000).open(to)?;
    let (src, dst) = (
        CString::new(from.as_os_str().as_bytes()).map_err(io::Error::other)?,
        CString::new(to.as_os_str().as_bytes()).map_err(io::Error::other)?,
    );
    // SAFETY: a bind mount between two paths this function owns as C strings.
    if unsafe { libc::mount(src.as_ptr(), dst.as_ptr(), c"none".as_ptr(), libc::MS_BIND, std::ptr::null()) } != 0 {
        let err = io::Error::last_os_error();
        let _ = fs::remove_file(to);
        return Err(io::Error::new(err.kind(), format!("naming {} {}: {err}", from.display(), to.display())));
    }
    remove_namespace(from)
}

/// `ip netns del`: detaches the namespace's bind mount at `path` and removes
/// the file. The namespace itself goes when nothing else holds it (a process
/// still inside keeps it). A name already gone is not an error.
pub fn remove_namespace(path: &Path) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: umount2 of a path this function owns as a C string.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
        let err = io::Error::last_os_error();
        // EINVAL: not a mount point (a half-made namespace); ENOENT: gone already.
        if !matches!(err.raw_os_error(), Some(libc::EINVAL | libc::ENOENT)) {
            return Err(io::Error::new(err.kind(), format!("unmounting {}: {err}", path.display())));
        }
    }
    match fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other.map_err(|e| io::Error::new(e.kind(), format!("removing {}: {e}", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_of_a_missing_table_is_an_error_naming_it() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root");
            return;
        }
        let ip = [Ipv4Addr::new(10, 1, 2, 3)];
        for present in [true, false] {
            let err = set_elements("acs_no_such_table", "unrestricted", &ip, present).expect_err("no such table");
            assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
            assert!(err.to_string().contains("inet acs_no_such_table"), "{err}");
        }
    }

    #[test]
    fn a_veth_request_nests_the_peer_with_its_namespace() {
        let b = veth_request("vh-a", "eth0", 2, 7).finish().to_vec();
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        assert_eq!(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize, b.len());
        assert_eq!(b.len() % 4, 0);
        // After header (16) and ifinfomsg (16): IFNAME (4 + "vh-a\0", padded to 12), then LINKINFO.
        assert_eq!((u16_at(32), u16_at(34)), (9, IFLA_IFNAME));
        let linkinfo = 44;
        assert_eq!(u16_at(linkinfo + 2), IFLA_LINKINFO);
        assert_eq!(u16_at(linkinfo) as usize, b.len() - linkinfo);
        assert_eq!((u16_at(linkinfo + 4), u16_at(linkinfo + 6)), (8, IFLA_INFO_KIND));
        assert_eq!(&b[linkinfo + 8..linkinfo + 12], b"veth");
        let data = linkinfo + 12;
        assert_eq!(u16_at(data + 2), IFLA_INFO_DATA);
        assert_eq!(u16_at(data + 6), VETH_INFO_PEER);
        // The peer's ifinfomsg asks for index 2.
        assert_eq!(i32::from_ne_bytes([b[data + 12], b[data + 13], b[data + 14], b[data + 15]]), 2);
        // Its last attribute is the namespace's descriptor.
        let end = b.len();
        assert_eq!((u16_at(end - 8), u16_at(end - 6)), (8, IFLA_NET_NS_FD));
        assert_eq!(i32::from_ne_bytes([b[end - 4], b[end - 3], b[end - 2], b[end - 1]]), 7);
    }
}
