//! Per-machine cgroups, written straight to cgroupfs (no systemd needed):
//! memory, CPU and process limits, plus the freezer for a clean kill.
//!
//! Both layouts are handled: v1 (one mount per controller; the hybrid layout
//! counts as v1) and v2 (unified). Machines live under `<our own cgroup>/acs`
//! in every hierarchy, so their limits nest under whatever contains the server.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    pub memory_bytes: Option<u64>,
    /// 1000 = one CPU.
    pub cpu_millis: Option<u32>,
    pub pids: Option<u32>,
}

/// A hierarchy a machine gets a directory in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hierarchy {
    Memory,
    Cpu,
    Pids,
    Freezer,
    /// cgroup v2: every controller in one directory.
    Unified,
}

const V1: [(Hierarchy, &str); 4] = [
    (Hierarchy::Memory, "memory"),
    (Hierarchy::Cpu, "cpu"),
    (Hierarchy::Pids, "pids"),
    (Hierarchy::Freezer, "freezer"),
];

const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
const TMPFS_MAGIC: i64 = 0x0102_1994;
const CFS_PERIOD_US: u64 = 100_000;
/// How long `kill_all` waits for the processes to go.
const KILL_TIMEOUT: Duration = Duration::from_secs(5);

/// One file a limit is written to.
#[derive(Debug, PartialEq, Eq)]
struct Setting {
    file: &'static str,
    value: String,
    /// Absent on some hosts (swap accounting off): skipped then.
    optional: bool,
}

fn set(file: &'static str, value: impl ToString) -> Setting {
    Setting { file, value: value.to_string(), optional: false }
}

fn set_if_present(file: &'static str, value: impl ToString) -> Setting {
    Setting { file, value: value.to_string(), optional: true }
}

fn cfs_quota_us(millis: u32) -> u64 {
    // The kernel refuses quotas under 1 ms.
    (u64::from(millis) * CFS_PERIOD_US / 1000).max(1000)
}

/// What to write, in order, to a machine's directory in `h`. A missing limit
/// is written as unlimited, so reusing a directory never keeps an old one.
fn settings(h: Hierarchy, limits: &Limits) -> Vec<Setting> {
    match h {
        Hierarchy::Memory => {
            let limit = limits.memory_bytes.map_or("-1".to_owned(), |b| b.to_string());
            // memsw (memory + swap) must stay >= the memory limit at every step.
            vec![
                set_if_present("memory.memsw.limit_in_bytes", "-1"),
                set("memory.limit_in_bytes", &limit),
                set_if_present("memory.memsw.limit_in_bytes", &limit),
            ]
        }
        Hierarchy::Cpu => vec![
            set("cpu.cfs_period_us", CFS_PERIOD_US),
            set("cpu.cfs_quota_us", limits.cpu_millis.map_or("-1".to_owned(), |m| cfs_quota_us(m).to_string())),
        ],
        Hierarchy::Pids => vec![set("pids.max", limits.pids.map_or("max".to_owned(), |p| p.to_string()))],
        Hierarchy::Freezer => Vec::new(),
        Hierarchy::Unified => vec![
            set("memory.max", limits.memory_bytes.map_or("max".to_owned(), |b| b.to_string())),
            set_if_present("memory.swap.max", if limits.memory_bytes.is_some() { "0" } else { "max" }),
            set(
                "cpu.max",
                format!(
                    "{} {CFS_PERIOD_US}",
                    limits.cpu_millis.map_or("max".to_owned(), |m| cfs_quota_us(m).to_string())
                ),
            ),
            set("pids.max", limits.pids.map_or("max".to_owned(), |p| p.to_string())),
        ],
    }
}

/// One line of /proc/self/mountinfo: (mount root, mount point, fs type, super options).
fn mounts(mountinfo: &str) -> impl Iterator<Item = (&str, &str, &str, &str)> {
    mountinfo.lines().filter_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut l = left.split(' ');
        let root = l.nth(3)?;
        let point = l.next()?;
        let mut r = right.split(' ');
        Some((root, point, r.next()?, r.nth(1)?))
    })
}

/// Joins a cgroup path (relative to the hierarchy root) to a mount of that hierarchy.
fn under_mount(point: &str, root: &str, cgroup: &str) -> Option<PathBuf> {
    let rel = if root == "/" { cgroup } else { cgroup.strip_prefix(root)? };
    let rel = rel.trim_start_matches('/');
    Some(if rel.is_empty() { PathBuf::from(point) } else { Path::new(point).join(rel) })
}

