//! The browser session (sign-in form, cookie, CSRF, sign-out) and device
//! login (RFC 8628), driven over HTTP as a browser and a CLI would.

use acs_testkit::browser::{Browser, field, location};
use reqwest::StatusCode;
use reqwest::header::SET_COOKIE;
use serde_json::json;

use crate::both;
use crate::common::{Backend, TestApp, assert_error, spawn};

both!(
    sign_in_sets_an_http_only_lax_cookie_stored_as_a_digest,
    pages_without_a_session_go_to_sign_in_and_come_back,
    sign_in_refuses_bad_tokens_and_passwords,
    sign_out_and_password_change_end_sessions,
    a_full_scope_key_is_a_session_for_one_request,
    device_login_approved_issues_one_key,
    device_login_pending_slow_down_denied_expired,
    device_page_needs_its_csrf_token_and_a_real_code,
);

fn set_cookies(r: &crate::common::Resp) -> Vec<String> {
    r.headers.get_all(SET_COOKIE).iter().map(|v| v.to_str().unwrap().to_owned()).collect()
}

async fn sql_count(app: &TestApp, sql: &str, bind: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_owned()))
        .bind(bind.to_owned())
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap()
}

async fn sign_in_sets_an_http_only_lax_cookie_stored_as_a_digest(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let mut browser = Browser::new(&app);
    let page = browser.get("/login").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    assert_eq!(page.headers["x-frame-options"], "DENY");
    assert_eq!(page.headers["cache-control"], "no-store");
    let csrf = field(&page.text, "csrf").unwrap();
    let csrf_cookie = set_cookies(&page).into_iter().find(|c| c.starts_with("acs_csrf=")).unwrap();
    assert!(csrf_cookie.contains("HttpOnly") && csrf_cookie.contains("SameSite=Lax"), "{csrf_cookie}");

    let r = browser
        .post_form("/login", &[("email", &u.email.to_uppercase()), ("password", &u.password), ("csrf", &csrf)])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    assert_eq!(location(&r), "/");
    let session = set_cookies(&r).into_iter().find(|c| c.starts_with("acs_session=")).unwrap();
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=604800"] {
        assert!(session.contains(attr), "{attr} in {session}");
    }
    assert!(!session.contains("Secure"), "served over http here");
    let secret = browser.cookies["acs_session"].clone();
    assert_eq!(sql_count(&app, "SELECT COUNT(*) FROM browser_sessions WHERE account_id = $1", &u.id).await, 1);
    assert_eq!(sql_count(&app, "SELECT COUNT(*) FROM browser_sessions WHERE token_hash = $1", &secret).await, 0);

    let home = browser.get("/").await;
    assert_eq!(home.status, StatusCode::OK);
    assert!(home.text.contains(&u.email), "{}", home.text);
    // Signed in, the form is skipped.
    let r = browser.get("/login?next=%2Fdevice").await;
    assert_eq!((r.status, location(&r).as_str()), (StatusCode::SEE_OTHER, "/device"));
    // The session is not an API credential: the API wants a key.
    let r = browser.get("/api/auth/me").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

async fn pages_without_a_session_go_to_sign_in_and_come_back(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let mut browser = Browser::new(&app);
    for (path, to) in
        [("/", "/login?next=%2F"), ("/device?user_code=BCDF-GHJK", "/login?next=%2Fdevice%3Fuser_code%3DBCDF-GHJK")]
    {
        let r = browser.get(path).await;
        assert_eq!((r.status, location(&r).as_str()), (StatusCode::SEE_OTHER, to), "{path}");
    }
    let r = browser.get("/login?next=%2Fdevice%3Fuser_code%3DBCDF-GHJK").await;
    assert_eq!(field(&r.text, "next").as_deref(), Some("/device?user_code=BCDF-GHJK"));
    let csrf = field(&r.text, "csrf").unwrap();
    let r = browser
        .post_form(
            "/login",
            &[("email", &u.email), ("password", &u.password), ("csrf", &csrf), ("next", "/device?user_code=BCDF-GHJK")],
        )
        .await;
    assert_eq!(location(&r), "/device?user_code=BCDF-GHJK");

    // Only same-site destinations: anything else lands on the home page.
    for next in ["//evil.example/x", "https://evil.example/", "/\\evil.example", "evil"] {
        let mut other = Browser::new(&app);
        let page = other.get("/login").await;
        let csrf = field(&page.text, "csrf").unwrap();
        let r = other
            .post_form("/login", &[("email", &u.email), ("password", &u.password), ("csrf", &csrf), ("next", next)])
            .await;
        assert_eq!(location(&r), "/", "{next}");
    }
}

