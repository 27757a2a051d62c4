//! Password hashing with Argon2id (the crate's default parameters).

use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};

pub const MIN_LEN: usize = 8;
pub const MAX_LEN: usize = 256;

/// Hashes on a blocking thread: Argon2 is deliberately slow.
pub async fn hash(password: String) -> String {
    tokio::task::spawn_blocking(move || {
        let hash: PasswordHash =
            Argon2::default().hash_password(password.as_bytes()).expect("argon2 hashing cannot fail on valid input");
        hash.to_string()
    })
    .await
    .expect("hashing task panicked")
}

/// Verifies on a blocking thread. With no stored hash it still spends the
/// same time, so a missing account cannot be told apart by timing.
pub async fn verify(password: String, stored: Option<String>) -> bool {
    tokio::task::spawn_blocking(move || match stored {
        Some(stored) => Argon2::default().verify_password(password.as_bytes(), stored.as_str()).is_ok(),
        None => {
            let _: Result<PasswordHash, _> = Argon2::default().hash_password(password.as_bytes());
            false
        }
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hash_and_verify() {
        let h = hash("correct horse".into()).await;
        assert!(h.starts_with("$argon2id$"));
        assert!(verify("correct horse".into(), Some(h.clone())).await);
        assert!(!verify("wrong horse".into(), Some(h)).await);
        assert!(!verify("not a password".into(), None).await);
    }
}
