//! The one error type. It renders the spec's error body (section 7):
//! `{error, message, errors?, ...code-specific keys}`; key-authentication
//! and scope refusals carry prose in `error` and the code in `reason`.

use std::collections::BTreeMap;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use utoipa::ToSchema;

pub type ApiResult<T> = Result<T, ApiError>;

/// Field name -> messages, as in `errors` of `validation_failed`.
pub type FieldErrors = BTreeMap<String, Vec<String>>;

/// Boxed so `Result<T, ApiError>` stays one pointer wide on every handler path.
#[derive(Debug)]
pub struct ApiError(Box<ErrorParts>);

#[derive(Debug)]
pub struct ErrorParts {
    pub status: StatusCode,
    /// The `error` value: a code, or prose for key-authentication refusals.
    pub error: String,
    pub message: Option<String>,
    pub errors: Option<FieldErrors>,
    /// Code-specific keys (`reason`, `limit`, ...).
    pub extra: Map<String, Value>,
    pub retry_after: Option<u64>,
}

/// The error body, for the OpenAPI document.
#[derive(serde::Serialize, ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody {
    /// The code to branch on (prose for key-authentication refusals, whose code is in `reason`).
    pub error: String,
    pub message: Option<String>,
    /// Field name -> messages, beside `validation_failed`.
    pub errors: Option<BTreeMap<String, Vec<String>>>,
    /// For key-authentication and scope refusals: `api_key_invalid`, `api_key_expired`, `insufficient_scope`.
    pub reason: Option<String>,
}

impl std::ops::Deref for ApiError {
    type Target = ErrorParts;
    fn deref(&self) -> &ErrorParts {
        &self.0
    }
}

impl std::ops::DerefMut for ApiError {
    fn deref_mut(&mut self) -> &mut ErrorParts {
        &mut self.0
    }
}

impl ApiError {
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError(Box::new(ErrorParts {
            status,
            error: code.to_owned(),
            message: Some(message.into()),
            errors: None,
            extra: Map::new(),
            retry_after: None,
        }))
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", format!("{what} not found"))
    }

    /// 422 `validation_failed` with one field's message.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        let mut errors = FieldErrors::new();
        errors.insert(field.to_owned(), vec![message.into()]);
        Self::validation(errors)
    }

    pub fn validation(errors: FieldErrors) -> Self {
        let fields: Vec<&str> = errors.keys().map(String::as_str).collect();
        let mut e = Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
            format!("Invalid value for: {}", fields.join(", ")),
        );
        e.errors = Some(errors);
        e
    }

    /// 401 with prose `error` and the code in `reason`.
    pub fn unauthenticated(reason: &str) -> Self {
        let prose = match reason {
            "api_key_expired" => "API key expired",
            _ => "Invalid or missing API key",
        };
        let mut e = Self::new(StatusCode::UNAUTHORIZED, "", "Send a valid key as `Authorization: Bearer <API_KEY>`.");
        e.error = prose.to_owned();
        e.with("reason", reason)
    }

    /// 403 `insufficient_scope`: a full-scope key is needed.
    pub fn insufficient_scope() -> Self {
        let mut e = Self::new(StatusCode::FORBIDDEN, "", "This operation needs a full-scope API key.");
        e.error = "Insufficient scope".to_owned();
        e.with("reason", "insufficient_scope")
    }

    pub fn rate_limited(retry_after: u64) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("Too many requests; retry after {retry_after} seconds."),
        );
        e.retry_after = Some(retry_after);
        e
    }

    pub fn conflict(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    pub fn internal() -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "The server failed to handle this request.")
    }

    pub fn body(&self) -> Value {
        let mut body = Map::new();
        body.insert("error".into(), Value::String(self.error.clone()));
        if let Some(m) = &self.message {
            body.insert("message".into(), Value::String(m.clone()));
        }
        if let Some(errors) = &self.errors {
            body.insert("errors".into(), serde_json::to_value(errors).unwrap_or_default());
        }
        for (k, v) in &self.extra {
            body.insert(k.clone(), v.clone());
        }
        Value::Object(body)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut res = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        tracing::error!(error = %e, "database error");
        let mut err = ApiError::internal();
        if matches!(e, sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed) {
            err.status = StatusCode::SERVICE_UNAVAILABLE;
            err.error = "unavailable".into();
            err.message = Some("The database is unavailable; try again shortly.".into());
        }
        err
    }
}

impl From<crate::secrets::CryptoError> for ApiError {
    fn from(e: crate::secrets::CryptoError) -> Self {
        tracing::error!(error = %e, "secret encryption failed");
        ApiError::internal()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.error)
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_refusals_put_the_code_in_reason() {
        let b = ApiError::unauthenticated("api_key_expired").body();
        assert_eq!(b["reason"], "api_key_expired");
        assert_ne!(b["error"], "api_key_expired");
        let b = ApiError::insufficient_scope().body();
        assert_eq!(b["reason"], "insufficient_scope");
    }

    #[test]
    fn validation_lists_fields() {
        let b = ApiError::invalid("email", "can't be blank").body();
        assert_eq!(b["error"], "validation_failed");
        assert_eq!(b["errors"]["email"][0], "can't be blank");
    }
}
