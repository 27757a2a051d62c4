//! Sign-in and sign-out (the console's pages are `acs_core::console`).

use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use super::html::{self, escape, hidden};
use super::{COOKIE, LOGIN_CSRF_COOKIE, Viewer, check_csrf, cookie, same_secret, same_site_path, set_cookie};
use crate::auth::token;
use crate::http::middleware::ClientIp;
use crate::ratelimit::Verdict;
use crate::state::AppState;

#[derive(Deserialize)]
pub struct NextQuery {
    next: Option<String>,
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    next: String,
}

#[derive(Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

fn next_or_home(next: Option<&str>) -> String {
    next.filter(|n| same_site_path(n)).unwrap_or("/").to_owned()
}

/// The sign-in form; it keeps the form's CSRF token in `acs_csrf`.
fn login_form(state: &AppState, status: StatusCode, csrf: &str, email: &str, next: &str, error: &str) -> Response {
    let error = if error.is_empty() {
        String::new()
    } else {
        format!("<p class=\"error\" role=\"alert\">{}</p>", escape(error))
    };
    let body = format!(
        "<h1>Sign in to acs</h1>{error}<form method=\"post\" action=\"/login\">{}{}\
         <label for=\"email\">Email</label><input id=\"email\" type=\"email\" name=\"email\" value=\"{}\" autocomplete=\"username\" required autofocus>\
         <label for=\"password\">Password</label><input id=\"password\" type=\"password\" name=\"password\" autocomplete=\"current-password\" required>\
         <button type=\"submit\">Sign in</button></form>",
        hidden("csrf", csrf),
        hidden("next", next),
        escape(email),
    );
    let mut res = html::page_with_status(status, "Sign in", &body);
    res.headers_mut().append(header::SET_COOKIE, set_cookie(state, LOGIN_CSRF_COOKIE, csrf, 3600));
    res
}

/// `GET /login`: the form, or straight on when already signed in.
async fn login_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    q: Result<Query<NextQuery>, QueryRejection>,
) -> Response {
    let next = q.ok().and_then(|Query(q)| q.next);
    let next = next_or_home(next.as_deref());
    if let Some(secret) = cookie(&headers, COOKIE)
        && let Ok(Some(_)) = super::by_cookie(&state, secret).await
    {
        return Redirect::to(&next).into_response();
    }
    let csrf = cookie(&headers, LOGIN_CSRF_COOKIE).map(str::to_owned).unwrap_or_else(|| token::generate(""));
    login_form(&state, StatusCode::OK, &csrf, "", &next, "")
}

/// `POST /login`: checks the form's token and the password, starts a session.
async fn login_submit(
    State(state): State<AppState>,
    axum::Extension(ClientIp(ip)): axum::Extension<ClientIp>,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return html::error_page(StatusCode::BAD_REQUEST, "Bad request", "The sign-in form could not be read.");
    };
    let next = next_or_home(Some(&form.next));
    let expected = cookie(&headers, LOGIN_CSRF_COOKIE).unwrap_or("");
    if !same_secret(expected, &form.csrf) {
        return super::csrf_refused();
    }
    if let Verdict::Deny { .. } = state.limiter.failed_auth_spent(ip) {
        return login_form(
            &state,
            StatusCode::TOO_MANY_REQUESTS,
            expected,
            &form.email,
            &next,
            "Too many attempts; try again in a minute.",
        );
    }
    let account = match crate::accounts::sign_in(&state, &form.email, form.password).await {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(error = %e, "signing in from the browser");
            return super::unavailable();
        }
    };
    let Some(account_id) = account else {
        state.limiter.failed_auth(ip);
        return login_form(
            &state,
            StatusCode::UNAUTHORIZED,
            expected,
            &form.email,
            &next,
            "Email or password is incorrect.",
        );
    };
    match super::start(&state, account_id, &ip.to_string()).await {
        Ok(secret) => {
            let hours = state.config().auth.session_hours;
            let mut res = Redirect::to(&next).into_response();
            res.headers_mut().append(header::SET_COOKIE, set_cookie(&state, COOKIE, &secret, hours * 3600));
            // The sign-in form's token is spent.
            res.headers_mut().append(header::SET_COOKIE, set_cookie(&state, LOGIN_CSRF_COOKIE, "", 0));
            res
        }
        Err(e) => {
            tracing::error!(error = %e, "starting a browser session");
            super::unavailable()
        }
    }
}

/// `POST /logout`: ends the session, forgets the cookie.
async fn logout(
    State(state): State<AppState>,
    viewer: Viewer,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let given = form.map(|Form(f)| f.csrf).unwrap_or_default();
    if let Err(refused) = check_csrf(&viewer, &given) {
        return refused.into_response();
    }
    if let Err(e) = super::end(&state, &viewer).await {
        tracing::error!(error = %e, "ending a browser session");
        return super::unavailable();
    }
    let mut res = Redirect::to("/login").into_response();
    res.headers_mut().append(header::SET_COOKIE, set_cookie(&state, COOKIE, "", 0));
    res
}

/// The session's pages; mounted outside `/api`, so not in `/api/docs`.
pub fn router() -> Router<AppState> {
    Router::new().route("/login", get(login_page).post(login_submit)).route("/logout", post(logout))
}

#[cfg(test)]
mod tests {
    use super::next_or_home;

    #[test]
    fn next_defaults_home_and_refuses_other_sites() {
        assert_eq!(next_or_home(None), "/");
        assert_eq!(next_or_home(Some("//evil.example/x")), "/");
        assert_eq!(next_or_home(Some("/agents?x=1")), "/agents?x=1");
    }
}
