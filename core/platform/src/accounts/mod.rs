//! Accounts: registration, password sign-in (which issues a key), email
//! verification by emailed token, identity, password and email change.

mod rules;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::audit::{self, Actor};
use crate::auth::{self, Principal, Scope, password, token};
use crate::db::{RowExt, is_unique_violation};
use crate::error::{ApiError, ApiResult};
use crate::extension::Answer;
use crate::http::extract::Validator;
use crate::http::middleware::ClientIp;
use crate::http::{Data, Json, created, ok};
use crate::keys::{self, CreatedKey};
use crate::mail::Mail;
use crate::principal::Identity;
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

pub use rules::{normalize_email, valid_email};

/// How long an emailed verification token stays good.
const TOKEN_TTL_MICROS: i64 = 24 * 3600 * 1_000_000;

#[derive(Deserialize, ToSchema)]
pub struct RegisterRequest {
    pub email: String,
    /// 8 to 256 characters.
    #[schema(min_length = 8, max_length = 256)]
    pub password: String,
    /// Required only when the operator configured one; otherwise ignored.
    pub access_code: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Registered {
    pub user_id: Uuid,
    pub email: String,
    pub email_verified: bool,
}

#[derive(Deserialize, ToSchema)]
pub struct LoginRequest {
    pub email: String,
    pub password: String,
    /// Name of the key this sign-in creates (default `login`).
    pub key_name: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub struct VerifyEmailRequest {
    pub token: String,
}

#[derive(Serialize, ToSchema)]
pub struct VerifyEmailResponse {
    pub user_id: Uuid,
    pub email_verified: bool,
    pub message: String,
}

#[derive(Serialize, ToSchema)]
pub struct MeKey {
    pub id: Uuid,
    pub scope: Scope,
}

/// The caller's identity.
#[derive(Serialize, ToSchema)]
pub struct Me {
    pub user_id: Uuid,
    /// Null for a claimable principal, an account without email or password (docs/claimable.md).
    pub email: Option<String>,
    pub email_verified: bool,
    /// An email address waiting for verification before it replaces `email`.
    pub pending_email: Option<String>,
    /// The key this request used.
    pub key: MeKey,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    /// The account's sandboxes egress through the broker (`features.brokerage`).
    pub brokered: bool,
    /// Fields extensions add (`Extension::me_fields`); documented by the host.
    #[serde(flatten)]
    #[schema(ignore)]
    pub extensions: serde_json::Map<String, serde_json::Value>,
}

#[derive(Deserialize, ToSchema)]
pub struct PasswordChangeRequest {
    pub current_password: String,
    pub new_password: String,
}

#[derive(Deserialize, ToSchema)]
pub struct EmailChangeRequest {
    pub new_email: String,
    pub current_password: String,
}

#[derive(Serialize, ToSchema)]
pub struct EmailChangePending {
    pub email: String,
    pub pending_email: String,
    pub message: String,
}

#[derive(Serialize, ToSchema)]
pub struct Message {
    pub message: String,
}

/// `email` and `password_hash` are absent for a claimable principal (docs/claimable.md).
struct AccountRow {
    id: Uuid,
    email: Option<String>,
    password_hash: Option<String>,
    email_verified: bool,
    pending_email: Option<String>,
    created_at: i64,
}

async fn find_account(state: &AppState, by: &str, value: &str) -> Result<Option<AccountRow>, sqlx::Error> {
    let sql = match by {
        "email" => {
            "SELECT id, email, password_hash, email_verified, pending_email, created_at FROM accounts WHERE email = $1"
        }
        _ => "SELECT id, email, password_hash, email_verified, pending_email, created_at FROM accounts WHERE id = $1",
    };
    let row = sqlx::query(sql).bind(value.to_owned()).fetch_optional(&state.db.pool).await?;
    row.map(|r| {
        Ok(AccountRow {
            id: r.uuid("id")?,
            email: r.try_get("email")?,
            password_hash: r.try_get("password_hash")?,
            email_verified: r.flag("email_verified")?,
            pending_email: r.try_get("pending_email")?,
            created_at: r.try_get("created_at")?,
        })
    })
    .transpose()
}

async fn account(state: &AppState, id: Uuid) -> ApiResult<AccountRow> {
    find_account(state, "id", &id.to_string()).await?.ok_or_else(|| ApiError::unauthenticated("api_key_invalid"))
}

/// Stores a verification token for `email` and mails it.
async fn send_verification(state: &AppState, account_id: Uuid, email: &str) -> Result<(), sqlx::Error> {
    let secret = token::generate("acsv_");
    let now = now_micros();
    sqlx::query(
        "INSERT INTO email_tokens (token_hash, account_id, email, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token::digest(&secret))
    .bind(account_id.to_string())
    .bind(email.to_owned())
    .bind(now + TOKEN_TTL_MICROS)
    .bind(now)
    .execute(&state.db.pool)
    .await?;
    let base = state.config().public_url.clone().unwrap_or_else(|| format!("http://{}", state.config().listen));
    state.mailer.send(Mail {
        to: email.to_owned(),
        subject: "Verify your email address for acs".into(),
        body: format!(
            "Your verification token is:\n\n{secret}\n\nSend it as {{\"token\": \"...\"}} to POST {base}/api/auth/verify-email.\nIt expires in 24 hours.\n"
        ),
    });
    Ok(())
}

/// Registers an account; a verification token is emailed.
#[utoipa::path(post, path = "/api/auth/register", operation_id = "register", tag = "auth", request_body = RegisterRequest,
    responses((status = 201, description = "Registered", body = Data<Registered>)))]
async fn register(
    State(state): State<AppState>,
    axum::Extension(ClientIp(ip)): axum::Extension<ClientIp>,
    Json(req): Json<RegisterRequest>,
) -> ApiResult<(StatusCode, Data<Registered>)> {
    let email = normalize_email(&req.email);
    let mut v = Validator::default();
    rules::check_email(&mut v, "email", &email);
    rules::check_password(&mut v, "password", &req.password);
    if let Some(code) = &state.config().auth.access_code {
        let given = req.access_code.as_deref().unwrap_or("");
        // Comparing digests keeps the comparison's time independent of the code.
        v.check(token::digest(given) == token::digest(code), "access_code", "is invalid");
    }
    v.finish()?;
    let hash = password::hash(req.password).await;
    let id = Uuid::now_v7();
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO accounts (id, email, password_hash, email_verified, created_at, updated_at) VALUES ($1, $2, $3, 0, $4, $4)",
    )
    .bind(id.to_string())
    .bind(email.clone())
    .bind(hash)
    .bind(now)
    .execute(&mut *tx)
    .await;
    match inserted {
        Err(e) if is_unique_violation(&e) => return Err(ApiError::invalid("email", "has already been taken")),
        other => other?,
    };
    audit::record(&mut *tx, &Actor::account(id, Some(ip)), "account.registered", Some(("account", id))).await?;
    crate::credits::initial_grant(&state, &mut tx, id).await?;
    tx.commit().await?;
    send_verification(&state, id, &email).await?;
    Ok(created(Registered { user_id: id, email, email_verified: false }))
}

