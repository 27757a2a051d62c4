use reqwest::StatusCode;
use serde_json::json;

use crate::both;
use crate::common::{Backend, assert_error, assert_refused, spawn};

both!(
    create_list_revoke,
    key_validation,
    restricted_keys_are_refused_on_key_management,
    expired_keys,
    malformed_bearer
);

async fn create_list_revoke(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.post("/api/keys", &u.key, json!({"name": "ci"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let new_key = r.body["data"]["api_key"].as_str().unwrap().to_owned();
    let id = r.body["data"]["key"]["id"].as_str().unwrap().to_owned();
    assert_eq!(r.body["data"]["key"]["expires_at"], serde_json::Value::Null);
    assert_eq!(app.get("/api/auth/me", &new_key).await.status, StatusCode::OK);

    let r = app.get("/api/keys", &u.key).await;
    let keys = r.body["data"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["id"], id, "newest first");
    assert!(!r.text.contains(&new_key), "the key value is shown once only");

    assert_eq!(app.delete(&format!("/api/keys/{id}"), &u.key).await.status, StatusCode::NO_CONTENT);
    assert_refused(&app.get("/api/auth/me", &new_key).await, StatusCode::UNAUTHORIZED, "api_key_invalid");
    assert_error(&app.delete(&format!("/api/keys/{id}"), &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete("/api/keys/not-a-uuid", &u.key).await, StatusCode::NOT_FOUND, "not_found");
}

async fn key_validation(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.post("/api/keys", &u.key, json!({"name": ""})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"]["name"].is_array());
    assert_eq!(app.post("/api/keys", &u.key, json!({"name": "x".repeat(200)})).await.status, StatusCode::CREATED);
    assert!(app.post("/api/keys", &u.key, json!({"name": "x".repeat(201)})).await.body["errors"]["name"].is_array());

    for bad in [0, -5, 315_360_001] {
        let r = app.post("/api/keys", &u.key, json!({"name": "e", "expires_in": bad})).await;
        assert!(r.body["errors"]["expires_in"].is_array(), "{bad}: {}", r.text);
    }
    assert_eq!(
        app.post("/api/keys", &u.key, json!({"name": "e", "expires_in": 315_360_000})).await.status,
        StatusCode::CREATED
    );
    let r = app.post("/api/keys", &u.key, json!({"name": "e", "expires_in": 1})).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert!(r.body["data"]["key"]["expires_at"].is_string());

    let r = app.post("/api/keys", &u.key, json!({"name": "s", "scope": "admin"})).await;
    assert!(r.body["errors"]["scope"].is_array(), "{}", r.text);
}

async fn restricted_keys_are_refused_on_key_management(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.post("/api/keys", &u.key, json!({"name": "narrow", "scope": "restricted"})).await;
    assert_eq!(r.body["data"]["key"]["scope"], "restricted");
    let narrow = r.body["data"]["api_key"].as_str().unwrap().to_owned();

    assert_eq!(app.get("/api/auth/me", &narrow).await.body["data"]["key"]["scope"], "restricted");
    assert_refused(
        &app.post("/api/keys", &narrow, json!({"name": "wider"})).await,
        StatusCode::FORBIDDEN,
        "insufficient_scope",
    );
    assert_refused(&app.get("/api/keys", &narrow).await, StatusCode::FORBIDDEN, "insufficient_scope");
    let r = app
        .post("/api/account/password", &narrow, json!({"current_password": u.password, "new_password": "whatever123"}))
        .await;
    assert_refused(&r, StatusCode::FORBIDDEN, "insufficient_scope");
}

async fn expired_keys(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.post("/api/keys", &u.key, json!({"name": "brief", "expires_in": 1})).await;
    let brief = r.body["data"]["api_key"].as_str().unwrap().to_owned();
    assert_eq!(app.get("/api/auth/me", &brief).await.status, StatusCode::OK);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_refused(&app.get("/api/auth/me", &brief).await, StatusCode::UNAUTHORIZED, "api_key_expired");
}

async fn malformed_bearer(b: Backend) {
    let app = spawn(b).await;
    let r = app.request(reqwest::Method::GET, "/api/auth/me", None, None).await;
    assert_refused(&r, StatusCode::UNAUTHORIZED, "api_key_invalid");
    for header in ["Bearer", "Basic abc", "Bearer acs_0000", "acs_123"] {
        let r = app.http.get(format!("{}/api/auth/me", app.base)).header("authorization", header).send().await.unwrap();
        let r = crate::common::into_resp(r).await;
        assert_refused(&r, StatusCode::UNAUTHORIZED, "api_key_invalid");
    }
}
