//! Rate limits of spec section 8, at their boundaries.

use reqwest::StatusCode;
use serde_json::json;

use crate::both;
use crate::common::{Backend, assert_error, into_resp, spawn, spawn_with};

both!(
    per_key_limit_at_the_spec_default,
    per_key_limit_configured,
    failed_auth_per_address,
    coarse_address_ceiling,
    forwarded_addresses_only_from_trusted_proxies,
    window_resets
);

fn assert_retry_after(r: &crate::common::Resp, max: u64) {
    let secs: u64 = r.headers.get("retry-after").expect("Retry-After").to_str().unwrap().parse().unwrap();
    assert!((1..=max).contains(&secs), "Retry-After {secs}");
}

async fn per_key_limit_at_the_spec_default(b: Backend) {
    // The real 600 per minute, unchanged: 600 pass, the 601st is refused.
    // Window boundaries are fixed minutes, so start right after one begins.
    let app = spawn(b).await;
    let u = app.user().await;
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    if secs % 60 > 40 {
        tokio::time::sleep(std::time::Duration::from_secs(60 - secs % 60)).await;
    }
    for i in 0..600 {
        let r = app.get("/api/auth/me", &u.key).await;
        assert_eq!(r.status, StatusCode::OK, "request {} of 600", i + 1);
    }
    let r = app.get("/api/auth/me", &u.key).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_retry_after(&r, 60);
}

async fn per_key_limit_configured(b: Backend) {
    let app = spawn_with(b, &[("limits.requests_per_key", json!(5)), ("limits.window_seconds", json!(3600))]).await;
    let u = app.user().await;
    let other = app.user().await;
    for _ in 0..5 {
        assert_eq!(app.get("/api/auth/me", &u.key).await.status, StatusCode::OK);
    }
    let r = app.get("/api/auth/me", &u.key).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_retry_after(&r, 3600);
    assert_eq!(app.get("/api/auth/me", &other.key).await.status, StatusCode::OK, "another key has its own allowance");
}

async fn failed_auth_per_address(b: Backend) {
    let app =
        spawn_with(b, &[("limits.failed_auth_per_address", json!(3)), ("limits.window_seconds", json!(3600))]).await;
    let u = app.user().await;
    for _ in 0..3 {
        assert_eq!(app.get("/api/auth/me", "acs_wrong").await.status, StatusCode::UNAUTHORIZED);
    }
    let r = app.get("/api/auth/me", "acs_wrong").await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_retry_after(&r, 3600);
    // Password guessing is refused too, before the password is checked.
    assert_error(&app.login(&u.email, &u.password).await, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    // A valid key still works: the failed-authentication allowance is separate.
    assert_eq!(app.get("/api/auth/me", &u.key).await.status, StatusCode::OK);
}

async fn coarse_address_ceiling(b: Backend) {
    let app = spawn_with(b, &[("limits.requests_per_address", json!(6)), ("limits.window_seconds", json!(3600))]).await;
    // register + login take 2 of the 6.
    let u = app.user().await;
    for _ in 0..3 {
        assert_eq!(app.get("/api/auth/me", &u.key).await.status, StatusCode::OK);
    }
    assert_eq!(
        app.get("/api/auth/me", "acs_wrong").await.status,
        StatusCode::UNAUTHORIZED,
        "the 6th request still answers"
    );
    let r = app.get("/api/auth/me", &u.key).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_retry_after(&r, 3600);
    let r = app.request(reqwest::Method::GET, "/api/health/ready", None, None).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "every request from the address is blocked");
}

async fn forwarded_addresses_only_from_trusted_proxies(b: Backend) {
    let overrides = [("limits.failed_auth_per_address", json!(2)), ("limits.window_seconds", json!(3600))];
    let bad = |app: &crate::common::TestApp, xff: &'static str| {
        app.http.get(format!("{}/api/auth/me", app.base)).bearer_auth("acs_wrong").header("x-forwarded-for", xff).send()
    };
    // Untrusted peer: X-Forwarded-For is ignored, so all count against 127.0.0.1.
    let app = spawn_with(b, &overrides).await;
    assert_eq!(bad(&app, "203.0.113.1").await.unwrap().status(), StatusCode::UNAUTHORIZED);
    assert_eq!(bad(&app, "203.0.113.2").await.unwrap().status(), StatusCode::UNAUTHORIZED);
    assert_eq!(bad(&app, "203.0.113.3").await.unwrap().status(), StatusCode::TOO_MANY_REQUESTS);

    // Trusted loopback proxy: each forwarded client has its own allowance.
    let mut trusted = overrides.to_vec();
    trusted.push(("limits.trusted_proxies", json!(["127.0.0.0/8"])));
    let app = spawn_with(b, &trusted).await;
    for xff in ["203.0.113.1", "203.0.113.2", "203.0.113.3"] {
        assert_eq!(bad(&app, xff).await.unwrap().status(), StatusCode::UNAUTHORIZED, "{xff}");
    }
    assert_eq!(bad(&app, "203.0.113.1").await.unwrap().status(), StatusCode::UNAUTHORIZED);
    let r = into_resp(bad(&app, "203.0.113.1").await.unwrap()).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
}

async fn window_resets(b: Backend) {
    let app = spawn_with(b, &[("limits.requests_per_key", json!(2)), ("limits.window_seconds", json!(1))]).await;
    let u = app.user().await;
    // Start just after a one-second window begins, so three requests share it.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    tokio::time::sleep(std::time::Duration::from_nanos(1_000_000_000 - nanos as u64 + 5_000_000)).await;
    assert_eq!(app.get("/api/auth/me", &u.key).await.status, StatusCode::OK);
    assert_eq!(app.get("/api/auth/me", &u.key).await.status, StatusCode::OK);
    let r = app.get("/api/auth/me", &u.key).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_retry_after(&r, 1);
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    assert_eq!(app.get("/api/auth/me", &u.key).await.status, StatusCode::OK, "a new window starts at zero");
}
