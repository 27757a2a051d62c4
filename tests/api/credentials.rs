//! Inference credential sets (spec 2.5, 4.3) and encryption at rest.

use std::process::Command;

use acs::core::credentials::credential_value;
use acs::core::db::Db;
use acs::core::secrets::{Crypto, Keyring};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::both;
use crate::common::{Backend, TestApp, assert_error, assert_refused, spawn};

both!(
    default_set_is_created_on_first_provider_write,
    sets_are_named_ordered_and_bounded,
    default_cannot_be_deleted_or_demoted,
    provider_values_are_write_only_and_encrypted,
    restricted_keys_are_refused,
    other_accounts_sets_are_404,
    master_key_rotation_keeps_values_readable,
);

const SECRET: &str = "sk-ant-very-secret-value-0123456789";

async fn put(app: &TestApp, key: &str, path: &str, body: Value) -> crate::common::Resp {
    app.request(Method::PUT, path, Some(key), Some(body)).await
}

async fn patch(app: &TestApp, key: &str, path: &str, body: Value) -> crate::common::Resp {
    app.request(Method::PATCH, path, Some(key), Some(body)).await
}

async fn default_set_is_created_on_first_provider_write(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.get("/api/account/inference-credentials", &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 4);
    assert!(r.body["data"].as_array().unwrap().iter().all(|s| s["set"] == false));
    assert_eq!(app.get("/api/account/inference-credential-sets", &u.key).await.body["data"], json!([]));

    let r = put(&app, &u.key, "/api/account/inference-credentials/anthropic_api_key", json!({"value": SECRET})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"], json!({"provider": "anthropic_api_key", "set": true}));
    let sets = app.get("/api/account/inference-credential-sets", &u.key).await.body;
    assert_eq!(sets["data"].as_array().unwrap().len(), 1);
    assert_eq!(sets["data"][0]["name"], "Default");
    assert_eq!(sets["data"][0]["is_default"], true);
    assert_eq!(sets["data"][0]["providers"], json!(["anthropic_api_key"]));
    assert_eq!(sets["data"][0]["openai_grant_id"], Value::Null);
    assert_eq!(sets["data"][0]["openai_grant"], Value::Null);
    let r = app.get("/api/account/inference-credentials", &u.key).await;
    assert_eq!(r.body["data"][0], json!({"provider": "anthropic_api_key", "set": true}));

    assert_eq!(
        app.delete("/api/account/inference-credentials/anthropic_api_key", &u.key).await.status,
        StatusCode::NO_CONTENT
    );
    assert_error(
        &app.delete("/api/account/inference-credentials/anthropic_api_key", &u.key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &put(&app, &u.key, "/api/account/inference-credentials/mistral_api_key", json!({"value": "x"})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
}

async fn sets_are_named_ordered_and_bounded(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let first = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "zeta"})).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
    assert_eq!(first.body["data"]["is_default"], true, "the first set is the default");
    assert_eq!(first.body["data"]["providers"], json!([]));
    for name in ["beta", "alpha"] {
        let r = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": name})).await;
        assert_eq!(r.body["data"]["is_default"], false);
    }
    let names: Vec<Value> = app.get("/api/account/inference-credential-sets", &u.key).await.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("zeta"), json!("alpha"), json!("beta")], "default first, then by name");

    let r = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "alpha"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert_eq!(r.body["errors"]["name"][0], "has already been taken");
    assert_eq!(
        app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "n".repeat(200)})).await.status,
        StatusCode::CREATED
    );
    let r = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "n".repeat(201)})).await;
    assert!(r.body["errors"]["name"].is_array(), "{}", r.text);
    assert!(
        app.post("/api/account/inference-credential-sets", &u.key, json!({"name": " "})).await.body["errors"]["name"]
            .is_array()
    );

    let beta = app.get("/api/account/inference-credential-sets", &u.key).await.body["data"][2]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r =
        patch(&app, &u.key, &format!("/api/account/inference-credential-sets/{beta}"), json!({"name": "alpha"})).await;
    assert!(r.body["errors"]["name"].is_array(), "rename onto a taken name: {}", r.text);
    let r =
        patch(&app, &u.key, &format!("/api/account/inference-credential-sets/{beta}"), json!({"name": "gamma"})).await;
    assert_eq!(r.body["data"]["name"], "gamma");
    // Another account may use the same names.
    let other = app.user().await;
    assert_eq!(
        app.post("/api/account/inference-credential-sets", &other.key, json!({"name": "alpha"})).await.status,
        StatusCode::CREATED
    );
}

