//! `POST /api/oauth/token`: the authorization code grant with PKCE (RFC 6749
//! section 4.1.3, RFC 7636 section 4.5). The body is a form, as RFC 6749
//! says, or JSON. Success is OAuthTokenResponse (not wrapped in `{data}`),
//! refusals are RFC 6749 section 5.2 bodies with status 400, and neither
//! may be cached.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::rules;
use crate::audit::{self, Actor};
use crate::auth::{Scope, token};
use crate::db::RowExt;
use crate::http::middleware::ClientIp;
use crate::keys;
use crate::state::AppState;
use crate::time_fmt::now_micros;

/// The token request (RFC 6749 section 4.1.3 with RFC 7636's `code_verifier`).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct OAuthTokenRequest {
    /// `authorization_code`.
    pub grant_type: Option<String>,
    pub code: Option<String>,
    /// Exactly the `redirect_uri` of the authorization request.
    pub redirect_uri: Option<String>,
    pub client_id: Option<String>,
    /// The PKCE verifier whose S256 challenge the authorization request sent.
    pub code_verifier: Option<String>,
}

/// A new API key for the app (spec 2.8).
#[derive(Debug, Serialize, ToSchema)]
pub struct OAuthTokenResponse {
    /// An API key (`acs_...`), full scope, usable as the bearer credential.
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds until the key expires.
    pub expires_in: i64,
}

/// An RFC 6749 section 5.2 error (with `message` as well, as every error body of the API has).
#[derive(Debug, Serialize, ToSchema)]
pub struct OAuthError {
    /// `invalid_request`, `invalid_client`, `invalid_grant` or `unsupported_grant_type`.
    pub error: String,
    pub error_description: String,
    pub message: String,
}

fn no_store(mut res: Response) -> Response {
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res.headers_mut().insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    res
}

/// A refusal of the token endpoint, answered as RFC 6749 section 5.2 says.
struct Refusal {
    status: StatusCode,
    error: &'static str,
    description: String,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = OAuthError {
            error: self.error.into(),
            error_description: self.description.clone(),
            message: self.description,
        };
        no_store((self.status, axum::Json(body)).into_response())
    }
}

fn refuse(status: StatusCode, error: &'static str, description: &str) -> Refusal {
    Refusal { status, error, description: description.into() }
}

fn invalid_request(description: &str) -> Refusal {
    refuse(StatusCode::BAD_REQUEST, "invalid_request", description)
}

/// Reads the body as a form or as JSON, whichever its type says.
fn parse(headers: &HeaderMap, body: &[u8]) -> Result<OAuthTokenRequest, Refusal> {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let essence = ct.split(';').next().unwrap_or("").trim();
    let parsed = match essence {
        "application/x-www-form-urlencoded" => serde_urlencoded::from_bytes(body).map_err(|e| e.to_string()),
        "application/json" => serde_json::from_slice(body).map_err(|e| e.to_string()),
        _ => {
            return Err(refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "invalid_request",
                "Send the body as application/x-www-form-urlencoded or application/json.",
            ));
        }
    };
    parsed.map_err(|e| invalid_request(&format!("The body could not be read: {e}")))
}

/// Exchanges an authorization code and its PKCE verifier for an API key.
#[utoipa::path(post, path = "/api/oauth/token", operation_id = "exchangeOAuthToken", tag = "oauth",
    request_body(content(
        (OAuthTokenRequest = "application/x-www-form-urlencoded"),
        (OAuthTokenRequest = "application/json"))),
    responses((status = 200, description = "A new full-scope API key", body = OAuthTokenResponse),
        (status = 400, description = "RFC 6749 error: `invalid_request`, `invalid_client`, `invalid_grant`, `unsupported_grant_type`", body = OAuthError),
        (status = 415, description = "Neither a form nor JSON", body = OAuthError)))]
