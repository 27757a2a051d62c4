//! Host networking of `local` machines: one network namespace per machine,
//! joined to the host by a veth pair on its own /30, and one static nftables
//! table (`inet acs`) that lets a machine reach only the egress proxy on the
//! host end of its own veth or, when unrestricted, anything but the host and
//! other machines.
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
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use ipnet::Ipv4Net;
use uuid::Uuid;

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

/// Host-wide names. Tests use their own, so they never touch a real server's table or interfaces.
#[derive(Debug, Clone, Copy)]
struct Names {
    table: &'static str,
    netns_prefix: &'static str,
    if_prefix: &'static str,
}

const HOST: Names = Names { table: "acs", netns_prefix: "acs-", if_prefix: "vh-" };
const NETNS_DIR: &str = "/run/netns";
/// The nft set of machine addresses allowed out (forwarding + masquerade).
const SET: &str = "unrestricted";

impl Names {
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

/// The executables this module runs.
#[derive(Debug, Clone)]
struct Tools {
    ip: PathBuf,
    nft: PathBuf,
}

impl Tools {
    /// Both found, or the message naming the missing package.
    fn find() -> Result<Tools, String> {
        let ip = find_tool("ip").ok_or("the local sandbox provider needs `ip`: install the iproute2 package")?;
        let nft = find_tool("nft").ok_or("the local sandbox provider needs `nft`: install the nftables package")?;
        Ok(Tools { ip, nft })
    }