/// This process's directory in each v1 hierarchy we use, from mountinfo and /proc/self/cgroup.
fn v1_dirs(mountinfo: &str, self_cgroup: &str) -> Vec<(Hierarchy, PathBuf)> {
    V1.iter()
        .filter_map(|&(h, name)| {
            let (root, point, ..) =
                mounts(mountinfo).find(|(_, _, fs, opts)| *fs == "cgroup" && opts.split(',').any(|o| o == name))?;
            let path = self_cgroup.lines().find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                controllers.split(',').any(|c| c == name).then_some(path)
            })?;
            Some((h, under_mount(point, root, path)?))
        })
        .collect()
}

/// This process's directory in the v2 hierarchy.
fn v2_dir(mountinfo: &str, self_cgroup: &str) -> Option<PathBuf> {
    let (root, point, ..) =
        mounts(mountinfo).find(|(_, point, fs, _)| *fs == "cgroup2" && *point == "/sys/fs/cgroup")?;
    let path = self_cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    under_mount(point, root, path)
}

/// A machine's name is one path component.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

fn mkdir(dir: &Path) -> io::Result<()> {
    match fs::create_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Turns on the kernel's `favordynmods` mode for cgroups, which machine
/// starts depend on: every start moves its first process into the
/// machine's cgroups, and without the mode the first move waits a whole RCU
/// grace period (5 to 8 ms measured here, 0.3 ms with it), for the sake of
/// cheaper forks and exits host-wide, the trade the kernel documents for
/// hosts that move processes between cgroups often. The mode belongs to
/// the kernel's one threadgroup lock, whichever hierarchy asks for it: an
/// empty v1 hierarchy of our own is mounted with the option at `scratch`
/// and unmounted at once. From Linux 6.18 the mode stays on until reboot
/// once asked for; before, it ends with that hierarchy, at the unmount
/// (operators there set it at boot: see docs/sandboxes.md).
pub fn favor_dynmods(scratch: &Path) -> io::Result<()> {
    mkdir(scratch)?;
    let point = CString::new(scratch.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: mount(2) and umount2(2) with valid C strings.
    let mounted = unsafe {
        libc::mount(
            c"cgroup".as_ptr(),
            point.as_ptr(),
            c"cgroup".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c"none,name=acs-favordynmods,favordynmods".as_ptr().cast(),
        ) == 0
    };
    let result = if mounted {
        // SAFETY: as above.
        if unsafe { libc::umount2(point.as_ptr(), libc::MNT_DETACH) } != 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    } else {
        Err(io::Error::last_os_error())
    };
    let removed = fs::remove_dir(scratch);
    result.and(removed)
}

/// The parents of machine cgroups, one per usable hierarchy.
#[derive(Debug)]
pub struct Cgroups {
    parents: Vec<(Hierarchy, PathBuf)>,
}

impl Cgroups {
    /// None when cgroups cannot be used here (not mounted, not writable): the
    /// provider then runs machines without limits.
    pub fn detect() -> Option<Cgroups> {
        Cgroups::detect_under("acs")
    }

    fn detect_under(parent: &str) -> Option<Cgroups> {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
        let self_cgroup = fs::read_to_string("/proc/self/cgroup").ok()?;
        let parents = match fs_magic("/sys/fs/cgroup")? {
            CGROUP2_SUPER_MAGIC => vec![(Hierarchy::Unified, v2_parent(&v2_dir(&mountinfo, &self_cgroup)?, parent)?)],
            TMPFS_MAGIC => v1_dirs(&mountinfo, &self_cgroup)
                .into_iter()
                .filter_map(|(h, own)| {
                    let dir = own.join(parent);
                    mkdir(&dir).ok().map(|()| (h, dir))
                })
                .collect(),
            _ => return None,
        };
        (!parents.is_empty()).then_some(Cgroups { parents })
    }

    /// The machine's cgroup `name` (its sandbox id) with these limits; an
    /// existing one is reused and its limits rewritten.
    pub fn create(&self, name: &str, limits: &Limits) -> io::Result<Cgroup> {
        if !valid_name(name) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad cgroup name {name:?}")));
        }
        let cgroup = Cgroup { dirs: self.parents.iter().map(|(h, p)| (*h, p.join(name))).collect() };
        let made = cgroup.dirs.iter().try_for_each(|(h, dir)| {
            mkdir(dir)?;
            write_settings(dir, &settings(*h, limits))
        });
        if let Err(e) = made {
            cgroup.remove();
            return Err(e);
        }
        let has = |h: Hierarchy| self.parents.iter().any(|(p, _)| *p == h || *p == Hierarchy::Unified);
        for (wanted, h, what) in [
            (limits.memory_bytes.is_some(), Hierarchy::Memory, "memory"),
            (limits.cpu_millis.is_some(), Hierarchy::Cpu, "CPU"),
            (limits.pids.is_some(), Hierarchy::Pids, "process"),
        ] {
            if wanted && !has(h) {
                tracing::warn!(cgroup = name, "no {what} controller here: that limit is not enforced");
            }
        }
        Ok(cgroup)
    }

    /// An existing machine cgroup (after a server restart).
    pub fn open(&self, name: &str) -> Option<Cgroup> {
        if !valid_name(name) {
            return None;
        }
        let dirs: Vec<_> = self.parents.iter().map(|(h, p)| (*h, p.join(name))).filter(|(_, d)| d.is_dir()).collect();
        (!dirs.is_empty()).then_some(Cgroup { dirs })
    }
}

fn fs_magic(path: &str) -> Option<i64> {
    let path = CString::new(path).ok()?;
    // SAFETY: statfs fills a zeroed struct from a valid C string.
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statfs(path.as_ptr(), &mut buf) } == 0).then_some(buf.f_type as i64)
}

