//! `acs runtimes install`: `npm install` of each pinned package into its own
//! prefix, then the marker. A runtime whose marker shows the pinned version
//! is left alone.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{MARKER, Pinned, installed_version, pinned};

/// What happened to one runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallOutcome {
    /// Installed now (the version it replaced, if any).
    Installed { runtime: &'static str, version: &'static str, replaced: Option<String> },
    /// The pinned version was already there.
    Present { runtime: &'static str, version: &'static str },
}

/// The runtimes `names` denotes (all of them when empty); an unknown name is an error.
pub fn select(names: &[String]) -> Result<Vec<&'static Pinned>, String> {
    if names.is_empty() {
        return Ok(super::PINNED.iter().collect());
    }
    names
        .iter()
        .map(|n| {
            pinned(n).ok_or_else(|| {
                let known: Vec<_> = super::PINNED.iter().map(|p| p.name).collect();
                format!("unknown runtime `{n}` (one of: {})", known.join(", "))
            })
        })
        .collect()
}

/// The npm arguments installing `p` under `prefix`.
pub fn npm_args(prefix: &Path, p: &Pinned) -> Vec<String> {
    ["install", "--prefix"]
        .into_iter()
        .map(str::to_owned)
        .chain([prefix.display().to_string()])
        .chain(["--no-audit", "--no-fund", "--omit=dev"].map(str::to_owned))
        .chain([p.spec()])
        .collect()
}

/// Installs the runtimes `names` (all when empty) into `dir`, one at a time.
/// Blocking: it runs npm. Stops at the first failure.
pub fn install(dir: &Path, names: &[String]) -> Result<Vec<InstallOutcome>, String> {
    let selected = select(names)?;
    let npm = which_npm()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let dir = dir.canonicalize().map_err(|e| format!("cannot resolve {}: {e}", dir.display()))?;
    let _lock = lock(&dir)?;
    let mut out = Vec::new();
    for p in selected {
        let current = installed_version(&dir, p);
        if current.as_deref() == Some(p.version) {
            out.push(InstallOutcome::Present { runtime: p.name, version: p.version });
            continue;
        }
        let prefix = dir.join(p.name);
        std::fs::create_dir_all(&prefix).map_err(|e| format!("cannot create {}: {e}", prefix.display()))?;
        // The old marker goes first, so a half-done install is never taken for a finished one.
        let _ = std::fs::remove_file(prefix.join(MARKER));
        let output = Command::new(&npm)
            .args(npm_args(&prefix, p))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run npm: {e}"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<_> = stderr.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect();
            return Err(format!("npm install {} failed ({}):\n{}", p.spec(), output.status, tail.join("\n")));
        }
        std::fs::write(prefix.join(MARKER), format!("{}\n", p.spec()))
            .map_err(|e| format!("cannot write {}: {e}", prefix.join(MARKER).display()))?;
        out.push(InstallOutcome::Installed { runtime: p.name, version: p.version, replaced: current });
    }
    Ok(out)
}

/// An exclusive lock on `<dir>/.lock`, held while the returned file is open, so two
/// installs into one directory (two operators, parallel test binaries) take turns.
fn lock(dir: &Path) -> Result<std::fs::File, String> {
    use std::os::fd::AsRawFd;
    let path = dir.join(".lock");
    let file = std::fs::File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(format!("cannot lock {}: {}", path.display(), std::io::Error::last_os_error()));
    }
    Ok(file)
}

/// npm on the PATH, or a clear error (the runtimes are npm packages).
fn which_npm() -> Result<std::path::PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("npm"))
        .find(|p| p.is_file())
        .ok_or_else(|| "npm is not installed: the runtimes are npm packages (install node and npm, e.g. `apt-get install nodejs npm`)".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_defaults_to_all_and_refuses_unknown_names() {
        assert_eq!(select(&[]).unwrap().len(), 4);
        let two = select(&["gemini".into(), "claude".into()]).unwrap();
        assert_eq!(two.iter().map(|p| p.name).collect::<Vec<_>>(), ["gemini", "claude"]);
        let e = select(&["acp".into()]).unwrap_err();
        assert!(e.contains("unknown runtime `acp`") && e.contains("opencode"), "{e}");
    }

    #[test]
    fn npm_installs_the_pinned_version_into_the_prefix() {
        let a = npm_args(Path::new("/srv/rt/codex"), pinned("codex").unwrap());
        assert_eq!(
            a,
            [
                "install",
                "--prefix",
                "/srv/rt/codex",
                "--no-audit",
                "--no-fund",
                "--omit=dev",
                "@zed-industries/codex-acp@0.16.0"
            ]
        );
    }
}
