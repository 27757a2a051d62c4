use reqwest::StatusCode;
use serde_json::json;

use crate::both;
use crate::common::{Backend, assert_error, spawn};

both!(search_finds_the_callers_records_only);

async fn search_finds_the_callers_records_only(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let other = app.user().await;
    let r = app
        .post("/api/agents", &u.key, json!({"name": "Release Bot", "runtime": "claude", "description": "ships builds"}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let agent = r.body["data"]["id"].clone();
    let r = app.post("/api/environments", &u.key, json!({"name": "build farm"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let env = r.body["data"]["id"].clone();
    let r = app.post("/api/vaults", &u.key, json!({"name": "prod", "description": "Build secrets"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let vault = r.body["data"]["id"].clone();
    app.post("/api/agents", &u.key, json!({"name": "unrelated", "runtime": "gemini"})).await;
    app.post("/api/agents", &other.key, json!({"name": "other build", "runtime": "claude"})).await;

    let r = app.get("/api/search?q=BUILD", &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let hits = r.body["data"].as_array().unwrap();
    let found: Vec<(String, String)> =
        hits.iter().map(|h| (h["type"].as_str().unwrap().to_owned(), h["id"].as_str().unwrap().to_owned())).collect();
    assert_eq!(
        found,
        vec![
            ("agent".to_owned(), agent.as_str().unwrap().to_owned()),
            ("environment".to_owned(), env.as_str().unwrap().to_owned()),
            ("vault".to_owned(), vault.as_str().unwrap().to_owned()),
        ],
        "matches by name and description, case-insensitively, only the caller's: {}",
        r.text
    );
    assert_eq!(hits[0]["description"], "ships builds");

    // Wildcards are literal.
    assert_eq!(app.get("/api/search?q=%25", &u.key).await.body["data"], json!([]));
    assert_eq!(app.get("/api/search?q=_", &u.key).await.body["data"], json!([]));
    for bad in ["/api/search", "/api/search?q=", "/api/search?q=%20%20"] {
        assert_error(&app.get(bad, &u.key).await, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    }
    let long = "x".repeat(201);
    assert_error(
        &app.get(&format!("/api/search?q={long}"), &u.key).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_failed",
    );
    assert_eq!(app.get(&format!("/api/search?q={}", "x".repeat(200)), &u.key).await.status, StatusCode::OK);
}
