//! Master keys: from `secrets.master_keys` (base64, current first) or from a
//! key file (`secrets.master_key_file`, default `acs.key`), generated with
//! 0600 permissions on the first start of the embedded default.
//!
//! Key file format: one key a line, `<id>:<base64 key>`, current first.
//! A key's id is the first 8 hex digits of its SHA-256.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use sha2::{Digest, Sha256};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

#[derive(Debug, thiserror::Error)]
pub enum KeyringError {
    #[error("{0}")]
    Invalid(String),
    #[error("key file {path}: {error}")]
    Io { path: String, error: std::io::Error },
}

#[derive(Clone)]
pub struct Keyring {
    /// (id, key); the first is current.
    keys: Vec<(String, [u8; 32])>,
    file: Option<PathBuf>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(|k| k.0.as_str()).collect();
        f.debug_struct("Keyring").field("ids", &ids).field("file", &self.file).finish()
    }
}

pub fn key_id(key: &[u8; 32]) -> String {
    hex::encode(&Sha256::digest(key)[..4])
}

fn decode_key(text: &str, what: &str) -> Result<[u8; 32], KeyringError> {
    B64.decode(text.trim())
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
        .ok_or_else(|| KeyringError::Invalid(format!("{what} must be 32 bytes in base64")))
}

pub fn generate_key() -> [u8; 32] {
    let mut k = [0u8; 32];
    getrandom::fill(&mut k).expect("the operating system's random source failed");
    k
}

fn io(path: &Path, error: std::io::Error) -> KeyringError {
    KeyringError::Io { path: path.display().to_string(), error }
}

impl Keyring {
    /// Keys given in configuration (base64, current first).
    pub fn from_config(keys: &[String]) -> Result<Keyring, KeyringError> {
        let keys = keys
            .iter()
            .enumerate()
            .map(|(i, k)| decode_key(k, &format!("secrets.master_keys[{i}]")).map(|k| (key_id(&k), k)))
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(KeyringError::Invalid("secrets.master_keys is empty".into()));
        }
        Ok(Keyring { keys, file: None })
    }

    /// Reads the key file, creating it with one new key (mode 0600) when missing.
    pub fn from_file(path: &Path) -> Result<Keyring, KeyringError> {
        if !path.exists() {
            write_file(path, &[generate_key()])?;
            tracing::info!(path = %path.display(), "generated a new master key file; back it up: without it no secret can be read");
        }
        let mut ring = Keyring { keys: Vec::new(), file: Some(path.to_owned()) };
        ring.reload()?;
        Ok(ring)
    }

    /// Re-reads the key file (no-op for configured keys).
    pub fn reload(&mut self) -> Result<(), KeyringError> {
        let Some(path) = &self.file else { return Ok(()) };
        let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#')) {
            let (id, k) = line.split_once(':').ok_or_else(|| {
                KeyringError::Invalid(format!("{} line {}: expected <id>:<base64 key>", path.display(), n + 1))
            })?;
            let key = decode_key(k, &format!("{} line {}", path.display(), n + 1))?;
            if key_id(&key) != id.trim() {
                return Err(KeyringError::Invalid(format!(
                    "{} line {}: id does not match the key",
                    path.display(),
                    n + 1
                )));
            }
            keys.push((id.trim().to_owned(), key));
        }
        if keys.is_empty() {
            return Err(KeyringError::Invalid(format!("{} holds no key", path.display())));
        }
        self.keys = keys;
        Ok(())
    }

    pub fn current(&self) -> (String, [u8; 32]) {
        self.keys[0].clone()
    }

    pub fn get(&self, id: &str) -> Option<[u8; 32]> {
        self.keys.iter().find(|(i, _)| i == id).map(|(_, k)| *k)
    }

    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Puts a new current key at the front of the key file, keeping the old
    /// ones so data wrapped under them stays readable until re-wrapped.
    pub fn rotate_file(&mut self) -> Result<String, KeyringError> {
        let path = self.file.clone().ok_or_else(|| {
            KeyringError::Invalid(
                "keys come from secrets.master_keys: put the new key first there, then run `acs keys rotate-master`"
                    .into(),
            )
        })?;
        let mut keys = vec![generate_key()];
        keys.extend(self.keys.iter().map(|(_, k)| *k));
        write_file(&path, &keys)?;
        self.reload()?;
        Ok(self.current().0)
    }
}

/// Writes keys atomically (temp file, then rename) with mode 0600.
fn write_file(path: &Path, keys: &[[u8; 32]]) -> Result<(), KeyringError> {
    let mut text = String::from("# acs master keys, current first. Keep this file secret and backed up.\n");
    for k in keys {
        text.push_str(&format!("{}:{}\n", key_id(k), B64.encode(k)));
    }
    let tmp = path.with_extension("key.tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts.open(&tmp).map_err(|e| io(&tmp, e))?;
    f.write_all(text.as_bytes()).and_then(|_| f.sync_all()).map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("acs-keyring-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    }

    #[test]
    fn key_file_is_created_private_and_rotates() {
        let path = temp("acs.key");
        let mut ring = Keyring::from_file(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let (old_id, old_key) = ring.current();
        let new_id = ring.rotate_file().unwrap();
        assert_ne!(old_id, new_id);
        assert_eq!(ring.get(&old_id), Some(old_key), "old keys still unwrap");
        let again = Keyring::from_file(&path).unwrap();
        assert_eq!(again.current().0, new_id);
    }

    #[test]
    fn configured_keys_are_checked() {
        assert!(Keyring::from_config(&["short".into()]).is_err());
        assert!(Keyring::from_config(&[]).is_err());
        let k = B64.encode([1u8; 32]);
        let ring = Keyring::from_config(&[k]).unwrap();
        assert_eq!(ring.current().0, key_id(&[1u8; 32]));
    }
}
