//! One account can never see or touch another's records: always 404.

use reqwest::StatusCode;
use serde_json::json;

use crate::both;
use crate::common::{Backend, assert_error, spawn};

both!(accounts_are_isolated);

async fn accounts_are_isolated(b: Backend) {
    let app = spawn(b).await;
    let alice = app.user().await;
    let bob = app.user().await;

    let r = app.post("/api/keys", &alice.key, json!({"name": "alice ci"})).await;
    let alice_key_id = r.body["data"]["key"]["id"].as_str().unwrap().to_owned();
    let r = app
        .post("/api/support/reports", &alice.key, json!({"category": "bug", "message": "alice's secret trouble"}))
        .await;
    let report_id = r.body["data"]["id"].as_str().unwrap().to_owned();

    assert_error(&app.delete(&format!("/api/keys/{alice_key_id}"), &bob.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(
        &app.get(&format!("/api/support/reports/{report_id}"), &bob.key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );

    let keys = app.get("/api/keys", &bob.key).await;
    assert!(!keys.text.contains(&alice_key_id));
    let reports = app.get("/api/support/reports", &bob.key).await;
    assert_eq!(reports.body["data"].as_array().unwrap().len(), 0);
    let audit = app.get("/api/audit", &bob.key).await;
    assert!(!audit.text.contains(&report_id) && !audit.text.contains(&alice.id), "{}", audit.text);

    // Alice still has everything.
    assert_eq!(app.get(&format!("/api/support/reports/{report_id}"), &alice.key).await.status, StatusCode::OK);
    assert_eq!(app.delete(&format!("/api/keys/{alice_key_id}"), &alice.key).await.status, StatusCode::NO_CONTENT);
}
