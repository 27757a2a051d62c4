//! `/device`: the signed-in owner enters or confirms a user code and
//! approves or denies the login.

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use sqlx::Row;

use super::rules::{Status, normalize_user_code};
use crate::audit::{self, Actor};
use crate::http::middleware::ClientIp;
use crate::ratelimit::Verdict;
use crate::session::html::{self, escape, hidden};
use crate::session::{Viewer, check_csrf, error_page};
use crate::state::AppState;
use crate::time_fmt::now_micros;

#[derive(Deserialize)]
pub struct CodeQuery {
    user_code: Option<String>,
}

#[derive(Deserialize)]
pub struct Decision {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    user_code: String,
    #[serde(default)]
    decision: String,
}

fn enter_code(error: &str) -> Response {
    let error = if error.is_empty() { String::new() } else { format!("<p class=\"error\">{}</p>", escape(error)) };
    html::page(
        "Sign in a device",
        &format!(
            "<h1>Sign in a device</h1>{error}<p>Enter the code the device shows.</p>\
             <form method=\"get\" action=\"/device\"><label for=\"user_code\">Code</label>\
             <input id=\"user_code\" type=\"text\" name=\"user_code\" autocomplete=\"off\" required autofocus>\
             <button type=\"submit\">Continue</button></form>"
        ),
    )
}

/// A pending, unexpired login with this code: its key name.
async fn pending(state: &AppState, code: &str) -> Result<Option<String>, sqlx::Error> {
    let row =
        sqlx::query("SELECT key_name FROM device_logins WHERE user_code = $1 AND status = $2 AND expires_at > $3")
            .bind(code.to_owned())
            .bind(Status::Pending.as_str())
            .bind(now_micros())
            .fetch_optional(&state.db.pool)
            .await?;
    row.map(|r| r.try_get("key_name")).transpose()
}

/// A code that names no pending login costs a failed attempt of the
/// address, as a wrong password does: codes are short enough to guess at.
fn unknown_code(state: &AppState, ip: std::net::IpAddr) -> Response {
    match state.limiter.failed_auth(ip) {
        Verdict::Deny { .. } => {
            error_page(StatusCode::TOO_MANY_REQUESTS, "Slow down", "Too many wrong codes; try again in a minute.")
        }
        Verdict::Allow => {
            let mut res = enter_code("That code is not valid or has expired. Check the device and try again.");
            *res.status_mut() = StatusCode::NOT_FOUND;
            res
        }
    }
}

/// `GET /device[?user_code=...]`: the code form, or the approval page.
async fn show(
    State(state): State<AppState>,
    axum::Extension(ClientIp(ip)): axum::Extension<ClientIp>,
    viewer: Viewer,
    q: Result<Query<CodeQuery>, QueryRejection>,
) -> Response {
    let given = q.ok().and_then(|Query(q)| q.user_code).unwrap_or_default();
    if given.trim().is_empty() {
        return enter_code("");
    }
    let Some(code) = normalize_user_code(&given) else { return unknown_code(&state, ip) };
    let key_name = match pending(&state, &code).await {
        Ok(Some(name)) => name,
        Ok(None) => return unknown_code(&state, ip),
        Err(e) => {
            tracing::error!(error = %e, "reading a device login");
            return crate::session::unavailable();
        }
    };
    html::page(
        "Approve device sign-in",
        &format!(
            "<h1>Approve device sign-in</h1>\
             <p>A device asks to sign in to your account. Approve only if it shows this code:</p>\
             <p class=\"code\">{}</p><p>It will receive a full-scope API key named <strong>{}</strong>.</p>\
             <form method=\"post\" action=\"/device\">{}{}\
             <button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
             <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>",
            escape(&code),
            escape(&key_name),
            hidden("csrf", &viewer.csrf),
            hidden("user_code", &code),
        ),
    )
}

/// `POST /device`: approves or denies a pending login for the signed-in account.
async fn decide(
    State(state): State<AppState>,
    axum::Extension(ClientIp(ip)): axum::Extension<ClientIp>,
    viewer: Viewer,
    form: Result<Form<Decision>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return error_page(StatusCode::BAD_REQUEST, "Bad request", "The form could not be read.");
    };
    if let Err(refused) = check_csrf(&viewer, &form.csrf) {
        return refused.into_response();
    }
    let status = match form.decision.as_str() {
        "approve" => Status::Approved,
        "deny" => Status::Denied,
        _ => return error_page(StatusCode::BAD_REQUEST, "Bad request", "Choose Approve or Deny."),
    };
    let Some(code) = normalize_user_code(&form.user_code) else { return unknown_code(&state, ip) };
    match record(&state, &viewer, &code, status, ip).await {
        Ok(true) if status == Status::Approved => html::page(
            "Device signed in",
            "<h1>Device signed in</h1><p>The device receives its key now. You can close this window.</p>",
        ),
        Ok(true) => html::page("Sign-in denied", "<h1>Sign-in denied</h1><p>The device was refused.</p>"),
        Ok(false) => unknown_code(&state, ip),
        Err(e) => {
            tracing::error!(error = %e, "recording a device login decision");
            crate::session::unavailable()
        }
    }
}

/// Moves a pending login to `status` for the viewer's account, with its
/// audit row; `false` when no pending login has the code.
async fn record(
    state: &AppState,
    viewer: &Viewer,
    code: &str,
    status: Status,
    ip: std::net::IpAddr,
) -> Result<bool, sqlx::Error> {
    let mut tx = state.db.begin().await?;
    let done = sqlx::query(
        "UPDATE device_logins SET status = $1, account_id = $2 WHERE user_code = $3 AND status = $4 AND expires_at > $5",
    )
    .bind(status.as_str())
    .bind(viewer.account_id.to_string())
    .bind(code.to_owned())
    .bind(Status::Pending.as_str())
    .bind(now_micros())
    .execute(&mut *tx)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    let action =
        if status == Status::Approved { "account.device_login_approved" } else { "account.device_login_denied" };
    audit::record(&mut *tx, &Actor::account(viewer.account_id, Some(ip)), action, Some(("account", viewer.account_id)))
        .await?;
    tx.commit().await?;
    Ok(true)
}

pub fn router() -> Router<AppState> {
    Router::new().route("/device", get(show).post(decide))
}
