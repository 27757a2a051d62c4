//! The token a machine's proxy names the machine with to a broker on another
//! host: `<sandbox id>.<HMAC of it>`, keyed from the master key both hosts
//! share, so only a server of this deployment can make one.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use uuid::Uuid;

const PURPOSE: &str = "broker-machine-token";

fn mac(key: &[u8; 32], sandbox_id: Uuid) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(sandbox_id.as_bytes());
    mac
}

pub fn make(crypto: &crate::secrets::Crypto, sandbox_id: Uuid) -> Result<String, crate::secrets::CryptoError> {
    let key = crypto.derive(PURPOSE)?;
    Ok(format!("{sandbox_id}.{}", hex::encode(mac(&key, sandbox_id).finalize().into_bytes())))
}

/// The machine a token names, when it is genuine.
pub fn check(crypto: &crate::secrets::Crypto, token: &str) -> Option<Uuid> {
    let (id, sig) = token.split_once('.')?;
    let id: Uuid = id.parse().ok()?;
    let sig = hex::decode(sig).ok()?;
    let key = crypto.derive(PURPOSE).ok()?;
    mac(&key, id).verify_slice(&sig).ok()?;
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_token_made_with_the_key_passes() {
        let ring = |k: u8| {
            use base64::Engine;
            let key = base64::engine::general_purpose::STANDARD.encode([k; 32]);
            crate::secrets::Keyring::from_config(&[key]).unwrap()
        };
        let crypto = crate::secrets::Crypto::new(ring(1));
        let id = Uuid::now_v7();
        let token = make(&crypto, id).unwrap();
        assert_eq!(check(&crypto, &token), Some(id));
        let other = Uuid::now_v7();
        let forged = format!("{other}.{}", token.split_once('.').unwrap().1);
        assert_eq!(check(&crypto, &forged), None, "a token does not name another machine");
        assert_eq!(check(&crate::secrets::Crypto::new(ring(2)), &token), None, "another deployment's key");
        assert_eq!(check(&crypto, "garbage"), None);
    }
}
