//! The bubblewrap command line of a `local` machine, and the files it binds.
//!
//! The host's `/usr` is the machine's read-only root; `/home/agent`,
//! `/workspace` and `/run/acs` (the supervisor's socket) are private host
//! directories of that machine. Only a curated part of the host's `/etc` is
//! bound: what programs need to run (certificates, loader cache,
//! alternatives), never the host's users or secrets.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where a machine's files live on the host.
///
/// `root` (`<machines>/<id>`, root-only) keeps what persists and what only
/// the server may touch: the disk image (or directory), checkpoints, the
/// owner record, bwrap's pid file, the log. `run` (`<run_dir>/<id>`, short)
/// holds what bwrap, started as the machine's uid, binds from: the mounted
/// disk and the generated `/etc` files; and, in `ctl/` (root-only, never
/// bound into the machine), the supervisor's socket.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
    pub run: PathBuf,
}

impl Layout {
    pub fn new(machines_dir: &Path, run_dir: &Path, id: uuid::Uuid) -> Layout {
        Layout { root: machines_dir.join(id.to_string()), run: run_dir.join(id.simple().to_string()) }
    }
    /// A sized disk: the ext4 image.
    pub fn image(&self) -> PathBuf {
        self.root.join("disk.img")
    }
    /// A disk without a size limit: a directory.
    pub fn disk_dir(&self) -> PathBuf {
        self.root.join("disk")
    }
    /// Where the disk is mounted while the machine (or a read of it) runs.
    pub fn mount(&self) -> PathBuf {
        self.run.join("disk")
    }
    pub fn home(&self) -> PathBuf {
        self.mount().join("home")
    }
    pub fn workspace(&self) -> PathBuf {
        self.mount().join("workspace")
    }
    pub fn run(&self) -> PathBuf {
        self.run.clone()
    }
    /// The supervisor's socket directory: root-only, outside the machine.
    pub fn ctl(&self) -> PathBuf {
        self.run.join("ctl")
    }
    pub fn socket(&self) -> PathBuf {
        self.ctl().join("sandboxd.sock")
    }
    /// Generated `/etc` files (passwd, group, hosts, hostname).
    pub fn etc(&self) -> PathBuf {
        self.run.join("etc")
    }
    /// The machine's hostname, kept for reads of a parked machine.
    pub fn hostname(&self) -> PathBuf {
        self.root.join("hostname")
    }
    /// The machine's host uid.
    pub fn owner(&self) -> PathBuf {
        self.root.join("owner")
    }
    pub fn checkpoint(&self) -> PathBuf {
        self.root.join("checkpoint")
    }
    pub fn checkpoint_meta(&self) -> PathBuf {
        self.root.join("checkpoint.json")
    }
    /// bwrap's `--info-fd` output: the host pid of the machine's init.
    pub fn info(&self) -> PathBuf {
        self.root.join("bwrap.json")
    }
    pub fn log(&self) -> PathBuf {
        self.root.join("sandboxd.log")
    }
}

/// uid and gid of the agent inside every machine.
pub const AGENT_UID: u32 = 1000;
/// Where the supervisor binary is bound inside.
pub const SANDBOXD_PATH: &str = "/opt/acs/sandboxd";

/// Host `/etc` entries a machine sees (read-only, when present). Under
/// bwrap the machine's `/etc` is its own directory (`Layout::etc`, bound
/// read-only): files among these are copied into it at each start
/// (`host_etc_dirs` are bound instead), because every bind costs bwrap a
/// parse of the whole mount table (about 0.2 ms each on a small host,
/// more with many machines): the files were 18 binds on Debian (14 of the
/// host's, 4 generated).
pub const ETC_BINDS: &[&str] = &[
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "resolv.conf",
    "nsswitch.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "mime.types",
    "gitconfig",
    "bash.bashrc",
    "profile",
    "profile.d",
    "inputrc",
    "terminfo",
    "environment",
    "login.defs",
];

/// The `ETC_BINDS` entries that are directories on this host (bound, not
/// copied; their mount points are made in the machine's `/etc`).
pub fn host_etc_dirs() -> impl Iterator<Item = &'static str> {
    ETC_BINDS.iter().copied().filter(|name| Path::new("/etc").join(name).is_dir())
}

