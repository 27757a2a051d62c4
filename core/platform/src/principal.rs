//! Who is calling: key scopes, the authenticated principal, and what the
//! caches keep of keys and accounts. Plain types, below the server state
//! and every module that authenticates (docs/architecture.md).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};

/// Key scopes: `full` may do everything the account may; `restricted` is
/// refused on administrative routes (key management, credentials, ...);
/// `sandbox` is a machine's callback key: restricted, and it acts only for
/// its own machine and conversations. Sandbox keys are minted by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Full,
    Restricted,
    Sandbox,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Full => "full",
            Scope::Restricted => "restricted",
            Scope::Sandbox => "sandbox",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "full" => Some(Scope::Full),
            "restricted" => Some(Scope::Restricted),
            "sandbox" => Some(Scope::Sandbox),
            _ => None,
        }
    }
}

/// The authenticated caller, placed in request extensions by [`authenticate`].
#[derive(Debug, Clone)]
pub struct Principal {
    pub account_id: Uuid,
    /// The key's id, or the browser session's for a console page (`via`).
    pub key_id: Uuid,
    pub via: Via,
    pub scope: Scope,
    /// Set for a sandbox callback key: the one machine it may act for.
    pub sandbox_id: Option<Uuid>,
    pub ip: IpAddr,
}

/// The credential behind a [`Principal`]: an API key, or a signed-in
/// browser whose console page calls the API in process (`console::api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Key,
    BrowserSession,
}

impl Principal {
    pub fn require_full(&self) -> ApiResult<()> {
        if self.scope == Scope::Full { Ok(()) } else { Err(ApiError::insufficient_scope()) }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts.extensions.get::<Principal>().cloned().ok_or_else(|| ApiError::unauthenticated("api_key_invalid"))
    }
}

/// An operator of the deployment, placed in request extensions on
/// `Access::Operator` routes: an operator key (it is no account), or the
/// full-scope key of an account the operators' extension names one.
#[derive(Debug, Clone)]
pub struct Operator {
    /// The operator key's id, or the operator account's.
    pub id: Uuid,
    /// The key's name, or the account's email.
    pub name: String,
    pub via: OperatorVia,
    pub ip: IpAddr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatorVia {
    /// An operator key (`acs admin key create`).
    Key,
    /// An account's full-scope key; the account.
    Account(Uuid),
}

impl<S: Send + Sync> FromRequestParts<S> for Operator {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts.extensions.get::<Operator>().cloned().ok_or_else(ApiError::insufficient_scope)
    }
}

/// A key resolved from the database, as the key cache keeps it.
#[derive(Debug, Clone)]
pub struct ResolvedKey {
    pub account_id: Uuid,
    pub key_id: Uuid,
    pub scope: Scope,
    pub sandbox_id: Option<Uuid>,
    pub expires_at: Option<i64>,
    /// The account is suspended by an operator: the key is refused.
    pub suspended: bool,
}

/// What `GET /api/auth/me` shows of an account, as the account cache keeps it.
#[derive(Debug, Clone)]
pub struct Identity {
    /// None for a claimable principal (docs/claimable.md).
    pub email: Option<String>,
    pub email_verified: bool,
    pub pending_email: Option<String>,
    pub created_at: i64,
}
