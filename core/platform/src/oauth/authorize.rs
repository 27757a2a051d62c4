//! `/oauth/authorize`: the consent page (RFC 6749 section 4.1.1 with PKCE,
//! RFC 7636). A request that names an unknown client or a redirect URI not
//! registered for it gets an error page and never a redirect: the address
//! is unverified. Other errors go back to the app, as RFC 6749 section
//! 4.1.2.1 says, with `error` and `state`.

use std::net::IpAddr;

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use uuid::Uuid;

use super::{OAuthClient, rules};
use crate::audit::{self, Actor};
use crate::auth::token;
use crate::http::middleware::ClientIp;
use crate::session::html::{self, escape, hidden};
use crate::session::{self, Viewer, check_csrf, error_page};
use crate::state::AppState;
use crate::time_fmt::now_micros;

/// The authorization request's parameters (query on GET, form on POST,
/// where the consent form adds `csrf` and `decision`).
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    response_type: Option<String>,
    client_id: Option<String>,
    redirect_uri: Option<String>,
    state: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    decision: String,
}

/// A request whose client and redirect URI are verified and whose other
/// parameters are well formed.
struct Valid {
    client: OAuthClient,
    redirect_uri: String,
    state: Option<String>,
    challenge: String,
}

/// A redirect back to the app's registered URI with `params` added.
fn back_to(redirect_uri: &str, params: &[(&str, &str)]) -> Response {
    match reqwest::Url::parse(redirect_uri) {
        Ok(mut url) => {
            {
                let mut q = url.query_pairs_mut();
                for (k, v) in params {
                    q.append_pair(k, v);
                }
            }
            Redirect::to(url.as_str()).into_response()
        }
        // Registered URIs were checked when registered; this cannot parse-fail.
        Err(_) => {
            error_page(StatusCode::BAD_REQUEST, "Bad redirect address", "The app's redirect address is not valid.")
        }
    }
}

fn app_error(redirect_uri: &str, state: Option<&str>, error: &str, description: &str) -> Response {
    let mut params = vec![("error", error), ("error_description", description)];
    if let Some(s) = state {
        params.push(("state", s));
    }
    back_to(redirect_uri, &params)
}

/// Checks a request in RFC 6749's order: client, redirect URI (error pages),
/// then the rest (errors sent back to the app).
async fn validate(state: &AppState, p: &Params) -> Result<Valid, Response> {
    let unknown = || {
        error_page(
            StatusCode::BAD_REQUEST,
            "Unknown application",
            "The application asking to sign you in is not registered here. Nothing was shared with it.",
        )
    };
    let id = p.client_id.as_deref().and_then(|c| c.parse::<Uuid>().ok()).ok_or_else(unknown)?;
    let client = match super::find(&state.db, id).await {
        Ok(Some(c)) => c,
        Ok(None) => return Err(unknown()),
        Err(e) => {
            tracing::error!(error = %e, "reading an OAuth client");
            return Err(session::unavailable());
        }
    };
    let redirect_uri = p.redirect_uri.clone().unwrap_or_default();
    if !client.redirect_uris.contains(&redirect_uri) {
        return Err(error_page(
            StatusCode::BAD_REQUEST,
            "Wrong redirect address",
            "The application sent a redirect address it did not register. Nothing was shared with it.",
        ));
    }
    // A `state` too long to carry back is dropped rather than echoed.
    let app_state = p.state.as_deref().filter(|s| s.len() <= rules::MAX_STATE);
    if p.state.as_deref().is_some_and(|s| s.len() > rules::MAX_STATE) {
        return Err(app_error(&redirect_uri, None, "invalid_request", "state is longer than 1000 characters"));
    }
    if p.response_type.as_deref() != Some("code") {
        return Err(app_error(&redirect_uri, app_state, "unsupported_response_type", "response_type must be code"));
    }
    if p.code_challenge_method.as_deref() != Some("S256") {
        return Err(app_error(&redirect_uri, app_state, "invalid_request", "code_challenge_method must be S256"));
    }
    let challenge = p.code_challenge.clone().unwrap_or_default();
    if !rules::pkce_value_ok(&challenge) {
        return Err(app_error(
            &redirect_uri,
            app_state,
            "invalid_request",
            "code_challenge must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~",
        ));
    }
    Ok(Valid { client, redirect_uri, state: app_state.map(str::to_owned), challenge })
}

