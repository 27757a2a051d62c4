//! The one error type. It renders the spec's error body (section 7):
//! `{error, message, errors?, ...code-specific keys}`; key-authentication
//! and scope refusals carry prose in `error` and the code in `reason`.

use std::collections::BTreeMap;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::refusal::{Building, Busy, Capacity, Deleted, Ended, Refusal, Unavailable};

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
    /// What the error means to code that meets it: decisions match on this,
    /// never on `status` or `error`.
    pub kind: Kind,
}

/// The meaning of an error for the code that handles it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Kind {
    /// Nothing any caller acts on.
    #[default]
    Other,
    /// The thing named does not exist for this caller.
    NotFound,
    /// No valid key (the failed-authentication limit counts these).
    Unauthenticated,
    /// `validation_failed`.
    Invalid,
    /// A refusal of the domain.
    Refused(Refusal),
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
            kind: Kind::Other,
        }))
    }

    /// The refusal this error tells, if it tells one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match &self.kind {
            Kind::Refused(r) => Some(r),
            _ => None,
        }
    }

    fn of_kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", format!("{what} not found")).of_kind(Kind::NotFound)
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
        e.of_kind(Kind::Invalid)
    }

    /// 401 with prose `error` and the code in `reason`.
    pub fn unauthenticated(reason: &str) -> Self {
        let prose = match reason {
            "api_key_expired" => "API key expired",
            _ => "Invalid or missing API key",
        };
        let mut e = Self::new(StatusCode::UNAUTHORIZED, "", "Send a valid key as `Authorization: Bearer <API_KEY>`.");
        e.error = prose.to_owned();
        e.with("reason", reason).of_kind(Kind::Unauthenticated)
    }

    /// 403 `insufficient_scope`: a full-scope key is needed.
    /// 403 `account_suspended`: an operator suspended the account (docs/admin.md).
    pub fn account_suspended() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "account_suspended",
            "This account is suspended by the operators of this service; its data is kept.",
        )
    }

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
        if matches!(e, sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed) {
            return Refusal::Unavailable(Unavailable::Database).into();
        }
        ApiError::internal()
    }
}

/// The one place a refusal of the domain becomes the spec's code, status and message.
impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> ApiError {
        let e = match &r {
            Refusal::Busy(why) => ApiError::conflict(
                "conversation_busy",
                match why {
                    Busy::Prompt => "A turn is running; wait for it to end or interrupt it.",
                    Busy::Resume => "A turn is running or another prompt waits.",
                    Busy::Reapply => "A turn is running; reapply once it ends (or interrupt it).",
                    Busy::Teammate => "The teammate's turn is running; wait for it to end.",
                },
            ),
            Refusal::Ended(why) => ApiError::new(
                StatusCode::GONE,
                "conversation_ended",
                match why {
                    Ended::Terminated => "The conversation was terminated.",
                    Ended::Reapply => "The conversation has ended; it cannot be reapplied.",
                    Ended::Other => "The conversation has ended.",
                },
            ),
            Refusal::Capacity(Capacity::Tenant { active, limit }) => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "sandbox_quota_exceeded",
                format!("This account already runs {active} sandboxes, its limit; wait for one to park or end."),
            )
            .with("active_sandboxes", *active)
            .with("limit", *limit),
            Refusal::Capacity(Capacity::Fleet { .. }) => {
                let mut e = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "fleet_at_capacity",
                    "Every sandbox place of this service is taken; try again shortly.",
                );
                e.retry_after = Some(FLEET_RETRY_AFTER_SECONDS);
                e
            }
            Refusal::Provisioning(what) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "provisioning",
                match what {
                    Building::Start => "This agent's machine is still being built; try again shortly.",
                    Building::Reapply => "The conversation's machine is still being built; reapply once it is ready.",
                },
            ),
            Refusal::Unavailable(Unavailable::Database) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "The database is unavailable; try again shortly.",
            ),
            Refusal::Unavailable(Unavailable::Sandboxes) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "sandboxes_unavailable",
                "Sandboxes are not running yet.",
            ),
            Refusal::Unavailable(Unavailable::Machine(detail)) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "sandbox_unavailable",
                format!("The machine did not answer: {detail}"),
            ),
            Refusal::Unavailable(Unavailable::Broker(down)) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "broker_unavailable",
                "The egress broker did not answer; the machine was not started.",
            )
            .with("reason", down.reason()),
            Refusal::SelectionDeleted(d) => {
                let field = d.field();
                ApiError::conflict(
                    "selection_deleted",
                    format!(
                        "The conversation's {field} was deleted: reapply the conversation with another {field} \
                         (or edit the agent that names it), or start a new conversation."
                    ),
                )
                .with("field", field)
            }
        };
        e.of_kind(Kind::Refused(r))
    }
}

impl From<Deleted> for ApiError {
    fn from(d: Deleted) -> ApiError {
        Refusal::SelectionDeleted(d).into()
    }
}

/// `Retry-After` of a fleet refusal: capacity frees as other machines park,
/// which no one can predict; this is a polite polling interval.
pub const FLEET_RETRY_AFTER_SECONDS: u64 = 30;

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

    /// Code decides by `ApiError::kind`, never by what the caller is told: outside
    /// tests, no source of this crate or of acs-core reads an error's status or code to branch on it.
    #[test]
    fn nothing_branches_on_an_error_status_or_code() {
        // `<x>.error` compared, or `e.status` of an error (not `row.status` of a record).
        const READS: [&str; 6] =
            [".error == ", ".error != ", ".error.as_str()", "e.status == ", "e.status != ", "e.status {"];
        let reads = |line: &str| {
            READS.iter().any(|r| {
                line.match_indices(r).any(|(at, _)| {
                    r.starts_with('.') || !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
        };
        fn walk(dir: &std::path::Path, reads: &dyn Fn(&str) -> bool, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, reads, found);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                    for (n, line) in code.lines().enumerate() {
                        if reads(line) {
                            found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        // This crate and the domain crate above it (core/src).
        let platform = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for dir in [platform.join("src"), platform.join("../src")] {
            walk(&dir, &reads, &mut found);
        }
        assert!(found.is_empty(), "match on ApiError::kind (or a Refusal) instead:\n{}", found.join("\n"));
    }

    #[test]
    fn refusals_keep_their_kind() {
        let e = ApiError::from(Refusal::Busy(Busy::Prompt));
        assert_eq!((e.status, e.error.as_str()), (StatusCode::CONFLICT, "conversation_busy"));
        assert_eq!(e.refusal(), Some(&Refusal::Busy(Busy::Prompt)));
        let e = ApiError::from(sqlx::Error::PoolTimedOut);
        assert_eq!((e.status, e.error.as_str()), (StatusCode::SERVICE_UNAVAILABLE, "unavailable"));
        assert_eq!(e.refusal(), Some(&Refusal::Unavailable(Unavailable::Database)));
        assert_eq!(ApiError::from(sqlx::Error::RowNotFound).kind, Kind::Other);
        assert_eq!(ApiError::not_found("Agent").kind, Kind::NotFound);
        assert_eq!(ApiError::unauthenticated("api_key_invalid").kind, Kind::Unauthenticated);
        assert_eq!(ApiError::invalid("name", "too long").kind, Kind::Invalid);
        assert_eq!(ApiError::new(StatusCode::CONFLICT, "conversation_busy", "made by hand").kind, Kind::Other);
    }

    #[test]
    fn validation_lists_fields() {
        let b = ApiError::invalid("email", "can't be blank").body();
        assert_eq!(b["error"], "validation_failed");
        assert_eq!(b["errors"]["email"][0], "can't be blank");
    }
}
