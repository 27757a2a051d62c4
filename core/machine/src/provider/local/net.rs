//! Host networking of `local` machines: one network namespace per machine,
//! joined to the host by a veth pair on its own /30, and two static nftables
//! tables. The floor (`inet acs_floor_<version>`) refuses, in every mode, the
//! shared block list (`acs_store::blocklist`) and the host's own addresses, but
//! for the egress proxy on the host end of the machine's own veth. The policy
//! (`inet acs`) lets a machine reach only that proxy or, when unrestricted,
//! any unicast address outside the machines' subnet.
//!
//! Address blocks are leased host-wide through files `<index>.lease` in the
//! lease directory, created with O_EXCL under a flock, so several acs servers
//! on one host never collide. A lease whose namespace is gone is stale and
//! reusable. Names come from the last 12 hex digits of the sandbox id: the
//! leading digits of a UUIDv7 are a timestamp and would collide.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use ipnet::Ipv4Net;
use uuid::Uuid;

use acs_store::blocklist;

use super::netlink::{self, Namespace};

#[derive(Debug, Clone)]
pub struct NetConfig {
    /// Carved into one /30 per machine.
    pub subnet: Ipv4Net,
    /// Host-wide leases and their lock; every acs server on the host must share it.
    pub lease_dir: PathBuf,
    /// The egress proxy's port on each machine's host-side address.
    pub proxy_port: u16,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            subnet: Ipv4Net::new(Ipv4Addr::new(10, 200, 0, 0), 16).unwrap_or_default(),
            lease_dir: PathBuf::from("/run/acs/net"),
            proxy_port: 3128,
        }
    }
}

/// One machine's share of the host network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub sandbox: Uuid,
    /// Which /30 of the subnet.
    pub index: u32,
    pub netns: String,
    /// `/run/netns/<netns>`: open it and `setns` to run inside.
    pub netns_path: PathBuf,
    /// The host end of the veth pair (the machine's end is `eth0`).
    pub host_if: String,
    pub host_ip: Ipv4Addr,
    pub sandbox_ip: Ipv4Addr,
}

/// Host-wide names. Tests use their own, so they never touch a real server's tables or interfaces.
#[derive(Debug, Clone, Copy)]
struct Names {
    /// The policy table.
    table: &'static str,
    /// The floor table's name before its version number.
    floor: &'static str,
    netns_prefix: &'static str,
    if_prefix: &'static str,
}

const HOST: Names = Names { table: "acs", floor: "acs_floor_", netns_prefix: "acs-", if_prefix: "vh-" };
/// Raised whenever the floor's rules or the block list change, so that a server installing its
/// floor never rewrites another version's (see `floor_script`).
const FLOOR_VERSION: u32 = 1;
const NETNS_DIR: &str = "/run/netns";
/// The nft set of machine addresses allowed out (forwarding + masquerade).
const SET: &str = "unrestricted";

impl Names {
    fn floor_table(&self) -> String {
        format!("{}{FLOOR_VERSION}", self.floor)
    }
    fn netns(&self, sandbox: Uuid) -> String {
        format!("{}{}", self.netns_prefix, suffix(sandbox))
    }
    fn host_if(&self, sandbox: Uuid) -> String {
        format!("{}{}", self.if_prefix, suffix(sandbox))
    }
}

/// The random tail of a UUID (v4 and v7 alike): 12 hex digits, so `vh-` + it fits IFNAMSIZ.
fn suffix(sandbox: Uuid) -> String {
    let hex = sandbox.simple().to_string();
    hex[hex.len() - 12..].to_owned()
}

fn netns_path(name: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(name)
}

fn interface_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// How many /30 blocks the subnet holds; None when it holds none.
fn capacity(subnet: Ipv4Net) -> Option<u32> {
    let prefix = subnet.prefix_len();
    (prefix <= 30).then(|| 1u32 << (30 - prefix))
}

/// Host-side and machine-side addresses of block `index`.
fn slot(subnet: Ipv4Net, index: u32) -> Option<(Ipv4Addr, Ipv4Addr)> {
    if index >= capacity(subnet)? {
        return None;
    }
    let base = u32::from(subnet.network()).checked_add(index.checked_mul(4)?)?;
    Some((Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2)))
}

/// The executable this module runs: `nft`, for the static tables (a machine's own
/// network is made and torn down over netlink, `local/netlink.rs`).
#[derive(Debug, Clone)]
struct Tools {
    nft: PathBuf,
}

impl Tools {
    /// Found, or the message naming the missing package.
    fn find() -> Result<Tools, String> {
        let nft = find_tool("nft").ok_or("the local sandbox provider needs `nft`: install the nftables package")?;
        Ok(Tools { nft })
    }
}

/// `PATH` plus the sbin directories, which a non-login root shell may lack.
fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Runs a tool to completion; Err carries its stderr.
fn run(program: &Path, args: &[&str], stdin: Option<&str>) -> io::Result<()> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", program.display())))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(io::Error::other(format!("{} {}: {}", program.display(), args.join(" "), err.trim())))
}

/// Runs a tool to completion and returns its standard output; Err carries its stderr.
fn output(program: &Path, args: &[&str]) -> io::Result<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", program.display())))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(io::Error::other(format!("{} {}: {}", program.display(), args.join(" "), err.trim())))
}

/// The effective capability set of this process includes every bit given.
fn has_caps(bits: &[u32]) -> bool {
    let Ok(status) = fs::read_to_string("/proc/self/status") else { return false };
    let Some(hex) = status.lines().find_map(|l| l.strip_prefix("CapEff:")) else { return false };
    let Ok(eff) = u64::from_str_radix(hex.trim(), 16) else { return false };
    bits.iter().all(|b| eff & (1u64 << b) != 0)
}

/// The floor (docs/sandboxes.md, "Network"): the shared block list and the host's own addresses
/// (`fib daddr type local`, always current) refused for every `vh-*` interface in every mode,
/// whatever the proxy exempts. Only replies to the host's own connections into a machine and
/// TCP to the proxy port on the machine's own veth pass on to the policy table. Its own
/// connections are judged packet by packet, so one opened before the floor is cut.
///
/// A table of its own, versioned: servers of other versions sharing the host rewrite `inet acs`
/// but never this, and a reject in any table is final, so another table can only refuse more.
/// The `obsolete` lower-numbered floors are deleted in the same transaction.
fn floor_script(names: Names, proxy_port: u16, obsolete: &[String]) -> String {
    let t = format!("inet {}", names.floor_table());
    let vh = format!("\"{}*\"", names.if_prefix);
    let join = |nets: Vec<String>| nets.join(", ");
    let v4 = join(blocklist::kernel_v4().iter().map(ToString::to_string).collect());
    let v6 = join(blocklist::kernel_v6().iter().map(ToString::to_string).collect());
    let mut script: String = obsolete.iter().map(|name| format!("delete table inet {name}\n")).collect();
    script.push_str(&format!(
        "add table {t}
add chain {t} prerouting {{ type filter hook prerouting priority -20; policy accept; }}
add chain {t} refuse
add set {t} blocked4 {{ type ipv4_addr; flags interval; auto-merge; }}
add set {t} blocked6 {{ type ipv6_addr; flags interval; auto-merge; }}
flush chain {t} prerouting
flush chain {t} refuse
flush set {t} blocked4
flush set {t} blocked6
add element {t} blocked4 {{ {v4} }}
add element {t} blocked6 {{ {v6} }}
add rule {t} refuse meta l4proto tcp reject with tcp reset
add rule {t} refuse reject
add rule {t} prerouting iifname {vh} ct direction reply return
add rule {t} prerouting iifname {vh} meta nfproto ipv4 tcp dport {proxy_port} fib daddr . iif type local return
add rule {t} prerouting iifname {vh} ip daddr @blocked4 jump refuse
add rule {t} prerouting iifname {vh} ip6 daddr @blocked6 jump refuse
add rule {t} prerouting iifname {vh} fib daddr type local jump refuse
"
    ));
    script
}

/// The floor tables of older versions in a `nft list tables inet` listing.
fn obsolete_floors(names: Names, listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|line| line.trim().strip_prefix("table inet "))
        .filter(|name| {
            name.strip_prefix(names.floor).and_then(|v| v.parse::<u32>().ok()).is_some_and(|v| v < FLOOR_VERSION)
        })
        .map(str::to_owned)
        .collect()
}

/// The policy table, applied as one transaction with the floor. `add` keeps existing
/// chains and the set (with the addresses of live machines); the chains are
/// flushed and refilled, so applying it again is harmless.
///
/// Machine traffic is judged at prerouting, before the routing decision: with
/// `ip_forward` off the kernel would drop forwardable packets silently and
/// blocked connections would hang instead of failing at once.
fn table_script(names: Names, subnet: Ipv4Net, proxy_port: u16) -> String {
    let t = format!("inet {}", names.table);
    let vh = format!("\"{}*\"", names.if_prefix);
    let subnet = subnet.trunc();
    format!(
        "add table {t}
add chain {t} prerouting {{ type filter hook prerouting priority -10; policy accept; }}
add chain {t} forward {{ type filter hook forward priority -10; policy accept; }}
add chain {t} postrouting {{ type nat hook postrouting priority 100; policy accept; }}
add set {t} {SET} {{ type ipv4_addr; }}
flush chain {t} prerouting
flush chain {t} forward
flush chain {t} postrouting
add rule {t} prerouting iifname {vh} ct state established,related accept
add rule {t} prerouting iifname {vh} ip daddr {subnet} tcp dport {proxy_port} fib daddr . iif type local accept
add rule {t} prerouting iifname {vh} ip saddr @{SET} ip daddr != {subnet} fib daddr type unicast accept
add rule {t} prerouting iifname {vh} meta l4proto tcp reject with tcp reset
add rule {t} prerouting iifname {vh} reject
add rule {t} forward iifname {vh} oifname {vh} reject
add rule {t} forward oifname {vh} ct state established,related accept
add rule {t} forward oifname {vh} drop
add rule {t} postrouting oifname != {vh} ip saddr @{SET} masquerade
"
    )
}

