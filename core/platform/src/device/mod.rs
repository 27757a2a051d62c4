//! Device login (RFC 8628; DESIGN 3 and 9.2): a program without a browser
//! (the CLI's `acs login --device`) asks for a device code and a short user
//! code, shows the user code, and polls; the account's owner approves the
//! code at `/device` in a signed-in browser; the next poll receives a new
//! full-scope key. Codes expire after 15 minutes; polls come at most every
//! 5 seconds. Only digests of device codes are stored; a device code is
//! consumed by the poll that receives the key, so a key is issued once.

mod pages;
mod rules;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::audit::{self, Actor};
use crate::auth::{Scope, token};
use crate::db::RowExt;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Validator;
use crate::http::middleware::ClientIp;
use crate::http::{Data, Json, ok};
use crate::keys::{self, CreatedKey};
use crate::state::AppState;
use crate::time_fmt::now_micros;

pub use pages::router as pages;
pub use rules::{EXPIRES_IN_SECONDS, INTERVAL_SECONDS, Poll, Status, normalize_user_code};

/// Key name when the device names none.
const DEFAULT_KEY_NAME: &str = "device login";

/// Every field is optional; an empty body is `{}`.
#[derive(Deserialize, ToSchema)]
pub struct DeviceLoginRequest {
    /// Name of the key the login creates (1 to 200 characters; default `device login`).
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
}

/// RFC 8628 section 3.2: what the device shows and how it polls.
#[derive(Serialize, ToSchema)]
pub struct DeviceAuthorization {
    /// Secret; sent back on every poll, never shown to the person.
    pub device_code: String,
    /// Shown to the person, who enters it at `verification_uri` (`XXXX-XXXX`).
    pub user_code: String,
    pub verification_uri: String,
    /// `verification_uri` with the user code filled in.
    pub verification_uri_complete: String,
    /// Seconds to wait between polls.
    pub interval: u64,
    /// Seconds until the codes expire.
    pub expires_in: u64,
}

#[derive(Deserialize, ToSchema)]
pub struct DeviceTokenRequest {
    pub device_code: String,
}

/// Where the person approves: the configured public address, else the
/// address this request came to.
fn verification_uri(state: &AppState, headers: &HeaderMap) -> String {
    let base = match &state.config().public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => {
            let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
            format!("http://{host}")
        }
    };
    format!("{base}/device")
}

/// Starts a device login: a device code to poll with and a user code to approve.
#[utoipa::path(post, path = "/api/auth/device", operation_id = "startDeviceLogin", tag = "auth",
    request_body = DeviceLoginRequest,
    responses((status = 200, description = "Codes (RFC 8628 device authorization response)", body = DeviceAuthorization)))]
async fn start(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(req): Json<DeviceLoginRequest>,
) -> ApiResult<axum::Json<DeviceAuthorization>> {
    let name = req.name.as_deref().map(str::trim).unwrap_or(DEFAULT_KEY_NAME).to_owned();
    let mut v = Validator::default();
    keys::check_name(&mut v, "name", &name);
    v.finish()?;
    let device_code = token::generate("acsd_");
    let now = now_micros();
    let expires_at = now + EXPIRES_IN_SECONDS as i64 * 1_000_000;
    let mut tx = state.db.begin().await?;
    // Spent and expired logins go whenever one starts (no sweeper needed).
    sqlx::query("DELETE FROM device_logins WHERE expires_at <= $1").bind(now).execute(&mut *tx).await?;
    // A user code is 34 bits; a clash with a live one is rare, and retried.
    let mut user_code = rules::user_code();
    for _ in 0..4 {
        let taken: Option<String> = sqlx::query_scalar("SELECT id FROM device_logins WHERE user_code = $1")
            .bind(user_code.clone())
            .fetch_optional(&mut *tx)
            .await?;
        if taken.is_none() {
            break;
        }
        user_code = rules::user_code();
    }
    sqlx::query(
        "INSERT INTO device_logins (id, device_code_hash, user_code, key_name, status, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(Uuid::now_v7().to_string())
    .bind(token::digest(&device_code))
    .bind(user_code.clone())
    .bind(name)
    .bind(Status::Pending.as_str())
    .bind(expires_at)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    let uri = verification_uri(&state, &headers);
    let complete = format!("{uri}?user_code={user_code}");
    Ok(axum::Json(DeviceAuthorization {
        device_code,
        user_code,
        verification_uri: uri,
        verification_uri_complete: complete,
        interval: INTERVAL_SECONDS,
        expires_in: EXPIRES_IN_SECONDS,
    }))
}

/// Polls a device login; once approved, the first poll receives a new full-scope key.
#[utoipa::path(post, path = "/api/auth/device/token", operation_id = "pollDeviceLogin", tag = "auth",
    request_body = DeviceTokenRequest,
    responses((status = 200, description = "Approved: a new API key, shown once", body = Data<CreatedKey>),
        (status = 400, description = "`invalid_grant`: no such device code", body = crate::error::ErrorBody),
        (status = 403, description = "`access_denied`: the owner denied it", body = crate::error::ErrorBody),
        (status = 410, description = "`expired_token`: expired or already used", body = crate::error::ErrorBody),
        (status = 428, description = "`authorization_pending`: not approved yet", body = crate::error::ErrorBody),
        (status = 429, description = "`slow_down`: polled faster than `interval`", body = crate::error::ErrorBody)))]
