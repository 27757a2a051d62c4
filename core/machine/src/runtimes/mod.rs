//! The named agent runtimes (DESIGN section 5): which npm package and
//! version each one is pinned to, installing them into the host's runtimes
//! directory (`acs runtimes install`), and how a machine starts one. The
//! directory is bound read-only into every machine at [`MOUNT`].

pub mod install;
pub mod launch;

use std::path::{Path, PathBuf};

pub use install::{InstallOutcome, install};
pub use launch::{Launch, LaunchInputs, launch};

/// Where the runtimes directory appears inside a machine.
pub const MOUNT: &str = "/opt/acs/runtimes";

/// The file in `<dir>/<runtime>/` naming what is installed there (`package@version`).
pub const MARKER: &str = ".acs-installed";

/// One runtime's pinned npm package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pinned {
    pub name: &'static str,
    pub package: &'static str,
    pub version: &'static str,
}

impl Pinned {
    /// `package@version`, as npm takes it and the marker records it.
    pub fn spec(&self) -> String {
        format!("{}@{}", self.package, self.version)
    }
}

/// The pinned table. Claude's adapter is the `@zed-industries` one: its
/// successor package needs node 22.
pub const PINNED: [Pinned; 4] = [
    Pinned { name: "claude", package: "@zed-industries/claude-agent-acp", version: "0.23.1" },
    Pinned { name: "codex", package: "@zed-industries/codex-acp", version: "0.16.0" },
    Pinned { name: "gemini", package: "@google/gemini-cli", version: "0.61.0" },
    Pinned { name: "opencode", package: "opencode-ai", version: "1.18.33" },
];

pub fn pinned(name: &str) -> Option<&'static Pinned> {
    PINNED.iter().find(|p| p.name == name)
}

/// The version a marker records for `package` (`None` for another package or garbage).
pub fn parse_marker(text: &str, package: &str) -> Option<String> {
    let version = text.trim().strip_prefix(package)?.strip_prefix('@')?;
    (!version.is_empty() && !version.contains(char::is_whitespace)).then(|| version.to_owned())
}

/// The installed version of a runtime under `dir`, if any.
pub fn installed_version(dir: &Path, runtime: &Pinned) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(runtime.name).join(MARKER)).ok()?;
    parse_marker(&text, runtime.package)
}

/// One runtime as `acs runtimes list` and the catalog show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub pinned: &'static Pinned,
    pub installed: Option<String>,
}

pub fn list(dir: &Path) -> Vec<Status> {
    PINNED.iter().map(|p| Status { pinned: p, installed: installed_version(dir, p) }).collect()
}

/// The read-only bind of the runtimes directory into machines, when it
/// exists. Runtimes installed into it later appear in machines at once.
pub fn machine_bind(dir: &str) -> Option<(PathBuf, String)> {
    Some((Path::new(dir).canonicalize().ok().filter(|d| d.is_dir())?, MOUNT.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_name_the_package_and_version() {
        let p = pinned("claude").unwrap();
        assert_eq!(parse_marker(&format!("{}\n", p.spec()), p.package).as_deref(), Some("0.23.1"));
        assert_eq!(parse_marker("@google/gemini-cli@0.61.0", p.package), None);
        assert_eq!(parse_marker("@zed-industries/claude-agent-acp@", p.package), None);
        assert_eq!(parse_marker("", p.package), None);
    }

    #[test]
    fn installed_versions_come_from_the_marker() {
        let dir = std::env::temp_dir().join(format!("acs-runtimes-{}", uuid::Uuid::new_v4()));
        let codex = pinned("codex").unwrap();
        assert_eq!(installed_version(&dir, codex), None);
        std::fs::create_dir_all(dir.join("codex")).unwrap();
        std::fs::write(dir.join("codex").join(MARKER), "@zed-industries/codex-acp@0.15.0").unwrap();
        assert_eq!(installed_version(&dir, codex).as_deref(), Some("0.15.0"));
        let listed = list(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(listed.len(), 4);
        assert!(listed.iter().all(|s| (s.pinned.name == "codex") == s.installed.is_some()));
    }
}
