//! Authentication: API keys (bearer), passwords, and the caller's identity.

pub mod lookup;
pub mod password;
pub mod token;

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ApiResult, Kind};
use crate::http::middleware::ClientIp;
pub use crate::principal::{Operator, OperatorVia, Principal, Scope, Via};
use crate::ratelimit::Verdict;
use crate::state::AppState;

/// The bearer token of a request, if it has a well-formed one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

pub fn request_ip(req: &Request) -> IpAddr {
    req.extensions().get::<ClientIp>().map(|c| c.0).unwrap_or(IpAddr::from([127, 0, 0, 1]))
}

/// Requires a valid key; counts per-key and failed-authentication limits.
/// A sandbox's callback key passes only on the core paths it may use.
pub async fn authenticate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    admit(&state, req, next, sandbox_key_may).await
}

/// [`authenticate`] for routes of account keys only (an extension's
/// `Access::Account` group): a sandbox's callback key is refused.
pub async fn authenticate_account(State(state): State<AppState>, req: Request, next: Next) -> Response {
    admit(&state, req, next, |_| false).await
}

/// [`authenticate`] for routes sandbox keys may call too (an extension's
/// `Access::Sandbox` group); the handler checks which machine the key is for.
pub async fn authenticate_sandbox(State(state): State<AppState>, req: Request, next: Next) -> Response {
    admit(&state, req, next, |_| true).await
}

/// Refuses an account an operator suspended (403 `account_suspended`):
/// sign-in, and every start of a machine or a turn (`credits::gate`).
pub async fn check_active(state: &AppState, account_id: uuid::Uuid) -> ApiResult<()> {
    let suspended: Option<i64> =
        sqlx::query_scalar("SELECT suspended_at FROM account_suspensions WHERE account_id = $1")
            .bind(account_id.to_string())
            .fetch_optional(&state.db.pool)
            .await?;
    match suspended {
        Some(_) => Err(ApiError::account_suspended()),
        None => Ok(()),
    }
}

/// Who is an operator, decided by the extension that defines operators
/// (admin) and put in the state's slots by its `init`: from the bearer
/// token and the caller's address, the operator, or the refusal (401 for a
/// token that is nobody's, 403 `insufficient_scope` for a key that is not
/// an operator's).
pub struct OperatorGate(
    pub for<'a> fn(&'a AppState, &'a str, IpAddr) -> crate::boxed::BoxFuture<'a, ApiResult<Operator>>,
);

/// Requires an operator (`Access::Operator` routes). Without a gate (no
/// extension defines operators, or its flag is off) nobody is one.
pub async fn authenticate_operator(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let ip = request_ip(&req);
    let Some(token) = bearer(req.headers()).map(str::to_owned) else {
        return ApiError::unauthenticated("api_key_invalid").into_response();
    };
    let Some(gate) = state.get::<OperatorGate>() else {
        return ApiError::insufficient_scope().into_response();
    };
    match (gate.0)(&state, &token, ip).await {
        Ok(operator) => {
            if let Verdict::Deny { retry_after } = state.limiter.key(operator.id) {
                return ApiError::rate_limited(retry_after).into_response();
            }
            req.extensions_mut().insert(operator);
            next.run(req).await
        }
        Err(e) if e.kind == Kind::Unauthenticated => match state.limiter.failed_auth(ip) {
            Verdict::Deny { retry_after } => ApiError::rate_limited(retry_after).into_response(),
            Verdict::Allow => e.into_response(),
        },
        Err(e) => e.into_response(),
    }
}

/// The caller of an API request made in process by a console page
/// (`console::api`): a request extension, which no client can set, takes the
/// place of the bearer key and passes the same per-credential limit.
#[derive(Debug, Clone)]
pub struct InProcess(pub Principal);

async fn admit(state: &AppState, mut req: Request, next: Next, sandbox_may: fn(&str) -> bool) -> Response {
    if let Some(InProcess(p)) = req.extensions().get::<InProcess>().cloned() {
        if let Verdict::Deny { retry_after } = state.limiter.key(p.key_id) {
            return ApiError::rate_limited(retry_after).into_response();
        }
        req.extensions_mut().insert(p);
        return next.run(req).await;
    }
    let ip = request_ip(&req);
    let outcome = match bearer(req.headers()) {
        None => Err(ApiError::unauthenticated("api_key_invalid")),
        Some(token) => lookup::authenticate(state, token).await,
    };
    match outcome {
        Ok(key) => {
            if let Verdict::Deny { retry_after } = state.limiter.key(key.key_id) {
                return ApiError::rate_limited(retry_after).into_response();
            }
            if key.scope == Scope::Sandbox && !sandbox_may(req.uri().path()) {
                return ApiError::insufficient_scope().into_response();
            }
            req.extensions_mut().insert(Principal {
                account_id: key.account_id,
                key_id: key.key_id,
                via: crate::principal::Via::Key,
                scope: key.scope,
                sandbox_id: key.sandbox_id,
                ip,
            });
            next.run(req).await
        }
        Err(e) if e.kind == Kind::Unauthenticated => match state.limiter.failed_auth(ip) {
            Verdict::Deny { retry_after } => ApiError::rate_limited(retry_after).into_response(),
            Verdict::Allow => e.into_response(),
        },
        Err(e) => e.into_response(),
    }
}

/// A sandbox's callback key acts only for its own machine and
/// conversations (each handler then checks which ones), and may message a
/// teammate (labelling only its own conversation, spec 4.1): every other
/// route refuses it.
pub fn sandbox_key_may(path: &str) -> bool {
    const OPEN: &[&str] = &["/api/sandboxes", "/api/conversations", "/api/events/stream"];
    let team_message = path
        .strip_prefix("/api/team/")
        .and_then(|rest| rest.strip_suffix("/messages"))
        .is_some_and(|agent| !agent.is_empty() && !agent.contains('/'));
    path == "/api/auth/me"
        || path == "/api/catalog"
        || team_message
        || OPEN.iter().any(|p| path == *p || path.strip_prefix(p).is_some_and(|rest| rest.starts_with('/')))
}

/// Refuses a caller whose address spent its failed-authentication allowance,
/// for public routes that check credentials themselves (login).
pub fn check_failed_auth_allowance(state: &AppState, ip: IpAddr) -> ApiResult<()> {
    match state.limiter.failed_auth_spent(ip) {
        Verdict::Deny { retry_after } => Err(ApiError::rate_limited(retry_after)),
        Verdict::Allow => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::sandbox_key_may;

    #[test]
    fn a_sandbox_key_reaches_only_machine_and_conversation_routes() {
        for ok in [
            "/api/sandboxes",
            "/api/sandboxes/x/files",
            "/api/conversations/x/labels",
            "/api/auth/me",
            "/api/team/x/messages",
        ] {
            assert!(sandbox_key_may(ok), "{ok}");
        }
        for no in [
            "/api/agents",
            "/api/keys",
            "/api/sandboxesx",
            "/api/environments/x",
            "/api/account/password",
            "/api/team",
            "/api/team/x",
            "/api/team/x/schedules",
            "/api/team//messages",
            "/api/team/x/y/messages",
        ] {
            assert!(!sandbox_key_may(no), "{no}");
        }
    }
}
