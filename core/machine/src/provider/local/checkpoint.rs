//! Checkpoints of a machine's disk: a full copy of its image file (holes
//! kept) or of its directory tree (`cp -a`, which keeps modes, owners, times
//! and hard links, and never follows symlinks), with blocks shared by
//! reflink where the filesystem allows (XFS, btrfs).
//!
//! Copies go to a sibling `<name>.tmp`, are synced, then renamed into place,
//! so a crash leaves the old state or the new one, never half of either.

use std::ffi::{CString, OsString};
use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Per-file FICLONE: cost bound by file count, blocks shared.
    Reflink,
    /// Full data copy.
    Copy,
}

#[derive(Debug, Clone)]
pub struct Checkpointer {
    method: Method,
}

impl Checkpointer {
    /// Reflink when a probe file inside `dir` can be cloned, else Copy.
    pub fn probe(dir: &Path) -> Checkpointer {
        let method = if reflink_works(dir) { Method::Reflink } else { Method::Copy };
        Checkpointer { method }
    }

    pub fn method(&self) -> Method {
        self.method
    }

    /// Copies the image file or tree `src` to `dst`, which must not exist.
    pub async fn snapshot(&self, src: &Path, dst: &Path) -> io::Result<()> {
        let (method, src, dst) = (self.method, src.to_owned(), dst.to_owned());
        tokio::task::spawn_blocking(move || snapshot(method, &src, &dst)).await.map_err(io::Error::other)?
    }

    /// Replaces `dst` with a copy of `snap`, in one atomic swap.
    pub async fn restore(&self, snap: &Path, dst: &Path) -> io::Result<()> {
        let (method, snap, dst) = (self.method, snap.to_owned(), dst.to_owned());
        tokio::task::spawn_blocking(move || restore(method, &snap, &dst)).await.map_err(io::Error::other)?
    }
}

fn reflink_works(dir: &Path) -> bool {
    let source = dir.join(format!(".acs-reflink-probe-{}", uuid::Uuid::new_v4().simple()));
    let clone = source.with_extension("clone");
    let cloned = (|| -> io::Result<bool> {
        fs::write(&source, b"probe")?;
        let (from, to) = (File::open(&source)?, File::create(&clone)?);
        // SAFETY: FICLONE between two descriptors this closure owns.
        Ok(unsafe { libc::ioctl(to.as_raw_fd(), libc::FICLONE, from.as_raw_fd()) } == 0)
    })();
    let _ = fs::remove_file(&source);
    let _ = fs::remove_file(&clone);
    cloned.unwrap_or(false)
}

/// `<path>.tmp`, beside `path`.
fn tmp_sibling(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{} has no name", path.display())))?;
    let mut tmp = OsString::from(name);
    tmp.push(".tmp");
    Ok(path.with_file_name(tmp))
}

/// A real directory or file (a symlink to one is refused: it would be copied as a link).
fn require_real(path: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    if meta.is_dir() || meta.is_file() {
        return Ok(());
    }
    Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a directory or a file", path.display())))
}

/// [`remove_any`] off the runtime's threads.
pub async fn remove_any_async(path: &Path) -> io::Result<()> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || remove_any(&path)).await.map_err(io::Error::other)?
}

/// Removes whatever is at `path` (a leftover of a crash), without following links.
fn remove_any(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Copies `src` to `tmp` and syncs it; on failure nothing is left at `tmp`.
fn copy_synced(method: Method, src: &Path, tmp: &Path) -> io::Result<()> {
    remove_any(tmp)?;
    let done = copy_tree(method, src, tmp).and_then(|()| syncfs(tmp));
    if done.is_err() {
        let _ = remove_any(tmp);
    }
    done
}

fn copy_tree(method: Method, src: &Path, dst: &Path) -> io::Result<()> {
    let reflink = match method {
        Method::Reflink => "--reflink=auto",
        Method::Copy => "--reflink=never",
    };
    let out = Command::new("cp")
        .args(["-a", reflink, "--no-target-directory", "--"])
        .arg(src)
        .arg(dst)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!("cp -a {}: {}", src.display(), String::from_utf8_lossy(&out.stderr).trim())))
}