/// What the layer above does when an operator suspends an account (its
/// running turns are interrupted); the server assembly puts it in the
/// state's slots, the extension that suspends calls it.
pub struct OnSuspended(pub for<'a> fn(&'a AppState, Uuid) -> crate::boxed::BoxFuture<'a, ()>);

/// The account an email and password sign in to. A wrong pair costs the
/// same time as a right one, whether or not the email exists.
pub async fn sign_in(state: &AppState, email: &str, given: String) -> Result<Option<Uuid>, sqlx::Error> {
    let found = find_account(state, "email", &normalize_email(email)).await?;
    let (account_id, stored) = match &found {
        // A principal has no password: nothing signs in to it (nor can its NULL email be found).
        Some(a) => (Some(a.id), a.password_hash.clone()),
        None => (None, None),
    };
    let good = password::verify(given, stored).await;
    Ok(account_id.filter(|_| good))
}

/// Signs in with email and password; creates and returns a full-scope key.
#[utoipa::path(post, path = "/api/auth/login", operation_id = "login", tag = "auth", request_body = LoginRequest,
    responses((status = 201, description = "A new API key, shown once", body = Data<CreatedKey>),
        (status = 401, description = "Wrong email or password", body = crate::error::ErrorBody)))]
async fn login(
    State(state): State<AppState>,
    axum::Extension(ClientIp(ip)): axum::Extension<ClientIp>,
    Json(req): Json<LoginRequest>,
) -> ApiResult<(StatusCode, Data<CreatedKey>)> {
    auth::check_failed_auth_allowance(&state, ip)?;
    let key_name = req.key_name.as_deref().unwrap_or("login").trim().to_owned();
    let mut v = Validator::default();
    keys::check_name(&mut v, "key_name", &key_name);
    v.finish()?;
    let Some(account_id) = sign_in(&state, &req.email, req.password).await? else {
        state.limiter.failed_auth(ip);
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "invalid_credentials", "Email or password is incorrect."));
    };
    auth::check_active(&state, account_id).await?;
    let mut tx = state.db.begin().await?;
    let key = keys::create(&mut *tx, account_id, &key_name, Scope::Full, None).await?;
    audit::record(&mut *tx, &Actor::account(account_id, Some(ip)), "account.login", Some(("api_key", key.key.id)))
        .await?;
    tx.commit().await?;
    Ok(created(key))
}

