//! The `Service-Signature` scheme of spec 6.1 (the `t=,v1=` scheme of Stripe's verifiers).

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// `t=<t>,v1=<hex HMAC-SHA256 keyed with the whole secret over "<t>.<body>">`.
pub fn sign(secret: &str, t: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// A new signing secret: `whsec_` and 32 random bytes in unpadded base64url.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    format!("whsec_{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What a receiver does: recompute over the raw body and compare in constant time.
    pub(crate) fn verify(secret: &str, header: &str, body: &[u8]) -> bool {
        let Some((t, v1)) = header.split_once(',') else { return false };
        let (Some(t), Some(v1)) = (t.strip_prefix("t="), v1.strip_prefix("v1=")) else { return false };
        let Ok(expected) = hex::decode(v1) else { return false };
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{t}.").as_bytes());
        mac.update(body);
        mac.verify_slice(&expected).is_ok()
    }

    #[test]
    fn known_vector() {
        // python3: hmac.new(b"whsec_test_secret", b'1700000000.{"id":"1","type":"webhook.test"}', sha256)
        let header = sign("whsec_test_secret", 1_700_000_000, br#"{"id":"1","type":"webhook.test"}"#);
        assert_eq!(header, "t=1700000000,v1=f30f1d72406dac8357eaa7980304e8213ae3b3ef730e9dccf9061df2db573ef7");
    }

    #[test]
    fn verifier_accepts_and_refuses_a_changed_body() {
        let secret = new_secret();
        let body = br#"{"id":"42","type":"conversation.turn.done"}"#;
        let header = sign(&secret, 1_700_000_123, body);
        assert!(verify(&secret, &header, body));
        assert!(!verify(&secret, &header, br#"{"id":"43","type":"conversation.turn.done"}"#));
        assert!(!verify("whsec_other", &header, body));
    }

    #[test]
    fn secret_shape() {
        let secret = new_secret();
        let encoded = secret.strip_prefix("whsec_").unwrap();
        assert_eq!(encoded.len(), 43);
        assert!(encoded.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_ne!(secret, new_secret());
    }
}