/// The generated `/etc` files of a machine whose agent is `agent_uid`
/// inside (`AGENT_UID` under bwrap; the host uid itself in a container,
/// which has no user namespace of its own).
pub fn etc_files(hostname: &str, agent_uid: u32) -> Vec<(&'static str, String)> {
    vec![
        (
            "passwd",
            format!(
                "root:x:0:0:root:/root:/bin/bash\nagent:x:{agent_uid}:{agent_uid}:agent:/home/agent:/bin/bash\n\
                 nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            ),
        ),
        ("group", format!("root:x:0:\nagent:x:{agent_uid}:\nnogroup:x:65534:\n")),
        ("hostname", format!("{hostname}\n")),
        ("hosts", format!("127.0.0.1 localhost {hostname}\n::1 localhost\n")),
    ]
}

/// What the machine runs as its first process.
pub enum Payload<'a> {
    /// The long-lived supervisor, listening on a socket the server bound
    /// outside the machine and passed in as `listen_fd`; bwrap writes the
    /// host pid of the machine's init to `info_fd`; the supervisor writes a
    /// byte to the pipe `ready_fd` once it listens.
    Supervisor { listen_fd: i32, info_fd: i32, ready_fd: i32, watchdog_seconds: u64 },
    /// A one-shot command over the disk, read-only (reads of a parked machine).
    Offline(&'a [String]),
}

/// Host paths an operator binds read-only into every machine (tools,
/// toolchains), parsed from `host[:inside]` (inside defaults to host).
pub fn parse_ro_bind(entry: &str) -> Result<(PathBuf, String), String> {
    let (host, inside) = entry.split_once(':').unwrap_or((entry, entry));
    let reserved = ["/home/agent", "/workspace", "/opt/acs/sandboxd", "/proc", "/dev", "/tmp"];
    if !host.starts_with('/') || !inside.starts_with('/') || inside == "/" {
        return Err(format!("sandbox.ro_binds: `{entry}` must be absolute paths (host[:inside])"));
    }
    if reserved
        .iter()
        .any(|r| inside == *r || inside.starts_with(&format!("{r}/")) || r.starts_with(&format!("{inside}/")))
    {
        return Err(format!("sandbox.ro_binds: `{entry}` would cover a machine's own directories"));
    }
    if !Path::new(host).exists() {
        return Err(format!("sandbox.ro_binds: `{host}` does not exist on this host"));
    }
    Ok((PathBuf::from(host), inside.to_owned()))
}

/// The full bwrap argument list (without the program name). bwrap runs as
/// the machine's own uid; `seccomp_fd` holds the filter program
/// (`seccomp::program_bytes`).
pub fn args(
    layout: &Layout,
    hostname: &str,
    sandboxd: &Path,
    ro_binds: &[(PathBuf, String)],
    seccomp_fd: i32,
    payload: Payload<'_>,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::with_capacity(96);
    let mut push = |parts: &[&dyn AsRef<std::ffi::OsStr>]| {
        for p in parts {
            a.push(p.as_ref().to_owned());
        }
    };
    let offline = matches!(payload, Payload::Offline(_));
    push(&[&"--unshare-user", &"--unshare-pid", &"--unshare-ipc", &"--unshare-uts", &"--unshare-cgroup-try"]);
    // No user namespace can be made inside (the seccomp filter refuses them too).
    push(&[&"--disable-userns"]);
    if offline {
        // A parked machine has no network namespace of its own: none at all.
        push(&[&"--unshare-net", &"--die-with-parent"]);
    }
    let uid = AGENT_UID.to_string();
    push(&[&"--uid", &uid, &"--gid", &uid, &"--hostname", &hostname, &"--cap-drop", &"ALL", &"--new-session"]);
    push(&[&"--ro-bind", &"/usr", &"/usr"]);
    for (link, target) in [("/bin", "usr/bin"), ("/sbin", "usr/sbin"), ("/lib", "usr/lib"), ("/lib64", "usr/lib64")] {
        push(&[&"--symlink", &target, &link]);
    }
    // The machine's own /etc: generated and copied files, and mount points for the directories.
    push(&[&"--ro-bind", &layout.etc(), &"/etc"]);
    for name in host_etc_dirs() {
        let host = format!("/etc/{name}");
        push(&[&"--ro-bind-try", &host, &host]);
    }
    push(&[&"--proc", &"/proc"]);
    // Kernel interfaces under /proc stay read-only whatever the host's modes
    // (bwrap covers them only when it finds them writable).
    for name in ["sys", "sysrq-trigger", "irq", "bus", "fs"] {
        let path = format!("/proc/{name}");
        push(&[&"--ro-bind-try", &path, &path]);
    }
    push(&[&"--dev", &"/dev", &"--tmpfs", &"/tmp", &"--dir", &"/run"]);
    let bind = if offline { "--ro-bind" } else { "--bind" };
    push(&[&bind, &layout.home(), &"/home/agent", &bind, &layout.workspace(), &"/workspace"]);
    for (host, inside) in ro_binds {
        push(&[&"--ro-bind", host, inside]);
    }
    push(&[&"--ro-bind", &sandboxd, &SANDBOXD_PATH, &"--chdir", &"/workspace"]);
    let seccomp = seccomp_fd.to_string();
    push(&[&"--seccomp", &seccomp]);
    match payload {
        Payload::Supervisor { listen_fd, info_fd, ready_fd, watchdog_seconds } => {
            let (info, listen, watchdog) = (info_fd.to_string(), listen_fd.to_string(), watchdog_seconds.to_string());
            let ready = ready_fd.to_string();
            // The supervisor is the namespace's init itself (it reaps orphans): no bwrap reaper
            // the agent could trace, holding the machine's log.
            push(&[
                &"--as-pid-1",
                &"--info-fd",
                &info,
                &SANDBOXD_PATH,
                &"--listen-fd",
                &listen,
                &"--watchdog",
                &watchdog,
                &"--ready-fd",
                &ready,
            ]);
        }
        Payload::Offline(argv) => {
            a.push("--".into());
            a.extend(argv.iter().map(OsString::from));
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[OsString]) -> Vec<String> {
        a.iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    fn pair(a: &[String], flag: &str, value: &str) -> bool {
        a.windows(2).any(|w| w[0] == flag && w[1] == value)
    }

    #[test]
    fn supervisor_machine_binds_its_own_dirs_and_no_host_secrets() {
        let layout = Layout::new(Path::new("/var/acs/machines"), Path::new("/run/acs/m"), uuid::Uuid::nil());
        let payload = Payload::Supervisor { listen_fd: 7, info_fd: 8, ready_fd: 10, watchdog_seconds: 3600 };
        let a = strings(&args(&layout, "acs-1234abcd-box", Path::new("/opt/bin/sandboxd"), &[], 9, payload));
        let run = "/run/acs/m/00000000000000000000000000000000";
        assert!(a.windows(3).any(|w| w[0] == "--bind" && w[1] == format!("{run}/disk/home") && w[2] == "/home/agent"));
        // The supervisor's socket directory stays outside: it is passed as a descriptor.
        assert!(!a.iter().any(|s| s.contains("/ctl") || s == "/run/acs" || s.starts_with("/var/acs")));
        assert!(pair(&a, "--seccomp", "9"));
        assert!(pair(&a, "--info-fd", "8"));
        assert!(a.iter().any(|s| s == "--disable-userns"));
        assert!(a.windows(3).any(|w| w[0] == "--ro-bind-try" && w[1] == "/proc/sys" && w[2] == "/proc/sys"));
        assert!(pair(&a, "--hostname", "acs-1234abcd-box"));
        assert!(pair(&a, "--cap-drop", "ALL"));
        assert!(pair(&a, "--uid", "1000"));
        // The host's users and secrets stay out: /etc is the machine's own directory.
        assert!(!a.iter().any(|s| s == "/etc/shadow" || s == "/etc/passwd" || s == "/root"));
        assert!(!a.windows(2).any(|w| w[0].contains("bind") && w[1] == "/etc"), "the host's /etc is never bound");
        assert!(a.windows(3).any(|w| w[0] == "--ro-bind" && w[1] == format!("{run}/etc") && w[2] == "/etc"));
        // Directories are bound into it, files are not (they are copied).
        let binds: Vec<&String> = a.windows(2).filter(|w| w[0] == "--ro-bind-try").map(|w| &w[1]).collect();
        assert!(binds.iter().filter(|b| b.starts_with("/etc/")).all(|b| Path::new(b).is_dir()), "{binds:?}");
        // It must outlive the server (reattach) and keep the netns it is put in.
        assert!(!a.iter().any(|s| s == "--die-with-parent" || s == "--unshare-net" || s == "--unshare-all"));
        let tail = [
            "--as-pid-1",
            "--info-fd",
            "8",
            "/opt/acs/sandboxd",
            "--listen-fd",
            "7",
            "--watchdog",
            "3600",
            "--ready-fd",
            "10",
        ];
        assert_eq!(a[a.len() - tail.len()..], tail);
    }

    #[test]
    fn offline_machine_is_read_only_and_without_network() {
        let layout = Layout::new(Path::new("/m"), Path::new("/r"), uuid::Uuid::nil());
        let cmd = vec!["git".to_owned(), "status".to_owned()];
        let a = strings(&args(
            &layout,
            "h",
            Path::new("/s"),
            &[(PathBuf::from("/opt/tools"), "/opt/tools".into())],
            3,
            Payload::Offline(&cmd),
        ));
        assert!(a.iter().any(|s| s == "--unshare-net"));
        assert!(a.iter().any(|s| s == "--die-with-parent"));
        assert!(!a.iter().any(|s| s == "--bind"));
        assert!(pair(&a, "--seccomp", "3"));
        assert!(a.windows(3).any(|w| w[0] == "--ro-bind" && w[1] == "/opt/tools" && w[2] == "/opt/tools"));
        assert_eq!(a[a.len() - 3..], ["--", "git", "status"]);
    }

    #[test]
    fn operator_binds_are_absolute_existing_and_clear_of_the_machines_own_dirs() {
        assert_eq!(parse_ro_bind("/usr/bin").unwrap(), (PathBuf::from("/usr/bin"), "/usr/bin".to_owned()));
        assert_eq!(parse_ro_bind("/usr/bin:/opt/x").unwrap().1, "/opt/x");
        for bad in
            ["usr", "/usr:rel", "/usr:/", "/usr:/workspace", "/usr:/home/agent/x", "/usr:/home", "/nonexistent-acs"]
        {
            assert!(parse_ro_bind(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn generated_etc_names_the_machine() {
        let files = etc_files("acs-1234abcd-x", AGENT_UID);
        let hosts = &files.iter().find(|(n, _)| *n == "hosts").unwrap().1;
        assert!(hosts.contains("acs-1234abcd-x"));
        let passwd = &files.iter().find(|(n, _)| *n == "passwd").unwrap().1;
        assert!(passwd.contains("agent:x:1000:1000:agent:/home/agent"));
    }
}