/// Verifies an email address with the emailed token (also completes an email change).
#[utoipa::path(post, path = "/api/auth/verify-email", operation_id = "verifyEmail", tag = "auth", request_body = VerifyEmailRequest,
    responses((status = 200, description = "Verified", body = VerifyEmailResponse),
        (status = 422, description = "`invalid_token` or `expired`", body = crate::error::ErrorBody)))]
async fn verify_email(
    State(state): State<AppState>,
    axum::Extension(ClientIp(ip)): axum::Extension<ClientIp>,
    Json(req): Json<VerifyEmailRequest>,
) -> ApiResult<axum::Json<VerifyEmailResponse>> {
    let invalid = || ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_token", "The token is not valid.");
    let mut tx = state.db.begin().await?;
    let row = sqlx::query("SELECT account_id, email, expires_at, used_at FROM email_tokens WHERE token_hash = $1")
        .bind(token::digest(req.token.trim()))
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(invalid)?;
    if row.try_get::<Option<i64>, _>("used_at")?.is_some() {
        return Err(invalid());
    }
    if row.try_get::<i64, _>("expires_at")? <= now_micros() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "expired",
            "The token expired; ask for a new one.",
        ));
    }
    let account_id = row.uuid("account_id")?;
    let email: String = row.try_get("email")?;
    let now = now_micros();
    let current: Option<String> = sqlx::query_scalar("SELECT email FROM accounts WHERE id = $1")
        .bind(account_id.to_string())
        .fetch_one(&mut *tx)
        .await?;
    let changed = current.as_deref() != Some(email.as_str());
    let updated = sqlx::query(
        "UPDATE accounts SET email = $1, email_verified = 1, \
         pending_email = CASE WHEN pending_email = $1 THEN NULL ELSE pending_email END, updated_at = $2 WHERE id = $3",
    )
    .bind(email.clone())
    .bind(now)
    .bind(account_id.to_string())
    .execute(&mut *tx)
    .await;
    match updated {
        Err(e) if is_unique_violation(&e) => {
            return Err(ApiError::conflict("email_taken", "Another account uses that email address now."));
        }
        other => other?,
    };
    sqlx::query("UPDATE email_tokens SET used_at = $1 WHERE token_hash = $2")
        .bind(now)
        .bind(token::digest(req.token.trim()))
        .execute(&mut *tx)
        .await?;
    let action = if changed { "account.email_changed" } else { "account.email_verified" };
    audit::record(&mut *tx, &Actor::account(account_id, Some(ip)), action, Some(("account", account_id))).await?;
    tx.commit().await?;
    state.account_cache.remove(&account_id);
    Ok(axum::Json(VerifyEmailResponse {
        user_id: account_id,
        email_verified: true,
        message: if changed { "Email address changed and verified." } else { "Email address verified." }.into(),
    }))
}

/// Emails a new verification token for the current (or pending) address.
#[utoipa::path(post, path = "/api/auth/verify-email/resend", operation_id = "resendVerification", tag = "auth",
    responses((status = 202, description = "Sent", body = Data<Message>)))]
async fn resend_verification(State(state): State<AppState>, p: Principal) -> ApiResult<(StatusCode, Data<Message>)> {
    let a = account(&state, p.account_id).await?;
    let to = match (&a.pending_email, &a.email, a.email_verified) {
        (Some(pending), _, _) => pending.clone(),
        (None, Some(email), false) => email.clone(),
        (None, Some(_), true) => {
            return Err(ApiError::conflict("already_verified", "The email address is already verified."));
        }
        (None, None, _) => return Err(ApiError::conflict("no_email", "The account has no email address.")),
    };
    send_verification(&state, a.id, &to).await?;
    Ok((StatusCode::ACCEPTED, ok(Message { message: format!("Verification sent to {to}.") })))
}