    /// For cleanup without a running server: bare names when not found (the calls then just fail).
    fn find_or_bare() -> Tools {
        Tools::find().unwrap_or_else(|_| Tools { ip: "ip".into(), nft: "nft".into() })
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

/// The effective capability set of this process includes every bit given.
fn has_caps(bits: &[u32]) -> bool {
    let Ok(status) = fs::read_to_string("/proc/self/status") else { return false };
    let Some(hex) = status.lines().find_map(|l| l.strip_prefix("CapEff:")) else { return false };
    let Ok(eff) = u64::from_str_radix(hex.trim(), 16) else { return false };
    bits.iter().all(|b| eff & (1u64 << b) != 0)
}

/// The whole static table, applied as one transaction. `add` keeps existing
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

/// nft commands that leave `ips` out of the set whether or not they were in it
/// (`add` then `delete` in one transaction: deleting a missing element alone fails).
fn set_absent_script(names: Names, ips: &[Ipv4Addr]) -> String {
    let list = ips.iter().map(|ip| ip.to_string()).collect::<Vec<_>>().join(", ");
    let t = format!("inet {}", names.table);
    format!("add element {t} {SET} {{ {list} }}\ndelete element {t} {SET} {{ {list} }}\n")
}

/// Holds the host-wide lock of a lease directory until dropped.
fn lock(dir: &Path) -> io::Result<File> {
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(".lock"))?;
    loop {
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
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

/// Every lease file of the directory by index; None for an unreadable or garbled one.
fn records(dir: &Path) -> io::Result<BTreeMap<u32, Option<Record>>> {
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(index) = name.to_str().and_then(|n| n.strip_suffix(".lease")).and_then(|n| n.parse().ok()) else {
            continue;
        };
        let record = fs::read_to_string(entry.path()).ok().and_then(|t| Record::parse(&t));
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

/// Whether a block's host address is taken outside the lease files.
fn address_in_use(ip: Ipv4Addr) -> bool {
    address_on_host(ip) || socket_bound(ip)
}

/// Whether a TCP socket of this network namespace is bound to `ip`.
fn socket_bound(ip: Ipv4Addr) -> bool {
    fs::read_to_string("/proc/net/tcp").is_ok_and(|table| bound_addresses(&table).any(|a| a == ip))
}

/// The local addresses of a `/proc/net/tcp` table: `0100007F:1F90` is the
/// address as the kernel holds it (network order) printed as a host-order number.
fn bound_addresses(table: &str) -> impl Iterator<Item = Ipv4Addr> + '_ {
    table.lines().skip(1).filter_map(|line| {
        let (hex, _) = line.split_whitespace().nth(1)?.split_once(':')?;
        Some(Ipv4Addr::from(u32::from_str_radix(hex, 16).ok()?.to_ne_bytes()))
    })
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

/// Writes `1` to IPv6 `disable_ipv6` inside a namespace: no link-local side door.
fn disable_ipv6(netns: &Path) -> io::Result<()> {
    let ns = File::open(netns)?;
    // A thread of its own: setns moves only the calling thread, and this one ends here.
    let inside = std::thread::spawn(move || -> io::Result<()> {
        // SAFETY: setns on a namespace descriptor this thread owns.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        for scope in ["default", "all"] {
            match fs::write(format!("/proc/sys/net/ipv6/conf/{scope}/disable_ipv6"), "1") {
                // A kernel without IPv6 has no side door to close.
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                other => other?,
            }
        }
        Ok(())
    });
    inside.join().map_err(|_| io::Error::other("the namespace thread panicked"))?
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
fn teardown(names: Names, tools: &Tools, sandbox: Uuid, ips: &[Ipv4Addr]) {
    let (host_if, netns) = (names.host_if(sandbox), names.netns(sandbox));
    let mut batch = String::new();
    // The veth goes first: it dies at once, while a namespace with a process left inside outlives `netns del`.
    if interface_exists(&host_if) {
        batch.push_str(&format!("link del {host_if}\n"));
    }
    if netns_path(&netns).exists() {
        batch.push_str(&format!("netns del {netns}\n"));
    }
    if !batch.is_empty()
        && let Err(e) = run(&tools.ip, &["-force", "-batch", "-"], Some(&batch))
    {
        tracing::warn!(%sandbox, "network teardown: {e}");
    }
    if !ips.is_empty() {
        // Fails only when the table is gone, and then there is no element either.
        let _ = run(&tools.nft, &["-f", "-"], Some(&set_absent_script(names, ips)));
    }
}

/// Tears a machine's network down and drops its lease files.
fn free(names: Names, tools: &Tools, dir: &Path, sandbox: Uuid, known_ip: Option<Ipv4Addr>) {
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
    teardown(names, tools, sandbox, &ips);
    // Under the lock, so a reclaimed file that now belongs to another machine is left alone.
    let Ok(_lock) = lock(dir) else { return };
    let now = records(dir).unwrap_or_default();
    for (index, record) in seen {
        if now.get(&index) == Some(&Some(record)) {
            let _ = fs::remove_file(lease_file(dir, index));
        }
    }
}

/// Frees a machine's network without a running server (an operator's or a test's cleanup).
pub fn release_blocking(lease_dir: &Path, sandbox: Uuid) {
    free(HOST, &Tools::find_or_bare(), lease_dir, sandbox, None);
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
    tools: Tools,
}

impl HostNet {
    /// Checks that `ip` and `nft` exist and that this process may create network
    /// namespaces, then installs the static nft table `inet acs` under the
    /// host-wide lock (idempotent). Err is a one-line message naming the missing
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
        let script = table_script(names, cfg.subnet, cfg.proxy_port);
        run(&tools.nft, &["-f", "-"], Some(&script))
            .map_err(|e| format!("installing the nftables table inet {}: {e}", names.table))?;
        Ok(HostNet { inner: Arc::new(Inner { cfg, names, tools }) })
    }

    /// A new namespace `acs-<12 hex>` with veth `vh-<12 hex>` (host side, .1 of
    /// the /30) and `eth0` inside (.2, default route via .1), `lo` up and IPv6
    /// disabled inside. `unrestricted` lets it out (forwarding + masquerade).
    pub async fn create(&self, sandbox: Uuid, unrestricted: bool) -> io::Result<Lease> {
        let net = self.clone();
        tokio::task::spawn_blocking(move || net.create_blocking(sandbox, unrestricted))
            .await
            .map_err(io::Error::other)?
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
        let Inner { cfg, names, tools } = &*self.inner;
        free(*names, tools, &cfg.lease_dir, lease.sandbox, Some(lease.sandbox_ip));
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
        let lease = self.lease_with_netns(sandbox)?;
        if let Err(e) = self.wire(&lease, unrestricted) {
            self.free(&lease);
            return Err(e);
        }
        Ok(lease)
    }

    /// Under the lock: a lease file and the namespace it names, so the lease is never seen stale.
    fn lease_with_netns(&self, sandbox: Uuid) -> io::Result<Lease> {
        let Inner { cfg, names, tools } = &*self.inner;
        let _lock = lock(&cfg.lease_dir)?;
        let netns = names.netns(sandbox);
        if netns_path(&netns).exists() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("network namespace {netns} exists")));
        }
        let alive = |id| netns_path(&names.netns(id)).exists();
        let (index, stale) = allocate(&cfg.lease_dir, cfg.subnet, sandbox, alive, address_in_use)?;
        for old in stale {
            teardown(*names, tools, old.sandbox, &[old.sandbox_ip]);
        }
        let lease = self.lease(sandbox, index).ok_or_else(|| io::Error::other("lease index out of range"))?;
        if let Err(e) = run(&tools.ip, &["netns", "add", &netns], None) {
            let _ = fs::remove_file(lease_file(&cfg.lease_dir, index));
            return Err(e);
        }
        Ok(lease)
    }