/// Holds the host-wide lock of a lease directory until dropped.
fn lock(dir: &Path) -> io::Result<File> {
    super::flock(OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(".lock"))?)
}

/// What a lease file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    sandbox: Uuid,
    sandbox_ip: Ipv4Addr,
}

impl Record {
    fn parse(text: &str) -> Option<Record> {
        let mut lines = text.lines();
        let sandbox = lines.next()?.trim().parse().ok()?;
        let sandbox_ip = lines.next()?.trim().parse().ok()?;
        Some(Record { sandbox, sandbox_ip })
    }
    fn render(&self) -> String {
        format!("{}\n{}\n", self.sandbox, self.sandbox_ip)
    }
}

fn lease_file(dir: &Path, index: u32) -> PathBuf {
    dir.join(format!("{index}.lease"))
}

/// What a lease file holds; None when it is missing, unreadable or garbled.
fn record_at(file: &Path) -> Option<Record> {
    fs::read_to_string(file).ok().and_then(|t| Record::parse(&t))
}

/// Every lease file of the directory by index; None for an unreadable or garbled one.
fn records(dir: &Path) -> io::Result<BTreeMap<u32, Option<Record>>> {
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(index) = name.to_str().and_then(|n| n.strip_suffix(".lease")).and_then(|n| n.parse().ok()) else {
            continue;
        };
        let record = record_at(&entry.path());
        out.insert(index, record);
    }
    Ok(out)
}

/// Takes the lowest free or stale block for `sandbox`; the caller holds the
/// lock and has checked that `sandbox` has no live namespace, so its own old
/// leases are stale too. Returns the index and the stale records it replaced
/// (whose leftovers the caller tears down).
///
/// A block whose host address is still in use (`in_use`) is skipped even
/// without a lease. On an interface: a second interface with that address
/// would take the replies of one of the two machines, whose connections then
/// hang; such an address outlives its lease when a machine's network is torn
/// down while it is still being built, or when a server is killed mid-build.
/// Bound by a socket: the egress proxy of a machine another server stopped,
/// which its own server closes a moment later (docs/replicas.md); the new
/// machine's proxy could not listen there meanwhile.
fn allocate(
    dir: &Path,
    subnet: Ipv4Net,
    sandbox: Uuid,
    alive: impl Fn(Uuid) -> bool,
    in_use: impl Fn(Ipv4Addr) -> bool,
) -> io::Result<(u32, Vec<Record>)> {
    let capacity = capacity(subnet).unwrap_or(0);
    let mut used = records(dir)?;
    let mut stale = Vec::new();
    let own: Vec<u32> =
        used.iter().filter(|(_, r)| r.as_ref().is_some_and(|r| r.sandbox == sandbox)).map(|(i, _)| *i).collect();
    for index in own {
        fs::remove_file(lease_file(dir, index))?;
        stale.extend(used.remove(&index).flatten());
    }
    for index in 0..capacity {
        match used.get(&index) {
            None => {}
            Some(Some(r)) if alive(r.sandbox) => continue,
            Some(old) => {
                fs::remove_file(lease_file(dir, index))?;
                stale.extend(old.clone());
            }
        }
        let Some((host_ip, sandbox_ip)) = slot(subnet, index) else { break };
        if in_use(host_ip) {
            continue;
        }
        let file = OpenOptions::new().write(true).create_new(true).open(lease_file(dir, index));
        match file {
            Ok(mut f) => {
                f.write_all(Record { sandbox, sandbox_ip }.render().as_bytes())?;
                return Ok((index, stale));
            }
            // Someone outside the lock took it: try the next one.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!("all {capacity} address blocks of {subnet} are leased or in use")))
}

/// Whether a block's host address is taken outside the lease files: on an
/// interface, or its proxy port held by a socket.
fn address_in_use(ip: Ipv4Addr, proxy_port: u16) -> bool {
    address_on_host(ip) || port_taken(ip, proxy_port)
}

/// Whether a TCP socket holds `ip:port`, by binding a socket there as the
/// proxy's listener would (address reuse on, never listening). Only this
/// answer matters to a new machine, whose proxy must listen there; reading
/// `/proc/net/tcp` instead cost a walk of every socket of the host, under
/// the host-wide lease lock, for each start. `IP_FREEBIND`: the address may
/// be on no interface any more (another server tore the machine's network
/// down) while this server's proxy still listens on it, which only a bind
/// that does not require the address to be local finds.
fn port_taken(ip: Ipv4Addr, port: u16) -> bool {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return false;
    }
    // SAFETY: a fresh descriptor nothing else owns; closed when dropped.
    let socket = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let on: libc::c_int = 1;
    for (level, option) in [(libc::SOL_SOCKET, libc::SO_REUSEADDR), (libc::IPPROTO_IP, libc::IP_FREEBIND)] {
        // SAFETY: setsockopt reads one int this function owns.
        let set = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                level,
                option,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if set != 0 {
            return false;
        }
    }
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
        sin_zero: [0; 8],
    };
    // SAFETY: bind reads a sockaddr_in this function owns, of the length given.
    let rc = unsafe {
        libc::bind(
            socket.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EADDRINUSE)
}

/// Whether `ip` is assigned to an interface of this host (read from the
/// interface list, not from a bind test, which `ip_nonlocal_bind` would fool).
/// When the list cannot be read, the lease files alone decide.
fn address_on_host(ip: Ipv4Addr) -> bool {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, which is freed below and not used after.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return false;
    }
    let mut found = false;
    let mut node = list;
    while !node.is_null() {
        // SAFETY: `node` is an entry of the list getifaddrs returned, still allocated.
        let entry = unsafe { &*node };
        // SAFETY: a non-null ifa_addr points at a sockaddr whose family says its real type.
        if !entry.ifa_addr.is_null() && i32::from(unsafe { (*entry.ifa_addr).sa_family }) == libc::AF_INET {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let sin = unsafe { &*entry.ifa_addr.cast::<libc::sockaddr_in>() };
            if Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)) == ip {
                found = true;
                break;
            }
        }
        node = entry.ifa_next;
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    found
}

/// Unrestricted machines need the host to route. This is host-wide: the table confines only
/// `vh-*` traffic, so a host with several other interfaces now routes between them too.
fn enable_forwarding() -> io::Result<()> {
    let path = "/proc/sys/net/ipv4/ip_forward";
    if fs::read_to_string(path)?.trim() != "1" {
        fs::write(path, "1")?;
    }
    Ok(())
}

/// Removes the veth pair, the namespace and the set elements of a machine. Best effort, idempotent.
fn teardown(names: Names, sandbox: Uuid, ips: &[Ipv4Addr]) {
    let (host_if, netns) = (names.host_if(sandbox), names.netns(sandbox));
    // The veth goes first: it dies at once, while a namespace with a process left inside outlives its name.
    if let Err(e) = netlink::Socket::open().and_then(|s| s.del_link(&host_if)) {
        tracing::warn!(%sandbox, "network teardown: {e}");
    }
    if let Err(e) = netlink::remove_namespace(&netns_path(&netns)) {
        tracing::warn!(%sandbox, "network teardown: {e}");
    }
    if !ips.is_empty() {
        // Fails only when the table is gone, and then there is no element either.
        let _ = netlink::set_elements(names.table, SET, ips, false);
    }
}

/// Tears a machine's network down and drops its lease files.
fn free(names: Names, dir: &Path, sandbox: Uuid, known_ip: Option<Ipv4Addr>) {
    // The leases on file now are the ones torn down. A lease this machine takes after this
    // point (a start racing a stop: a server's teardown, a test's cleanup) keeps its file:
    // dropping it would leave its address on an interface with no lease, free for another.
    // Read under the lock, which a start holds until its namespace exists: every lease seen
    // has its namespace, and deleting that makes the start's wiring fail rather than outlive it.
    let Ok(held) = lock(dir) else { return };
    let seen: Vec<(u32, Record)> = records(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(i, r)| r.filter(|r| r.sandbox == sandbox).map(|r| (i, r)))
        .collect();
    drop(held);
    let mut ips: Vec<Ipv4Addr> = seen.iter().map(|(_, r)| r.sandbox_ip).collect();
    ips.extend(known_ip.filter(|ip| !ips.contains(ip)));
    teardown(names, sandbox, &ips);
    // Under the lock, so a reclaimed file that now belongs to another machine is left alone.
    let Ok(_lock) = lock(dir) else { return };
    let now = records(dir).unwrap_or_default();
    for (index, record) in seen {
        if now.get(&index) == Some(&Some(record)) {
            let _ = fs::remove_file(lease_file(dir, index));
        }
    }
}

/// Frees every spare network of the host whose server is gone (an operator's
/// or a test's cleanup; a server does this at its start too).
pub fn drop_spares_blocking(lease_dir: &Path) {
    free_orphan_spares(HOST, lease_dir);
}