async fn sign_in_refuses_bad_tokens_and_passwords(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let mut browser = Browser::new(&app);
    let page = browser.get("/login").await;
    let csrf = field(&page.text, "csrf").unwrap();
    // A forged post from another site has no matching token.
    let r = browser.post_form("/login", &[("email", &u.email), ("password", &u.password), ("csrf", "forged")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let mut stranger = Browser::new(&app);
    let r = stranger.post_form("/login", &[("email", &u.email), ("password", &u.password), ("csrf", &csrf)]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "the token must match the browser's own cookie");

    let r = browser.post_form("/login", &[("email", &u.email), ("password", "wrong password"), ("csrf", &csrf)]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.text.contains("Email or password is incorrect."));
    assert_eq!(field(&r.text, "email").as_deref(), Some(u.email.as_str()), "the address is kept in the form");
    assert!(!browser.cookies.contains_key("acs_session"));
    // Garbage bodies get a page, never a 500.
    let r = browser.post_form("/login", &[]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app
        .http
        .post(format!("{}/login", app.base))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}

async fn sign_out_and_password_change_end_sessions(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let mut browser = Browser::new(&app);
    browser.sign_in(&u.email, &u.password).await;
    let home = browser.get("/").await;
    let csrf = field(&home.text, "csrf").unwrap();
    let r = browser.post_form("/logout", &[("csrf", "wrong")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let kept = browser.cookies["acs_session"].clone();
    let r = browser.post_form("/logout", &[("csrf", &csrf)]).await;
    assert_eq!((r.status, location(&r).as_str()), (StatusCode::SEE_OTHER, "/login"));
    assert!(!browser.cookies.contains_key("acs_session"), "the cookie is cleared");
    // The old cookie names nothing now, even when replayed.
    browser.cookies.insert("acs_session".into(), kept);
    assert_eq!(browser.get("/").await.status, StatusCode::SEE_OTHER);

    let mut a = Browser::new(&app);
    a.sign_in(&u.email, &u.password).await;
    let mut b2 = Browser::new(&app);
    b2.sign_in(&u.email, &u.password).await;
    let r = app
        .post(
            "/api/account/password",
            &u.key,
            json!({"current_password": u.password, "new_password": "another long password"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert_eq!(a.get("/").await.status, StatusCode::SEE_OTHER);
    assert_eq!(b2.get("/").await.status, StatusCode::SEE_OTHER);

    // An expired session is no session.
    let mut c = Browser::new(&app);
    c.sign_in(&u.email, "another long password").await;
    sqlx::query("UPDATE browser_sessions SET expires_at = 0 WHERE account_id = $1")
        .bind(u.id.clone())
        .execute(&app.state().db.pool)
        .await
        .unwrap();
    assert_eq!(c.get("/").await.status, StatusCode::SEE_OTHER);
}

async fn a_full_scope_key_is_a_session_for_one_request(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.get("/", &u.key).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text.contains(&u.email));
    assert!(r.headers.get(SET_COOKIE).is_none(), "a key makes no session");
    let restricted = app.post("/api/keys", &u.key, json!({"name": "r", "scope": "restricted"})).await;
    let restricted = restricted.body["data"]["api_key"].as_str().unwrap().to_owned();
    assert_eq!(app.get("/", &restricted).await.status, StatusCode::FORBIDDEN);
    assert_eq!(app.get("/", "acs_not_a_key").await.status, StatusCode::UNAUTHORIZED);
}

/// A device login as the CLI starts it.
async fn start_device(app: &TestApp, body: serde_json::Value) -> (String, String) {
    let r = app.public_post("/api/auth/device", body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let d = &r.body;
    assert_eq!(d["interval"], 5);
    assert_eq!(d["expires_in"], 900);
    let user_code = d["user_code"].as_str().unwrap().to_owned();
    assert_eq!(user_code.len(), 9);
    assert_eq!(&user_code[4..5], "-");
    assert!(d["verification_uri"].as_str().unwrap().ends_with("/device"));
    assert_eq!(
        d["verification_uri_complete"],
        format!("{}?user_code={user_code}", d["verification_uri"].as_str().unwrap())
    );
    (d["device_code"].as_str().unwrap().to_owned(), user_code)
}

async fn poll(app: &TestApp, device_code: &str) -> crate::common::Resp {
    app.public_post("/api/auth/device/token", json!({"device_code": device_code})).await
}

async fn device_login_approved_issues_one_key(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let (device_code, user_code) = start_device(&app, json!({"name": "laptop cli"})).await;
    let mut browser = Browser::new(&app);
    browser.sign_in(&u.email, &u.password).await;
    // Typed loosely: lower case, no dash.
    let typed = user_code.replace('-', "").to_lowercase();
    let page = browser.get(&format!("/device?user_code={typed}")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains(&user_code) && page.text.contains("laptop cli"));
    let csrf = field(&page.text, "csrf").unwrap();
    let r = browser.post_form("/device", &[("csrf", &csrf), ("user_code", &typed), ("decision", "approve")]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);

    let r = poll(&app, &device_code).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let key = r.body["data"]["api_key"].as_str().unwrap().to_owned();
    assert_eq!(r.body["data"]["key"]["name"], "laptop cli");
    assert_eq!(r.body["data"]["key"]["scope"], "full");
    let me = app.get("/api/auth/me", &key).await;
    assert_eq!(me.body["data"]["email"], u.email.as_str());
    // The code is spent at once, whatever the pace.
    assert_error(&poll(&app, &device_code).await, StatusCode::GONE, "expired_token");
    // Approving again finds nothing pending.
    let r = browser.post_form("/device", &[("csrf", &csrf), ("user_code", &user_code), ("decision", "approve")]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // The device code is stored only as a digest.
    assert_eq!(
        sql_count(&app, "SELECT COUNT(*) FROM device_logins WHERE device_code_hash = $1", &device_code).await,
        0
    );
}

async fn device_login_pending_slow_down_denied_expired(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let (device_code, _) = start_device(&app, json!({})).await;
    assert_error(&poll(&app, &device_code).await, StatusCode::PRECONDITION_REQUIRED, "authorization_pending");
    let r = poll(&app, &device_code).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "slow_down");
    assert_eq!(r.body["interval"], 5);
    assert_error(&poll(&app, "acsd_nothing").await, StatusCode::BAD_REQUEST, "invalid_grant");

    // Denied by the owner (approval through a bearer key, as a programmatic page client).
    let r = app.http.post(format!("{}/api/auth/device", app.base)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "no body at all is an empty request");
    let (denied, code) = start_device(&app, json!({})).await;
    let r = app
        .http
        .post(format!("{}/device", app.base))
        .bearer_auth(&u.key)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(acs_testkit::browser::form_body(&[("user_code", &code), ("decision", "deny")]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_error(&poll(&app, &denied).await, StatusCode::FORBIDDEN, "access_denied");

    // Expired: 15 minutes pass (the row is aged instead).
    let (old, _) = start_device(&app, json!({})).await;
    sqlx::query("UPDATE device_logins SET expires_at = 1 WHERE status = 'pending'")
        .execute(&app.state().db.pool)
        .await
        .unwrap();
    assert_error(&poll(&app, &old).await, StatusCode::GONE, "expired_token");

    // Key names are checked as keys' are.
    let r = app.public_post("/api/auth/device", json!({"name": ""})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let r = app.public_post("/api/auth/device", json!({"name": "n".repeat(201)})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    start_device(&app, json!({"name": "n".repeat(200)})).await;
}

async fn device_page_needs_its_csrf_token_and_a_real_code(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let (device_code, user_code) = start_device(&app, json!({})).await;
    let mut browser = Browser::new(&app);
    browser.sign_in(&u.email, &u.password).await;
    let r = browser.get("/device").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text.contains("name=\"user_code\""));
    // A cross-site post carries the cookie but not the token.
    let r = browser.post_form("/device", &[("user_code", &user_code), ("decision", "approve")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    for wrong in ["BCDF-GHJA", "short", "ZZZZ-ZZZZ"] {
        let r = browser.get(&format!("/device?user_code={wrong}")).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{wrong}");
    }
    assert_error(&poll(&app, &device_code).await, StatusCode::PRECONDITION_REQUIRED, "authorization_pending");
}
