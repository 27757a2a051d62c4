//! What can go wrong talking to a provider, and how each answer maps to the
//! API (one place: `From<UpstreamError> for ApiError`).

use acs_platform::ApiError;
use acs_platform::secrets::CryptoError;
use axum::http::StatusCode;

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The provider could not be reached or answered something unreadable.
    #[error("{0}")]
    Unreachable(String),
    /// An OAuth error answer (RFC 6749 5.2): `invalid_grant` means the grant
    /// is gone (revoked, expired), others that the request or client is wrong.
    #[error("the provider answered `{error}`{}", .description.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    OAuth { error: String, description: Option<String> },
    /// The discovery document names another issuer (RFC 8414 3.3), or lacks an endpoint.
    #[error("{0}")]
    BadMetadata(String),
    /// The provider lacks what this step needs (an endpoint not set yet).
    #[error("{0}")]
    NotConfigured(String),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("sealed value: {0}")]
    Crypto(#[from] CryptoError),
}

impl UpstreamError {
    /// The grant is gone for good: the connection is revoked.
    pub fn is_invalid_grant(&self) -> bool {
        matches!(self, UpstreamError::OAuth { error, .. } if error == "invalid_grant")
    }
}

impl From<UpstreamError> for ApiError {
    fn from(e: UpstreamError) -> ApiError {
        match e {
            UpstreamError::Db(e) => e.into(),
            UpstreamError::Crypto(e) => e.into(),
            UpstreamError::NotConfigured(m) => ApiError::invalid("issuer", m),
            e @ (UpstreamError::Unreachable(_) | UpstreamError::OAuth { .. } | UpstreamError::BadMetadata(_)) => {
                ApiError::new(StatusCode::BAD_GATEWAY, "connection_provider_unavailable", e.to_string())
            }
        }
    }
}
