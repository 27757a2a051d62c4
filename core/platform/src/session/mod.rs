//! The browser session (DESIGN 9.1): a person signs in at `/login` with
//! email and password and gets the `acs_session` cookie (`HttpOnly`,
//! `SameSite=Lax`), which names a row in `browser_sessions`: revocable
//! (sign-out, a password change, account deletion) and expiring
//! (`auth.session_hours`). Only its digest is stored. Every form carries the
//! session's CSRF token; the sign-in form, made before any session exists,
//! carries a token that must equal its own `acs_csrf` cookie.
//!
//! Pages are not API operations and stay out of `/api/docs`. A page reached
//! without a session redirects to `/login?next=<path>`. A full-scope bearer
//! key is a session for that one request (programmatic consent), and then
//! needs no CSRF token: a browser never sends it by itself.

pub mod html;
pub mod pages;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use sqlx::Row;
use uuid::Uuid;

use crate::auth::{self, Scope, lookup, token};
use crate::db::RowExt;
use crate::error::Kind;
use crate::ratelimit::Verdict;
use crate::state::AppState;
use crate::time_fmt::now_micros;

pub use html::{error_page, escape, page};

/// The session cookie's name.
pub const COOKIE: &str = "acs_session";
/// The sign-in form's own CSRF cookie (double submit; no session exists yet).
pub const LOGIN_CSRF_COOKIE: &str = "acs_csrf";

/// The person behind a page request.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub account_id: Uuid,
    /// The token every form of this session carries (empty for a key).
    pub csrf: String,
    /// Signed in by a full-scope bearer key for this request only.
    pub via_key: bool,
    /// The session row (none for a key).
    pub session_id: Option<Uuid>,
    /// The key that signed in for this request (none for a session).
    pub key_id: Option<Uuid>,
}

impl Viewer {
    /// Whether the credential behind this viewer still stands: the session
    /// not ended or expired, the key not revoked. Long-lived pages (a live
    /// stream) ask again from time to time.
    pub async fn stands(&self, state: &AppState) -> Result<bool, sqlx::Error> {
        if let Some(key) = self.key_id {
            return lookup::stands(&state.db, key).await;
        }
        let Some(id) = self.session_id else { return Ok(false) };
        let live: Option<String> =
            sqlx::query_scalar("SELECT id FROM browser_sessions WHERE id = $1 AND expires_at > $2")
                .bind(id.to_string())
                .bind(now_micros())
                .fetch_optional(&state.db.pool)
                .await?;
        Ok(live.is_some())
    }

    /// The caller the console's in-process API requests act as: the session,
    /// with the account owner's full scope, or the key that signed in.
    pub fn principal(&self, ip: std::net::IpAddr) -> crate::auth::Principal {
        use crate::auth::{Principal, Via};
        let (key_id, via) = match (self.key_id, self.session_id) {
            (Some(k), _) => (k, Via::Key),
            (None, Some(s)) => (s, Via::BrowserSession),
            (None, None) => (Uuid::nil(), Via::BrowserSession),
        };
        Principal { account_id: self.account_id, key_id, via, scope: Scope::Full, sandbox_id: None, ip }
    }
}

/// A form whose CSRF token is not its session's: answered with a 403 page.
#[derive(Debug)]
pub struct CsrfRefused;

impl IntoResponse for CsrfRefused {
    fn into_response(self) -> Response {
        csrf_refused()
    }
}

/// Refuses a form whose CSRF token is not the session's.
pub fn check_csrf(viewer: &Viewer, given: &str) -> Result<(), CsrfRefused> {
    if viewer.via_key || same_secret(&viewer.csrf, given) { Ok(()) } else { Err(CsrfRefused) }
}

pub(crate) fn csrf_refused() -> Response {
    error_page(
        StatusCode::FORBIDDEN,
        "Form expired",
        "This form is out of date. Go back, reload the page and try again.",
    )
}

/// Compares two secrets in time independent of where they differ.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    !a.is_empty() && token::digest(a) == token::digest(b)
}