/// Flushes the filesystem holding `path`: one call instead of an fsync per file.
fn syncfs(path: &Path) -> io::Result<()> {
    let dir = File::open(path)?;
    // SAFETY: syncfs on a descriptor this function owns.
    if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes a rename inside `path`'s parent durable.
fn sync_parent(path: &Path) -> io::Result<()> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(parent)?.sync_all()
}

fn snapshot(method: Method, src: &Path, dst: &Path) -> io::Result<()> {
    require_real(src)?;
    if fs::symlink_metadata(dst).is_ok() {
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} exists", dst.display())));
    }
    let tmp = tmp_sibling(dst)?;
    copy_synced(method, src, &tmp)?;
    fs::rename(&tmp, dst)?;
    sync_parent(dst)
}

fn restore(method: Method, snap: &Path, dst: &Path) -> io::Result<()> {
    require_real(snap)?;
    let tmp = tmp_sibling(dst)?;
    copy_synced(method, snap, &tmp)?;
    if fs::symlink_metadata(dst).is_err() {
        fs::rename(&tmp, dst)?;
        return sync_parent(dst);
    }
    // Swap the two names in one step; the old tree then sits at `tmp` and goes.
    if let Err(e) = exchange(&tmp, dst) {
        let _ = remove_any(&tmp);
        return Err(e);
    }
    sync_parent(dst)?;
    remove_any(&tmp)
}

fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    let c =
        |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e));
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: two valid C strings relative to the working directory.
    let rc = unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
    use std::time::{Duration, Instant, SystemTime};

    use sha2::{Digest, Sha256};

    use super::*;

    /// A directory removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            let dir = std::env::temp_dir().join(format!("acs-ckpt-test-{}", uuid::Uuid::new_v4().simple()));
            fs::create_dir_all(&dir).expect("temp dir");
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    /// Everything `cp -a` promises to keep, for every entry below `root` (not `root`'s own name).
    fn tree_hash(root: &Path) -> String {
        fn walk(dir: &Path, rel: &Path, h: &mut Sha256) {
            let mut entries: Vec<_> = fs::read_dir(dir).expect("read_dir").map(|e| e.expect("entry").path()).collect();
            entries.sort();
            for path in entries {
                let rel = rel.join(path.file_name().expect("name"));
                let m = fs::symlink_metadata(&path).expect("lstat");
                h.update(format!("{}|{:o}|{}:{}|", rel.display(), m.mode(), m.uid(), m.gid()).as_bytes());
                if m.file_type().is_symlink() {
                    h.update(fs::read_link(&path).expect("readlink").as_os_str().as_bytes());
                } else if m.is_dir() {
                    walk(&path, &rel, h);
                } else {
                    h.update(format!("{}|{}", m.mtime(), m.mtime_nsec()).as_bytes());
                    h.update(fs::read(&path).expect("read"));
                }
                h.update(b"\n");
            }
        }
        let mut h = Sha256::new();
        let m = fs::metadata(root).expect("root");
        h.update(format!("{:o}|{}:{}\n", m.mode(), m.uid(), m.gid()).as_bytes());
        walk(root, Path::new(""), &mut h);
        hex::encode(h.finalize())
    }

    /// A home with what checkpoints must keep: modes, owners, times, empty dirs and symlinks pointing out.
    fn sample_home(root: &Path, outside: &Path) -> PathBuf {
        let home = root.join("home");
        fs::create_dir_all(home.join("src/deep/er")).expect("dirs");
        fs::create_dir_all(home.join("empty")).expect("empty dir");
        fs::write(home.join("src/main.rs"), "fn main() {}\n").expect("file");
        fs::write(home.join("run.sh"), "#!/bin/sh\n").expect("script");
        fs::set_permissions(home.join("run.sh"), fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::write(home.join("secret"), "s").expect("secret");
        fs::set_permissions(home.join("secret"), fs::Permissions::from_mode(0o600)).expect("chmod");
        fs::set_permissions(home.join("empty"), fs::Permissions::from_mode(0o700)).expect("chmod");
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        File::options().write(true).open(home.join("src/main.rs")).expect("open").set_modified(old).expect("mtime");
        fs::create_dir_all(outside.join("tree")).expect("outside");
        fs::write(outside.join("tree/big"), "outside data").expect("outside file");
        symlink(outside.join("tree"), home.join("link-to-dir")).expect("symlink");
        symlink("src/main.rs", home.join("relative-link")).expect("symlink");
        symlink("/nonexistent/acs", home.join("dangling")).expect("symlink");
        if is_root() {
            std::os::unix::fs::lchown(home.join("src/main.rs"), Some(1000), Some(1000)).expect("chown");
            std::os::unix::fs::lchown(home.join("dangling"), Some(1001), Some(1001)).expect("lchown");
        }
        home
    }

    #[tokio::test]
    async fn snapshot_and_restore_keep_the_tree() {
        let dir = TempDir::new();
        let home = sample_home(&dir.0, &dir.0.join("outside"));
        let original = tree_hash(&home);
        let cp = Checkpointer::probe(&dir.0);
        let snap = dir.0.join("checkpoint");
        cp.snapshot(&home, &snap).await.expect("snapshot");
        assert_eq!(tree_hash(&snap), original);
        assert!(fs::symlink_metadata(snap.join("link-to-dir")).expect("link").file_type().is_symlink(), "not followed");

        // The machine goes on: files change, vanish, appear; a link now points elsewhere.
        fs::write(home.join("src/main.rs"), "changed").expect("write");
        fs::remove_dir_all(home.join("empty")).expect("rm");
        fs::write(home.join("new"), "new").expect("new");
        fs::remove_file(home.join("relative-link")).expect("rm link");
        symlink("/etc", home.join("relative-link")).expect("relink");
        fs::set_permissions(home.join("secret"), fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_ne!(tree_hash(&home), original);

        cp.restore(&snap, &home).await.expect("restore");
        assert_eq!(tree_hash(&home), original);
        assert_eq!(tree_hash(&snap), original, "the checkpoint is unchanged");
        assert!(!dir.0.join("home.tmp").exists() && !dir.0.join("checkpoint.tmp").exists());
        assert_eq!(fs::read_to_string(dir.0.join("outside/tree/big")).expect("outside"), "outside data");

        // Restoring onto a missing directory creates it.
        fs::remove_dir_all(&home).expect("rm home");
        cp.restore(&snap, &home).await.expect("restore onto nothing");
        assert_eq!(tree_hash(&home), original);
    }

    #[tokio::test]
    async fn checkpoints_appear_whole_or_not_at_all() {
        let dir = TempDir::new();
        let home = sample_home(&dir.0, &dir.0.join("outside"));
        let cp = Checkpointer::probe(&dir.0);
        let (snap, tmp) = (dir.0.join("snap"), dir.0.join("snap.tmp"));

        // A crash's leftover .tmp is discarded, not merged.
        fs::create_dir_all(tmp.join("junk")).expect("leftover");
        cp.snapshot(&home, &snap).await.expect("snapshot");
        assert!(!tmp.exists() && !snap.join("junk").exists());

        // An existing checkpoint is never overwritten.
        fs::write(snap.join("marker"), "kept").expect("marker");
        let err = cp.snapshot(&home, &snap).await.expect_err("exists");
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(snap.join("marker")).expect("marker"), "kept");

        // A failed copy leaves neither the checkpoint nor its .tmp.
        let other = dir.0.join("other");
        assert!(cp.snapshot(&dir.0.join("missing"), &other).await.is_err());
        assert!(cp.snapshot(&home.join("link-to-dir"), &other).await.is_err(), "a symlink source is refused");
        assert!(!other.exists() && !dir.0.join("other.tmp").exists());
        let err = cp.restore(&dir.0.join("missing"), &home).await.expect_err("no checkpoint");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(home.join("run.sh").exists(), "a failed restore keeps the home");
    }

    #[test]
    fn probe_leaves_nothing_and_falls_back_to_copy() {
        let dir = TempDir::new();
        let method = Checkpointer::probe(&dir.0).method();
        assert_eq!(fs::read_dir(&dir.0).expect("dir").count(), 0, "probe files removed");
        assert_eq!(Checkpointer::probe(&dir.0.join("missing")).method(), Method::Copy);
        // SAFETY: statfs fills a zeroed struct from a valid C string.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        let path = CString::new(dir.0.as_os_str().as_bytes()).expect("path");
        assert_eq!(unsafe { libc::statfs(path.as_ptr(), &mut st) }, 0);
        const EXT4_SUPER_MAGIC: libc::c_long = 0xEF53;
        if st.f_type == EXT4_SUPER_MAGIC {
            assert_eq!(method, Method::Copy, "ext4 has no reflink");
        }
    }

    /// An XFS filesystem with reflink on a loop device, unmounted on drop.
    struct Xfs {
        dir: TempDir,
    }

    impl Xfs {
        fn new() -> Option<Xfs> {
            let mkfs = ["/usr/sbin/mkfs.xfs", "/sbin/mkfs.xfs"].into_iter().find(|p| Path::new(p).exists());
            let (true, Some(mkfs)) = (is_root(), mkfs) else {
                eprintln!("skipped: needs root and mkfs.xfs (xfsprogs)");
                return None;
            };
            let dir = TempDir::new();
            let (image, mnt) = (dir.0.join("xfs.img"), dir.0.join("mnt"));
            fs::create_dir(&mnt).expect("mountpoint");
            File::create(&image).expect("image").set_len(600 << 20).expect("size");
            let sh = |cmd: String| Command::new("sh").args(["-c", &cmd]).status().is_ok_and(|s| s.success());
            assert!(sh(format!("{mkfs} -q -m reflink=1 {}", image.display())), "mkfs.xfs");
            assert!(sh(format!("mount -o loop {} {}", image.display(), mnt.display())), "mount");
            Some(Xfs { dir })
        }

        fn mnt(&self) -> PathBuf {
            self.dir.0.join("mnt")
        }
    }

    impl Drop for Xfs {
        fn drop(&mut self) {
            // The loop device goes with the unmount (mount -o loop sets autoclear).
            let _ = Command::new("umount").arg(self.mnt()).status();
        }
    }

    #[tokio::test]
    async fn reflink_is_used_where_the_filesystem_has_it() {
        let Some(xfs) = Xfs::new() else { return };
        let cp = Checkpointer::probe(&xfs.mnt());
        assert_eq!(cp.method(), Method::Reflink);
        let home = sample_home(&xfs.mnt(), &xfs.mnt().join("outside"));
        fs::write(home.join("data"), vec![7u8; 8 << 20]).expect("data");
        let original = tree_hash(&home);
        let snap = xfs.mnt().join("snap");
        cp.snapshot(&home, &snap).await.expect("snapshot");
        assert_eq!(tree_hash(&snap), original);
        fs::write(home.join("data"), "overwritten").expect("write");
        cp.restore(&snap, &home).await.expect("restore");
        assert_eq!(tree_hash(&home), original);
    }

    /// 2000 files of 40 KB in 40 directories plus one 20 MB file.
    fn hundred_mb_home(root: &Path) -> PathBuf {
        let home = root.join("home");
        let block = vec![b'x'; 40 << 10];
        for d in 0..40 {
            let dir = home.join(format!("d{d}"));
            fs::create_dir_all(&dir).expect("dir");
            for f in 0..50 {
                fs::write(dir.join(format!("f{f}")), &block).expect("file");
            }
        }
        fs::write(home.join("big"), vec![b'y'; 20 << 20]).expect("big");
        home
    }

    async fn median_snapshot(root: &Path) -> (Method, Duration) {
        let cp = Checkpointer::probe(root);
        let home = hundred_mb_home(root);
        let original = tree_hash(&home);
        // Timed from a clean cache: the home's own writes are not the checkpoint's to flush.
        syncfs(&home).expect("sync");
        let mut times = Vec::new();
        for i in 0..5 {
            let snap = root.join(format!("snap{i}"));
            let started = Instant::now();
            cp.snapshot(&home, &snap).await.expect("snapshot");
            times.push(started.elapsed());
            assert_eq!(tree_hash(&snap), original);
            fs::remove_dir_all(&snap).expect("rm");
        }
        times.sort();
        (cp.method(), times[2])
    }

    /// Run by hand: `cargo test -p acs-core --lib checkpoint:: -- --ignored --nocapture`.
    #[tokio::test]
    #[ignore = "a measurement, about a minute"]
    async fn measure_a_hundred_megabyte_snapshot() {
        let dir = TempDir::new();
        let (method, median) = median_snapshot(&dir.0).await;
        eprintln!("{}: {method:?}, median of 5: {median:?}", dir.0.display());
        if let Some(xfs) = Xfs::new() {
            let (method, median) = median_snapshot(&xfs.mnt()).await;
            eprintln!("xfs loop: {method:?}, median of 5: {median:?}");
        }
    }
}
