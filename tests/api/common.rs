//! The shared harness lives in the `acs-testkit` crate, so extension crates test with it too.

pub use acs_testkit::*;

/// The `id` of an object in a response.
pub fn id(v: &serde_json::Value) -> uuid::Uuid {
    v["id"].as_str().unwrap().parse().unwrap()
}

/// POSTs `body` to `path`, expecting 201; the created object's id.
pub async fn created(app: &TestApp, u: &User, path: &str, body: serde_json::Value) -> uuid::Uuid {
    let r = app.post(path, &u.key, body).await;
    assert_eq!(r.status, reqwest::StatusCode::CREATED, "{}", r.text);
    id(&r.body["data"])
}
