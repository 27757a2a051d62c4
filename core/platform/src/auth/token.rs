//! Secret tokens (API keys, email tokens): random, shown once, stored as
//! SHA-256 digests. They carry 192 bits of entropy, so a fast digest is
//! enough; no password-style stretching is needed.

use sha2::{Digest, Sha256};

pub const KEY_PREFIX: &str = "acs_";

/// A new random token with `prefix`.
pub fn generate(prefix: &str) -> String {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    format!("{prefix}{}", hex::encode(bytes))
}

/// The stored digest of a token.
pub fn digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The readable part of a key kept for display (`acs_` and 8 characters).
pub fn display_prefix(token: &str) -> String {
    token.chars().take(KEY_PREFIX.len() + 8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_prefixed_and_digested() {
        let a = generate(KEY_PREFIX);
        let b = generate(KEY_PREFIX);
        assert_ne!(a, b);
        assert!(a.starts_with("acs_") && a.len() == 4 + 48);
        assert_eq!(digest(&a).len(), 64);
        assert_ne!(digest(&a), digest(&b));
        assert_eq!(display_prefix(&a).len(), 12);
    }
}