async fn poll(
    State(state): State<AppState>,
    axum::Extension(ClientIp(ip)): axum::Extension<ClientIp>,
    Json(req): Json<DeviceTokenRequest>,
) -> ApiResult<Data<CreatedKey>> {
    crate::auth::check_failed_auth_allowance(&state, ip)?;
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    let row = sqlx::query(
        "SELECT id, status, account_id, key_name, last_polled_at, expires_at FROM device_logins WHERE device_code_hash = $1",
    )
    .bind(token::digest(req.device_code.trim()))
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else {
        state.limiter.failed_auth(ip);
        return Err(refusal(Poll::Unknown));
    };
    let id = row.uuid("id")?;
    let status = Status::parse(&row.try_get::<String, _>("status")?).ok_or_else(|| {
        tracing::error!(%id, "device login with an unknown status");
        ApiError::internal()
    })?;
    let outcome = rules::poll(status, row.try_get("last_polled_at")?, row.try_get("expires_at")?, now);
    sqlx::query("UPDATE device_logins SET last_polled_at = $1 WHERE id = $2")
        .bind(now)
        .bind(id.to_string())
        .execute(&mut *tx)
        .await?;
    if outcome != Poll::Issue {
        tx.commit().await?;
        return Err(refusal(outcome));
    }
    let account_id = row.uuid("account_id")?;
    // Consuming first, conditionally, makes two racing polls issue one key.
    let consumed = sqlx::query("UPDATE device_logins SET status = $1 WHERE id = $2 AND status = $3")
        .bind(Status::Consumed.as_str())
        .bind(id.to_string())
        .bind(Status::Approved.as_str())
        .execute(&mut *tx)
        .await?;
    if consumed.rows_affected() == 0 {
        return Err(refusal(Poll::Spent));
    }
    let name: String = row.try_get("key_name")?;
    let key = keys::create(&mut *tx, account_id, &name, Scope::Full, None).await?;
    audit::record(
        &mut *tx,
        &Actor::account(account_id, Some(ip)),
        "account.device_login",
        Some(("api_key", key.key.id)),
    )
    .await?;
    tx.commit().await?;
    Ok(ok(key))
}

fn refusal(outcome: Poll) -> ApiError {
    match outcome {
        Poll::Unknown => ApiError::new(StatusCode::BAD_REQUEST, "invalid_grant", "No such device code."),
        Poll::Pending => ApiError::new(
            StatusCode::PRECONDITION_REQUIRED,
            "authorization_pending",
            "The login waits for approval at the verification address.",
        ),
        Poll::SlowDown => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "slow_down",
            format!("Poll at most every {INTERVAL_SECONDS} seconds."),
        )
        .with("interval", INTERVAL_SECONDS),
        Poll::Denied => ApiError::new(StatusCode::FORBIDDEN, "access_denied", "The account's owner denied this login."),
        Poll::Expired => {
            ApiError::new(StatusCode::GONE, "expired_token", "The device code expired; start a new login.")
        }
        Poll::Spent => {
            ApiError::new(StatusCode::GONE, "expired_token", "The device code was already used; start a new login.")
        }
        Poll::Issue => {
            tracing::error!("an approved device login was treated as a refusal");
            ApiError::internal()
        }
    }
}

/// Public routes of device login.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(start)).routes(routes!(poll))
}