/// The v2 parent: `<own>/<parent>` with the memory, cpu and pids controllers
/// enabled down to it. v2 allows no processes in a cgroup that hands
/// controllers to children, so when our own cgroup refuses (EBUSY) this
/// process moves into a `<own>/server` leaf first (the usual delegated-subtree layout).
fn v2_parent(own: &Path, parent: &str) -> Option<PathBuf> {
    let available = fs::read_to_string(own.join("cgroup.controllers")).ok()?;
    let enable: Vec<String> = ["memory", "cpu", "pids"]
        .iter()
        .filter(|c| available.split_whitespace().any(|a| a == **c))
        .map(|c| format!("+{c}"))
        .collect();
    let enable = enable.join(" ");
    let control = own.join("cgroup.subtree_control");
    if let Err(e) = fs::write(&control, &enable) {
        if e.raw_os_error() != Some(libc::EBUSY) {
            return None;
        }
        let leaf = own.join("server");
        mkdir(&leaf).ok()?;
        fs::write(leaf.join("cgroup.procs"), "0").ok()?;
        fs::write(&control, &enable).ok()?;
    }
    let dir = own.join(parent);
    mkdir(&dir).ok()?;
    fs::write(dir.join("cgroup.subtree_control"), &enable).ok()?;
    Some(dir)
}