pub async fn exchange(
    State(state): State<AppState>,
    axum::Extension(ClientIp(ip)): axum::Extension<ClientIp>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Codes and verifiers are credentials: an address that spent its
    // failed-authentication allowance (on passwords too) is refused first.
    if let Err(refused) = crate::auth::check_failed_auth_allowance(&state, ip) {
        return refused.into_response();
    }
    let req = match parse(&headers, &body) {
        Ok(r) => r,
        Err(refused) => return refused.into_response(),
    };
    match req.grant_type.as_deref() {
        Some("authorization_code") => {}
        Some(_) => {
            return refuse(StatusCode::BAD_REQUEST, "unsupported_grant_type", "grant_type must be authorization_code")
                .into_response();
        }
        None => return invalid_request("grant_type is required").into_response(),
    }
    let (Some(code), Some(redirect_uri), Some(client_id), Some(verifier)) =
        (&req.code, &req.redirect_uri, &req.client_id, &req.code_verifier)
    else {
        return invalid_request("code, redirect_uri, client_id and code_verifier are required").into_response();
    };
    let Some(client) = (match client_id.parse::<Uuid>() {
        Ok(id) => match super::find(&state.db, id).await {
            Ok(c) => c,
            Err(e) => return database(e),
        },
        Err(_) => None,
    }) else {
        state.limiter.failed_auth(ip);
        return refuse(StatusCode::BAD_REQUEST, "invalid_client", "No such client.").into_response();
    };
    match redeem(&state, &client, code, redirect_uri, verifier, ip).await {
        Ok(Ok(res)) => no_store((StatusCode::OK, axum::Json(res)).into_response()),
        Ok(Err(description)) => {
            state.limiter.failed_auth(ip);
            refuse(StatusCode::BAD_REQUEST, "invalid_grant", description).into_response()
        }
        Err(e) => database(e),
    }
}

fn database(e: sqlx::Error) -> Response {
    crate::error::ApiError::from(e).into_response()
}

/// Spends the code and makes the key, in one transaction with its audit row.
/// `Ok(Err(why))` is an `invalid_grant`.
async fn redeem(
    state: &AppState,
    client: &super::OAuthClient,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
    ip: std::net::IpAddr,
) -> Result<Result<OAuthTokenResponse, &'static str>, sqlx::Error> {
    let digest = token::digest(code.trim());
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    let row = sqlx::query(
        "SELECT client_id, account_id, redirect_uri, code_challenge, key_id, used_at, expires_at \
         FROM oauth_codes WHERE code_hash = $1",
    )
    .bind(digest.clone())
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else { return Ok(Err("The code is not valid.")) };
    if row.try_get::<Option<i64>, _>("used_at")?.is_some() {
        // RFC 6749 section 4.1.2: a code used twice may have been stolen, so
        // the key issued from it is revoked too.
        if let Some(key_id) = row.opt_uuid("key_id")? {
            sqlx::query("DELETE FROM api_keys WHERE id = $1").bind(key_id.to_string()).execute(&mut *tx).await?;
            let account_id = row.uuid("account_id")?;
            audit::record(
                &mut *tx,
                &Actor::account(account_id, Some(ip)),
                "oauth.code_replayed",
                Some(("api_key", key_id)),
            )
            .await?;
            tx.commit().await?;
            state.key_cache.remove_where(|k| k.key_id == key_id);
        }
        return Ok(Err("The code was already used; the key issued from it is revoked."));
    }
    if row.try_get::<i64, _>("expires_at")? <= now {
        return Ok(Err("The code expired."));
    }
    if row.uuid("client_id")? != client.id {
        return Ok(Err("The code was issued to another client."));
    }
    if row.try_get::<String, _>("redirect_uri")? != redirect_uri {
        return Ok(Err("redirect_uri differs from the authorization request's."));
    }
    if !rules::verifier_matches(verifier, &row.try_get::<String, _>("code_challenge")?) {
        return Ok(Err("code_verifier does not match the code_challenge."));
    }
    let account_id = row.uuid("account_id")?;
    let ttl = i64::try_from(state.config().oauth.token_ttl_seconds).unwrap_or(i64::MAX);
    let expires_at = OffsetDateTime::now_utc() + time::Duration::seconds(ttl);
    let name: String = client.name.chars().take(keys::MAX_NAME).collect();
    let key = keys::create(&mut *tx, account_id, &name, Scope::Full, Some(expires_at)).await?;
    // Conditional, so two racing exchanges of one code issue one key.
    let spent =
        sqlx::query("UPDATE oauth_codes SET used_at = $1, key_id = $2 WHERE code_hash = $3 AND used_at IS NULL")
            .bind(now)
            .bind(key.key.id.to_string())
            .bind(digest)
            .execute(&mut *tx)
            .await?;
    if spent.rows_affected() == 0 {
        return Ok(Err("The code was already used."));
    }
    audit::record(&mut *tx, &Actor::account(account_id, Some(ip)), "oauth.token_issued", Some(("api_key", key.key.id)))
        .await?;
    tx.commit().await?;
    Ok(Ok(OAuthTokenResponse { access_token: key.api_key, token_type: "Bearer".into(), expires_in: ttl }))
}