/// A valid request and the signed-in viewer allowed to use its client, or
/// the page (or redirect) to answer instead.
async fn admit(
    state: &AppState,
    headers: &HeaderMap,
    ip: IpAddr,
    uri: &Uri,
    p: &Params,
) -> Result<(Valid, Viewer), Response> {
    let v = validate(state, p).await?;
    let viewer = match session::viewer(state, headers, ip).await? {
        Some(viewer) => viewer,
        None => return Err(session::to_login(uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"))),
    };
    if !v.client.published && viewer.account_id != v.client.account_id {
        return Err(error_page(
            StatusCode::FORBIDDEN,
            "Application in development",
            "This application is still in development: only its developer's account can sign in with it.",
        ));
    }
    Ok((v, viewer))
}

/// `GET /oauth/authorize`: the consent page.
async fn show(
    State(state): State<AppState>,
    axum::Extension(ClientIp(ip)): axum::Extension<ClientIp>,
    headers: HeaderMap,
    uri: Uri,
    q: Result<Query<Params>, QueryRejection>,
) -> Response {
    let p = q.map(|Query(p)| p).unwrap_or_default();
    let (v, viewer) = match admit(&state, &headers, ip, &uri, &p).await {
        Ok(both) => both,
        Err(page) => return page,
    };
    let name = escape(&v.client.name);
    let origin = rules::origin_of(&v.redirect_uri).unwrap_or_default();
    let body = format!(
        "<h1>Allow {name}?</h1>\
         <p><strong>{name}</strong> asks to act as your account: it will receive a full-scope API key \
         that can do anything you can, until it expires or you revoke it under your keys.</p>\
         <p>You will be sent back to <strong>{}</strong>.</p>\
         <form method=\"post\" action=\"/oauth/authorize\">{}{}{}{}{}{}{}\
         <button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
         <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>",
        escape(&origin),
        hidden("csrf", &viewer.csrf),
        hidden("response_type", "code"),
        hidden("client_id", &v.client.id.to_string()),
        hidden("redirect_uri", &v.redirect_uri),
        hidden("state", v.state.as_deref().unwrap_or("")),
        hidden("code_challenge", &v.challenge),
        hidden("code_challenge_method", "S256"),
    );
    html::page(&format!("Allow {}?", v.client.name), &body)
}

/// `POST /oauth/authorize`: Approve issues a code, Deny says so to the app.
async fn decide(
    State(state): State<AppState>,
    axum::Extension(ClientIp(ip)): axum::Extension<ClientIp>,
    headers: HeaderMap,
    uri: Uri,
    form: Result<Form<Params>, FormRejection>,
) -> Response {
    let Ok(Form(mut p)) = form else {
        return error_page(StatusCode::BAD_REQUEST, "Bad request", "The form could not be read.");
    };
    // An empty `state` field is the form's way of saying none was sent.
    if p.state.as_deref() == Some("") {
        p.state = None;
    }
    let (v, viewer) = match admit(&state, &headers, ip, &uri, &p).await {
        Ok(both) => both,
        Err(page) => return page,
    };
    if let Err(refused) = check_csrf(&viewer, &p.csrf) {
        return refused.into_response();
    }
    let state_param = v.state.as_deref();
    match p.decision.as_str() {
        "deny" => app_error(&v.redirect_uri, state_param, "access_denied", "The account's owner denied access."),
        "approve" => match issue_code(&state, &viewer, &v, ip).await {
            Ok(code) => {
                let mut params = vec![("code", code.as_str())];
                if let Some(s) = state_param {
                    params.push(("state", s));
                }
                back_to(&v.redirect_uri, &params)
            }
            Err(e) => {
                tracing::error!(error = %e, "issuing an authorization code");
                session::unavailable()
            }
        },
        _ => error_page(StatusCode::BAD_REQUEST, "Bad request", "Choose Approve or Deny."),
    }
}

/// Stores a new code (its digest) bound to the client, redirect URI,
/// account and challenge; writes the audit row in the same transaction.
async fn issue_code(state: &AppState, viewer: &Viewer, v: &Valid, ip: IpAddr) -> Result<String, sqlx::Error> {
    let code = token::generate("acsc_");
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    // Expired codes go whenever one is issued (no sweeper needed).
    sqlx::query("DELETE FROM oauth_codes WHERE expires_at <= $1").bind(now).execute(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO oauth_codes (code_hash, client_id, account_id, redirect_uri, code_challenge, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(token::digest(&code))
    .bind(v.client.id.to_string())
    .bind(viewer.account_id.to_string())
    .bind(v.redirect_uri.clone())
    .bind(v.challenge.clone())
    .bind(now + rules::CODE_TTL_SECONDS * 1_000_000)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    audit::record(
        &mut *tx,
        &Actor::account(viewer.account_id, Some(ip)),
        "oauth.authorized",
        Some(("oauth_client", v.client.id)),
    )
    .await?;
    tx.commit().await?;
    Ok(code)
}

/// The consent page; not an API operation, so not in `/api/docs`.
pub fn pages() -> Router<AppState> {
    Router::new().route("/oauth/authorize", get(show).post(decide))
}