/// Frees every spare of `dir` whose owner is gone, and the owner files of servers that are gone.
/// Spares of a live server on this host are its own: freeing one under it would race its claims
/// (a rename half done, an unrestricted address dropped from the set).
fn free_orphan_spares(names: Names, dir: &Path) {
    // The records first: a spare on file had its owner's file made before it.
    let spares: Vec<Record> =
        records(dir).unwrap_or_default().into_values().flatten().filter(|r| is_spare(r.sandbox)).collect();
    let mut alive = BTreeMap::new();
    for r in spares {
        let owner = spare_owner(r.sandbox);
        if !*alive.entry(owner).or_insert_with(|| Owner::alive(dir, owner)) {
            free(names, dir, r.sandbox, Some(r.sandbox_ip));
        }
    }
    Owner::remove_dead(dir);
}

/// Frees a machine's network without a running server (an operator's or a test's cleanup).
pub fn release_blocking(lease_dir: &Path, sandbox: Uuid) {
    free(HOST, lease_dir, sandbox, None);
}

/// Whether a machine's network namespace is still there.
pub fn exists(sandbox: Uuid) -> bool {
    netns_path(&HOST.netns(sandbox)).exists()
}

/// The host side of every machine's network.
#[derive(Debug, Clone)]
pub struct HostNet {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    cfg: NetConfig,
    names: Names,
    /// Networks made ahead for no machine yet (`spare_id`), claimed by a new
    /// machine by renaming; refilled in the background after each claim.
    spares: Mutex<Vec<Lease>>,
    refilling: AtomicBool,
    /// Held for this server's life: its spares are its own (`Owner`).
    owner: Owner,
}

/// Why a spare could not become a machine's network.
enum Claim {
    /// The spare is no longer whole (an operator removed it): try another, or make one.
    SpareGone(io::Error),
    /// The machine's own names are taken, or its policy could not be set: a new network would fail too.
    Fatal(io::Error),
}

/// Networks kept made ahead.
const SPARES: usize = 2;
/// The first bytes of a spare's placeholder id; then its owner's token (four
/// bytes); the names come from its last twelve hex digits, which stay random.
const SPARE_MARK: [u8; 6] = *b"acs\0sp";

/// A placeholder id for a spare network of `owner`.
fn spare_id(owner: [u8; 4]) -> Uuid {
    let mut bytes = *Uuid::new_v4().as_bytes();
    bytes[..6].copy_from_slice(&SPARE_MARK);
    bytes[6..10].copy_from_slice(&owner);
    Uuid::from_bytes(bytes)
}

fn is_spare(id: Uuid) -> bool {
    id.as_bytes()[..6] == SPARE_MARK
}

fn spare_owner(id: Uuid) -> [u8; 4] {
    let b = id.as_bytes();
    [b[6], b[7], b[8], b[9]]
}

/// A server's hold on its spare networks: an exclusive flock on
/// `<lease dir>/spares-<token>.owner`, kept for the server's life and let go
/// by the kernel when its process ends, however it ends. Another server
/// frees a spare only when it can take the lock of the spare's token.
#[derive(Debug)]
struct Owner {
    token: [u8; 4],
    path: PathBuf,
    _lock: File,
}

impl Owner {
    fn path(dir: &Path, token: [u8; 4]) -> PathBuf {
        dir.join(format!("spares-{}.owner", hex4(token)))
    }

    fn take(dir: &Path) -> io::Result<Owner> {
        loop {
            let token = Uuid::new_v4().as_bytes()[..4].try_into().expect("four bytes");
            let path = Owner::path(dir, token);
            let file = match OpenOptions::new().create_new(true).write(true).open(&path) {
                Ok(f) => super::flock(f)?,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            };
            // A cleanup that took the lock between the create and ours removed the file: the
            // lock is then on a name no one sees, so take another.
            if fs::metadata(&path).is_ok_and(|m| same_file(&m, &file)) {
                return Ok(Owner { token, path, _lock: file });
            }
        }
    }

    /// Whether a server holds `token`'s lock (a missing file: an owner that is gone).
    fn alive(dir: &Path, token: [u8; 4]) -> bool {
        File::open(Owner::path(dir, token)).is_ok_and(|file| !super::try_flock(&file))
    }

    /// Removes the owner files no server holds.
    fn remove_dead(dir: &Path) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_string_lossy().ends_with(".owner") {
                continue;
            }
            let Ok(file) = File::open(entry.path()) else { continue };
            // Removed while locked, so its owner's `take` sees it gone.
            if super::try_flock(&file)
                && let Err(e) = fs::remove_file(entry.path())
            {
                tracing::warn!("removing {}: {e}", entry.path().display());
            }
        }
    }
}

fn same_file(meta: &fs::Metadata, file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|f| f.dev() == meta.dev() && f.ino() == meta.ino())
}

