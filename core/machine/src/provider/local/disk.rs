//! A machine's disk: `/home/agent` and `/workspace` together, owned on the
//! host by the machine's own uid, mounted `nosuid,nodev`, and limited in size.
//!
//! With `sandbox.disk_mb` (default 10240) the disk is an ext4 filesystem in
//! a sparse image file (`<machine>/disk.img`): writes past the size fail
//! inside with ENOSPC and nothing outside changes. Directory quotas would be
//! cheaper, but this kernel has no quota support at all (`CONFIG_QUOTA` is
//! off: XFS and ext4 project quotas refuse to mount), and btrfs qgroups
//! answer EDQUOT rather than ENOSPC. With 0 the disk is a plain directory
//! (`<machine>/disk`), bind-mounted. Either way it is mounted at
//! `<run>/<machine>/disk`, a short path under the run directory, so that
//! bwrap, started as the machine's uid, can reach it without the sandbox
//! directory itself being open to other users.
//!
//! New images are not formatted on the start path: one template per size is
//! made once with `mkfs.ext4` (about 50 ms), and a couple of sparse copies of
//! it are kept ready (`<machines>/.images`), refilled in the background. Two
//! more are kept mounted, so that a start takes neither the loop device nor
//! the ext4 mount (about 7 ms): it renames the image into place and binds
//! the spare's mount at the machine's mount point. Without a mounted spare
//! (a burst takes them all) a start renames an image spare into place and
//! mounts it: a loop device set up in-process (`LOOP_CONFIGURE`, freed
//! automatically at unmount) and one mount(2). Mounts use `noinit_itable`
//! (no background zeroing of inode tables, which would write a tenth of the
//! image) and `discard` (files deleted inside give their blocks back to the
//! host). A server drops the mounted spares it finds at its start, and
//! `purge_blocking` drops them too.

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::bwrap::Layout;

/// Ready-made images kept per size, of each kind.
const SPARES: usize = 2;
/// Spare images: `<machines>/.images/spare-<size>-<name>.img`.
const SPARE: &str = "spare-";
/// Spare images kept mounted: `<machines>/.images/mounted-<size>-<name>.img`,
/// mounted at `<machines>/.images/mounted/<name>` (the directory is root's
/// alone; a claim binds the mount into the machine's run directory).
const MOUNTED: &str = "mounted-";
const SPARE_MOUNTS: &str = "mounted";
/// `<machines>/.images/mounted.lock`: held while a mounted spare is made or the spares are dropped.
const SPARE_LOCK: &str = "mounted.lock";
/// `<machines>/.images/mounted.closed`: left by a purge, so that no mounted spare is made after it.
const CLOSED: &str = "mounted.closed";

const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LO_FLAGS_READ_ONLY: u32 = 1;
const LO_FLAGS_AUTOCLEAR: u32 = 4;

/// `struct loop_info64`.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// `struct loop_config`.
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// How a machine's disk is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A sized ext4 image.
    Image,
    /// A plain directory (no size limit).
    Dir,
}

/// The kind of disk a machine has, if it has one.
pub fn kind(layout: &Layout) -> Option<Kind> {
    if layout.image().is_file() {
        Some(Kind::Image)
    } else if layout.disk_dir().is_dir() {
        Some(Kind::Dir)
    } else {
        None
    }
}

/// The unit a checkpoint copies: the image file, or the directory.
pub fn unit(layout: &Layout) -> Option<PathBuf> {
    match kind(layout)? {
        Kind::Image => Some(layout.image()),
        Kind::Dir => Some(layout.disk_dir()),
    }
}

#[derive(Debug, Clone)]
pub struct Disks {
    /// 0: directories, no limit.
    size_mb: u64,
    images: PathBuf,
    /// Where spares are kept mounted (`<machines>/.images/mounted/<name>`, root only).
    mounted: PathBuf,
    refilling: Arc<AtomicBool>,
}