fn write_settings(dir: &Path, settings: &[Setting]) -> io::Result<()> {
    for s in settings {
        let path = dir.join(s.file);
        if s.optional && !path.exists() {
            continue;
        }
        fs::write(&path, &s.value).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

/// One machine's directories, one per hierarchy.
#[derive(Debug, Clone)]
pub struct Cgroup {
    dirs: Vec<(Hierarchy, PathBuf)>,
}

impl Cgroup {
    /// Paths of every `cgroup.procs` file, prepared before fork so a `pre_exec` hook can join without allocating.
    pub fn procs_files(&self) -> Vec<CString> {
        self.dirs.iter().filter_map(|(_, d)| CString::new(d.join("cgroup.procs").as_os_str().as_bytes()).ok()).collect()
    }

    /// Moves the calling process into every file's cgroup. Async-signal-safe
    /// (open, write, close only), for use inside `pre_exec`.
    pub fn join_raw(files: &[CString]) -> io::Result<()> {
        for file in files {
            // SAFETY: a valid C string; the descriptor is closed before returning.
            let fd = unsafe { libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: writes one byte from a static buffer to the descriptor opened above.
            let written = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
            let err = (written != 1).then(io::Error::last_os_error);
            // SAFETY: closes the descriptor opened above, once.
            unsafe { libc::close(fd) };
            if let Some(e) = err {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Every process in the machine's cgroups (and any cgroups below them).
    pub fn pids(&self) -> Vec<i32> {
        let mut pids = Vec::new();
        for (_, dir) in &self.dirs {
            collect_pids(dir, &mut pids);
        }
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Kills every process: freezes first when a freezer exists so nothing
    /// forks away, SIGKILLs, thaws, then waits (bounded) until none is left.
    /// Blocking.
    pub fn kill_all(&self) {
        let frozen = self.freeze(true);
        if let Some(dir) = self.dir(Hierarchy::Unified) {
            // v2 kills the whole subtree in one write when the kernel has cgroup.kill (5.14+).
            let _ = fs::write(dir.join("cgroup.kill"), "1");
        }
        let deadline = Instant::now() + KILL_TIMEOUT;
        let mut first = true;
        loop {
            let pids = self.pids();
            for pid in &pids {
                // SAFETY: kill(2) has no memory effects.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            if std::mem::take(&mut first) && frozen {
                // Frozen processes die only once thawed.
                self.freeze(false);
            }
            if pids.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                tracing::warn!(left = pids.len(), "processes survived SIGKILL in {:?}", self.dirs.first());
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Freezes (or thaws) the machine; true when a freezer did it.
    fn freeze(&self, on: bool) -> bool {
        let (path, value, done) = if let Some(dir) = self.dir(Hierarchy::Freezer) {
            (dir.join("freezer.state"), if on { "FROZEN" } else { "THAWED" }, "freezer.state")
        } else if let Some(dir) = self.dir(Hierarchy::Unified) {
            (dir.join("cgroup.freeze"), if on { "1" } else { "0" }, "cgroup.events")
        } else {
            return false;
        };
        if fs::write(&path, value).is_err() {
            return false;
        }
        if !on {
            return true;
        }
        // Freezing is asynchronous: wait (bounded) until the kernel reports it done.
        let state = path.with_file_name(done);
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            let text = fs::read_to_string(&state).unwrap_or_default();
            if text.trim() == "FROZEN" || text.lines().any(|l| l == "frozen 1") {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }

    /// Removes the machine's directories (after `kill_all`). Idempotent.
    pub fn remove(&self) {
        for (_, dir) in &self.dirs {
            remove_tree(dir);
        }
    }

    /// Current memory use, when a memory controller counts it.
    pub fn memory_bytes(&self) -> Option<u64> {
        let path = if let Some(dir) = self.dir(Hierarchy::Memory) {
            dir.join("memory.usage_in_bytes")
        } else {
            self.dir(Hierarchy::Unified)?.join("memory.current")
        };
        fs::read_to_string(path).ok()?.trim().parse().ok()
    }

    fn dir(&self, h: Hierarchy) -> Option<&Path> {
        self.dirs.iter().find(|(x, _)| *x == h).map(|(_, d)| d.as_path())
    }
}

fn collect_pids(dir: &Path, out: &mut Vec<i32>) {
    if let Ok(text) = fs::read_to_string(dir.join("cgroup.procs")) {
        out.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
    }
    for child in subdirs(dir) {
        collect_pids(&child, out);
    }
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect()
}

/// rmdir, children first (cgroupfs directories only ever hold control files, which go with them).
fn remove_tree(dir: &Path) {
    for child in subdirs(dir) {
        remove_tree(&child);
    }
    match fs::remove_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => tracing::warn!("removing cgroup {}: {e}", dir.display()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{Child, Command, Stdio};

    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 /outer /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const SELF_CGROUP: &str = "\
8:pids:/
6:freezer:/outer/inner
4:memory:/process_api/1f
1:cpu,cpuacct:/
0::/
";

    #[test]
    fn v1_directories_follow_mounts_and_our_own_cgroup() {
        let dirs = v1_dirs(MOUNTINFO, SELF_CGROUP);
        assert_eq!(
            dirs,
            vec![
                (Hierarchy::Memory, PathBuf::from("/sys/fs/cgroup/memory/process_api/1f")),
                (Hierarchy::Cpu, PathBuf::from("/sys/fs/cgroup/cpu,cpuacct")),
                (Hierarchy::Pids, PathBuf::from("/sys/fs/cgroup/pids")),
                (Hierarchy::Freezer, PathBuf::from("/sys/fs/cgroup/freezer/inner")),
            ]
        );
        // A hierarchy we are not under (mount root elsewhere) or that is not mounted is left out.
        let dirs = v1_dirs(MOUNTINFO, "6:freezer:/elsewhere\n4:memory:/\n");
        assert_eq!(dirs, vec![(Hierarchy::Memory, PathBuf::from("/sys/fs/cgroup/memory"))]);
        // The hybrid layout's cgroup2 mount is not /sys/fs/cgroup: no v2 directory.
        assert_eq!(v2_dir(MOUNTINFO, SELF_CGROUP), None);
        let v2 = "30 23 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            v2_dir(v2, "0::/system.slice/acs.service\n"),
            Some(PathBuf::from("/sys/fs/cgroup/system.slice/acs.service"))
        );
        assert_eq!(v2_dir(v2, "0::/\n"), Some(PathBuf::from("/sys/fs/cgroup")));
    }

    #[test]
    fn limits_become_cgroupfs_values_and_missing_ones_unlimited() {
        let limits = Limits { memory_bytes: Some(64 << 20), cpu_millis: Some(500), pids: Some(64) };
        let values = |h| settings(h, &limits).into_iter().map(|s| (s.file, s.value)).collect::<Vec<_>>();
        assert_eq!(
            values(Hierarchy::Memory),
            vec![
                ("memory.memsw.limit_in_bytes", "-1".to_owned()),
                ("memory.limit_in_bytes", "67108864".to_owned()),
                ("memory.memsw.limit_in_bytes", "67108864".to_owned()),
            ]
        );
        assert_eq!(values(Hierarchy::Cpu)[1], ("cpu.cfs_quota_us", "50000".to_owned()));
        assert_eq!(values(Hierarchy::Pids), vec![("pids.max", "64".to_owned())]);
        let unified = values(Hierarchy::Unified);
        assert!(unified.contains(&("cpu.max", "50000 100000".to_owned())), "{unified:?}");
        assert!(unified.contains(&("memory.max", "67108864".to_owned())));
        assert!(unified.contains(&("memory.swap.max", "0".to_owned())));

        let none = Limits::default();
        assert_eq!(settings(Hierarchy::Cpu, &none)[1].value, "-1");
        assert_eq!(settings(Hierarchy::Pids, &none)[0].value, "max");
        assert!(settings(Hierarchy::Unified, &none).iter().any(|s| s.file == "cpu.max" && s.value == "max 100000"));
        // Tiny CPU shares are raised to the kernel's 1 ms minimum quota.
        assert_eq!(cfs_quota_us(1), 1000);
        assert_eq!(cfs_quota_us(2000), 200_000);
    }

    #[test]
    fn names_are_one_path_component() {
        assert!(valid_name("0199aa00-0000-7000-8000-000000000001"));
        for bad in ["", ".", "..", "a/b", "../x", "a\0b"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn favor_dynmods_leaves_no_mount_directory_or_hierarchy_behind() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let scratch = std::env::temp_dir().join(format!("acs-favordynmods-test-{}", std::process::id()));
        if let Err(e) = favor_dynmods(&scratch) {
            eprintln!("skipped: this kernel has no favordynmods for a v1 hierarchy ({e})");
            assert!(!scratch.exists());
            return;
        }
        assert!(!scratch.exists(), "the scratch directory is removed");
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mountinfo.contains(scratch.to_str().unwrap()), "nothing stays mounted");
        // The kernel frees an unmounted hierarchy after an RCU grace period: wait for it.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let own = fs::read_to_string("/proc/self/cgroup").unwrap();
            if !own.contains("acs-favordynmods") {
                break;
            }
            assert!(Instant::now() < deadline, "the hierarchy stays: {own}");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Asked again (every server start asks), it is as quiet.
        favor_dynmods(&scratch).unwrap();
        assert!(!scratch.exists());
    }

    /// Machine cgroups under a parent of the test's own, all removed on drop.
    struct Fixture {
        cgroups: Cgroups,
        cgroup: Cgroup,
    }

    impl Fixture {
        fn new(test: &str, limits: &Limits) -> Option<Fixture> {
            if !is_root() {
                eprintln!("skipped: needs root");
                return None;
            }
            let Some(cgroups) = Cgroups::detect_under(&format!("acs-test-{}-{test}", std::process::id())) else {
                eprintln!("skipped: no usable cgroups here");
                return None;
            };
            let cgroup = match cgroups.create("machine", limits) {
                Ok(c) => c,
                Err(e) => {
                    Fixture::remove_parents(&cgroups);
                    panic!("create: {e}");
                }
            };
            Some(Fixture { cgroups, cgroup })
        }

        /// `sh -c script` started inside the cgroup.
        fn spawn(&self, script: &str) -> Child {
            let files = self.cgroup.procs_files();
            let mut cmd = Command::new("sh");
            cmd.args(["-c", script]).stdout(Stdio::null()).stderr(Stdio::piped());
            // SAFETY: join_raw is async-signal-safe and `files` was prepared before fork.
            unsafe { cmd.pre_exec(move || Cgroup::join_raw(&files)) };
            cmd.spawn().expect("spawn")
        }

        fn remove_parents(cgroups: &Cgroups) {
            for (_, parent) in &cgroups.parents {
                remove_tree(parent);
            }
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            self.cgroup.kill_all();
            Fixture::remove_parents(&self.cgroups);
        }
    }

    #[test]
    fn a_memory_limit_kills_an_oversized_allocation() {
        let limits = Limits { memory_bytes: Some(64 << 20), ..Limits::default() };
        let Some(fx) = Fixture::new("memory", &limits) else { return };
        let small = fx.spawn("head -c 20000000 /dev/zero | tail").wait_with_output().expect("small");
        assert!(small.status.success(), "20 MB fits: {small:?}");
        let big = fx.spawn("head -c 209715200 /dev/zero | tail").wait_with_output().expect("big");
        assert_eq!(big.status.code(), Some(137), "200 MB under 64 MB: {big:?}");
        if let Some(dir) = fx.cgroup.dir(Hierarchy::Memory) {
            let oom = fs::read_to_string(dir.join("memory.oom_control")).expect("oom_control");
            assert!(oom.lines().any(|l| l.starts_with("oom_kill ") && l != "oom_kill 0"), "{oom}");
        }
    }

    #[test]
    fn a_pids_limit_refuses_forks() {
        let limits = Limits { pids: Some(5), cpu_millis: Some(500), ..Limits::default() };
        let Some(fx) = Fixture::new("pids", &limits) else { return };
        let out = fx
            .spawn("for i in 1 2 3 4 5 6 7 8 9 10; do sleep 2 2>/dev/null & done; wait")
            .wait_with_output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains("fork"), "{out:?}");
        let pids = fx.cgroup.dir(Hierarchy::Pids).expect("pids hierarchy");
        assert_eq!(fs::read_to_string(pids.join("pids.max")).expect("pids.max").trim(), "5");
        if let Some(cpu) = fx.cgroup.dir(Hierarchy::Cpu) {
            assert_eq!(fs::read_to_string(cpu.join("cpu.cfs_quota_us")).expect("quota").trim(), "50000");
        }
    }

    #[test]
    fn kill_all_empties_the_cgroup_and_remove_cleans_up() {
        let Some(fx) = Fixture::new("kill", &Limits::default()) else { return };
        // One sleeper escapes the process group and the session, as a daemon would.
        let mut child = fx.spawn("sleep 100 & setsid sleep 100 & sleep 100 & wait");
        let deadline = Instant::now() + Duration::from_secs(5);
        while fx.cgroup.pids().len() < 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(fx.cgroup.pids().len() >= 4, "{:?}", fx.cgroup.pids());
        assert!(fx.cgroup.memory_bytes().is_some_and(|b| b > 0));
        let started = Instant::now();
        fx.cgroup.kill_all();
        eprintln!("kill_all: {:?}", started.elapsed());
        assert_eq!(fx.cgroup.pids(), Vec::<i32>::new());
        assert_eq!(child.wait().expect("wait").signal(), Some(libc::SIGKILL));
        if let Some(freezer) = fx.cgroup.dir(Hierarchy::Freezer) {
            assert_eq!(fs::read_to_string(freezer.join("freezer.state")).expect("state").trim(), "THAWED");
        }

        assert!(fx.cgroups.open("machine").is_some());
        fx.cgroup.remove();
        assert!(fx.cgroup.dirs.iter().all(|(_, d)| !d.exists()));
        assert!(fx.cgroups.open("machine").is_none());
        fx.cgroup.remove();
        assert!(fx.cgroups.create("../escape", &Limits::default()).is_err());
    }
}
