//! Encryption at rest for secret values.
//!
//! Each account has a random 256-bit data key. It is stored only wrapped
//! (XChaCha20-Poly1305) by the deployment's current master key, with the
//! master key's id beside it; secret values are sealed with the account's
//! data key and an associated-data string that binds each ciphertext to its
//! row (so a value cannot be moved to another row or account). A stolen
//! database alone reveals nothing: the master keys live in the configuration
//! or in a key file outside the database.
//!
//! Master keys form a keyring: the first is current (new wraps), the others
//! still unwrap. Rotation (`acs keys rotate-master`) adds a new current key
//! and re-wraps every account's data key; a running server that meets a key
//! id it does not know re-reads the key file, so rotation needs no restart.

pub mod keyring;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use base64::Engine;
use chacha20poly1305::aead::Aead;
use chacha20poly1305::{KeyInit, XChaCha20Poly1305, XNonce};
use sqlx::Row;
use uuid::Uuid;

use crate::db::Db;
use crate::time_fmt::now_micros;
pub use keyring::{Keyring, KeyringError};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD_NO_PAD;
/// Prefix of every sealed value, so a later scheme can sit beside it.
const SCHEME: &str = "v1:";

#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("a sealed value could not be opened (wrong key or tampered)")]
    Open,
    #[error("master key `{0}` is not in the keyring")]
    UnknownMasterKey(String),
    #[error("keyring: {0}")]
    Keyring(#[from] KeyringError),
}

/// Seals `plaintext` under `key` with associated data `aad`: `v1:` + base64(nonce || ciphertext).
pub fn seal(key: &[u8; 32], aad: &str, plaintext: &[u8]) -> String {
    let cipher = XChaCha20Poly1305::new_from_slice(key).expect("a 32-byte key");
    let mut nonce = [0u8; 24];
    getrandom::fill(&mut nonce).expect("the operating system's random source failed");
    let ct = cipher
        .encrypt(&XNonce::from(nonce), chacha20poly1305::aead::Payload { msg: plaintext, aad: aad.as_bytes() })
        .expect("XChaCha20-Poly1305 accepts any message size we store");
    let mut out = Vec::with_capacity(24 + ct.len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&ct);
    format!("{SCHEME}{}", B64.encode(out))
}

/// Opens a value made by [`seal`] with the same key and associated data.
pub fn open(key: &[u8; 32], aad: &str, sealed: &str) -> Result<Vec<u8>, CryptoError> {
    let raw = sealed.strip_prefix(SCHEME).ok_or(CryptoError::Open)?;
    let bytes = B64.decode(raw).map_err(|_| CryptoError::Open)?;
    if bytes.len() < 24 + 16 {
        return Err(CryptoError::Open);
    }
    let (nonce, ct) = bytes.split_at(24);
    let nonce: [u8; 24] = nonce.try_into().map_err(|_| CryptoError::Open)?;
    let cipher = XChaCha20Poly1305::new_from_slice(key).expect("a 32-byte key");
    cipher
        .decrypt(&XNonce::from(nonce), chacha20poly1305::aead::Payload { msg: ct, aad: aad.as_bytes() })
        .map_err(|_| CryptoError::Open)
}

/// The keyring the configuration names: `secrets.master_keys`, else the key file.
pub fn load_keyring(cfg: &crate::config::SecretsConfig) -> Result<Keyring, KeyringError> {
    if cfg.master_keys.is_empty() {
        Keyring::from_file(std::path::Path::new(&cfg.master_key_file))
    } else {
        Keyring::from_config(&cfg.master_keys)
    }
}

fn wrap_aad(account_id: Uuid) -> String {
    format!("acs data key for account {account_id}")
}

/// The server's view of encryption: the keyring and a cache of unwrapped
/// account data keys (they never change, so the cache needs no invalidation).
pub struct Crypto {
    keyring: RwLock<Keyring>,
    data_keys: Mutex<HashMap<Uuid, Arc<[u8; 32]>>>,
}

