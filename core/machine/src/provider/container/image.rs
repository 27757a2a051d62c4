//! The machine image the `container` provider imports when the engine does
//! not have it: empty directories for the mount points and the `/bin`,
//! `/lib` symlinks into `/usr`, nothing else. Everything a machine runs
//! comes from the host's `/usr` bound read-only over it, exactly as under
//! bwrap, so no registry is needed and the image never goes stale.

/// Directories of the image, with their modes.
const DIRS: &[(&str, u32)] = &[
    ("usr", 0o755),
    ("etc", 0o755),
    ("opt", 0o755),
    ("opt/acs", 0o755),
    ("opt/acs/ctl", 0o755),
    ("home", 0o755),
    ("home/agent", 0o755),
    ("workspace", 0o755),
    ("run", 0o755),
    ("tmp", 0o1777),
    ("proc", 0o555),
    ("sys", 0o555),
    ("dev", 0o755),
];

/// Links into the host's merged `/usr`, as bwrap's `--symlink`s make them.
const LINKS: &[(&str, &str)] = &[("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")];

/// The image's root filesystem as a tar archive (what `POST /images/create?fromSrc=-` imports).
pub fn rootfs_tar() -> Vec<u8> {
    let mut out = Vec::with_capacity(512 * (DIRS.len() + LINKS.len() + 2));
    for (path, mode) in DIRS {
        out.extend_from_slice(&header(&format!("{path}/"), *mode, b'5', ""));
    }
    for (path, target) in LINKS {
        out.extend_from_slice(&header(path, 0o777, b'2', target));
    }
    // The end of an archive: two empty blocks.
    out.resize(out.len() + 1024, 0);
    out
}

/// One ustar header block of an entry without content, owned by root.
fn header(name: &str, mode: u32, kind: u8, link: &str) -> [u8; 512] {
    let mut h = [0u8; 512];
    let mut put = |at: usize, bytes: &[u8]| h[at..at + bytes.len()].copy_from_slice(bytes);
    put(0, name.as_bytes());
    put(100, format!("{mode:07o}\0").as_bytes());
    put(108, b"0000000\0");
    put(116, b"0000000\0");
    put(124, b"00000000000\0");
    put(136, b"00000000000\0");
    put(156, &[kind]);
    put(157, link.as_bytes());
    put(257, b"ustar\0");
    put(263, b"00");
    // The checksum counts its own field as spaces.
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_is_whole_blocks_with_valid_checksums() {
        let tar = rootfs_tar();
        assert_eq!(tar.len() % 512, 0);
        assert_eq!(tar.len(), 512 * (DIRS.len() + LINKS.len() + 2));
        let first = &tar[..512];
        assert!(first.starts_with(b"usr/\0"));
        let recorded = u32::from_str_radix(std::str::from_utf8(&first[148..154]).unwrap(), 8).unwrap();
        let sum: u32 =
            first.iter().enumerate().map(|(i, b)| if (148..156).contains(&i) { 32 } else { u32::from(*b) }).sum();
        assert_eq!(recorded, sum);
        let link = &tar[512 * DIRS.len()..512 * (DIRS.len() + 1)];
        assert_eq!(link[156], b'2');
        assert!(link[157..].starts_with(b"usr/bin\0"));
    }
}