/// The value of cookie `name`, from every `Cookie` header.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// A `Set-Cookie` value: `HttpOnly`, `SameSite=Lax`, whole site, `Secure`
/// when the instance is served over https. `max_age` 0 deletes it.
pub(crate) fn set_cookie(state: &AppState, name: &str, value: &str, max_age: u64) -> HeaderValue {
    let secure = state.config().public_url.as_deref().is_some_and(|u| u.starts_with("https://"));
    let v = format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{}",
        if secure { "; Secure" } else { "" }
    );
    HeaderValue::from_str(&v).expect("cookie values are printable ASCII")
}

/// Whether `next` stays on this site: an absolute path, never `//host` or
/// `/\host` (which browsers read as another origin), no control characters.
pub fn same_site_path(next: &str) -> bool {
    next.starts_with('/')
        && !next.starts_with("//")
        && !next.starts_with("/\\")
        && !next.chars().any(|c| c.is_control() || c == '\\')
}

/// Where a page without a session sends its visitor.
pub fn to_login(path_and_query: &str) -> Response {
    let next = if same_site_path(path_and_query) { path_and_query } else { "/" };
    let q: String = form_urlencoded::Serializer::new(String::new()).append_pair("next", next).finish();
    Redirect::to(&format!("/login?{q}")).into_response()
}

/// Starts a session for `account_id`; returns the cookie value.
pub(crate) async fn start(state: &AppState, account_id: Uuid, ip: &str) -> Result<String, sqlx::Error> {
    let secret = token::generate("acss_");
    let now = now_micros();
    let hours = i64::try_from(state.config().auth.session_hours).unwrap_or(i64::MAX / 3_600_000_000);
    let mut tx = state.db.begin().await?;
    // Expired sessions go whenever one starts: the index makes it cheap and
    // no sweeper is needed.
    sqlx::query("DELETE FROM browser_sessions WHERE expires_at <= $1").bind(now).execute(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO browser_sessions (id, token_hash, account_id, csrf, ip, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(Uuid::now_v7().to_string())
    .bind(token::digest(&secret))
    .bind(account_id.to_string())
    .bind(token::generate(""))
    .bind(ip.to_owned())
    .bind(now)
    .bind(now + hours * 3_600_000_000)
    .execute(&mut *tx)
    .await?;
    crate::audit::record(
        &mut *tx,
        &crate::audit::Actor::account(account_id, ip.parse().ok()),
        "account.session_started",
        Some(("account", account_id)),
    )
    .await?;
    tx.commit().await?;
    Ok(secret)
}

/// The live session a cookie names.
async fn by_cookie(state: &AppState, secret: &str) -> Result<Option<Viewer>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT s.id, s.account_id, s.csrf FROM browser_sessions s WHERE s.token_hash = $1 AND s.expires_at > $2 \
         AND NOT EXISTS (SELECT 1 FROM account_suspensions x WHERE x.account_id = s.account_id)",
    )
    .bind(token::digest(secret))
    .bind(now_micros())
    .fetch_optional(&state.db.pool)
    .await?;
    row.map(|r| {
        Ok(Viewer {
            account_id: r.uuid("account_id")?,
            csrf: r.try_get("csrf")?,
            via_key: false,
            session_id: Some(r.uuid("id")?),
            key_id: None,
        })
    })
    .transpose()
}

/// Ends a session (sign-out).
pub(crate) async fn end(state: &AppState, viewer: &Viewer) -> Result<(), sqlx::Error> {
    let Some(id) = viewer.session_id else { return Ok(()) };
    let mut tx = state.db.begin().await?;
    sqlx::query("DELETE FROM browser_sessions WHERE id = $1").bind(id.to_string()).execute(&mut *tx).await?;
    crate::audit::record(
        &mut *tx,
        &crate::audit::Actor::account(viewer.account_id, None),
        "account.session_ended",
        Some(("account", viewer.account_id)),
    )
    .await?;
    tx.commit().await
}