impl Crypto {
    pub fn new(keyring: Keyring) -> Self {
        Crypto { keyring: RwLock::new(keyring), data_keys: Mutex::new(HashMap::new()) }
    }

    fn master(&self, id: &str) -> Result<[u8; 32], CryptoError> {
        if let Some(k) = self.keyring.read().map_err(|_| CryptoError::Open)?.get(id) {
            return Ok(k);
        }
        // Unknown id: another process may have rotated the key file.
        let mut ring = self.keyring.write().map_err(|_| CryptoError::Open)?;
        ring.reload()?;
        ring.get(id).ok_or_else(|| CryptoError::UnknownMasterKey(id.to_owned()))
    }

    fn cached(&self, account_id: Uuid) -> Option<Arc<[u8; 32]>> {
        self.data_keys.lock().ok()?.get(&account_id).cloned()
    }

    /// The account's stored data key, unwrapped, if it has one.
    async fn stored_key(&self, db: &Db, account_id: Uuid) -> Result<Option<[u8; 32]>, CryptoError> {
        let row = sqlx::query("SELECT master_key_id, wrapped_key FROM account_data_keys WHERE account_id = $1")
            .bind(account_id.to_string())
            .fetch_optional(&db.pool)
            .await?;
        match row {
            Some(row) => Ok(Some(self.unwrap_key(
                account_id,
                &row.try_get::<String, _>("master_key_id")?,
                &row.try_get::<String, _>("wrapped_key")?,
            )?)),
            None => Ok(None),
        }
    }

    /// Drops the account's unwrapped data key from memory (account deletion:
    /// its wrapped key row is gone, so nothing of it should stay behind).
    pub fn forget(&self, account_id: Uuid) {
        if let Ok(mut cache) = self.data_keys.lock() {
            cache.remove(&account_id);
        }
    }

    /// The account's data key, created on first use.
    pub async fn data_key(&self, db: &Db, account_id: Uuid) -> Result<Arc<[u8; 32]>, CryptoError> {
        if let Some(k) = self.cached(account_id) {
            return Ok(k);
        }
        let key = match self.stored_key(db, account_id).await? {
            Some(key) => key,
            None => {
                let mut fresh = [0u8; 32];
                getrandom::fill(&mut fresh).expect("the operating system's random source failed");
                let (id, master) = self.keyring.read().map_err(|_| CryptoError::Open)?.current();
                // Two first writes may race: the loser reads back the winner's key.
                sqlx::query(
                    "INSERT INTO account_data_keys (account_id, master_key_id, wrapped_key, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $4) ON CONFLICT (account_id) DO NOTHING",
                )
                .bind(account_id.to_string())
                .bind(id)
                .bind(seal(&master, &wrap_aad(account_id), &fresh))
                .bind(now_micros())
                .execute(&db.pool)
                .await?;
                self.stored_key(db, account_id).await?.ok_or(CryptoError::Open)?
            }
        };
        let key = Arc::new(key);
        if let Ok(mut cache) = self.data_keys.lock() {
            cache.insert(account_id, key.clone());
        }
        Ok(key)
    }

    fn unwrap_key(&self, account_id: Uuid, master_id: &str, wrapped: &str) -> Result<[u8; 32], CryptoError> {
        let master = self.master(master_id)?;
        open(&master, &wrap_aad(account_id), wrapped)?.try_into().map_err(|_| CryptoError::Open)
    }

    /// Seals a secret of the deployment (no account's: the broker CA's key)
    /// with the current master key; returns that key's id and the sealed text.
    pub fn seal_deployment(&self, aad: &str, value: &[u8]) -> Result<(String, String), CryptoError> {
        let (id, master) = self.keyring.read().map_err(|_| CryptoError::Open)?.current();
        Ok((id, seal(&master, aad, value)))
    }