/// The caller's account identity.
#[utoipa::path(get, path = "/api/auth/me", operation_id = "getMe", tag = "auth", responses((status = 200, description = "Identity", body = Data<Me>)))]
async fn me(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Me>> {
    let a = match state.account_cache.get(&p.account_id) {
        Some(identity) => identity,
        None => {
            let row = account(&state, p.account_id).await?;
            let identity = Identity {
                email: row.email,
                email_verified: row.email_verified,
                pending_email: row.pending_email,
                created_at: row.created_at,
            };
            state.account_cache.insert(p.account_id, identity.clone());
            identity
        }
    };
    Ok(ok(Me {
        user_id: p.account_id,
        email: a.email,
        email_verified: a.email_verified,
        pending_email: a.pending_email,
        key: MeKey { id: p.key_id, scope: p.scope },
        inserted_at: from_micros(a.created_at),
        brokered: state.feature_enabled(crate::features::BROKERAGE),
        extensions: state.extensions.values(Answer::Me, &state, &p),
    }))
}

/// A wrong current password is 422; guessing through a key is bounded by
/// that key's request limit.
async fn check_current_password(a: &AccountRow, given: String) -> ApiResult<()> {
    if password::verify(given, a.password_hash.clone()).await {
        Ok(())
    } else {
        Err(ApiError::invalid("current_password", "is incorrect"))
    }
}

/// Changes the password (full-scope key; the current password is required).
#[utoipa::path(post, path = "/api/account/password", operation_id = "changePassword", tag = "account", request_body = PasswordChangeRequest,
    responses((status = 204, description = "Changed")))]
async fn change_password(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<PasswordChangeRequest>,
) -> ApiResult<StatusCode> {
    p.require_full()?;
    let mut v = Validator::default();
    rules::check_password(&mut v, "new_password", &req.new_password);
    v.finish()?;
    let a = account(&state, p.account_id).await?;
    check_current_password(&a, req.current_password).await?;
    let hash = password::hash(req.new_password).await;
    let mut tx = state.db.begin().await?;
    sqlx::query("UPDATE accounts SET password_hash = $1, updated_at = $2 WHERE id = $3")
        .bind(hash)
        .bind(now_micros())
        .bind(a.id.to_string())
        .execute(&mut *tx)
        .await?;
    // A changed password signs every browser out: whoever knew the old one
    // may hold a session made with it.
    sqlx::query("DELETE FROM browser_sessions WHERE account_id = $1").bind(a.id.to_string()).execute(&mut *tx).await?;
    audit::record(&mut *tx, &Actor::key(&p), "account.password_changed", Some(("account", a.id))).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Starts an email change: the new address receives a token; the change
/// applies when it is verified.
#[utoipa::path(post, path = "/api/account/email", operation_id = "changeEmail", tag = "account", request_body = EmailChangeRequest,
    responses((status = 202, description = "Verification sent to the new address", body = Data<EmailChangePending>)))]
async fn change_email(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<EmailChangeRequest>,
) -> ApiResult<(StatusCode, Data<EmailChangePending>)> {
    p.require_full()?;
    let new_email = normalize_email(&req.new_email);
    let mut v = Validator::default();
    rules::check_email(&mut v, "new_email", &new_email);
    v.finish()?;
    let a = account(&state, p.account_id).await?;
    check_current_password(&a, req.current_password).await?;
    if a.email.as_deref() == Some(new_email.as_str()) {
        return Err(ApiError::invalid("new_email", "is already the account's address"));
    }
    if find_account(&state, "email", &new_email).await?.is_some() {
        return Err(ApiError::invalid("new_email", "has already been taken"));
    }
    let mut tx = state.db.begin().await?;
    sqlx::query("UPDATE accounts SET pending_email = $1, updated_at = $2 WHERE id = $3")
        .bind(new_email.clone())
        .bind(now_micros())
        .bind(a.id.to_string())
        .execute(&mut *tx)
        .await?;
    audit::record(&mut *tx, &Actor::key(&p), "account.email_change_requested", Some(("account", a.id))).await?;
    tx.commit().await?;
    state.account_cache.remove(&a.id);
    send_verification(&state, a.id, &new_email).await?;
    Ok((
        StatusCode::ACCEPTED,
        ok(EmailChangePending {
            // The password check passed, so this is not a principal and has an email.
            email: a.email.unwrap_or_default(),
            pending_email: new_email.clone(),
            message: format!("Verification sent to {new_email}; the change applies once it is verified."),
        }),
    ))
}

/// Routes that need no key.
pub fn public_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(register)).routes(routes!(login)).routes(routes!(verify_email))
}

/// Routes behind a key.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(me))
        .routes(routes!(resend_verification))
        .routes(routes!(change_password))
        .routes(routes!(change_email))
}