async fn default_cannot_be_deleted_or_demoted(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "a"})).await.body["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bb = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "b"})).await.body["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = app.delete(&format!("/api/account/inference-credential-sets/{a}"), &u.key).await;
    assert_error(&r, StatusCode::CONFLICT, "credential_set_is_default");
    assert_eq!(r.body["reason"], "is_default");
    let r =
        patch(&app, &u.key, &format!("/api/account/inference-credential-sets/{a}"), json!({"is_default": false})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"]["is_default"].is_array());

    let r =
        patch(&app, &u.key, &format!("/api/account/inference-credential-sets/{bb}"), json!({"is_default": true})).await;
    assert_eq!(r.body["data"]["is_default"], true, "{}", r.text);
    let sets = app.get("/api/account/inference-credential-sets", &u.key).await.body;
    let defaults: Vec<&Value> = sets["data"].as_array().unwrap().iter().filter(|s| s["is_default"] == true).collect();
    assert_eq!(defaults.len(), 1, "exactly one default");
    assert_eq!(defaults[0]["id"], bb.as_str());
    assert_eq!(
        app.delete(&format!("/api/account/inference-credential-sets/{a}"), &u.key).await.status,
        StatusCode::NO_CONTENT
    );

    // Provider writes now go to the promoted set.
    put(&app, &u.key, "/api/account/inference-credentials/gemini_api_key", json!({"value": "g-key"})).await;
    let sets = app.get("/api/account/inference-credential-sets", &u.key).await.body;
    assert_eq!(sets["data"][0]["providers"], json!(["gemini_api_key"]));

    let r = patch(
        &app,
        &u.key,
        &format!("/api/account/inference-credential-sets/{bb}"),
        json!({"openai_grant_id": Uuid::new_v4()}),
    )
    .await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    let r =
        patch(&app, &u.key, &format!("/api/account/inference-credential-sets/{bb}"), json!({"openai_grant_id": null}))
            .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

async fn provider_values_are_write_only_and_encrypted(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let set =
        app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "work"})).await.body["data"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
    let mut seen = String::new();
    for provider in ["anthropic_api_key", "claude_code_oauth_token", "openai_api_key", "gemini_api_key"] {
        let r = put(
            &app,
            &u.key,
            &format!("/api/account/inference-credential-sets/{set}/credentials/{provider}"),
            json!({"value": format!("{SECRET}-{provider}")}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        seen += &r.text;
    }
    for path in ["/api/account/inference-credential-sets", "/api/account/inference-credentials", "/api/audit"] {
        seen += &app.get(path, &u.key).await.text;
    }
    let r = put(
        &app,
        &u.key,
        &format!("/api/account/inference-credential-sets/{set}/credentials/openai_api_key"),
        json!({"value": ""}),
    )
    .await;
    assert!(r.body["errors"]["value"].is_array());
    seen += &r.text;
    assert!(!seen.contains(SECRET), "a value leaked into a response");
    let sets = app.get("/api/account/inference-credential-sets", &u.key).await.body;
    assert_eq!(
        sets["data"][0]["providers"],
        json!(["anthropic_api_key", "claude_code_oauth_token", "gemini_api_key", "openai_api_key"])
    );

    // The stored rows hold ciphertext only.
    sqlx::any::install_default_drivers();
    let raw = sqlx::AnyPool::connect(&app.db_url).await.unwrap();
    let rows = sqlx::query("SELECT ciphertext FROM inference_credentials").fetch_all(&raw).await.unwrap();
    assert_eq!(rows.len(), 4);
    for row in rows {
        let c: String = row.try_get("ciphertext").unwrap();
        assert!(c.starts_with("v1:") && !c.contains("secret"), "{c}");
    }
    let keys = sqlx::query("SELECT wrapped_key FROM account_data_keys").fetch_all(&raw).await.unwrap();
    assert_eq!(keys.len(), 1, "one data key for the account, stored wrapped");

    // The server itself can read them back.
    let state = app.state();
    let account: Uuid = u.id.parse().unwrap();
    let v = credential_value(state, account, set.parse().unwrap(), "openai_api_key").await.unwrap();
    assert_eq!(v.as_deref(), Some(format!("{SECRET}-openai_api_key").as_str()));
    let r =
        app.delete(&format!("/api/account/inference-credential-sets/{set}/credentials/openai_api_key"), &u.key).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(credential_value(state, account, set.parse().unwrap(), "openai_api_key").await.unwrap(), None);
}

async fn restricted_keys_are_refused(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let narrow =
        app.post("/api/keys", &u.key, json!({"name": "n", "scope": "restricted"})).await.body["data"]["api_key"]
            .as_str()
            .unwrap()
            .to_owned();
    let set = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "s"})).await.body["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let paths: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, "/api/account/inference-credential-sets".into(), None),
        (Method::POST, "/api/account/inference-credential-sets".into(), Some(json!({"name": "x"}))),
        (Method::PATCH, format!("/api/account/inference-credential-sets/{set}"), Some(json!({"name": "y"}))),
        (Method::DELETE, format!("/api/account/inference-credential-sets/{set}"), None),
        (
            Method::PUT,
            format!("/api/account/inference-credential-sets/{set}/credentials/openai_api_key"),
            Some(json!({"value": "v"})),
        ),
        (Method::DELETE, format!("/api/account/inference-credential-sets/{set}/credentials/openai_api_key"), None),
        (Method::GET, "/api/account/inference-credentials".into(), None),
        (Method::PUT, "/api/account/inference-credentials/openai_api_key".into(), Some(json!({"value": "v"}))),
        (Method::DELETE, "/api/account/inference-credentials/openai_api_key".into(), None),
    ];
    for (m, path, body) in paths {
        let r = app.request(m.clone(), &path, Some(&narrow), body).await;
        assert_refused(&r, StatusCode::FORBIDDEN, "insufficient_scope");
    }
}

