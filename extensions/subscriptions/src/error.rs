//! What can go wrong, and how each maps to the API (spec 7): one place,
//! `From<SubsError> for ApiError`.

use acs_platform::ApiError;
use acs_platform::secrets::CryptoError;
use axum::http::StatusCode;

use crate::rules::StartRefusal;

/// Talking to the vendor.
#[derive(Debug, thiserror::Error)]
pub enum VendorError {
    /// No answer, or one that could not be read.
    #[error("{0}")]
    Unreachable(String),
    /// An OAuth error answer (RFC 6749 5.2, RFC 8628 3.5).
    #[error("the vendor answered `{error}`{}", .description.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    OAuth { error: String, description: Option<String> },
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("sealed value: {0}")]
    Crypto(#[from] CryptoError),
}

impl VendorError {
    pub fn oauth_code(&self) -> Option<&str> {
        match self {
            VendorError::OAuth { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// A refusal of the API.
#[derive(Debug, thiserror::Error)]
pub enum SubsError {
    #[error("Linking openai subscriptions is not enabled on this server.")]
    NotEnabled,
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("{field}: {message}")]
    Invalid { field: &'static str, message: String },
    #[error("the link attempt is {state}, not pending")]
    NotPending { state: String },
    #[error("start refused: {0:?}")]
    Start(StartRefusal),
    #[error("credential sets name this subscription")]
    NamedBySets(Vec<String>),
    #[error("only a disconnected subscription may be deleted")]
    NotDisconnected,
    #[error("the vendor's sign-in service did not answer: {0}")]
    Vendor(#[from] VendorError),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("sealed value: {0}")]
    Crypto(#[from] CryptoError),
}

impl From<SubsError> for ApiError {
    fn from(e: SubsError) -> ApiError {
        let message = e.to_string();
        match e {
            SubsError::NotEnabled => ApiError::new(StatusCode::NOT_FOUND, "openai_subscriptions_not_enabled", message),
            SubsError::NotFound(what) => ApiError::not_found(what),
            SubsError::Invalid { field, message } => ApiError::invalid(field, message),
            SubsError::NotPending { state } => {
                ApiError::conflict("openai_link_attempt_not_pending", message).with("state", state)
            }
            SubsError::Start(StartRefusal::Pending { attempt_id }) => {
                ApiError::conflict("openai_link_attempt_pending", "This subscription already has an open sign-in.")
                    .with("attempt_id", attempt_id.to_string())
            }
            SubsError::Start(StartRefusal::Exceeded { count, limit }) => {
                ApiError::conflict("openai_link_attempts_exceeded", "Too many open sign-ins.")
                    .with("count", count)
                    .with("limit", limit)
            }
            SubsError::Start(StartRefusal::RateLimited { limit, retry_after_seconds }) => {
                let mut e = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "openai_link_attempts_rate_limited",
                    format!("Too many sign-ins started this hour; retry after {retry_after_seconds} seconds."),
                )
                .with("limit", limit)
                .with("retry_after_seconds", retry_after_seconds);
                e.retry_after = Some(retry_after_seconds);
                e
            }
            SubsError::Start(StartRefusal::GrantLimit { count, limit }) => {
                ApiError::conflict("openai_grant_limit_reached", "The account holds as many subscriptions as it may.")
                    .with("count", count)
                    .with("limit", limit)
            }
            SubsError::NamedBySets(sets) => ApiError::conflict(
                "openai_grant_named_by_sets",
                "Credential sets name this subscription; name another in them first.",
            )
            .with("sets", sets),
            SubsError::NotDisconnected => ApiError::conflict("openai_grant_not_disconnected", message),
            SubsError::Vendor(VendorError::Db(e)) | SubsError::Db(e) => e.into(),
            SubsError::Vendor(VendorError::Crypto(e)) | SubsError::Crypto(e) => e.into(),
            SubsError::Vendor(_) => ApiError::new(StatusCode::BAD_GATEWAY, "openai_auth_unreachable", message),
        }
    }
}
