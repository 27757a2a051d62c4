//! Each machine's own unprivileged host uid.
//!
//! Everything a machine runs is that uid on the host (bwrap is started as
//! it, inside the machine it reads as `agent`, 1000), so the files it writes
//! belong to it, a setuid bit it sets gives nothing, and a process that got
//! out would be an ordinary user with no rights over the host, the server or
//! another machine. Uids are leased host-wide (a file per uid, created with
//! `O_EXCL`, in `<lease_dir>/uids`), so no two live disks share one even
//! across servers; the lease is held as long as the disk exists, and the uid
//! is recorded beside the disk (`<machine>/owner`) so a parked home wakes as
//! the same user.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use uuid::Uuid;

/// How many uids are handed out above the base.
pub const SPAN: u32 = acs_store::config::SANDBOX_UID_SPAN;

#[derive(Debug, Clone)]
pub struct Owners {
    dir: PathBuf,
    base: u32,
}

impl Owners {
    pub fn new(lease_dir: &Path, base: u32) -> Owners {
        Owners { dir: lease_dir.join("uids"), base }
    }

    /// The uid for machine `id`: `recorded` (its disk's owner) when that lease
    /// is free or already this machine's, else a fresh one, which the caller
    /// gives the disk to (leases live in `/run`, so a reboot may hand a
    /// parked home's uid to a new machine).
    pub fn take(&self, id: Uuid, recorded: Option<u32>) -> io::Result<u32> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        if let Some(uid) = recorded.filter(|u| self.in_range(*u))
            && self.claim(id, uid)?
        {
            return Ok(uid);
        }
        // Start where the machine's id points, so uids spread without a shared counter.
        let bytes = id.as_bytes();
        let start = u32::from_be_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) % SPAN;
        for step in 0..4096 {
            let uid = self.base + (start + step) % SPAN;
            if self.claim(id, uid)? {
                return Ok(uid);
            }
        }
        Err(io::Error::other("no free sandbox uid near this machine's slot (4096 leases taken in a row)"))
    }

    /// Gives up the lease when it is this machine's.
    pub fn release(&self, id: Uuid, uid: u32) {
        let path = self.lease(uid);
        if fs::read_to_string(&path).is_ok_and(|t| t.trim() == id.to_string())
            && let Err(e) = fs::remove_file(&path)
        {
            tracing::warn!(sandbox = %id, "releasing uid {uid}: {e}");
        }
    }

    /// The machine holding `uid`'s lease, if any.
    pub fn holder(&self, uid: u32) -> Option<Uuid> {
        fs::read_to_string(self.lease(uid)).ok()?.trim().parse().ok()
    }

    pub fn in_range(&self, uid: u32) -> bool {
        uid >= self.base && uid - self.base < SPAN
    }

    fn lease(&self, uid: u32) -> PathBuf {
        self.dir.join(uid.to_string())
    }

    /// True when the lease is (now) this machine's.
    fn claim(&self, id: Uuid, uid: u32) -> io::Result<bool> {
        match OpenOptions::new().write(true).create_new(true).open(self.lease(uid)) {
            Ok(mut f) => {
                f.write_all(id.to_string().as_bytes())?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(self.holder(uid) == Some(id)),
            Err(e) => Err(e),
        }
    }
}

/// The uid recorded for a machine, if any.
pub fn recorded(file: &Path) -> Option<u32> {
    fs::read_to_string(file).ok()?.trim().parse().ok()
}

pub fn record(file: &Path, uid: u32) -> io::Result<()> {
    fs::write(file, format!("{uid}\n"))
}

/// Gives every entry under `root` (itself included, links not followed) to
/// `uid`:`uid`. Used when a disk's owner is not its machine's uid: a disk
/// from before machines had their own users (owned by root), or a parked
/// home whose uid went to another machine while its lease was lost.
pub fn reown(root: &Path, uid: u32) -> io::Result<()> {
    let meta = fs::symlink_metadata(root)?;
    if meta.uid() != uid || meta.gid() != uid {
        std::os::unix::fs::lchown(root, Some(uid), Some(uid))?;
    }
    if meta.is_dir() {
        for entry in fs::read_dir(root)? {
            reown(&entry?.path(), uid)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("acs-owner-test-{}", Uuid::new_v4().simple()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_machine_keeps_its_uid_and_two_machines_never_share_one() {
        let dir = temp();
        let owners = Owners::new(&dir, 1_000_000_000);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let ua = owners.take(a, None).unwrap();
        assert!(owners.in_range(ua));
        assert_eq!(owners.take(a, Some(ua)).unwrap(), ua, "its own lease is kept");
        // b recorded a's uid (its lease was lost): it gets another one.
        let ub = owners.take(b, Some(ua)).unwrap();
        assert_ne!(ua, ub);
        assert_eq!(owners.holder(ub), Some(b));
        // Releasing someone else's lease does nothing.
        owners.release(b, ua);
        assert_eq!(owners.holder(ua), Some(a));
        owners.release(a, ua);
        assert_eq!(owners.holder(ua), None);
        // A uid outside the range is never kept.
        assert_ne!(owners.take(a, Some(5)).unwrap(), 5);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reown_gives_the_whole_tree_without_following_links() {
        let dir = temp();
        fs::create_dir_all(dir.join("a/b")).unwrap();
        fs::write(dir.join("a/b/f"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("a/link")).unwrap();
        reown(&dir, 4242).unwrap();
        for p in ["", "a", "a/b", "a/b/f", "a/link"] {
            let m = fs::symlink_metadata(dir.join(p)).unwrap();
            assert_eq!((m.uid(), m.gid()), (4242, 4242), "{p}");
        }
        assert_eq!(fs::metadata("/etc/passwd").unwrap().uid(), 0);
        fs::remove_dir_all(dir).unwrap();
    }
}