fn hex4(b: [u8; 4]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Drop for Inner {
    /// Spares belong to this server alone: no other server frees them while it lives.
    fn drop(&mut self) {
        for lease in self.spares.get_mut().unwrap_or_else(|p| p.into_inner()).drain(..) {
            free(self.names, &self.cfg.lease_dir, lease.sandbox, Some(lease.sandbox_ip));
        }
        if let Err(e) = fs::remove_file(&self.owner.path) {
            tracing::warn!("removing {}: {e}", self.owner.path.display());
        }
    }
}

impl HostNet {
    /// Checks that `nft` exists and that this process may create network
    /// namespaces, then installs the static nft tables (the floor, replacing older
    /// floors, and the policy `inet acs`) under the host-wide lock, in one
    /// transaction (idempotent). Err is a one-line message naming the missing
    /// package or privilege.
    pub fn init(cfg: NetConfig) -> Result<HostNet, String> {
        HostNet::init_with(cfg, HOST)
    }

    fn init_with(cfg: NetConfig, names: Names) -> Result<HostNet, String> {
        let tools = Tools::find()?;
        const CAP_NET_ADMIN: u32 = 12;
        const CAP_SYS_ADMIN: u32 = 21;
        if !has_caps(&[CAP_NET_ADMIN, CAP_SYS_ADMIN]) {
            return Err("the local sandbox provider needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create \
                        network namespaces"
                .into());
        }
        if capacity(cfg.subnet).is_none() {
            return Err(format!("the sandbox subnet {} is too small: it needs at least a /30", cfg.subnet));
        }
        let dir = &cfg.lease_dir;
        fs::create_dir_all(dir).map_err(|e| format!("the network lease directory {}: {e}", dir.display()))?;
        let _lock = lock(dir).map_err(|e| format!("locking the network lease directory {}: {e}", dir.display()))?;
        let tables =
            output(&tools.nft, &["list", "tables", "inet"]).map_err(|e| format!("listing nftables tables: {e}"))?;
        let floor = floor_script(names, cfg.proxy_port, &obsolete_floors(names, &tables));
        let script = floor + &table_script(names, cfg.subnet, cfg.proxy_port);
        run(&tools.nft, &["-f", "-"], Some(&script)).map_err(|e| {
            format!("installing the nftables tables inet {} and inet {}: {e}", names.floor_table(), names.table)
        })?;
        drop(_lock);
        // Spares of servers that are gone (killed, or stopped before their spares were freed).
        free_orphan_spares(names, dir);
        let owner = Owner::take(dir).map_err(|e| format!("the network lease directory {}: {e}", dir.display()))?;
        Ok(HostNet {
            inner: Arc::new(Inner {
                cfg,
                names,
                spares: Mutex::new(Vec::new()),
                refilling: AtomicBool::new(false),
                owner,
            }),
        })
    }

    /// A new namespace `acs-<12 hex>` with veth `vh-<12 hex>` (host side, .1 of
    /// the /30) and `eth0` inside (.2, default route via .1), `lo` up and IPv6
    /// disabled inside. `unrestricted` lets it out (forwarding + masquerade).
    pub async fn create(&self, sandbox: Uuid, unrestricted: bool) -> io::Result<Lease> {
        let net = self.clone();
        tokio::task::spawn_blocking(move || {
            let claimed = net.claim_spare(sandbox, unrestricted);
            net.refill();
            match claimed? {
                Some(lease) => Ok(lease),
                None => net.create_blocking(sandbox, unrestricted),
            }
        })
        .await
        .map_err(io::Error::other)?
    }

    /// A spare network renamed to `sandbox`'s names (namespace, veth, lease
    /// record), or None when no spare is ready or whole. The rename is a
    /// bind mount, a netlink request and a file written: under a
    /// millisecond, against a few for a new network. Err when `sandbox`'s
    /// own names are taken, which a new network would find too.
    fn claim_spare(&self, sandbox: Uuid, unrestricted: bool) -> io::Result<Option<Lease>> {
        loop {
            let Some(spare) = self.inner.spares.lock().unwrap_or_else(|p| p.into_inner()).pop() else {
                return Ok(None);
            };
            match self.rename_spare(&spare, sandbox, unrestricted) {
                Ok(lease) => return Ok(Some(lease)),
                Err(Claim::Fatal(e)) => {
                    self.inner.spares.lock().unwrap_or_else(|p| p.into_inner()).push(spare);
                    return Err(e);
                }
                Err(Claim::SpareGone(e)) => {
                    // Not expected: no other server frees a live server's spares (`Owner`).
                    tracing::debug!(%sandbox, "a spare network could not be used: {e}");
                    self.free(&spare);
                }
            }
        }
    }

    fn rename_spare(&self, spare: &Lease, sandbox: Uuid, unrestricted: bool) -> Result<Lease, Claim> {
        let Inner { cfg, .. } = &*self.inner;
        let lease = self.lease(sandbox, spare.index).ok_or_else(|| Claim::SpareGone(io::Error::other("bad index")))?;
        if lease.netns_path.exists() || interface_exists(&lease.host_if) {
            let taken = format!("network namespace {} or interface {} exists", lease.netns, lease.host_if);
            return Err(Claim::Fatal(io::Error::new(io::ErrorKind::AlreadyExists, taken)));
        }
        let file = lease_file(&cfg.lease_dir, spare.index);
        let record = Record { sandbox, sandbox_ip: lease.sandbox_ip };
        {
            // Under the lock, as a new lease is made: the record and the namespace change together.
            let _lock = lock(&cfg.lease_dir).map_err(Claim::SpareGone)?;
            let on_file = record_at(&file);
            if on_file.is_none_or(|r| r.sandbox != spare.sandbox) || !spare.netns_path.exists() {
                let gone = format!("the spare lease {} was taken or freed", spare.index);
                return Err(Claim::SpareGone(io::Error::other(gone)));
            }
            netlink::rename_namespace(&spare.netns_path, &lease.netns_path).map_err(Claim::SpareGone)?;
            let tmp = cfg.lease_dir.join(format!("{}.lease.tmp", spare.index));
            let written = fs::write(&tmp, record.render()).and_then(|()| fs::rename(&tmp, &file));
            if let Err(e) = written {
                // Give the namespace its spare name back, so that freeing the spare frees it.
                if let Err(u) = netlink::rename_namespace(&lease.netns_path, &spare.netns_path) {
                    tracing::warn!(%sandbox, "{u}");
                }
                return Err(Claim::SpareGone(e));
            }
        }
        let renamed = netlink::index_of(&spare.host_if)
            .and_then(|index| netlink::Socket::open()?.rename_link(index, &lease.host_if));
        if let Err(e) = renamed {
            // Every name is this claim's but the veth's, which is still the spare's.
            if let Err(d) = netlink::Socket::open().and_then(|s| s.del_link(&spare.host_if)) {
                tracing::warn!(%sandbox, "removing {}: {d}", spare.host_if);
            }
            if let Err(d) = netlink::remove_namespace(&lease.netns_path) {
                tracing::warn!(%sandbox, "{d}");
            }
            if let Ok(_lock) = lock(&cfg.lease_dir)
                && record_at(&file) == Some(record)
            {
                let _ = fs::remove_file(&file);
            }
            return Err(Claim::SpareGone(e));
        }
        if unrestricted && let Err(e) = self.set_unrestricted_blocking(&lease, true) {
            self.free(&lease);
            return Err(Claim::Fatal(e));
        }
        Ok(lease)
    }

    /// Tops the spares up in a thread of its own (one refill at a time).
    fn refill(&self) {
        if self.inner.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        let net = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(super::REFILL_DELAY);
            while net.inner.spares.lock().unwrap_or_else(|p| p.into_inner()).len() < SPARES {
                match net.create_blocking(spare_id(net.inner.owner.token), false) {
                    Ok(lease) => net.inner.spares.lock().unwrap_or_else(|p| p.into_inner()).push(lease),
                    Err(e) => {
                        tracing::warn!("preparing a spare machine network: {e}");
                        break;
                    }
                }
            }
            net.inner.refilling.store(false, Ordering::Release);
        });
    }

    /// After a server restart: the lease of a still-existing namespace for this sandbox, if any.
    pub fn adopt(&self, sandbox: Uuid) -> Option<Lease> {
        let all = records(&self.inner.cfg.lease_dir).ok()?;
        let (index, record) = all.into_iter().find_map(|(i, r)| r.filter(|r| r.sandbox == sandbox).map(|r| (i, r)))?;
        let lease = self.lease(sandbox, index)?;
        let whole =
            lease.sandbox_ip == record.sandbox_ip && lease.netns_path.exists() && interface_exists(&lease.host_if);
        whole.then_some(lease)
    }

    /// Switches a live lease between limited and unrestricted.
    pub async fn set_unrestricted(&self, lease: &Lease, on: bool) -> io::Result<()> {
        let (net, lease) = (self.clone(), lease.clone());
        tokio::task::spawn_blocking(move || net.set_unrestricted_blocking(&lease, on))
            .await
            .map_err(io::Error::other)?
    }

    /// Removes namespace, veth, set element and lease file. Idempotent.
    pub async fn release(&self, lease: &Lease) {
        let (net, lease) = (self.clone(), lease.clone());
        let _ = tokio::task::spawn_blocking(move || net.free(&lease)).await;
    }

    fn free(&self, lease: &Lease) {
        let Inner { cfg, names, .. } = &*self.inner;
        free(*names, &cfg.lease_dir, lease.sandbox, Some(lease.sandbox_ip));
    }

    fn lease(&self, sandbox: Uuid, index: u32) -> Option<Lease> {
        let names = self.inner.names;
        let (host_ip, sandbox_ip) = slot(self.inner.cfg.subnet, index)?;
        let netns = names.netns(sandbox);
        Some(Lease {
            sandbox,
            index,
            netns_path: netns_path(&netns),
            netns,
            host_if: names.host_if(sandbox),
            host_ip,
            sandbox_ip,
        })
    }

    fn create_blocking(&self, sandbox: Uuid, unrestricted: bool) -> io::Result<Lease> {
        let (lease, ns) = self.lease_with_netns(sandbox)?;
        if let Err(e) = self.wire(&lease, ns, unrestricted) {
            self.free(&lease);
            return Err(e);
        }
        Ok(lease)
    }

    /// Under the lock: a lease file and the namespace it names, so the lease is never seen stale.
    fn lease_with_netns(&self, sandbox: Uuid) -> io::Result<(Lease, Namespace)> {
        let Inner { cfg, names, .. } = &*self.inner;
        let _lock = lock(&cfg.lease_dir)?;
        let (netns, host_if) = (names.netns(sandbox), names.host_if(sandbox));
        if netns_path(&netns).exists() || interface_exists(&host_if) {
            // Not this start's to remove, as a failed start's teardown would.
            let taken = format!("network namespace {netns} or interface {host_if} exists");
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, taken));
        }
        let alive = |id| netns_path(&names.netns(id)).exists();
        let in_use = |ip| address_in_use(ip, cfg.proxy_port);
        let (index, stale) = allocate(&cfg.lease_dir, cfg.subnet, sandbox, alive, in_use)?;
        for old in stale {
            teardown(*names, old.sandbox, &[old.sandbox_ip]);
        }
        let lease = self.lease(sandbox, index).ok_or_else(|| io::Error::other("lease index out of range"))?;
        match netlink::add_namespace(&lease.netns_path) {
            Ok(ns) => Ok((lease, ns)),
            Err(e) => {
                let _ = fs::remove_file(lease_file(&cfg.lease_dir, index));
                Err(e)
            }
        }
    }

    /// Veth pair, addresses, routes and firewall membership of a fresh namespace.
    fn wire(&self, lease: &Lease, ns: Namespace, unrestricted: bool) -> io::Result<()> {
        let Lease { host_if, host_ip, sandbox_ip, .. } = lease;
        let host = netlink::Socket::open()?;
        host.add_veth(host_if, "eth0", netlink::ETH0_INDEX, &ns.file)?;
        let index = netlink::index_of(host_if)?;
        host.add_address(index, *host_ip, 30)?;
        host.link_up(index)?;
        ns.inside.add_address(netlink::ETH0_INDEX, *sandbox_ip, 30)?;
        ns.inside.link_up(netlink::ETH0_INDEX)?;
        ns.inside.add_default_route(*host_ip, netlink::ETH0_INDEX)?;
        if unrestricted {
            self.set_unrestricted_blocking(lease, true)?;
        }
        Ok(())
    }

    fn set_unrestricted_blocking(&self, lease: &Lease, on: bool) -> io::Result<()> {
        if on {
            enable_forwarding()?;
        }
        netlink::set_elements(self.inner.names.table, SET, &[lease.sandbox_ip], on)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    use super::*;

    fn subnet(s: &str) -> Ipv4Net {
        s.parse().expect("a test subnet")
    }

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    /// A directory removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            let dir = std::env::temp_dir().join(format!("acs-net-test-{}", Uuid::new_v4().simple()));
            fs::create_dir_all(&dir).expect("temp dir");
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn blocks_are_carved_into_thirties() {
        let net = subnet("10.200.0.0/16");
        assert_eq!(capacity(net), Some(16384));
        assert_eq!(slot(net, 0), Some((Ipv4Addr::new(10, 200, 0, 1), Ipv4Addr::new(10, 200, 0, 2))));
        assert_eq!(slot(net, 1), Some((Ipv4Addr::new(10, 200, 0, 5), Ipv4Addr::new(10, 200, 0, 6))));
        assert_eq!(slot(net, 16383), Some((Ipv4Addr::new(10, 200, 255, 253), Ipv4Addr::new(10, 200, 255, 254))));
        assert_eq!(slot(net, 16384), None);
        assert_eq!(capacity(subnet("10.0.0.0/30")), Some(1));
        assert_eq!(capacity(subnet("10.0.0.0/31")), None);
        assert_eq!(slot(subnet("10.0.0.4/31"), 0), None);
        assert_eq!(capacity(subnet("0.0.0.0/0")), Some(1 << 30));
        assert_eq!(
            slot(subnet("0.0.0.0/0"), (1 << 30) - 1),
            Some((Ipv4Addr::new(255, 255, 255, 253), Ipv4Addr::new(255, 255, 255, 254)))
        );
    }

    #[test]
    fn names_use_the_random_tail_and_fit_interface_names() {
        // UUIDv7s of the same millisecond share their leading digits.
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        assert_ne!(HOST.netns(a), HOST.netns(b));
        assert_ne!(HOST.host_if(a), HOST.host_if(b));
        let id: Uuid = "01234567-89ab-7cde-8f01-23456789abcd".parse().expect("uuid");
        assert_eq!(HOST.netns(id), "acs-23456789abcd");
        assert_eq!(HOST.host_if(id), "vh-23456789abcd");
        assert!(HOST.host_if(id).len() <= 15, "IFNAMSIZ");
    }

    #[test]
    fn lease_records_round_trip_and_reject_garbage() {
        let r = Record { sandbox: Uuid::new_v4(), sandbox_ip: Ipv4Addr::new(10, 200, 0, 2) };
        assert_eq!(Record::parse(&r.render()), Some(r));
        assert_eq!(Record::parse(""), None);
        assert_eq!(Record::parse("not-a-uuid\n10.0.0.2\n"), None);
        assert_eq!(Record::parse(&format!("{}\n", Uuid::new_v4())), None);
    }

    #[test]
    fn allocator_takes_the_lowest_free_or_stale_block() {
        let dir = TempDir::new();
        let net = subnet("10.9.0.0/28"); // four blocks
        let (a, b, c, d, e) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let live = std::cell::RefCell::new(vec![a, b]);
        let alive = |id: Uuid| live.borrow().contains(&id);
        let free = |_: Ipv4Addr| false;
        assert_eq!(allocate(&dir.0, net, a, alive, free).expect("a"), (0, vec![]));
        assert_eq!(allocate(&dir.0, net, b, alive, free).expect("b"), (1, vec![]));
        let text = fs::read_to_string(lease_file(&dir.0, 1)).expect("lease file");
        assert_eq!(Record::parse(&text), Some(Record { sandbox: b, sandbox_ip: Ipv4Addr::new(10, 9, 0, 6) }));

        // a's namespace is gone: its block is reused and its record handed back for teardown.
        live.borrow_mut().retain(|id| *id != a);
        live.borrow_mut().push(c);
        let (index, stale) = allocate(&dir.0, net, c, alive, free).expect("c");
        assert_eq!(index, 0);
        assert_eq!(stale, vec![Record { sandbox: a, sandbox_ip: Ipv4Addr::new(10, 9, 0, 2) }]);

        // A garbled file (a crash between create and write) is stale as well.
        fs::write(lease_file(&dir.0, 2), "").expect("garbage");
        live.borrow_mut().push(d);
        assert_eq!(allocate(&dir.0, net, d, alive, free).expect("d"), (2, vec![]));

        // A sandbox's own old lease is replaced, not duplicated.
        let (index, stale) = allocate(&dir.0, net, d, alive, free).expect("d again");
        assert_eq!((index, stale.len()), (2, 1));
        assert_eq!(records(&dir.0).expect("records").values().flatten().filter(|r| r.sandbox == d).count(), 1);

        live.borrow_mut().push(e);
        assert_eq!(allocate(&dir.0, net, e, alive, free).expect("e").0, 3);
        let err = allocate(&dir.0, net, Uuid::new_v4(), alive, free).expect_err("full");
        assert!(err.to_string().contains("all 4 address blocks"), "{err}");
        // Files that are not leases, or lie outside the subnet, are ignored.
        fs::write(dir.0.join(".lock"), "").expect("lock file");
        fs::write(lease_file(&dir.0, 99), "junk").expect("out of range");
        assert_eq!(records(&dir.0).expect("records").len(), 5);
        assert!(allocate(&dir.0, net, Uuid::new_v4(), alive, free).is_err());
    }

    #[test]
    fn allocator_skips_blocks_whose_address_is_still_on_an_interface() {
        let dir = TempDir::new();
        let net = subnet("10.9.0.0/28");
        let a = Uuid::new_v4();
        let alive = |_: Uuid| false;
        // Block 0 has no lease but its host address is taken; block 1 has a stale lease and
        // a taken address: neither is handed out, and the stale record still goes to teardown.
        let stale = Record { sandbox: Uuid::new_v4(), sandbox_ip: Ipv4Addr::new(10, 9, 0, 6) };
        fs::write(lease_file(&dir.0, 1), stale.render()).expect("stale lease");
        let taken = [Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 5)];
        let (index, gone) = allocate(&dir.0, net, a, alive, |ip| taken.contains(&ip)).expect("a");
        assert_eq!((index, gone), (2, vec![stale]));
        assert!(!lease_file(&dir.0, 1).exists());
        let err = allocate(&dir.0, net, Uuid::new_v4(), alive, |_| true).expect_err("every address taken");
        assert!(err.to_string().contains("all 4 address blocks"), "{err}");
    }

    #[test]
    fn an_address_counts_as_on_the_host_only_when_an_interface_has_it() {
        assert!(address_on_host(Ipv4Addr::LOCALHOST));
        // TEST-NET-3 (RFC 5737) is never assigned to a host.
        assert!(!address_on_host(Ipv4Addr::new(203, 0, 113, 77)));
        // Bindable (all of 127/8 is local) yet on no interface: a bind test would say yes.
        assert!(std::net::UdpSocket::bind((Ipv4Addr::new(127, 0, 0, 2), 0)).is_ok());
        assert!(!address_on_host(Ipv4Addr::new(127, 0, 0, 2)));
    }

    #[test]
    fn an_address_whose_proxy_port_a_socket_holds_is_in_use() {
        let (held, free) = (Ipv4Addr::new(127, 0, 0, 3), Ipv4Addr::new(127, 0, 0, 4));
        let listener = std::net::TcpListener::bind((held, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(address_in_use(held, port), "a listener holds it, though no interface has it");
        assert!(!address_on_host(held));
        assert!(!address_in_use(free, port), "another address, same port");
        // Another port of the same address is no obstacle to the proxy.
        let other = std::net::TcpListener::bind((held, 0)).unwrap();
        let other_port = other.local_addr().unwrap().port();
        drop(other);
        assert!(!address_in_use(held, other_port));
        // A bound socket that does not listen holds the port too.
        let (bound, bound_port) = bound_not_listening(Ipv4Addr::new(127, 0, 0, 5));
        assert!(address_in_use(Ipv4Addr::new(127, 0, 0, 5), bound_port));
        drop(bound);
        drop(listener);
        assert!(!address_in_use(held, port), "free again once the listener closes");
        // On no interface and held by nothing: free.
        let gone = Ipv4Addr::new(203, 0, 113, 77);
        assert!(!port_taken(gone, port));
        // On no interface (any more) yet held by a socket, as a proxy whose machine's veth
        // another server removed: taken.
        let (held_gone, gone_port) = bound_not_listening(gone);
        assert!(!address_on_host(gone));
        assert!(address_in_use(gone, gone_port), "a socket still holds an address no interface has");
        drop(held_gone);
        assert!(!address_in_use(gone, gone_port));
    }

    /// A TCP socket bound to `ip` on a free port, not listening (`IP_FREEBIND`: `ip` need not be local).
    fn bound_not_listening(ip: Ipv4Addr) -> (std::os::fd::OwnedFd, u16) {
        // SAFETY: socket(2), then ownership of the fresh descriptor.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0)) };
        let on: libc::c_int = 1;
        let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: setsockopt reads one int this function owns.
        let set = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_FREEBIND,
                (&on as *const libc::c_int).cast(),
                len,
            )
        };
        assert_eq!(set, 0);
        let mut addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
            sin_zero: [0; 8],
        };
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: bind and getsockname on an owned descriptor with a sockaddr_in of the given length.
        unsafe {
            assert_eq!(libc::bind(fd.as_raw_fd(), (&addr as *const libc::sockaddr_in).cast(), len), 0);
            assert_eq!(libc::getsockname(fd.as_raw_fd(), (&mut addr as *mut libc::sockaddr_in).cast(), &mut len), 0);
        }
        (fd, u16::from_be(addr.sin_port))
    }

    /// A HostNet of its own (table, prefixes, subnet, lease dir) for one test,
    /// undone on drop: leases and table.
    struct Fixture {
        net: HostNet,
        leases: Vec<Lease>,
        _dir: TempDir,
    }

    impl Fixture {
        fn new(names: Names, net: &str, proxy_port: u16) -> Fixture {
            let dir = TempDir::new();
            let cfg = NetConfig { subnet: subnet(net), lease_dir: dir.0.clone(), proxy_port };
            let net = HostNet::init_with(cfg, names).expect("init");
            Fixture { net, leases: Vec::new(), _dir: dir }
        }

        async fn create(&mut self, unrestricted: bool) -> Lease {
            let lease = self.net.create(Uuid::now_v7(), unrestricted).await.expect("create");
            self.leases.push(lease.clone());
            lease
        }

        fn set_members(&self) -> String {
            let (names, tools) = (&self.net.inner.names, Tools::find().expect("nft"));
            let out = Command::new(&tools.nft).args(["list", "set", "inet", names.table, SET]).output().expect("nft");
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            for lease in &self.leases {
                self.net.free(lease);
            }
            let (names, tools) = (&self.net.inner.names, Tools::find().expect("nft"));
            // A test may have deleted a table itself, or left an older floor.
            let _ = run(&tools.nft, &["delete", "table", "inet", names.table], None);
            let _ = run(&tools.nft, &["delete", "table", "inet", &names.floor_table()], None);
            let listing = output(&tools.nft, &["list", "tables", "inet"]).unwrap_or_default();
            for old in obsolete_floors(*names, &listing) {
                let _ = run(&tools.nft, &["delete", "table", "inet", &old], None);
            }
        }
    }

    /// Puts `ip_forward` back as it was before the first holder, when the last one is dropped:
    /// tests that let machines out run in parallel, and one finishing early must not switch
    /// forwarding off under another.
    struct Forwarding;

    /// Holders, and the value before the first.
    static FORWARDING: std::sync::Mutex<(usize, String)> = std::sync::Mutex::new((0, String::new()));

    impl Forwarding {
        const PATH: &str = "/proc/sys/net/ipv4/ip_forward";

        fn save() -> Forwarding {
            let mut held = FORWARDING.lock().unwrap_or_else(|p| p.into_inner());
            if held.0 == 0 {
                held.1 = fs::read_to_string(Forwarding::PATH).expect("ip_forward");
            }
            held.0 += 1;
            Forwarding
        }
    }

    impl Drop for Forwarding {
        fn drop(&mut self) {
            let mut held = FORWARDING.lock().unwrap_or_else(|p| p.into_inner());
            held.0 -= 1;
            if held.0 == 0 {
                let _ = fs::write(Forwarding::PATH, &held.1);
            }
        }
    }

    /// Runs `f` on a thread that has joined the network namespace at `netns`.
    fn inside<T: Send + 'static>(netns: &Path, f: impl FnOnce() -> T + Send + 'static) -> T {
        let ns = File::open(netns).expect("netns");
        std::thread::spawn(move || {
            // SAFETY: setns on an owned descriptor, on a thread that ends with `f`.
            assert_eq!(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
            f()
        })
        .join()
        .expect("netns thread")
    }

    /// A listener that never accepts: the kernel completes handshakes into its backlog.
    fn listen_in(netns: Option<&Path>, ip: Ipv4Addr, port: u16) -> TcpListener {
        let bind = move || TcpListener::bind((ip, port)).expect("bind");
        match netns {
            Some(ns) => inside(ns, bind),
            None => bind(),
        }
    }

    /// Whether a TCP connection from inside `netns` succeeds, and how long the answer took.
    fn connect_from(netns: &Path, ip: impl Into<IpAddr>, port: u16) -> (bool, Duration) {
        let addr = SocketAddr::new(ip.into(), port);
        inside(netns, move || {
            let started = Instant::now();
            let ok = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok();
            (ok, started.elapsed())
        })
    }

    /// One throwaway connection from a new machine to its gateway, so the link is up and both
    /// neighbours are resolved before anything is timed (a first packet on a veth still settling
    /// waits out an ARP retry, about 1 s).
    fn settle(lease: &Lease) {
        let _ = connect_from(&lease.netns_path, lease.host_ip, 9);
    }

    fn assert_refused_fast(netns: &Path, ip: impl Into<IpAddr>, port: u16, what: &str) {
        let (ok, took) = connect_from(netns, ip, port);
        assert!(!ok, "{what}: connected");
        assert!(took < Duration::from_millis(100), "{what}: refused after {took:?}, not at once");
    }

    fn sh(cmd: &str) -> (bool, String) {
        let out = Command::new("sh").args(["-c", cmd]).output().expect("sh");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    #[tokio::test]
    async fn a_machine_reaches_its_proxy_port_and_nothing_else() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let port = 39101;
        let mut fx = Fixture::new(
            Names { table: "acs_t1", floor: "acs_t1_floor_", netns_prefix: "acs1-", if_prefix: "v1-" },
            "10.198.1.0/24",
            port,
        );
        let started = Instant::now();
        let a = fx.create(false).await;
        eprintln!("create: {:?}", started.elapsed());
        let b = fx.create(false).await;
        assert_ne!(a.index, b.index);
        assert_eq!((a.host_ip.octets()[3] % 4, a.sandbox_ip.octets()[3] % 4), (1, 2));
        assert_ne!(u32::from(a.host_ip) & !3, u32::from(b.host_ip) & !3, "distinct /30s");
        let (_, listed) = sh("ip netns list");
        assert!(listed.contains(&a.netns) && listed.contains(&b.netns), "{listed}");

        let _proxy_a = listen_in(None, a.host_ip, port);
        let _other_a = listen_in(None, a.host_ip, port + 1);
        let _proxy_b = listen_in(None, b.host_ip, port);
        let _service_b = listen_in(Some(&b.netns_path), b.sandbox_ip, 8000);
        assert!(connect_from(&a.netns_path, a.host_ip, port).0, "the proxy port");
        assert!(connect_from(&b.netns_path, b.host_ip, port).0, "b's proxy port");
        assert_refused_fast(&a.netns_path, a.host_ip, port + 1, "another host port");
        assert_refused_fast(&a.netns_path, b.host_ip, port, "the proxy port of another machine's veth");
        assert_refused_fast(&a.netns_path, b.sandbox_ip, 8000, "another machine");
        // The host still reaches into a machine.
        assert!(
            TcpStream::connect_timeout(&SocketAddrV4::new(b.sandbox_ip, 8000).into(), Duration::from_secs(2)).is_ok()
        );

        let v6 = |ns: Option<&Path>| {
            let read = || fs::read_to_string("/proc/sys/net/ipv6/conf/all/disable_ipv6").unwrap_or_default();
            match ns {
                Some(ns) => inside(ns, read),
                None => read(),
            }
        };
        assert_eq!(v6(Some(&a.netns_path)).trim(), "1", "IPv6 off inside");
        assert_eq!(v6(None).trim(), "0", "IPv6 untouched on the host");

        // Root of a user namespace that does not own the network namespace may change nothing.
        let (tampered, _) = sh(&format!("ip netns exec {} unshare -U -r ip route del default 2>/dev/null", a.netns));
        assert!(!tampered, "route deleted from a user namespace");
        let (_, routes) = sh(&format!("ip -n {} route show default", a.netns));
        assert!(routes.contains(&a.host_ip.to_string()), "{routes}");
    }

    /// Another network namespace standing in for the internet: a public address (`ip`, on a /30
    /// whose other end `host_ip` is the host's), and optionally addresses of blocked ranges routed
    /// to it, which a machine would reach but for the floor. Listeners bound in it to 0.0.0.0
    /// answer on all of them. Each test passes its own tag, so decoys never share names or addresses.
    struct Decoy {
        netns: String,
        host_if: String,
        host_ip: Ipv4Addr,
        ip: Ipv4Addr,
    }

    impl Decoy {
        fn new(tag: u8) -> Decoy {
            let pid = std::process::id();
            // Just outside TEST-NET-3, so public: shadows four internet addresses on this host
            // while the test runs.
            let base = u32::from(Ipv4Addr::new(203, 0, 114, 0)) + 4 * u32::from(tag);
            let (host_ip, ip) = (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2));
            let d = Decoy { netns: format!("acsdecoy{tag}-{pid}"), host_if: format!("vd{tag}-{pid}"), host_ip, ip };
            let (ns, vd) = (&d.netns, &d.host_if);
            let (ok, _) = sh(&format!(
                "ip netns add {ns} && ip link add {vd} type veth peer name eth0 netns {ns} && \
                 ip addr add {host_ip}/30 dev {vd} && ip link set {vd} up && ip -n {ns} addr add {ip}/30 dev eth0 && \
                 ip -n {ns} link set eth0 up && ip -n {ns} link set lo up"
            ));
            assert!(ok, "decoy setup");
            d
        }

        /// Gives the decoy `extra` too, routed to it from the host (the route goes with the veth).
        fn also(&self, extra: Ipv4Addr) {
            let (ns, vd, ip) = (&self.netns, &self.host_if, self.ip);
            let (ok, _) =
                sh(&format!("ip -n {ns} addr add {extra}/32 dev eth0 && ip route add {extra}/32 via {ip} dev {vd}"));
            assert!(ok, "decoy address {extra}");
        }

        fn path(&self) -> PathBuf {
            netns_path(&self.netns)
        }
    }

    impl Drop for Decoy {
        fn drop(&mut self) {
            sh(&format!("ip link del {} 2>/dev/null; ip netns del {} 2>/dev/null", self.host_if, self.netns));
        }
    }

    #[tokio::test]
    async fn only_unrestricted_machines_get_out_and_never_to_each_other() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let names = Names { table: "acs_t2", floor: "acs_t2_floor_", netns_prefix: "acs2-", if_prefix: "v2-" };
        let _forwarding = Forwarding::save();
        let mut fx = Fixture::new(names, "10.198.2.0/24", 39102);
        let decoy = Decoy::new(2);
        let _web = listen_in(Some(&decoy.path()), decoy.ip, 8000);
        let open = fx.create(true).await;
        let limited = fx.create(false).await;
        let _service = listen_in(Some(&limited.netns_path), limited.sandbox_ip, 8000);
        let _service_open = listen_in(Some(&open.netns_path), open.sandbox_ip, 8000);
        settle(&open);
        settle(&limited);

        assert!(connect_from(&open.netns_path, decoy.ip, 8000).0, "unrestricted reaches the decoy");
        assert_refused_fast(&limited.netns_path, decoy.ip, 8000, "limited to the decoy");
        assert_refused_fast(&open.netns_path, limited.sandbox_ip, 8000, "unrestricted to another machine");
        assert_refused_fast(&limited.netns_path, open.sandbox_ip, 8000, "limited to an unrestricted machine");
        assert_refused_fast(&open.netns_path, decoy.host_ip, 22, "unrestricted to a host address");

        // Installing the table again (another server starting) keeps live members.
        let again = HostNet::init_with(fx.net.inner.cfg.clone(), names).expect("init again");
        assert!(fx.set_members().contains(&open.sandbox_ip.to_string()));
        assert!(connect_from(&open.netns_path, decoy.ip, 8000).0, "still out after a second init");

        again.set_unrestricted(&limited, true).await.expect("open");
        fx.net.set_unrestricted(&open, false).await.expect("limit");
        fx.net.set_unrestricted(&open, false).await.expect("limit twice");
        assert!(connect_from(&limited.netns_path, decoy.ip, 8000).0, "switched to unrestricted");
        assert_refused_fast(&open.netns_path, decoy.ip, 8000, "switched to limited");
        drop(decoy);
    }

    #[tokio::test]
    async fn an_address_left_on_an_interface_without_a_lease_is_not_handed_out_again() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let names = Names { table: "acs_t4", floor: "acs_t4_floor_", netns_prefix: "acs4-", if_prefix: "v4-" };
        let port = 39104;
        let mut fx = Fixture::new(names, "10.198.4.0/24", port);
        // What a torn-down-mid-build machine leaves: block 0's host address on an interface, no lease.
        let orphan = format!("v4-orph{}", std::process::id() % 10_000);
        let ok = sh(&format!(
            "ip link add {orphan} type veth peer name {orphan}p && ip addr add 10.198.4.1/30 dev {orphan}"
        ));
        assert!(ok.0, "orphan interface");
        let lease = fx.create(false).await;
        sh(&format!("ip link del {orphan}"));
        assert_eq!(lease.index, 1);
        let _proxy = listen_in(None, lease.host_ip, port);
        assert!(connect_from(&lease.netns_path, lease.host_ip, port).0, "the machine reaches its proxy");
    }

    #[tokio::test]
    async fn release_removes_everything_and_adopt_finds_live_leases() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let names = Names { table: "acs_t3", floor: "acs_t3_floor_", netns_prefix: "acs3-", if_prefix: "v3-" };
        let mut fx = Fixture::new(names, "10.198.3.0/24", 39103);
        let lease = fx.create(false).await;
        // A server restart: a second HostNet on the same lease directory.
        let restarted = HostNet::init_with(fx.net.inner.cfg.clone(), names).expect("init");
        assert_eq!(restarted.adopt(lease.sandbox), Some(lease.clone()));
        assert_eq!(restarted.adopt(Uuid::now_v7()), None);
        restarted.set_unrestricted(&lease, false).await.expect("limit a limited lease");

        let started = Instant::now();
        restarted.release(&lease).await;
        eprintln!("release: {:?}", started.elapsed());
        let (_, listed) = sh("ip netns list");
        assert!(!listed.contains(&lease.netns), "{listed}");
        assert!(!lease.netns_path.exists());
        assert!(!interface_exists(&lease.host_if));
        assert!(!lease_file(&fx.net.inner.cfg.lease_dir, lease.index).exists());
        assert!(!fx.set_members().contains(&lease.sandbox_ip.to_string()));
        assert_eq!(restarted.adopt(lease.sandbox), None);
        restarted.release(&lease).await;

        // A create that fails half-way leaves nothing behind: a taken interface name blocks the veth.
        let id = Uuid::now_v7();
        let blocker = names.host_if(id);
        assert!(sh(&format!("ip link add {blocker} type bridge")).0);
        // Once without a spare (a new network), once with the spares ready (a rename).
        for with_spares in [false, true] {
            wait_for_spares(&fx.net);
            if !with_spares {
                let drained = std::mem::take(&mut *fx.net.inner.spares.lock().unwrap());
                for spare in drained {
                    fx.net.free(&spare);
                }
            }
            let err = fx.net.create(id, false).await.expect_err("veth name taken");
            assert!(interface_exists(&blocker), "the blocker is not this machine's to remove");
            assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
            assert!(!netns_path(&names.netns(id)).exists());
            let left = records(&fx.net.inner.cfg.lease_dir).expect("records");
            assert!(left.values().flatten().all(|r| is_spare(r.sandbox)), "only spares: {left:?}");
        }
        assert_eq!(wait_for_spares(&fx.net), SPARES, "a spare stays one when its claim fails");
        sh(&format!("ip link del {blocker}"));
    }

    #[tokio::test]
    async fn a_starting_server_frees_the_spares_of_a_server_gone_and_keeps_a_live_ones() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let names = Names { table: "acs_t8", floor: "acs_t8_floor_", netns_prefix: "acs8-", if_prefix: "v8-" };
        let fx = Fixture::new(names, "10.198.8.0/24", 39108);
        let dir = fx.net.inner.cfg.lease_dir.clone();
        let spare_ids = |net: &HostNet| -> Vec<Uuid> {
            net.inner.spares.lock().unwrap().iter().map(|l| l.sandbox).collect::<Vec<_>>()
        };
        assert_eq!(wait_for_spares(&fx.net), SPARES);
        let live = spare_ids(&fx.net);
        let live_blocks: Vec<u32> = fx.net.inner.spares.lock().unwrap().iter().map(|l| l.index).collect();

        // A second server on the host leaves the first's spares whole, and the first claims one.
        let second = HostNet::init_with(fx.net.inner.cfg.clone(), names).expect("init");
        assert_eq!(wait_for_spares(&second), SPARES);
        for id in &live {
            assert!(netns_path(&names.netns(*id)).exists(), "a live server's spare was freed");
        }
        let claimed = fx.net.create(Uuid::now_v7(), true).await.expect("claim");
        assert!(live_blocks.contains(&claimed.index), "a spare was claimed: {claimed:?}");
        assert!(fx.set_members().contains(&claimed.sandbox_ip.to_string()), "the claim's set entry stays");
        fx.net.free(&claimed);

        // The second server dies without freeing its spares (its lock goes with its process).
        let orphans = std::mem::take(&mut *second.inner.spares.lock().unwrap());
        let owner_file = second.inner.owner.path.clone();
        drop(second);
        File::create(&owner_file).expect("the owner file, unlocked");
        for lease in &orphans {
            assert!(lease.netns_path.exists(), "left behind as a killed server would");
        }
        // A third starts: the dead server's spares are freed, the live first's are kept.
        let third = HostNet::init_with(fx.net.inner.cfg.clone(), names).expect("init");
        let on_file: Vec<Uuid> = records(&dir).unwrap().into_values().flatten().map(|r| r.sandbox).collect();
        for lease in &orphans {
            assert!(!lease.netns_path.exists(), "a dead server's spare was kept");
            assert!(!interface_exists(&lease.host_if));
            assert!(!on_file.contains(&lease.sandbox));
        }
        for id in spare_ids(&fx.net) {
            assert!(on_file.contains(&id), "a live server's spare was freed");
            assert!(netns_path(&names.netns(id)).exists());
        }
        // A dead server's owner file goes too; the live ones stay.
        let owners: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".owner"))
            .collect();
        assert_eq!(owners.len(), 2, "{owners:?}");
        drop(third);
    }

    /// How many spares `net` holds once a refill is done.
    fn wait_for_spares(net: &HostNet) -> usize {
        net.refill();
        let deadline = Instant::now() + Duration::from_secs(10);
        while net.inner.refilling.load(Ordering::Acquire) {
            assert!(Instant::now() < deadline, "the refill never ended");
            std::thread::sleep(Duration::from_millis(10));
        }
        net.inner.spares.lock().unwrap().len()
    }

    /// This host's address toward the internet (the source of its default route), if it has one.
    fn main_address() -> Option<Ipv4Addr> {
        let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
        probe.connect("8.8.8.8:53").ok()?;
        match probe.local_addr().ok()?.ip() {
            IpAddr::V4(ip) => Some(ip),
            IpAddr::V6(_) => None,
        }
    }

    #[test]
    fn the_floor_script_holds_the_shared_list_and_replaces_only_older_floors() {
        let names = Names { table: "acs_t9", floor: "acs_t9_floor_", netns_prefix: "acs9-", if_prefix: "v9-" };
        let listing = "table inet acs_t9\ntable inet acs_t9_floor_0\ntable inet acs_t9_floor_1\n\
                       table inet acs_t9_floor_7\ntable inet acs_t9_floor_x\ntable inet other_floor_0\n";
        assert_eq!(obsolete_floors(names, listing), ["acs_t9_floor_0"]);
        let script = floor_script(names, 3128, &obsolete_floors(names, listing));
        assert!(script.starts_with("delete table inet acs_t9_floor_0\nadd table inet acs_t9_floor_1\n"), "{script}");
        for block in [
            "169.254.0.0/16",
            "10.0.0.0/8",
            "100.64.0.0/10",
            "127.0.0.0/8",
            "192.168.0.0/16",
            "::ffff:169.254.0.0/112",
            "64:ff9b::a9fe:0/112",
            "2002:a9fe::/32",
            "fc00::/7",
            "fe80::/10",
        ] {
            assert!(script.contains(&format!(" {block},")) || script.contains(&format!(" {block} }}")), "{block}");
        }
        // Before the refusals only replies and TCP to the proxy port on the machine's own veth pass.
        let rules: Vec<&str> = script.lines().filter(|l| l.contains(" prerouting iifname \"v9-*\" ")).collect();
        assert_eq!(rules.len(), 5, "{rules:#?}");
        assert!(rules[0].ends_with(" ct direction reply return"));
        assert!(rules[1].ends_with(" meta nfproto ipv4 tcp dport 3128 fib daddr . iif type local return"));
        assert!(rules[2..].iter().all(|r| r.ends_with(" jump refuse")), "{rules:#?}");
        assert!(rules[4].contains(" fib daddr type local "));
        if is_root() {
            // Check mode: parsed and validated by the kernel, nothing committed.
            let nft = Tools::find().expect("nft").nft;
            run(&nft, &["-c", "-f", "-"], Some(&floor_script(names, 3128, &[]))).expect("nft accepts the floor");
        }
    }

    #[tokio::test]
    async fn the_floor_refuses_blocked_ranges_and_the_hosts_addresses_in_both_modes() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let names = Names { table: "acs_t5", floor: "acs_t5_floor_", netns_prefix: "acs5-", if_prefix: "v5-" };
        let port = 39105;
        let _forwarding = Forwarding::save();
        let mut fx = Fixture::new(names, "10.198.5.0/24", port);
        let decoy = Decoy::new(5);
        // Blocked ranges a machine could route to: private, shared (carrier-grade NAT), benchmarking.
        let blocked = [Ipv4Addr::new(10, 202, 5, 2), Ipv4Addr::new(100, 64, 5, 2), Ipv4Addr::new(198, 18, 5, 2)];
        for ip in blocked {
            decoy.also(ip);
        }
        let _web = listen_in(Some(&decoy.path()), Ipv4Addr::UNSPECIFIED, 8000);
        let _host_service = listen_in(None, Ipv4Addr::UNSPECIFIED, port + 1);
        let open = fx.create(true).await;
        let limited = fx.create(false).await;
        let _proxies = [listen_in(None, open.host_ip, port), listen_in(None, limited.host_ip, port)];
        settle(&open);
        settle(&limited);

        for ip in blocked {
            let answers = TcpStream::connect_timeout(&SocketAddrV4::new(ip, 8000).into(), Duration::from_secs(2));
            assert!(answers.is_ok(), "{ip} answers the host, so only the floor keeps machines out");
        }
        assert!(connect_from(&open.netns_path, decoy.ip, 8000).0, "unrestricted reaches a public address");
        assert_refused_fast(&limited.netns_path, decoy.ip, 8000, "limited to a public address");
        for (mode, lease) in [("unrestricted", &open), ("limited", &limited)] {
            let ns = &lease.netns_path;
            assert!(connect_from(ns, lease.host_ip, port).0, "{mode}: its proxy port");
            for ip in blocked {
                assert_refused_fast(ns, ip, 8000, &format!("{mode} to {ip}"));
            }
            assert_refused_fast(ns, Ipv4Addr::new(169, 254, 169, 254), 80, &format!("{mode} to the metadata service"));
            assert_refused_fast(ns, decoy.host_ip, port + 1, &format!("{mode} to a public address of the host"));
            if let Some(main) = main_address() {
                assert_refused_fast(ns, main, port + 1, &format!("{mode} to the host's main address {main}"));
            }
            assert_refused_fast(ns, lease.host_ip, port + 1, &format!("{mode} to another port of its gateway"));
        }
        // The host still opens connections into a machine, and gets the replies.
        let _service = listen_in(Some(&open.netns_path), open.sandbox_ip, 8000);
        let into = TcpStream::connect_timeout(&SocketAddrV4::new(open.sandbox_ip, 8000).into(), Duration::from_secs(2));
        assert!(into.is_ok(), "the host into a machine");
    }

    #[tokio::test]
    async fn a_floor_installed_later_covers_running_machines_and_replaces_older_floors() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let names = Names { table: "acs_t6", floor: "acs_t6_floor_", netns_prefix: "acs6-", if_prefix: "v6-" };
        let _forwarding = Forwarding::save();
        let mut fx = Fixture::new(names, "10.198.6.0/24", 39106);
        let nft = Tools::find().expect("nft").nft;
        let decoy = Decoy::new(6);
        let private = Ipv4Addr::new(10, 202, 6, 2);
        decoy.also(private);
        let _web = listen_in(Some(&decoy.path()), Ipv4Addr::UNSPECIFIED, 8000);
        // The host as an older server left it: the policy table, and instead of the current floor
        // an obsolete one that refuses what the current one allows (the decoy's public address).
        run(&nft, &["delete", "table", "inet", &names.floor_table()], None).expect("no floor");
        let old = format!("{}0", names.floor);
        let script = format!(
            "add table inet {old}\nadd chain inet {old} prerouting {{ type filter hook prerouting priority -20; \
             policy accept; }}\nadd rule inet {old} prerouting iifname \"v6-*\" ip daddr {} reject with tcp reset\n",
            decoy.ip
        );
        run(&nft, &["-f", "-"], Some(&script)).expect("an obsolete floor");
        let open = fx.create(true).await;
        settle(&open);
        assert!(connect_from(&open.netns_path, private, 8000).0, "without the floor the private address answers");
        assert_refused_fast(&open.netns_path, decoy.ip, 8000, "the obsolete floor");
        let kept = inside(&open.netns_path, move || {
            TcpStream::connect_timeout(&SocketAddrV4::new(private, 8000).into(), Duration::from_secs(2))
                .expect("a connection opened before the floor")
        });

        // A current server starts on the host.
        HostNet::init_with(fx.net.inner.cfg.clone(), names).expect("init");
        let tables = output(&nft, &["list", "tables", "inet"]).expect("tables");
        assert!(tables.contains(&format!("table inet {}\n", names.floor_table())), "{tables}");
        assert!(!tables.contains(&format!("table inet {old}\n")), "{tables}");
        assert!(connect_from(&open.netns_path, decoy.ip, 8000).0, "the obsolete floor is gone");
        assert_refused_fast(&open.netns_path, private, 8000, "a machine that was already running");
        // The connection opened before the floor is cut at its next packet.
        kept.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
        std::io::Write::write_all(&mut &kept, b"x").expect("write");
        let err = (&kept).read(&mut [0u8; 1]).expect_err("reset");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
    }

    #[tokio::test]
    async fn the_floor_alone_refuses_the_hosts_addresses_and_blocked_ipv6_ranges() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let names = Names { table: "acs_t7", floor: "acs_t7_floor_", netns_prefix: "acs7-", if_prefix: "v7-" };
        let port = 39107;
        let mut fx = Fixture::new(names, "10.198.7.0/24", port);
        let nft = Tools::find().expect("nft").nft;
        let decoy = Decoy::new(7);
        let machine = fx.create(false).await;
        let (ns, host_if) = (machine.netns.clone(), machine.host_if.clone());
        // IPv6 in this test machine (real ones have none), with static neighbours: the floor
        // refuses neighbour discovery as it refuses any multicast.
        inside(&machine.netns_path, || {
            for scope in ["all", "default", "eth0"] {
                fs::write(format!("/proc/sys/net/ipv6/conf/{scope}/disable_ipv6"), "0").expect("IPv6 on");
            }
        });
        let mac = |cmd: String| sh(&cmd).1.split_whitespace().nth(2).expect("a MAC address").to_owned();
        let (host_mac, machine_mac) =
            (mac(format!("ip -br link show {host_if}")), mac(format!("ip -n {ns} -br link show eth0")));
        let (host6, machine6): (Ipv6Addr, Ipv6Addr) = ("fd98:7::1".parse().unwrap(), "fd98:7::2".parse().unwrap());
        let (ok, _) = sh(&format!(
            "ip addr add {host6}/64 dev {host_if} nodad && \
             ip neigh replace {machine6} lladdr {machine_mac} dev {host_if} nud permanent && \
             ip -n {ns} addr add {machine6}/64 dev eth0 nodad && \
             ip -n {ns} neigh replace {host6} lladdr {host_mac} dev eth0 nud permanent && \
             ip -n {ns} -6 route add default via {host6}"
        ));
        assert!(ok, "IPv6 wiring");
        let listen = |addr: SocketAddr| TcpListener::bind(addr).expect("bind");
        let _services = [
            listen(SocketAddr::new(machine.host_ip.into(), port)),
            listen(SocketAddr::new(host6.into(), port)),
            listen(SocketAddr::new(host6.into(), port + 1)),
            listen(SocketAddr::new(decoy.host_ip.into(), port + 1)),
        ];
        // Without any table the host's addresses answer the machine.
        for table in [names.table.to_owned(), names.floor_table()] {
            run(&nft, &["delete", "table", "inet", &table], None).expect("delete");
        }
        settle(&machine);
        for (ip, p) in [(IpAddr::from(decoy.host_ip), port + 1), (host6.into(), port + 1), (host6.into(), port)] {
            assert!(connect_from(&machine.netns_path, ip, p).0, "{ip} port {p} without tables");
        }

        // The floor alone.
        run(&nft, &["-f", "-"], Some(&floor_script(names, port, &[]))).expect("floor");
        assert!(connect_from(&machine.netns_path, machine.host_ip, port).0, "the proxy port over IPv4");
        let refused: [(IpAddr, u16, &str); 7] = [
            (decoy.host_ip.into(), port + 1, "a public address of the host"),
            (machine.host_ip.into(), port + 1, "another port of its gateway"),
            (host6.into(), port + 1, "the host over IPv6"),
            (host6.into(), port, "the proxy port over IPv6"),
            ("fd00:dead::1".parse().unwrap(), 80, "unique local"),
            ("64:ff9b::a9fe:a9fe".parse().unwrap(), 80, "the metadata service over NAT64"),
            ("2002:a9fe:a9fe::1".parse().unwrap(), 80, "the metadata service over 6to4"),
        ];
        for (ip, p, what) in refused {
            assert_refused_fast(&machine.netns_path, ip, p, what);
        }
        drop(decoy);
    }
}
