//! The account's lifecycle (DESIGN 9.3; docs/accounts.md, "Lifecycle"):
//! deletion, exports, onboarding and the avatar. Here in acs-core, not with
//! the identity in acs-platform, because deletion destroys machines and an
//! export reads every domain table.

pub mod avatar;
pub mod delete;
pub mod export;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::http::Json;
use crate::http::extract::parse_json;
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

pub use avatar::{AvatarRequest, ImageBytes};
pub use delete::delete_account;

/// Deletes the account for good.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AccountDeleteRequest {
    /// The account's own email address, exactly.
    pub confirm: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Onboarding {
    pub completed: bool,
    #[serde(with = "time::serde::rfc3339::option")]
    pub completed_at: Option<OffsetDateTime>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OnboardingResponse {
    pub data: Onboarding,
}

/// Deletes the account and everything in it: machines destroyed, keys revoked, every record
/// removed; a confirmation email is sent. Full-scope key.
#[utoipa::path(delete, path = "/api/account", operation_id = "deleteAccount", tag = "account",
    request_body = AccountDeleteRequest,
    responses((status = 204, description = "Deleted"),
        (status = 422, description = "`validation_failed` on `confirm`: not the account's email address", body = crate::error::ErrorBody)))]
async fn delete_account_route(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<AccountDeleteRequest>,
) -> ApiResult<StatusCode> {
    p.require_full()?;
    let email: Option<String> = sqlx::query_scalar("SELECT email FROM accounts WHERE id = $1")
        .bind(p.account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?
        .ok_or_else(|| ApiError::unauthenticated("api_key_invalid"))?;
    if !delete::confirm_matches(email.as_deref().unwrap_or(""), &req.confirm) {
        return Err(ApiError::invalid("confirm", "must be the account's email address, exactly"));
    }
    delete_account(&state, p.account_id).await.map_err(|e| {
        // Begun deletions are finished by the worker (`delete::finish_stale`).
        tracing::error!(account = %p.account_id, "account deletion: {e}");
        ApiError::internal()
    })?;
    Ok(StatusCode::NO_CONTENT)
}

async fn onboarding_of(state: &AppState, p: &Principal) -> ApiResult<OnboardingResponse> {
    let at: Option<i64> = sqlx::query_scalar("SELECT onboarding_completed_at FROM accounts WHERE id = $1")
        .bind(p.account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?
        .ok_or_else(|| ApiError::unauthenticated("api_key_invalid"))?;
    Ok(OnboardingResponse { data: Onboarding { completed: at.is_some(), completed_at: at.map(from_micros) } })
}

/// Whether the account finished onboarding.
#[utoipa::path(get, path = "/api/account/onboarding", operation_id = "getOnboarding", tag = "account",
    responses((status = 200, description = "Onboarding state", body = OnboardingResponse)))]
async fn get_onboarding(State(state): State<AppState>, p: Principal) -> ApiResult<axum::Json<OnboardingResponse>> {
    Ok(axum::Json(onboarding_of(&state, &p).await?))
}

/// Marks onboarding completed (again is harmless: the first time is kept).
#[utoipa::path(post, path = "/api/account/onboarding", operation_id = "completeOnboarding", tag = "account",
    responses((status = 200, description = "Onboarding state", body = OnboardingResponse)))]
async fn complete_onboarding(State(state): State<AppState>, p: Principal) -> ApiResult<axum::Json<OnboardingResponse>> {
    let mut tx = state.db.begin().await?;
    let first = sqlx::query(
        "UPDATE accounts SET onboarding_completed_at = $1, updated_at = $1 \
         WHERE id = $2 AND onboarding_completed_at IS NULL",
    )
    .bind(now_micros())
    .bind(p.account_id.to_string())
    .execute(&mut *tx)
    .await?;
    if first.rows_affected() == 1 {
        audit::record(&mut *tx, &Actor::key(&p), "account.onboarding_completed", Some(("account", p.account_id)))
            .await?;
    }
    tx.commit().await?;
    Ok(axum::Json(onboarding_of(&state, &p).await?))
}

/// Sets the avatar: JSON AvatarRequest, or the image itself with its image content type
/// (png, jpeg, gif or webp; 1 byte to 10 MB).
#[utoipa::path(put, path = "/api/account/avatar", operation_id = "putAvatar", tag = "account",
    request_body(content(
        (AvatarRequest = "application/json"),
        (ImageBytes = "image/png"), (ImageBytes = "image/jpeg"), (ImageBytes = "image/gif"), (ImageBytes = "image/webp"))),
    responses((status = 204, description = "Set"),
        (status = 415, description = "`unsupported_media_type`: neither JSON nor an image", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed` on `data` (empty, over 10 MB, not base64) or `media_type`", body = crate::error::ErrorBody)))]
async fn put_avatar(
    State(state): State<AppState>,
    p: Principal,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<StatusCode> {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(avatar::essence).unwrap_or_default();
    let image = if ct == "application/json" || ct.ends_with("+json") {
        avatar::from_json(parse_json(&body)?)?
    } else {
        avatar::from_raw(&ct, body.to_vec())?
    };
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    sqlx::query(
        "INSERT INTO account_avatars (account_id, media_type, data, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (account_id) DO UPDATE SET media_type = excluded.media_type, data = excluded.data, \
         updated_at = excluded.updated_at",
    )
    .bind(p.account_id.to_string())
    .bind(image.media_type)
    .bind(image.data)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    audit::record(&mut *tx, &Actor::key(&p), "account.avatar_set", Some(("account", p.account_id))).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The avatar image, with its content type.
#[utoipa::path(get, path = "/api/account/avatar", operation_id = "getAvatar", tag = "account",
    responses((status = 200, description = "The image", content(
            (ImageBytes = "image/png"), (ImageBytes = "image/jpeg"), (ImageBytes = "image/gif"), (ImageBytes = "image/webp"))),
        (status = 404, description = "No avatar", body = crate::error::ErrorBody)))]
async fn get_avatar(State(state): State<AppState>, p: Principal) -> ApiResult<Response> {
    let row = sqlx::query("SELECT media_type, data FROM account_avatars WHERE account_id = $1")
        .bind(p.account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?
        .ok_or_else(|| ApiError::not_found("Avatar"))?;
    let media_type: String = row.try_get("media_type")?;
    let data: Vec<u8> = row.try_get("data")?;
    let mut res = data.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&media_type).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    // Never sniffed as another type; the key, not a cookie, is what reads it.
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
    Ok(res)
}

/// Removes the avatar.
#[utoipa::path(delete, path = "/api/account/avatar", operation_id = "deleteAvatar", tag = "account",
    responses((status = 204, description = "Removed (or there was none)")))]
async fn delete_avatar(State(state): State<AppState>, p: Principal) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    let gone = sqlx::query("DELETE FROM account_avatars WHERE account_id = $1")
        .bind(p.account_id.to_string())
        .execute(&mut *tx)
        .await?;
    if gone.rows_affected() > 0 {
        audit::record(&mut *tx, &Actor::key(&p), "account.avatar_removed", Some(("account", p.account_id))).await?;
    }
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(delete_account_route))
        .routes(routes!(get_onboarding, complete_onboarding))
        .routes(routes!(put_avatar, get_avatar, delete_avatar))
        .merge(export::router())
}

/// The background worker: exports, their sweep, and deletions cut short.
pub async fn worker(state: AppState) {
    export::worker(state).await
}