    /// Veth pair, addresses, routes and firewall membership of a fresh namespace.
    fn wire(&self, lease: &Lease, unrestricted: bool) -> io::Result<()> {
        let ip = &self.inner.tools.ip;
        let Lease { netns, host_if, host_ip, sandbox_ip, .. } = lease;
        // Before eth0 arrives, so it never gets an IPv6 address.
        disable_ipv6(&lease.netns_path)?;
        let host = format!(
            "link add {host_if} type veth peer name eth0 netns {netns}\naddr add {host_ip}/30 dev {host_if}\n\
             link set {host_if} up\n"
        );
        run(ip, &["-batch", "-"], Some(&host))?;
        let inside = format!(
            "addr add {sandbox_ip}/30 dev eth0\nlink set eth0 up\nlink set lo up\nroute add default via {host_ip}\n"
        );
        run(ip, &["-n", netns, "-batch", "-"], Some(&inside))?;
        if unrestricted {
            self.set_unrestricted_blocking(lease, true)?;
        }
        Ok(())
    }

    fn set_unrestricted_blocking(&self, lease: &Lease, on: bool) -> io::Result<()> {
        let Inner { names, tools, .. } = &*self.inner;
        let script = if on {
            enable_forwarding()?;
            format!("add element inet {} {SET} {{ {} }}\n", names.table, lease.sandbox_ip)
        } else {
            set_absent_script(*names, &[lease.sandbox_ip])
        };
        run(&tools.nft, &["-f", "-"], Some(&script))
    }
}

#[cfg(test)]
mod tests {
    use std::net::{SocketAddrV4, TcpListener, TcpStream};
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
    fn an_address_a_socket_is_bound_to_is_in_use() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                     0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n\
                     1: 0500C80A:0BB9 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2\n";
        let found: Vec<Ipv4Addr> = bound_addresses(table).collect();
        if cfg!(target_endian = "little") {
            assert_eq!(found, [Ipv4Addr::LOCALHOST, Ipv4Addr::new(10, 200, 0, 5)]);
        }
        let (held, free) = (Ipv4Addr::new(127, 0, 0, 3), Ipv4Addr::new(127, 0, 0, 4));
        let listener = std::net::TcpListener::bind((held, 0)).unwrap();
        assert!(address_in_use(held), "a listener holds it, though no interface has it");
        assert!(!address_on_host(held));
        assert!(!address_in_use(free));
        drop(listener);
        assert!(!address_in_use(held), "free again once the listener closes");
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
            let Inner { names, tools, .. } = &*self.net.inner;
            let out = Command::new(&tools.nft).args(["list", "set", "inet", names.table, SET]).output().expect("nft");
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            for lease in &self.leases {
                self.net.free(lease);
            }
            let Inner { names, tools, .. } = &*self.net.inner;
            let _ = run(&tools.nft, &["delete", "table", "inet", names.table], None);
        }
    }

    /// Puts `ip_forward` back as it was. Only the test that enables it holds one,
    /// so a test finishing early never switches it off under another.
    struct Forwarding(String);

    impl Forwarding {
        const PATH: &str = "/proc/sys/net/ipv4/ip_forward";

        fn save() -> Forwarding {
            Forwarding(fs::read_to_string(Forwarding::PATH).expect("ip_forward"))
        }
    }

    impl Drop for Forwarding {
        fn drop(&mut self) {
            let _ = fs::write(Forwarding::PATH, &self.0);
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
    fn connect_from(netns: &Path, ip: Ipv4Addr, port: u16) -> (bool, Duration) {
        inside(netns, move || {
            let started = Instant::now();
            let ok = TcpStream::connect_timeout(&SocketAddrV4::new(ip, port).into(), Duration::from_secs(2)).is_ok();
            (ok, started.elapsed())
        })
    }

    /// One throwaway connection from a new machine to its gateway, so the link is up and both
    /// neighbours are resolved before anything is timed (a first packet on a veth still settling
    /// waits out an ARP retry, about 1 s).
    fn settle(lease: &Lease) {
        let _ = connect_from(&lease.netns_path, lease.host_ip, 9);
    }

    fn assert_refused_fast(netns: &Path, ip: Ipv4Addr, port: u16, what: &str) {
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
        let mut fx =
            Fixture::new(Names { table: "acs_t1", netns_prefix: "acs1-", if_prefix: "v1-" }, "10.198.1.0/24", port);
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

    /// Another network namespace with a listener, standing in for the internet.
    struct Decoy {
        netns: String,
        host_if: String,
    }

    impl Decoy {
        const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 201, 77, 1);
        const IP: Ipv4Addr = Ipv4Addr::new(10, 201, 77, 2);

        fn new() -> Decoy {
            let pid = std::process::id();
            let d = Decoy { netns: format!("acsdecoy-{pid}"), host_if: format!("vd-{pid}") };
            let (ns, vd) = (&d.netns, &d.host_if);
            let (ok, _) = sh(&format!(
                "ip netns add {ns} && ip link add {vd} type veth peer name eth0 netns {ns} && \
                 ip addr add {}/30 dev {vd} && ip link set {vd} up && ip -n {ns} addr add {}/30 dev eth0 && \
                 ip -n {ns} link set eth0 up",
                Decoy::HOST_IP,
                Decoy::IP
            ));
            assert!(ok, "decoy setup");
            d
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
        let names = Names { table: "acs_t2", netns_prefix: "acs2-", if_prefix: "v2-" };
        let _forwarding = Forwarding::save();
        let mut fx = Fixture::new(names, "10.198.2.0/24", 39102);
        let decoy = Decoy::new();
        let _web = listen_in(Some(&decoy.path()), Decoy::IP, 8000);
        let open = fx.create(true).await;
        let limited = fx.create(false).await;
        let _service = listen_in(Some(&limited.netns_path), limited.sandbox_ip, 8000);
        let _service_open = listen_in(Some(&open.netns_path), open.sandbox_ip, 8000);
        settle(&open);
        settle(&limited);

        assert!(connect_from(&open.netns_path, Decoy::IP, 8000).0, "unrestricted reaches the decoy");
        assert_refused_fast(&limited.netns_path, Decoy::IP, 8000, "limited to the decoy");
        assert_refused_fast(&open.netns_path, limited.sandbox_ip, 8000, "unrestricted to another machine");
        assert_refused_fast(&limited.netns_path, open.sandbox_ip, 8000, "limited to an unrestricted machine");
        assert_refused_fast(&open.netns_path, Decoy::HOST_IP, 22, "unrestricted to a host address");

        // Installing the table again (another server starting) keeps live members.
        let again = HostNet::init_with(fx.net.inner.cfg.clone(), names).expect("init again");
        assert!(fx.set_members().contains(&open.sandbox_ip.to_string()));
        assert!(connect_from(&open.netns_path, Decoy::IP, 8000).0, "still out after a second init");

        again.set_unrestricted(&limited, true).await.expect("open");
        fx.net.set_unrestricted(&open, false).await.expect("limit");
        fx.net.set_unrestricted(&open, false).await.expect("limit twice");
        assert!(connect_from(&limited.netns_path, Decoy::IP, 8000).0, "switched to unrestricted");
        assert_refused_fast(&open.netns_path, Decoy::IP, 8000, "switched to limited");
        drop(decoy);
    }

    #[tokio::test]
    async fn an_address_left_on_an_interface_without_a_lease_is_not_handed_out_again() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let names = Names { table: "acs_t4", netns_prefix: "acs4-", if_prefix: "v4-" };
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
        let names = Names { table: "acs_t3", netns_prefix: "acs3-", if_prefix: "v3-" };
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
        let err = fx.net.create(id, false).await.expect_err("veth name taken");
        sh(&format!("ip link del {blocker}"));
        assert!(err.to_string().contains("File exists"), "{err}");
        assert!(!netns_path(&names.netns(id)).exists());
        assert!(records(&fx.net.inner.cfg.lease_dir).expect("records").is_empty());
    }
}