impl Disks {
    /// Checks what sized disks need (`mkfs.ext4`, loop devices).
    pub fn new(machines_dir: &Path, size_mb: u64) -> Result<Disks, String> {
        let images = machines_dir.join(".images");
        let mounted = images.join(SPARE_MOUNTS);
        if size_mb > 0 {
            if super::which("mkfs.ext4").is_none() {
                return Err("sandbox.disk_mb needs mkfs.ext4: install e2fsprogs (or set sandbox.disk_mb = 0 for \
                            disks without a size limit)"
                    .into());
            }
            if !Path::new("/dev/loop-control").exists() {
                return Err("sandbox.disk_mb needs loop devices (/dev/loop-control is missing: load the loop \
                            module, or set sandbox.disk_mb = 0 for disks without a size limit)"
                    .into());
            }
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&images)
                .map_err(|e| format!("{}: {e}", images.display()))?;
        }
        // Mounted spares of a server before this one: their mounts are not this one's to trust.
        drop_mounted_spares(machines_dir, false);
        let disks = Disks { size_mb, images, mounted, refilling: Arc::new(AtomicBool::new(false)) };
        disks.drop_other_sizes();
        Ok(disks)
    }

    pub fn size_mb(&self) -> u64 {
        self.size_mb
    }

    /// Creates the disk when the machine has none (an image when sizes are
    /// on, else a directory owned by `uid`), then mounts it read-write.
    /// Returns the kind and whether it was created now.
    pub fn attach(&self, layout: &Layout, uid: u32) -> io::Result<(Kind, bool)> {
        unmount(&layout.mount());
        let (kind, created) = match kind(layout) {
            Some(k) => (k, false),
            None if self.size_mb > 0 => {
                if self.take_mounted(layout) {
                    return Ok((Kind::Image, true));
                }
                self.take_image(&layout.image())?;
                (Kind::Image, true)
            }
            None => {
                fs::DirBuilder::new().mode(0o700).create(layout.disk_dir())?;
                std::os::unix::fs::chown(layout.disk_dir(), Some(uid), Some(uid))?;
                (Kind::Dir, true)
            }
        };
        mount(layout, kind, false)?;
        Ok((kind, created))
    }

    /// The ready spares of one kind (`SPARE` or `MOUNTED`) of this size: each image's path and name.
    fn ready(&self, kind: &str) -> Vec<(PathBuf, String)> {
        let prefix = format!("{kind}{}-", self.size_mb);
        let Ok(entries) = fs::read_dir(&self.images) else { return Vec::new() };
        entries
            .flatten()
            .filter_map(|e| {
                let file = e.file_name().to_string_lossy().into_owned();
                let name = file.strip_prefix(&prefix)?.strip_suffix(".img")?.to_owned();
                Some((e.path(), name))
            })
            .collect()
    }

    /// A spare already mounted, moved to `layout`: its image renamed into
    /// place (the loop device holds the file, not the name) and its mount
    /// bound at `layout.mount()`, then dropped from the spare's place. False
    /// when none is ready; an image taken but found unmounted (another server
    /// on this host dropped it) is left in place for the caller to mount.
    fn take_mounted(&self, layout: &Layout) -> bool {
        for (image, name) in self.ready(MOUNTED) {
            if fs::rename(&image, layout.image()).is_err() {
                continue;
            }
            self.refill();
            let spare = self.mounted.join(name);
            match move_mount(&spare, &layout.mount()) {
                Ok(()) => return true,
                Err(e) => {
                    tracing::warn!("a mounted spare disk could not be used, mounting its image instead: {e}");
                    unmount(&spare);
                    let _ = fs::remove_dir(&spare);
                    return false;
                }
            }
        }
        false
    }

    /// A new image at `dst`: a spare when one is ready, else a copy of the template made now.
    fn take_image(&self, dst: &Path) -> io::Result<()> {
        if dst.is_file() {
            // A mounted spare's image whose mount was gone (`take_mounted`).
            return Ok(());
        }
        for (image, _) in self.ready(SPARE) {
            if fs::rename(&image, dst).is_ok() {
                self.refill();
                return Ok(());
            }
        }
        let template = self.template()?;
        copy_sparse(&template, dst)?;
        self.refill();
        Ok(())
    }

    /// The formatted, empty image of this size, made once.
    fn template(&self) -> io::Result<PathBuf> {
        let template = self.images.join(format!("template-{}.img", self.size_mb));
        if template.is_file() {
            return Ok(template);
        }
        let tmp = self.images.join(format!("template-{}.{}.tmp", self.size_mb, uuid::Uuid::new_v4().simple()));
        let made = format_image(&tmp, self.size_mb).and_then(|()| fs::rename(&tmp, &template));
        if made.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        made.map(|()| template)
    }

    /// Tops the spares up in the background (one refill at a time): images
    /// ready to rename, and images already mounted (a loop device and an
    /// ext4 mount are about 7 ms of a start otherwise).
    fn refill(&self) {
        if self.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(super::REFILL_DELAY);
            let result = (|| -> io::Result<()> {
                let template = this.template()?;
                for kind in [SPARE, MOUNTED] {
                    let prefix = format!("{kind}{}-", this.size_mb);
                    for _ in this.ready(kind).len()..SPARES {
                        // A mounted spare is made under the lock a drop takes, and not after a purge.
                        let _held = if kind == MOUNTED { Some(spare_lock(&this.images)?) } else { None };
                        if kind == MOUNTED && this.images.join(CLOSED).exists() {
                            break;
                        }
                        let name = uuid::Uuid::new_v4().simple().to_string();
                        let tmp = this.images.join(format!("{prefix}{name}.tmp"));
                        copy_sparse(&template, &tmp)?;
                        if kind == MOUNTED
                            && let Err(e) = this.mount_spare(&tmp, &name)
                        {
                            let _ = fs::remove_file(&tmp);
                            return Err(e);
                        }
                        fs::rename(&tmp, this.images.join(format!("{prefix}{name}.img")))?;
                    }
                }
                Ok(())
            })();
            if let Err(e) = result {
                tracing::warn!("preparing spare sandbox disks: {e}");
            }
            this.refilling.store(false, Ordering::Release);
        });
    }

    /// Mounts a spare image at `<mounted>/<name>` as a machine's disk is
    /// mounted, without ext4's `lost+found` (nothing of the machine's).
    fn mount_spare(&self, image: &Path, name: &str) -> io::Result<()> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.mounted)?;
        let target = self.mounted.join(name);
        fs::DirBuilder::new().mode(0o700).create(&target)?;
        let mounted =
            mount_image(image, &target, false).and_then(|()| match fs::remove_dir(target.join("lost+found")) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            });
        if mounted.is_err() {
            unmount(&target);
            let _ = fs::remove_dir(&target);
        }
        mounted
    }

    /// Spares and templates of another size are of no use any more.
    fn drop_other_sizes(&self) {
        let Ok(entries) = fs::read_dir(&self.images) else { return };
        let keep = [format!("{SPARE}{}-", self.size_mb), format!("template-{}.", self.size_mb), SPARE_MOUNTS.into()];
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !keep.iter().any(|k| name.starts_with(k)) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// Formats a sparse image of `size_mb` at `path`.
fn format_image(path: &Path, size_mb: u64) -> io::Result<()> {
    let file = OpenOptions::new().create_new(true).write(true).mode_0600().open(path)?;
    file.set_len(size_mb << 20)?;
    drop(file);
    let out = Command::new(super::which("mkfs.ext4").unwrap_or_else(|| "mkfs.ext4".into()))
        // No blocks reserved for root: inside, the whole disk is the agent's.
        .args(["-q", "-F", "-m", "0", "-L", "acs-disk", "-E", "lazy_itable_init=1,lazy_journal_init=1"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!("mkfs.ext4: {}", String::from_utf8_lossy(&out.stderr).trim())))
}

trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}

