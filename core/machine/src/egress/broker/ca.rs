//! The deployment's broker CA: a self-signed authority whose certificate
//! every brokered machine trusts, and the leaf certificates it issues for the
//! hosts the broker intercepts (one per host, kept while the process runs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use time::{Duration, OffsetDateTime};

/// Leaf certificates live a week; a machine never runs that long without the
/// server that holds its proxy being able to mint a new one.
const LEAF_DAYS: i64 = 7;
/// Hosts whose leaf is kept; past it the cache starts over.
const MAX_LEAVES: usize = 4096;

#[derive(Debug, thiserror::Error)]
#[error("broker CA: {0}")]
pub struct CaError(String);

impl From<rcgen::Error> for CaError {
    fn from(e: rcgen::Error) -> Self {
        CaError(e.to_string())
    }
}

/// A new CA as it is stored: the certificate and its private key, both PEM.
pub struct NewCa {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for NewCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewCa").finish_non_exhaustive()
    }
}

/// The authority's fixed parameters: rebuilt the same way from `name` when a
/// stored CA is loaded, so leaves name the issuer exactly as the stored
/// certificate does.
fn ca_params(name: &str, not_before: OffsetDateTime) -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    dn.push(DnType::OrganizationName, "acs egress broker");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    params.not_before = not_before;
    params.not_after = not_before + Duration::days(3650);
    params
}

/// Generates a CA named `name` (ECDSA P-256, ten years).
pub fn generate(name: &str) -> Result<NewCa, CaError> {
    let key = KeyPair::generate()?;
    let cert = ca_params(name, OffsetDateTime::now_utc() - Duration::hours(1)).self_signed(&key)?;
    Ok(NewCa { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// A loaded CA that issues leaves.
pub struct Ca {
    cert_pem: String,
    issuer: Certificate,
    key: KeyPair,
    leaves: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").finish_non_exhaustive()
    }
}

impl Ca {
    /// Loads a stored CA; `name` is the one it was generated with.
    pub fn load(name: &str, cert_pem: &str, key_pem: &str) -> Result<Ca, CaError> {
        let key = KeyPair::from_pem(key_pem)?;
        let issuer = ca_params(name, OffsetDateTime::now_utc()).self_signed(&key)?;
        Ok(Ca { cert_pem: cert_pem.to_owned(), issuer, key, leaves: Mutex::new(HashMap::new()) })
    }

    /// The certificate machines trust, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The TLS server configuration presenting a leaf for `host` (a DNS name
    /// or an IP literal), minted on first use. ALPN offers HTTP/2 and 1.1.
    pub fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, CaError> {
        if let Some(config) = self.leaves.lock().unwrap_or_else(PoisonError::into_inner).get(host) {
            return Ok(config.clone());
        }
        let config = Arc::new(self.mint(host)?);
        let mut leaves = self.leaves.lock().unwrap_or_else(PoisonError::into_inner);
        if leaves.len() >= MAX_LEAVES {
            leaves.clear();
        }
        leaves.insert(host.to_owned(), config.clone());
        Ok(config)
    }

    fn mint(&self, host: &str) -> Result<ServerConfig, CaError> {
        let (leaf, private) = self.leaf(host)?;
        let mut config = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| CaError(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(vec![leaf], private)
            .map_err(|e| CaError(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }

    /// A leaf certificate for `host` and its key.
    fn leaf(&self, host: &str) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), CaError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec![host.to_owned()])?;
        params.distinguished_name.push(DnType::CommonName, host);
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::hours(1);
        params.not_after = now + Duration::days(LEAF_DAYS);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let leaf = params.signed_by(&key, &self.issuer, &self.key)?;
        let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok((CertificateDer::from(leaf.der().to_vec()), private))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{ServerName, UnixTime};

    #[test]
    fn a_reloaded_ca_issues_leaves_its_stored_certificate_verifies() {
        let new = generate("acs test CA").unwrap();
        let ca = Ca::load("acs test CA", &new.cert_pem, &new.key_pem).unwrap();
        let config = ca.server_config("api.example.com").unwrap();
        assert!(Arc::ptr_eq(&config, &ca.server_config("api.example.com").unwrap()), "kept per host");

        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_slice(new.cert_pem.as_bytes()).unwrap()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
        let (leaf, _) = ca.leaf("api.example.com").unwrap();
        let name = ServerName::try_from("api.example.com").unwrap();
        verifier.verify_server_cert(&leaf, &[], &name, &[], UnixTime::now()).unwrap();
        let other = ServerName::try_from("other.example.com").unwrap();
        assert!(verifier.verify_server_cert(&leaf, &[], &other, &[], UnixTime::now()).is_err());

        let stranger = generate("acs test CA").unwrap();
        let forged = Ca::load("acs test CA", &stranger.cert_pem, &stranger.key_pem).unwrap();
        let (leaf, _) = forged.leaf("api.example.com").unwrap();
        assert!(verifier.verify_server_cert(&leaf, &[], &name, &[], UnixTime::now()).is_err(), "another CA's leaf");
    }
}