/// The viewer of a request: a bearer key first (it was sent on purpose),
/// then the cookie. `Ok(None)`: nobody is signed in. `Err`: a page that
/// refuses (a key that is invalid, not full scope, or over its limit).
pub async fn viewer(state: &AppState, headers: &HeaderMap, ip: std::net::IpAddr) -> Result<Option<Viewer>, Response> {
    if let Some(secret) = auth::bearer(headers) {
        return match lookup::authenticate(state, secret).await {
            Ok(key) if key.scope != Scope::Full => Err(error_page(
                StatusCode::FORBIDDEN,
                "Not allowed",
                "Pages need a full-scope key or a signed-in browser.",
            )),
            Ok(key) => match state.limiter.key(key.key_id) {
                Verdict::Deny { .. } => {
                    Err(error_page(StatusCode::TOO_MANY_REQUESTS, "Slow down", "Too many requests; try again soon."))
                }
                Verdict::Allow => Ok(Some(Viewer {
                    account_id: key.account_id,
                    csrf: String::new(),
                    via_key: true,
                    session_id: None,
                    key_id: Some(key.key_id),
                })),
            },
            Err(e) if e.kind == Kind::Unauthenticated => {
                state.limiter.failed_auth(ip);
                Err(error_page(StatusCode::UNAUTHORIZED, "Not signed in", "The key is not valid."))
            }
            Err(_) => Err(unavailable()),
        };
    }
    match cookie(headers, COOKIE) {
        None => Ok(None),
        Some(secret) => by_cookie(state, secret).await.map_err(|e| {
            tracing::error!(error = %e, "reading a browser session");
            unavailable()
        }),
    }
}

pub(crate) fn unavailable() -> Response {
    error_page(StatusCode::SERVICE_UNAVAILABLE, "Try again", "The service could not answer just now; try again.")
}

/// Route layer of pages (an extension's `Access::Session` group): a viewer
/// or a redirect to the sign-in page.
pub async fn require(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let ip = auth::request_ip(&req);
    match viewer(&state, req.headers(), ip).await {
        Ok(Some(v)) => {
            req.extensions_mut().insert(v);
            html::with_page_headers(next.run(req).await)
        }
        Ok(None) => to_login(req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/")),
        Err(page) => page,
    }
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        if let Some(v) = parts.extensions.get::<Viewer>() {
            return Ok(v.clone());
        }
        let ip = parts.extensions.get::<crate::http::middleware::ClientIp>().map(|c| c.0);
        let ip = ip.unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
        match viewer(state, &parts.headers, ip).await? {
            Some(v) => {
                parts.extensions.insert(v.clone());
                Ok(v)
            }
            None => Err(to_login(parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_on_site() {
        for ok in ["/", "/agents", "/oauth/authorize?client_id=x&state=y", "/device?user_code=ABCD-EFGH"] {
            assert!(same_site_path(ok), "{ok}");
        }
        for no in ["", "https://evil.example", "//evil.example", "/\\evil.example", "/a\\b", "/a\nb", "evil"] {
            assert!(!same_site_path(no), "{no}");
        }
    }

    #[test]
    fn cookies_are_found_among_others() {
        let mut h = HeaderMap::new();
        h.append(header::COOKIE, HeaderValue::from_static("a=1; acs_session=acss_x"));
        h.append(header::COOKIE, HeaderValue::from_static("acs_csrf=t"));
        assert_eq!(cookie(&h, COOKIE), Some("acss_x"));
        assert_eq!(cookie(&h, LOGIN_CSRF_COOKIE), Some("t"));
        assert_eq!(cookie(&h, "missing"), None);
    }

    #[test]
    fn csrf_needs_the_sessions_token_unless_a_key_signed_in() {
        let v = Viewer { account_id: Uuid::nil(), csrf: "abc".into(), via_key: false, session_id: None, key_id: None };
        assert!(check_csrf(&v, "abc").is_ok());
        assert!(check_csrf(&v, "abd").is_err());
        assert!(check_csrf(&v, "").is_err());
        let k = Viewer { csrf: String::new(), via_key: true, ..v };
        assert!(check_csrf(&k, "").is_ok());
    }
}
