use reqwest::StatusCode;
use serde_json::json;

use crate::both;
use crate::common::{Backend, assert_error, into_resp, spawn};

both!(
    concurrent_writes_never_fail,
    nul_bytes_are_refused,
    unknown_routes,
    not_acceptable_comes_first,
    malformed_bodies,
    wrong_content_type,
    oversized_body,
    wrong_method
);

async fn unknown_routes(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    assert_error(&app.get("/api/no-such-thing", &u.key).await, StatusCode::NOT_FOUND, "not_found");
    let r = app.request(reqwest::Method::GET, "/api/no-such-thing", None, None).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
}

async fn not_acceptable_comes_first(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    for (accept, key) in
        [("text/html", Some(&u.key)), ("application/xml", None), ("application/json;q=0", Some(&u.key))]
    {
        let mut req = app.http.get(format!("{}/api/auth/me", app.base)).header("accept", accept);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        let r = into_resp(req.send().await.unwrap()).await;
        assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE, "{accept}: {}", r.text);
        assert_eq!(r.body, json!({"errors": {"detail": "Not Acceptable"}}));
    }
    for accept in ["application/json", "*/*", "application/*", "text/html, application/json;q=0.5"] {
        let r = app
            .http
            .get(format!("{}/api/auth/me", app.base))
            .header("accept", accept)
            .bearer_auth(&u.key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{accept}");
    }
}

async fn malformed_bodies(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let send = |body: &'static str| {
        app.http
            .post(format!("{}/api/keys", app.base))
            .bearer_auth(&u.key)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let r = into_resp(send("{\"name\": ").await.unwrap()).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"]["body"].is_array(), "{}", r.text);
    let r = into_resp(send("{\"name\": 5}").await.unwrap()).await;
    assert!(r.body["errors"]["name"].is_array(), "{}", r.text);
    let r = into_resp(send("[]").await.unwrap()).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let r = into_resp(send("").await.unwrap()).await;
    assert_eq!(r.body["errors"]["name"][0], "can't be blank", "an empty body reads as {{}}: {}", r.text);
    let r = into_resp(send("{\"name\": \"a\"} trailing").await.unwrap()).await;
    assert!(r.body["errors"]["body"].is_array(), "{}", r.text);
}

async fn wrong_content_type(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app
        .http
        .post(format!("{}/api/keys", app.base))
        .bearer_auth(&u.key)
        .header("content-type", "text/plain")
        .body("{\"name\":\"x\"}")
        .send()
        .await
        .unwrap();
    let r = into_resp(r).await;
    assert_error(&r, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
}

async fn oversized_body(b: Backend) {
    let app = crate::common::spawn_with(b, &[("limits.max_body_bytes", json!(1024))]).await;
    let u = app.user().await;
    let r = app.post("/api/keys", &u.key, json!({"name": "x".repeat(2000)})).await;
    assert_error(&r, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
}

async fn wrong_method(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.request(reqwest::Method::PUT, "/api/auth/me", Some(&u.key), None).await;
    assert_error(&r, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    // RFC 9110 15.5.6: a 405 names the methods the route serves.
    assert_eq!(r.headers["allow"], "GET,HEAD");
}

async fn nul_bytes_are_refused(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.post("/api/keys", &u.key, json!({"name": "a\u{0}b"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert_eq!(r.body["errors"]["name"][0], "must not contain NUL bytes");
    let r = app
        .post("/api/support/reports", &u.key, json!({"category": "bug", "message": "m", "context": {"k": ["\u{0}"]}}))
        .await;
    assert!(r.body["errors"]["context.k[0]"].is_array(), "{}", r.text);
    let r = app.register("nul\u{0}@example.com", "correct horse").await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    // In a query string too: PostgreSQL refused the search pattern with a 500 (found by scripts/fuzz).
    let r = app.get("/api/search?q=a%00b", &u.key).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert_eq!(r.body["errors"]["q"][0], "must not contain NUL bytes", "{}", r.text);
    // And in a path parameter, which names nothing then: deleting a vault secret by such a key was a 500.
    let vault = app.post("/api/vaults", &u.key, json!({"name": "v"})).await;
    let path = format!("/api/vaults/{}/secrets/A%00B", vault.body["data"]["id"].as_str().unwrap());
    assert_error(&app.delete(&path, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(app.get("/api/keys", &u.key).await.body["data"].as_array().unwrap().len(), 1, "nothing was written");
}

/// Transactions that read before they write must not fail when another
/// connection commits in between (on SQLite that needs `BEGIN IMMEDIATE`).
async fn concurrent_writes_never_fail(b: Backend) {
    let app = std::sync::Arc::new(spawn(b).await);
    let u = app.user().await;
    let mut tasks = Vec::new();
    for i in 0..24 {
        let (app, key) = (app.clone(), u.key.clone());
        tasks.push(tokio::spawn(async move {
            // A fresh key's first use writes `last_used_at` in the background.
            let r = app.post("/api/keys", &key, json!({"name": format!("k{i}")})).await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
            let fresh = r.body["data"]["api_key"].as_str().unwrap().to_owned();
            let r =
                app.post("/api/account/inference-credential-sets", &fresh, json!({"name": format!("set {i}")})).await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
            let r = app.post("/api/agents", &fresh, json!({"name": format!("agent {i}"), "runtime": "claude"})).await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let sets = app.get("/api/account/inference-credential-sets", &u.key).await;
    let defaults = sets.body["data"].as_array().unwrap().iter().filter(|s| s["is_default"] == true).count();
    assert_eq!(defaults, 1, "racing first sets still leave exactly one default");

    // Racing first writes through the default-set route share one `Default` set.
    let v = app.user().await;
    let mut tasks = Vec::new();
    for provider in ["anthropic_api_key", "claude_code_oauth_token", "openai_api_key", "gemini_api_key"] {
        let (app, key) = (app.clone(), v.key.clone());
        tasks.push(tokio::spawn(async move {
            let path = format!("/api/account/inference-credentials/{provider}");
            let r = app.request(reqwest::Method::PUT, &path, Some(&key), Some(json!({"value": "v"}))).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let sets = app.get("/api/account/inference-credential-sets", &v.key).await;
    assert_eq!(sets.body["data"].as_array().unwrap().len(), 1, "{}", sets.text);
    assert_eq!(sets.body["data"][0]["providers"].as_array().unwrap().len(), 4);
}