    /// A key for `purpose` derived from the current master key: the same on
    /// every process that shares the key file (the broker's machine tokens).
    pub fn derive(&self, purpose: &str) -> Result<[u8; 32], CryptoError> {
        use sha2::Digest;
        let (_, master) = self.keyring.read().map_err(|_| CryptoError::Open)?.current();
        let mut hash = sha2::Sha256::new();
        hash.update(b"acs-derived-key\0");
        hash.update(purpose.as_bytes());
        hash.update(b"\0");
        hash.update(master);
        Ok(hash.finalize().into())
    }

    /// Opens what [`Crypto::seal_deployment`] sealed.
    pub fn open_deployment(&self, master_key_id: &str, aad: &str, sealed: &str) -> Result<Vec<u8>, CryptoError> {
        open(&self.master(master_key_id)?, aad, sealed)
    }

    /// Seals a secret value of `account_id`; `aad` names the row it belongs to.
    pub async fn encrypt(&self, db: &Db, account_id: Uuid, aad: &str, value: &str) -> Result<String, CryptoError> {
        let key = self.data_key(db, account_id).await?;
        Ok(seal(&key, aad, value.as_bytes()))
    }

    /// Opens a secret value sealed by [`Crypto::encrypt`] with the same `aad`.
    pub async fn decrypt(&self, db: &Db, account_id: Uuid, aad: &str, sealed: &str) -> Result<String, CryptoError> {
        let key = self.data_key(db, account_id).await?;
        String::from_utf8(open(&key, aad, sealed)?).map_err(|_| CryptoError::Open)
    }

    /// Re-wraps every account data key under the current master key.
    /// Returns how many were re-wrapped. Safe while servers run: a data key
    /// itself never changes, and each row is swapped only if unchanged.
    pub async fn rewrap_all(&self, db: &Db) -> Result<usize, CryptoError> {
        let (current_id, current) = self.keyring.read().map_err(|_| CryptoError::Open)?.current();
        let rows = sqlx::query(
            "SELECT account_id, master_key_id, wrapped_key FROM account_data_keys WHERE master_key_id <> $1",
        )
        .bind(current_id.clone())
        .fetch_all(&db.pool)
        .await?;
        let mut done = 0;
        for row in rows {
            let account_id: String = row.try_get("account_id")?;
            let account = Uuid::parse_str(&account_id).map_err(|_| CryptoError::Open)?;
            let old_id: String = row.try_get("master_key_id")?;
            let wrapped: String = row.try_get("wrapped_key")?;
            let key = self.unwrap_key(account, &old_id, &wrapped)?;
            let changed = sqlx::query(
                "UPDATE account_data_keys SET master_key_id = $1, wrapped_key = $2, updated_at = $3 \
                 WHERE account_id = $4 AND wrapped_key = $5",
            )
            .bind(current_id.clone())
            .bind(seal(&current, &wrap_aad(account), &key))
            .bind(now_micros())
            .bind(account_id)
            .bind(wrapped)
            .execute(&db.pool)
            .await?;
            done += changed.rows_affected() as usize;
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_and_open_bind_the_associated_data() {
        let key = [7u8; 32];
        let sealed = seal(&key, "env:1:TOKEN", b"hunter2");
        assert!(sealed.starts_with("v1:"));
        assert!(!sealed.contains("hunter2"));
        assert_eq!(open(&key, "env:1:TOKEN", &sealed).unwrap(), b"hunter2");
        assert!(open(&key, "env:2:TOKEN", &sealed).is_err(), "moved to another row");
        assert!(open(&[8u8; 32], "env:1:TOKEN", &sealed).is_err(), "another key");
        assert_ne!(seal(&key, "a", b"x"), seal(&key, "a", b"x"), "fresh nonce each time");
        let mut tampered = sealed.clone();
        tampered.pop();
        tampered.push(if sealed.ends_with('A') { 'B' } else { 'A' });
        assert!(open(&key, "env:1:TOKEN", &tampered).is_err());
    }
}
