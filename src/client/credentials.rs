//! Where the CLI keeps its keys: `$XDG_CONFIG_HOME/acs/credentials.toml`
//! (else `~/.config/acs/credentials.toml`), mode 0600, one entry per named
//! server and the name of the default one.
//!
//! ```toml
//! default = "default"
//! [servers.default]
//! url = "http://127.0.0.1:8080"
//! key = "acs_..."
//! email = "ada@example.com"
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// The server used when a command names none.
    pub default: Option<String>,
    #[serde(default)]
    pub servers: BTreeMap<String, Server>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    pub url: String,
    pub key: String,
    pub email: Option<String>,
}

/// The credentials file of this user.
pub fn path() -> anyhow::Result<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .context("neither XDG_CONFIG_HOME nor HOME is set")?;
            PathBuf::from(home).join(".config")
        }
    };
    Ok(base.join("acs").join("credentials.toml"))
}

impl Credentials {
    /// The file's contents; an absent file holds nothing yet.
    pub fn load(path: &Path) -> anyhow::Result<Credentials> {
        match std::fs::read_to_string(path) {
            Ok(text) => toml::from_str(&text).with_context(|| format!("reading {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Credentials::default()),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Writes the file whole, readable by its owner only: a new file is made
    /// with mode 0600 and renamed over the old one, so no reader ever sees a
    /// half-written file or a moment of wider permissions.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let dir = path.parent().context("the credentials path has no folder")?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        // The folder is ours alone too (`acs` under the config home), so no
        // one else can list it or swap the file in it.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let tmp = dir.join(format!(".credentials.{}.tmp", std::process::id()));
        let text = toml::to_string(self)?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("writing {}", tmp.display()))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    /// The entry for `url` (the one saved for that address), else the default one.
    pub fn find(&self, url: Option<&str>) -> Option<(&str, &Server)> {
        match url {
            Some(url) => {
                let url = normalize_url(url);
                self.servers.iter().find(|(_, s)| s.url == url).map(|(n, s)| (n.as_str(), s))
            }
            None => {
                let name = self.default.as_deref()?;
                self.servers.get_key_value(name).map(|(n, s)| (n.as_str(), s))
            }
        }
    }

    /// The name a new login to `url` is saved under: the entry already
    /// saved for that address, else `default` when free, else the address.
    pub fn name_for(&self, url: &str) -> String {
        if let Some((name, _)) = self.find(Some(url)) {
            return name.to_owned();
        }
        if !self.servers.contains_key("default") { "default".into() } else { normalize_url(url) }
    }
}

/// One spelling per address: no trailing slash.
pub fn normalize_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_private_and_read_back() {
        let dir = std::env::temp_dir().join(format!("acs-cred-{}", std::process::id()));
        let path = dir.join("acs").join("credentials.toml");
        let mut c = Credentials::default();
        c.servers.insert("default".into(), Server { url: "http://h:1".into(), key: "acs_x".into(), email: None });
        c.default = Some("default".into());
        c.save(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
        let back = Credentials::load(&path).unwrap();
        assert_eq!(back.find(None).unwrap().1.key, "acs_x");
        assert_eq!(back.find(Some("http://h:1/")).unwrap().0, "default");
        assert!(back.find(Some("http://other")).is_none());
        assert_eq!(back.name_for("http://h:1"), "default");
        assert_eq!(back.name_for("http://other/"), "http://other");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