async fn other_accounts_sets_are_404(b: Backend) {
    let app = spawn(b).await;
    let alice = app.user().await;
    let bob = app.user().await;
    let set = app.post("/api/account/inference-credential-sets", &alice.key, json!({"name": "mine"})).await.body["data"]["id"].as_str().unwrap().to_owned();
    app.post("/api/account/inference-credential-sets", &alice.key, json!({"name": "second"})).await;
    let base = format!("/api/account/inference-credential-sets/{set}");
    assert_error(&patch(&app, &bob.key, &base, json!({"name": "stolen"})).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&patch(&app, &bob.key, &base, json!({"is_default": true})).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete(&base, &bob.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(
        &put(&app, &bob.key, &format!("{base}/credentials/openai_api_key"), json!({"value": "x"})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &app.delete(&format!("{base}/credentials/openai_api_key"), &bob.key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_eq!(app.get("/api/account/inference-credential-sets", &bob.key).await.body["data"], json!([]));
    assert_eq!(app.get("/api/account/inference-credential-sets", &alice.key).await.body["data"][0]["name"], "mine");
}

async fn master_key_rotation_keeps_values_readable(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    put(&app, &u.key, "/api/account/inference-credentials/openai_api_key", json!({"value": SECRET})).await;
    let key_file = app.dir.join("acs.key");
    // A keyring loaded before the rotation, as a long-running server holds it.
    let before = Keyring::from_file(&key_file).unwrap();
    let old_id = before.current().0;

    let out = Command::new(env!("CARGO_BIN_EXE_acs"))
        .args(["keys", "rotate-master"])
        .env("ACS_DATABASE__URL", &app.db_url)
        .env("ACS_SECRETS__MASTER_KEY_FILE", &key_file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("re-wrapped 1 account data key"), "{text}");

    let after = Keyring::from_file(&key_file).unwrap();
    assert_ne!(after.current().0, old_id);
    assert!(after.get(&old_id).is_some(), "the old key stays until nothing needs it");
    sqlx::any::install_default_drivers();
    let db =
        Db::connect(&acs::core::config::DatabaseConfig { url: app.db_url.clone(), max_connections: 2 }).await.unwrap();
    let wrapped_with: String =
        sqlx::query_scalar("SELECT master_key_id FROM account_data_keys").fetch_one(&db.pool).await.unwrap();
    assert_eq!(wrapped_with, after.current().0);

    // The old in-memory keyring meets an unknown key id, re-reads the file, and reads on.
    let stale = Crypto::new(before);
    let set: String = sqlx::query_scalar("SELECT set_id FROM inference_credentials").fetch_one(&db.pool).await.unwrap();
    let sealed: String =
        sqlx::query_scalar("SELECT ciphertext FROM inference_credentials").fetch_one(&db.pool).await.unwrap();
    let account: Uuid = u.id.parse().unwrap();
    let value =
        stale.decrypt(&db, account, &format!("inference_credential:{set}:openai_api_key"), &sealed).await.unwrap();
    assert_eq!(value, SECRET);
    // And the running server still reads it.
    let v = credential_value(app.state(), account, set.parse().unwrap(), "openai_api_key").await.unwrap();
    assert_eq!(v.as_deref(), Some(SECRET));
    // New writes after rotation work too.
    let r = put(&app, &u.key, "/api/account/inference-credentials/gemini_api_key", json!({"value": "after-rotation"}))
        .await;
    assert_eq!(r.status, StatusCode::OK);
}