impl Mode0600 for OpenOptions {
    fn mode_0600(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::mode(self, 0o600)
    }
}

/// Copies a sparse file keeping its holes, in-process: a reflink where the
/// filesystem shares blocks (one ioctl), else each data extent
/// (`SEEK_DATA`/`SEEK_HOLE`) by `copy_file_range`. A spare refill used to run
/// `cp` for this: a fork of the server and an exec, beside a start.
pub fn copy_sparse(src: &Path, dst: &Path) -> io::Result<()> {
    let context =
        |e: io::Error| io::Error::new(e.kind(), format!("copying {} to {}: {e}", src.display(), dst.display()));
    let from = File::open(src).map_err(context)?;
    let to = OpenOptions::new().create_new(true).write(true).mode_0600().open(dst).map_err(context)?;
    let copied = (|| {
        // SAFETY: FICLONE takes the source descriptor as its argument; both are open here.
        if unsafe { libc::ioctl(to.as_raw_fd(), libc::FICLONE, from.as_raw_fd()) } == 0 {
            return Ok(());
        }
        let len = from.metadata()?.len();
        to.set_len(len)?;
        let mut at = 0i64;
        while (at as u64) < len {
            // SAFETY: lseek on an open descriptor.
            let data = unsafe { libc::lseek(from.as_raw_fd(), at, libc::SEEK_DATA) };
            if data < 0 {
                let err = io::Error::last_os_error();
                // ENXIO: no data past `at`, only a hole to the end.
                if err.raw_os_error() == Some(libc::ENXIO) {
                    break;
                }
                return Err(err);
            }
            // SAFETY: as above.
            let hole = unsafe { libc::lseek(from.as_raw_fd(), data, libc::SEEK_HOLE) };
            if hole < 0 {
                return Err(io::Error::last_os_error());
            }
            let (mut off_in, mut off_out) = (data, data);
            while off_in < hole {
                let want = usize::try_from(hole - off_in).unwrap_or(usize::MAX);
                // SAFETY: copy_file_range between two open descriptors, offsets owned here.
                let n = unsafe {
                    libc::copy_file_range(from.as_raw_fd(), &mut off_in, to.as_raw_fd(), &mut off_out, want, 0)
                };
                match n {
                    n if n < 0 => return Err(io::Error::last_os_error()),
                    0 => return Err(io::Error::other("the source ended while copying")),
                    _ => {}
                }
            }
            at = hole;
        }
        Ok(())
    })();
    copied.map_err(|e: io::Error| {
        // Half a copy is of no use to anyone; the file is this call's own.
        if let Err(rm) = fs::remove_file(dst) {
            tracing::warn!("removing {}: {rm}", dst.display());
        }
        context(e)
    })
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// Mounts the disk at `layout.mount()`, `nosuid,nodev` (and read-only when asked).
pub fn mount(layout: &Layout, kind: Kind, read_only: bool) -> io::Result<()> {
    let target = layout.mount();
    fs::DirBuilder::new().recursive(true).mode(0o711).create(&target)?;
    let ro = if read_only { libc::MS_RDONLY } else { 0 };
    match kind {
        Kind::Image => mount_image(&layout.image(), &target, read_only)?,
        Kind::Dir => {
            let (src, dst) = (cstring(&layout.disk_dir())?, cstring(&target)?);
            // SAFETY: valid C strings; a bind, then its flags (a bind ignores flags on creation).
            unsafe {
                if libc::mount(src.as_ptr(), dst.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) != 0 {
                    return Err(io::Error::last_os_error());
                }
                let flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID | libc::MS_NODEV | ro;
                if libc::mount(std::ptr::null(), dst.as_ptr(), std::ptr::null(), flags, std::ptr::null()) != 0 {
                    let e = io::Error::last_os_error();
                    libc::umount2(dst.as_ptr(), libc::MNT_DETACH);
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// Mounts the ext4 `image` at `target` through a loop device, `nosuid,nodev,noatime`.
fn mount_image(image: &Path, target: &Path, read_only: bool) -> io::Result<()> {
    let ro = if read_only { libc::MS_RDONLY } else { 0 };
    let device = attach_loop(image, read_only)?;
    // Read-only mounts skip the journal: a disk cut short by a crash still reads (as last committed).
    let data = if read_only { "noload" } else { "noinit_itable,discard" };
    let (src, dst, fstype, data) =
        (cstring(&device.path)?, cstring(target)?, CString::from(c"ext4"), CString::new(data)?);
    // SAFETY: valid C strings; the loop device stays attached until this mount goes (autoclear).
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            fstype.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOATIME | ro,
            data.as_ptr().cast(),
        )
    };
    if rc != 0 {
        return Err(io::Error::other(format!("mounting the disk image: {}", io::Error::last_os_error())));
    }
    Ok(())
}

/// Moves the mount at `from` to `to` (made if missing): a bind of it at `to`
/// (which keeps its flags), checked to be the same filesystem, then `from`
/// detached. A bind rather than `MS_MOVE`, which a shared parent mount (the
/// usual `/run`) refuses.
fn move_mount(from: &Path, to: &Path) -> io::Result<()> {
    let device = fs::metadata(from)?.dev();
    let parent = fs::metadata(from.parent().unwrap_or(Path::new("/")))?.dev();
    if device == parent {
        return Err(io::Error::other(format!("{} is not mounted", from.display())));
    }
    fs::DirBuilder::new().recursive(true).mode(0o711).create(to)?;
    let (src, dst) = (cstring(from)?, cstring(to)?);
    // SAFETY: valid C strings; a bind mount.
    if unsafe { libc::mount(src.as_ptr(), dst.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if fs::metadata(to)?.dev() != device {
        // Unmounted by someone else between the check and the bind: a plain directory came along.
        unmount(to);
        return Err(io::Error::other(format!("{} went while being moved", from.display())));
    }
    unmount(from);
    if let Err(e) = fs::remove_dir(from) {
        tracing::warn!("{}: {e}", from.display());
    }
    Ok(())
}

/// The lock of the mounted spares (blocking).
fn spare_lock(images: &Path) -> io::Result<File> {
    super::flock(OpenOptions::new().create(true).truncate(false).write(true).mode_0600().open(images.join(SPARE_LOCK))?)
}

/// Unmounts and removes every mounted spare (a server starting, or an
/// operator's purge). Their images go too.
///
/// With `close`, none is made after this until a server starts on these
/// directories again: a purge must not be followed by a refill still under
/// way, whose mount would outlive everything else.
pub fn drop_mounted_spares(machines_dir: &Path, close: bool) {
    let images = machines_dir.join(".images");
    if !images.is_dir() {
        return;
    }
    let held = spare_lock(&images);
    if let Err(e) = &held {
        tracing::warn!("dropping mounted spare disks without their lock: {e}");
    }
    let marker = images.join(CLOSED);
    let marked = if close { fs::write(&marker, b"") } else { fs::remove_file(&marker) };
    if let Err(e) = marked
        && e.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!("{}: {e}", marker.display());
    }
    if let Ok(entries) = fs::read_dir(images.join(SPARE_MOUNTS)) {
        for entry in entries.flatten() {
            unmount(&entry.path());
            if let Err(e) = fs::remove_dir(entry.path()) {
                tracing::warn!("{}: {e}", entry.path().display());
            }
        }
    }
    if let Ok(entries) = fs::read_dir(&images) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(MOUNTED) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

struct LoopDevice {
    path: PathBuf,
    /// Held until the mount takes its own reference; dropping it alone frees the device (autoclear).
    _file: File,
}

/// Attaches `image` to a free loop device.
fn attach_loop(image: &Path, read_only: bool) -> io::Result<LoopDevice> {
    let backing = OpenOptions::new().read(true).write(!read_only).open(image)?;
    let control = OpenOptions::new().read(true).write(true).open("/dev/loop-control")?;
    let mut flags = LO_FLAGS_AUTOCLEAR;
    if read_only {
        flags |= LO_FLAGS_READ_ONLY;
    }
    for _ in 0..64 {
        // SAFETY: an ioctl without arguments on a descriptor this function owns.
        let n = unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let path = PathBuf::from(format!("/dev/loop{n}"));
        let device = match OpenOptions::new().read(true).write(!read_only).open(&path) {
            Ok(d) => d,
            // Another server took it and it went between the two calls: ask again.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        // SAFETY: plain data; all-zero is a valid value of both structs.
        let mut config: LoopConfig = unsafe { std::mem::zeroed() };
        config.fd = u32::try_from(backing.as_raw_fd()).map_err(io::Error::other)?;
        config.info.lo_flags = flags;
        // SAFETY: LOOP_CONFIGURE reads a `struct loop_config` that outlives the call.
        if unsafe { libc::ioctl(device.as_raw_fd(), LOOP_CONFIGURE, &config as *const LoopConfig) } == 0 {
            return Ok(LoopDevice { path, _file: device });
        }
        let e = io::Error::last_os_error();
        // Taken by someone else between the two calls: ask for another.
        if e.raw_os_error() != Some(libc::EBUSY) {
            return Err(e);
        }
    }
    Err(io::Error::other("no free loop device"))
}

/// Detaches the mount at `target`, if any (lazily: a process still inside
/// keeps it until it leaves); an image's loop device goes with it.
pub fn unmount(target: &Path) {
    let Ok(c) = cstring(target) else { return };
    for _ in 0..100 {
        // SAFETY: a valid C string.
        if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
            // EINVAL: nothing (more) is mounted there.
            return;
        }
    }
}

/// Whether something is mounted at `target`.
pub fn is_mounted(target: &Path) -> bool {
    let Ok(table) = fs::read_to_string("/proc/self/mountinfo") else { return false };
    let want = target.as_os_str().as_bytes();
    table.lines().any(|line| line.split(' ').nth(4).is_some_and(|p| unescape(p) == want))
}

/// Mount points in mountinfo escape space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> Vec<u8> {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && let Ok(v) = u8::from_str_radix(&field[i + 1..i + 4], 8)
        {
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Holds a machine's disk lock (an flock, so replicas on one host exclude
/// each other too) until dropped: mounting, unmounting, snapshots and
/// offline reads never overlap.
pub struct DiskLock {
    _file: File,
}

pub async fn lock(layout: &Layout) -> io::Result<DiskLock> {
    let path = layout.root.join("disk.lock");
    let file = OpenOptions::new().create(true).truncate(false).write(true).mode_0600().open(path)?;
    loop {
        // SAFETY: flock on a descriptor owned here.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(DiskLock { _file: file });
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) && e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The owner of the mounted disk's root.
pub fn mounted_owner(layout: &Layout) -> io::Result<u32> {
    Ok(fs::metadata(layout.mount())?.uid())
}

/// Gives the mounted disk to `uid` (its root 0700) and makes sure it has
/// `home` and `workspace`.
pub fn settle(layout: &Layout, uid: u32) -> io::Result<()> {
    let root = layout.mount();
    if fs::metadata(&root)?.uid() != uid {
        super::owner::reown(&root, uid)?;
    }
    fs::set_permissions(&root, fs::Permissions::from_mode(0o700))?;
    // ext4's own: nothing of the machine's, and the agent cannot use it as root could.
    let lost = root.join("lost+found");
    if lost.is_dir() {
        let _ = fs::remove_dir(&lost);
    }
    for dir in [layout.home(), layout.workspace()] {
        if !dir.is_dir() {
            fs::create_dir(&dir)?;
            std::os::unix::fs::chown(&dir, Some(uid), Some(uid))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_copy_keeps_the_data_and_the_holes() {
        use std::io::{Read, Seek, SeekFrom, Write};
        let dir = std::env::temp_dir().join(format!("acs-sparse-{}", uuid::Uuid::new_v4().simple()));
        fs::create_dir(&dir).unwrap();
        let (src, dst) = (dir.join("src"), dir.join("dst"));
        let mut f = File::create(&src).unwrap();
        f.set_len(64 << 20).unwrap();
        for (at, byte) in [(0u64, 1u8), (10 << 20, 2), ((64 << 20) - 4096, 3)] {
            f.seek(SeekFrom::Start(at)).unwrap();
            f.write_all(&[byte; 4096]).unwrap();
        }
        drop(f);
        copy_sparse(&src, &dst).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        File::open(&src).unwrap().read_to_end(&mut a).unwrap();
        File::open(&dst).unwrap().read_to_end(&mut b).unwrap();
        assert!(a == b, "same bytes");
        let meta = fs::metadata(&dst).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        // Three 4 KiB extents, not 64 MiB (a reflink shares even those).
        assert!(meta.blocks() * 512 < 1 << 20, "{} bytes allocated", meta.blocks() * 512);
        // An existing target is refused and left alone.
        let err = copy_sparse(&src, &dst).expect_err("exists");
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::metadata(&dst).unwrap().len(), 64 << 20);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Mounted spares of `disks`, by name.
    fn mounted_spares(disks: &Disks) -> Vec<String> {
        let mut names: Vec<String> = disks.ready(MOUNTED).into_iter().map(|(_, name)| name).collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_disk_takes_a_mounted_spare_and_purge_drops_the_rest() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root");
            return;
        }
        let root = std::env::temp_dir().join(format!("acs-spares-{}", uuid::Uuid::new_v4().simple()));
        let (machines, run) = (root.join("machines"), root.join("run"));
        fs::create_dir_all(&machines).unwrap();
        let disks = Disks::new(&machines, 64).unwrap();
        let layout = |n: u128| {
            let l = Layout::new(&machines, &run, uuid::Uuid::from_u128(n));
            fs::create_dir_all(&l.root).unwrap();
            l
        };
        // The first disk has no spare yet: a copy of the template, mounted now; the refill follows.
        let first = layout(1);
        assert_eq!(disks.attach(&first, 4242).unwrap(), (Kind::Image, true));
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while mounted_spares(&disks).len() < SPARES {
            assert!(std::time::Instant::now() < deadline, "the mounted spares never came");
            std::thread::sleep(Duration::from_millis(20));
        }
        let before = mounted_spares(&disks);
        let spare_dev = fs::metadata(disks.mounted.join(&before[0])).unwrap().dev();
        assert_ne!(spare_dev, fs::metadata(&disks.mounted).unwrap().dev(), "a spare is a mount of its own");
        assert!(!disks.mounted.join(&before[0]).join("lost+found").exists());
        assert_eq!(fs::metadata(&disks.mounted).unwrap().mode() & 0o777, 0o700, "spares are root's alone");

        let second = layout(2);
        assert_eq!(disks.attach(&second, 4243).unwrap(), (Kind::Image, true));
        let taken: Vec<_> = before.iter().filter(|n| !mounted_spares(&disks).contains(n)).collect();
        assert_eq!(taken.len(), 1, "one mounted spare taken");
        assert!(!disks.mounted.join(taken[0]).exists(), "its place is gone");
        let dev = fs::metadata(second.mount()).unwrap().dev();
        assert!(before.iter().any(|n| n == taken[0]));
        assert_ne!(dev, fs::metadata(&second.run).unwrap().dev(), "mounted at the machine's mount point");
        // The machine's own flags, as a mount made for it would have.
        let c = cstring(&second.mount()).unwrap();
        // SAFETY: statvfs fills a zeroed struct from a valid C string.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
        assert_ne!(st.f_flag & libc::ST_NOSUID, 0);
        assert_ne!(st.f_flag & libc::ST_NODEV, 0);
        assert_eq!(st.f_flag & libc::ST_RDONLY, 0);
        settle(&second, 4243).unwrap();
        fs::write(second.workspace().join("f"), b"x").unwrap();
        assert_eq!(fs::metadata(second.mount()).unwrap().uid(), 4243);
        assert!(second.image().is_file(), "the image is the machine's now");
        // Mounted again later (a restart), the image holds what was written.
        unmount(&second.mount());
        mount(&second, Kind::Image, true).unwrap();
        assert_eq!(fs::read(second.workspace().join("f")).unwrap(), b"x");
        unmount(&second.mount());
        unmount(&first.mount());

        // Let a refill that is still running finish before dropping the rest.
        while disks.refilling.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(20));
        }
        drop_mounted_spares(&machines, true);
        assert!(mounted_spares(&disks).is_empty());
        assert_eq!(fs::read_dir(&disks.mounted).unwrap().count(), 0, "no spare left mounted");
        // After a purge, a refill makes no mounted spare.
        disks.refill();
        std::thread::sleep(Duration::from_millis(20));
        while disks.refilling.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(mounted_spares(&disks).is_empty(), "closed by the purge");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn mountinfo_paths_are_unescaped() {
        assert_eq!(unescape("/run/acs/a\\040b"), b"/run/acs/a b");
        assert_eq!(unescape("/plain"), b"/plain");
        assert_eq!(unescape("/tail\\"), b"/tail\\");
    }
}
