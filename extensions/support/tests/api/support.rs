//! The support extension, forwarding to a real tracker receiver on loopback.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxStatus};
use axum::routing::post;
use base64::Engine;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::both;
use crate::common::{Backend, TestApp, assert_error, spawn, spawn_with};

both!(
    file_and_read_reports,
    report_validation,
    forwards_to_the_tracker,
    failed_forwarding_is_retried,
    disabled_flag_answers_not_enabled
);

/// A tracker that records what it receives and fails the first `fail_first` requests.
#[derive(Clone, Default)]
struct Tracker {
    seen: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
    fail_first: usize,
}

async fn tracker_handler(
    State(t): State<Tracker>,
    headers: HeaderMap,
    body: axum::Json<Value>,
) -> (AxStatus, axum::Json<Value>) {
    let mut seen = t.seen.lock().unwrap();
    seen.push((headers, body.0));
    if seen.len() <= t.fail_first {
        (AxStatus::INTERNAL_SERVER_ERROR, axum::Json(json!({"message": "tracker down"})))
    } else {
        (AxStatus::CREATED, axum::Json(json!({"html_url": format!("https://tracker.test/issues/{}", seen.len())})))
    }
}

async fn start_tracker(t: Tracker) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/issues", post(tracker_handler)).with_state(t);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/issues")
}

async fn wait_for_status(app: &TestApp, key: &str, id: &str, status: &str) -> Value {
    for _ in 0..200 {
        let r = app.get(&format!("/api/support/reports/{id}"), key).await;
        if r.body["data"]["status"] == status {
            return r.body["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("report {id} never reached {status}");
}

async fn file_and_read_reports(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake image bytes");
    let r = app
        .post(
            "/api/support/reports",
            &u.key,
            json!({"category": "stuck", "message": "the agent hangs", "client": "acs-cli/0.1", "context": {"conversation": "c1"}, "screenshot": png, "screenshot_media_type": "image/png"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let d = &r.body["data"];
    assert_eq!(d["status"], "new", "no tracker configured: stays new");
    assert_eq!(d["category"], "stuck");
    assert_eq!(d["has_screenshot"], true);
    assert_eq!(d["screenshot_media_type"], "image/png");
    assert_eq!(d["context"]["conversation"], "c1");
    assert_eq!(d["client"], "acs-cli/0.1");
    let id = d["id"].as_str().unwrap();

    let r = app.post("/api/support/reports", &u.key, json!({"category": "idea", "message": "dark mode"})).await;
    assert_eq!(r.body["data"]["has_screenshot"], false);
    let list = app.get("/api/support/reports", &u.key).await;
    let items = list.body["data"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1]["id"], id, "newest first");
    assert_eq!(app.get(&format!("/api/support/reports/{id}"), &u.key).await.body["data"]["message"], "the agent hangs");
    let audit = app.get("/api/audit", &u.key).await;
    assert_eq!(audit.body["data"][0]["action"], "support_report.created");
}

async fn report_validation(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let post = |body: Value| app.post("/api/support/reports", &u.key, body);
    let r = post(json!({"category": "rant", "message": "x"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"]["category"].is_array());
    assert!(post(json!({"category": "bug", "message": "  "})).await.body["errors"]["message"].is_array());
    assert_eq!(post(json!({"category": "bug", "message": "x".repeat(20_000)})).await.status, StatusCode::CREATED);
    assert!(post(json!({"category": "bug", "message": "x".repeat(20_001)})).await.body["errors"]["message"].is_array());
    assert!(post(json!({"category": "bug", "message": "m", "screenshot": "aGk="})).await.body["errors"]["screenshot_media_type"].is_array());
    assert!(
        post(json!({"category": "bug", "message": "m", "screenshot": "aGk=", "screenshot_media_type": "image/bmp"}))
            .await
            .body["errors"]["screenshot_media_type"]
            .is_array()
    );
    assert!(
        post(json!({"category": "bug", "message": "m", "screenshot": "***", "screenshot_media_type": "image/png"}))
            .await
            .body["errors"]["screenshot"]
            .is_array()
    );
    assert!(
        post(json!({"category": "bug", "message": "m", "screenshot": "", "screenshot_media_type": "image/png"}))
            .await
            .body["errors"]["screenshot"]
            .is_array()
    );
    assert!(
        post(json!({"category": "bug", "message": "m", "context": [1]})).await.body["errors"]["context"].is_array()
    );
    let r = app.get("/api/support/reports/00000000-0000-0000-0000-000000000000", &u.key).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
}

async fn forwards_to_the_tracker(b: Backend) {
    let tracker = Tracker::default();
    let url = start_tracker(tracker.clone()).await;
    let app =
        spawn_with(b, &[("support.forward_url", json!(url)), ("support.forward_token", json!("tracker-secret"))]).await;
    let u = app.user().await;
    let r = app
        .post("/api/support/reports", &u.key, json!({"category": "bug", "message": "crash on start\nstack..."}))
        .await;
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    let d = wait_for_status(&app, &u.key, &id, "forwarded").await;
    assert_eq!(d["external_url"], "https://tracker.test/issues/1");
    assert!(d["forwarded_at"].is_string());
    let seen = tracker.seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "sent once");
    assert_eq!(seen[0].0["authorization"], "Bearer tracker-secret");
    assert_eq!(seen[0].1["title"], "[bug] crash on start");
    assert_eq!(seen[0].1["report"]["id"], id.as_str());
}

async fn failed_forwarding_is_retried(b: Backend) {
    let tracker = Tracker { fail_first: 1, ..Default::default() };
    let url = start_tracker(tracker.clone()).await;
    let app = spawn_with(b, &[("support.forward_url", json!(url)), ("support.retry_seconds", json!(1))]).await;
    let u = app.user().await;
    let r = app.post("/api/support/reports", &u.key, json!({"category": "bug", "message": "flaky"})).await;
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    let d = wait_for_status(&app, &u.key, &id, "failed").await;
    assert!(d["forward_error"].as_str().unwrap().contains("500"), "{d}");
    let d = wait_for_status(&app, &u.key, &id, "forwarded").await;
    assert_eq!(d["forward_error"], Value::Null);
    assert_eq!(d["external_url"], "https://tracker.test/issues/2");
    assert_eq!(tracker.seen.lock().unwrap().len(), 2);
}

async fn disabled_flag_answers_not_enabled(b: Backend) {
    let app = spawn_with(b, &[("features.support", json!(false))]).await;
    let u = app.user().await;
    let r = app.get("/api/support/reports", &u.key).await;
    assert_error(&r, StatusCode::NOT_FOUND, "support_not_enabled");
    // The routes stay documented: the extension is compiled in.
    let docs = app.request(reqwest::Method::GET, "/api/docs", None, None).await;
    assert!(docs.body["paths"]["/api/support/reports"].is_object());
}
