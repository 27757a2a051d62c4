//! Vaults, their secrets and server-side copies (spec 2.4, 4).

use std::collections::BTreeMap;

use figment::providers::Serialized;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use crate::both;
use crate::common::{Backend, Resp, TestApp, assert_error, spawn};
use crate::environments::{assert_never_shown, raw_secret_rows, send};

both!(
    vault_crud,
    vault_bounds,
    vault_secrets_are_write_only_and_expire,
    vault_copy_keeps_values,
    other_accounts_vaults_are_not_found
);

/// A second server state over the test server's database and key file, to
/// call the functions later issues use (decryption included) directly.
pub async fn core_state(app: &TestApp) -> acs::core::AppState {
    let fig = acs::core::extension::config::figment(None)
        .merge(Serialized::default("database.url", &app.db_url))
        .merge(Serialized::default("database.max_connections", 2))
        .merge(Serialized::default("secrets.master_key_file", app.dir.join("acs.key").display().to_string()));
    let loaded = acs::core::extension::config::from_figment(fig).expect("configuration");
    acs::core::server::build(loaded).await.expect("state").state
}

fn now_micros() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1000) as i64
}

fn in_secs(s: i64) -> String {
    // Whole seconds: the server keeps microseconds.
    let t = OffsetDateTime::now_utc() + time::Duration::seconds(s);
    t.replace_nanosecond(0).unwrap().format(&Rfc3339).unwrap()
}

async fn create(app: &TestApp, key: &str, body: Value) -> Value {
    let r = app.post("/api/vaults", key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"].clone()
}

#[track_caller]
fn assert_invalid(r: &Resp, field: &str) {
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"][field].is_array(), "expected errors.{field}: {}", r.text);
}

async fn live(app: &TestApp, account: &str, vault: &str, at: i64) -> BTreeMap<String, String> {
    let state = core_state(app).await;
    acs::core::vaults::live_secret_values(&state, account.parse().unwrap(), vault.parse().unwrap(), at)
        .await
        .unwrap()
        .into_iter()
        .collect()
}

/// Moves a secret's expiry into the past, past the API (which only accepts future times).
async fn expire(app: &TestApp, vault: &str, key: &str) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&app.db_url).await.unwrap();
    sqlx::query("UPDATE vault_secrets SET expires_at = $1 WHERE vault_id = $2 AND key = $3")
        .bind(now_micros() - 1_000_000)
        .bind(vault.to_owned())
        .bind(key.to_owned())
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

async fn vault_crud(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let v = create(&app, &u.key, json!({"name": " prod "})).await;
    assert_eq!(v["name"], "prod");
    assert_eq!(v["description"], Value::Null);
    assert_eq!(v["metadata"], json!({}));
    assert!(v["inserted_at"].is_string() && v["updated_at"].is_string());
    let full =
        create(&app, &u.key, json!({"name": "staging", "description": "for CI", "metadata": {"owner": "ops"}})).await;
    assert_eq!(full["description"], "for CI");
    assert_eq!(full["metadata"], json!({"owner": "ops"}));
    let id = full["id"].as_str().unwrap().to_owned();

    assert_eq!(app.get(&format!("/api/vaults/{id}"), &u.key).await.body["data"], full);
    let list = app.get("/api/vaults", &u.key).await.body["data"].clone();
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(list[0]["id"], id.as_str(), "newest first");

    let path = format!("/api/vaults/{id}");
    let r = app.request(Method::PATCH, &path, Some(&u.key), Some(json!({"name": "stage"}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["name"], "stage");
    assert_eq!(r.body["data"]["description"], "for CI", "omitted fields are unchanged");
    assert_eq!(r.body["data"]["metadata"], json!({"owner": "ops"}));
    let r = app.request(Method::PATCH, &path, Some(&u.key), Some(json!({"description": null, "metadata": {}}))).await;
    assert_eq!(r.body["data"]["description"], Value::Null, "null clears the description");
    assert_eq!(r.body["data"]["metadata"], json!({}));
    assert_eq!(app.get(&path, &u.key).await.body["data"], r.body["data"]);

    assert_eq!(app.delete(&path, &u.key).await.status, StatusCode::NO_CONTENT);
    assert_error(&app.get(&path, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete(&path, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.get("/api/vaults/nope", &u.key).await, StatusCode::NOT_FOUND, "not_found");

    let r = app.get("/api/audit?limit=500", &u.key).await;
    let actions: Vec<&str> = r.body["data"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    for a in ["vault.created", "vault.updated", "vault.deleted"] {
        assert!(actions.contains(&a), "{a} in {actions:?}");
    }
}

async fn vault_bounds(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let post = |body: Value| app.post("/api/vaults", &u.key, body);
    assert_invalid(&post(json!({})).await, "name");
    assert_invalid(&post(json!({"name": ""})).await, "name");
    assert_invalid(&post(json!({"name": " "})).await, "name");
    assert_eq!(post(json!({"name": "é".repeat(200)})).await.status, StatusCode::CREATED);
    assert_invalid(&post(json!({"name": "é".repeat(201)})).await, "name");
    assert_eq!(post(json!({"name": "d", "description": "é".repeat(2000)})).await.status, StatusCode::CREATED);
    assert_invalid(&post(json!({"name": "d", "description": "é".repeat(2001)})).await, "description");
    assert_invalid(&post(json!({"name": "m", "metadata": "x"})).await, "metadata");

    let v = create(&app, &u.key, json!({"name": "keep"})).await;
    let path = format!("/api/vaults/{}", v["id"].as_str().unwrap());
    for body in [json!({"name": ""}), json!({"name": "x".repeat(201)}), json!({"description": "d".repeat(2001)})] {
        let r = app.request(Method::PATCH, &path, Some(&u.key), Some(body)).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    }
    assert_eq!(app.get(&path, &u.key).await.body["data"], v, "refused updates change nothing");
}

async fn vault_secrets_are_write_only_and_expire(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let mut seen = Vec::new();
    let forever = format!("forever-{}", Uuid::new_v4());
    let brief = format!("brief-{}", Uuid::new_v4());
    let replaced = format!("replaced-{}", Uuid::new_v4());
    let big = format!("big-{}", "v".repeat(64 * 1024 - 4));

    let r = send(&app, &mut seen, Method::POST, "/api/vaults", &u.key, Some(json!({"name": "v"}))).await;
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    let secret = |k: &str| format!("/api/vaults/{id}/secrets/{k}");

    let r = send(&app, &mut seen, Method::PUT, &secret("FOREVER"), &u.key, Some(json!({"value": forever}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["data"]["expires_at"], Value::Null);
    assert_eq!(r.body["data"]["vault_id"], id.as_str());
    let expiry = in_secs(3600);
    let body = json!({"value": brief, "expires_at": expiry});
    let r = send(&app, &mut seen, Method::PUT, &secret("BRIEF"), &u.key, Some(body)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let at = OffsetDateTime::parse(r.body["data"]["expires_at"].as_str().unwrap(), &Rfc3339).unwrap();
    assert_eq!(at, OffsetDateTime::parse(&expiry, &Rfc3339).unwrap());
    let secret_id = r.body["data"]["id"].clone();

    for bad in [json!(in_secs(-5)), json!("tomorrow"), json!(12)] {
        let body = json!({"value": "x", "expires_at": bad});
        assert_invalid(&send(&app, &mut seen, Method::PUT, &secret("BAD"), &u.key, Some(body)).await, "expires_at");
    }
    assert_invalid(
        &send(&app, &mut seen, Method::PUT, &secret("E"), &u.key, Some(json!({"value": ""}))).await,
        "value",
    );
    let r = send(&app, &mut seen, Method::PUT, &secret("BIG"), &u.key, Some(json!({"value": big}))).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let r = send(&app, &mut seen, Method::PUT, &secret("BIG"), &u.key, Some(json!({"value": format!("{big}x")}))).await;
    assert_invalid(&r, "value");
    assert_invalid(
        &send(&app, &mut seen, Method::PUT, &secret("9X"), &u.key, Some(json!({"value": "x"}))).await,
        "key",
    );
    let r = send(&app, &mut seen, Method::PUT, &secret(&"K".repeat(257)), &u.key, Some(json!({"value": "x"}))).await;
    assert_invalid(&r, "key");

    // Replacing without expires_at makes it permanent; the id stays.
    let body = json!({"value": replaced, "expires_at": in_secs(60)});
    assert_eq!(send(&app, &mut seen, Method::PUT, &secret("BRIEF"), &u.key, Some(body)).await.status, StatusCode::OK);
    let r = send(&app, &mut seen, Method::PUT, &secret("BRIEF"), &u.key, Some(json!({"value": replaced}))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["data"]["id"], secret_id);
    assert_eq!(r.body["data"]["expires_at"], Value::Null);
    let body = json!({"value": brief, "expires_at": expiry});
    assert_eq!(send(&app, &mut seen, Method::PUT, &secret("BRIEF"), &u.key, Some(body)).await.status, StatusCode::OK);

    let live_now = live(&app, &u.id, &id, now_micros()).await;
    assert_eq!(live_now.keys().collect::<Vec<_>>(), ["BIG", "BRIEF", "FOREVER"]);
    assert_eq!(live_now["BRIEF"], brief);
    assert_eq!(live_now["FOREVER"], forever);
    assert_eq!(live_now["BIG"], big);

    // Expired: still listed with its expiry, no longer injected.
    expire(&app, &id, "BRIEF").await;
    let r = send(&app, &mut seen, Method::GET, &format!("/api/vaults/{id}/secrets"), &u.key, None).await;
    let list = r.body["data"].as_array().unwrap();
    assert_eq!(list.iter().map(|s| s["key"].as_str().unwrap()).collect::<Vec<_>>(), ["BIG", "BRIEF", "FOREVER"]);
    let listed = OffsetDateTime::parse(list[1]["expires_at"].as_str().unwrap(), &Rfc3339).unwrap();
    assert!(listed < OffsetDateTime::now_utc());
    let live_now = live(&app, &u.id, &id, now_micros()).await;
    assert_eq!(live_now.keys().collect::<Vec<_>>(), ["BIG", "FOREVER"]);

    for (key, ciphertext) in raw_secret_rows(&app, "vault_secrets").await {
        assert!(ciphertext.starts_with("v1:"), "{key}");
        for v in [&forever, &brief, &replaced, &big] {
            assert!(!ciphertext.contains(v.as_str()), "{key} stored in clear");
        }
    }

    assert_eq!(
        send(&app, &mut seen, Method::DELETE, &secret("BIG"), &u.key, None).await.status,
        StatusCode::NO_CONTENT
    );
    assert_error(
        &send(&app, &mut seen, Method::DELETE, &secret("BIG"), &u.key, None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    send(&app, &mut seen, Method::GET, &format!("/api/vaults/{id}"), &u.key, None).await;
    send(&app, &mut seen, Method::GET, "/api/audit?limit=500", &u.key, None).await;
    let actions = seen.last().unwrap().clone();
    assert!(actions.contains("vault.secret.set") && actions.contains("vault.secret.deleted"));

    assert_eq!(
        send(&app, &mut seen, Method::DELETE, &format!("/api/vaults/{id}"), &u.key, None).await.status,
        StatusCode::NO_CONTENT
    );
    assert!(raw_secret_rows(&app, "vault_secrets").await.is_empty(), "secrets go with their vault");
    assert_never_shown(&seen, &[&forever, &brief, &replaced, &big]);
}

async fn vault_copy_keeps_values(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let mut seen = Vec::new();
    let alpha = format!("alpha-{}", Uuid::new_v4());
    let old = format!("old-{}", Uuid::new_v4());
    let body = json!({"name": "source", "description": "keys", "metadata": {"env": "prod"}});
    let r = send(&app, &mut seen, Method::POST, "/api/vaults", &u.key, Some(body)).await;
    let src = r.body["data"]["id"].as_str().unwrap().to_owned();
    for (k, v) in [("ALPHA", &alpha), ("OLD", &old)] {
        let path = format!("/api/vaults/{src}/secrets/{k}");
        let r =
            send(&app, &mut seen, Method::PUT, &path, &u.key, Some(json!({"value": v, "expires_at": in_secs(600)})))
                .await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let r = send(
        &app,
        &mut seen,
        Method::PUT,
        &format!("/api/vaults/{src}/secrets/ALPHA"),
        &u.key,
        Some(json!({"value": alpha})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    expire(&app, &src, "OLD").await;

    let r = send(&app, &mut seen, Method::POST, &format!("/api/vaults/{src}/copy"), &u.key, Some(json!({}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let copy = r.body["data"].clone();
    let dst = copy["id"].as_str().unwrap().to_owned();
    assert_ne!(dst, src);
    assert_eq!(copy["name"], "source (copy)");
    assert_eq!(copy["description"], "keys");
    assert_eq!(copy["metadata"], json!({"env": "prod"}));

    let from = app.get(&format!("/api/vaults/{src}/secrets"), &u.key).await;
    let to = app.get(&format!("/api/vaults/{dst}/secrets"), &u.key).await;
    seen.push(from.text.clone());
    seen.push(to.text.clone());
    let strip = |v: &Value| {
        v.as_array().unwrap().iter().map(|s| (s["key"].clone(), s["expires_at"].clone())).collect::<Vec<_>>()
    };
    assert_eq!(strip(&to.body["data"]), strip(&from.body["data"]), "same keys and expiries");
    assert_eq!(to.body["data"][0]["vault_id"], dst.as_str());
    assert!(to.body["data"][1]["expires_at"].is_string(), "the expired secret came along with its expiry");

    // New rows, sealed for the new vault: other ciphertexts, same values.
    let rows = raw_secret_rows(&app, "vault_secrets").await;
    assert_eq!(rows.len(), 4);
    let (a, b) = (&rows[0], &rows[1]);
    assert_eq!((a.0.as_str(), b.0.as_str()), ("ALPHA", "ALPHA"));
    assert_ne!(a.1, b.1);
    for (_, ciphertext) in &rows {
        assert!(!ciphertext.contains(&alpha) && !ciphertext.contains(&old));
    }
    let copied = live(&app, &u.id, &dst, now_micros()).await;
    assert_eq!(copied.into_iter().collect::<Vec<_>>(), [("ALPHA".to_owned(), alpha.clone())]);
    let before_expiry = live(&app, &u.id, &dst, now_micros() - 10_000_000).await;
    assert_eq!(before_expiry["OLD"], old);

    // The copy is independent of its source.
    assert_eq!(app.delete(&format!("/api/vaults/{src}"), &u.key).await.status, StatusCode::NO_CONTENT);
    assert_eq!(live(&app, &u.id, &dst, now_micros()).await["ALPHA"], alpha);

    // Explicit name and description; bounds; default name of a long name.
    let body = json!({"name": "mine", "description": null});
    let r = send(&app, &mut seen, Method::POST, &format!("/api/vaults/{dst}/copy"), &u.key, Some(body)).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.body["data"]["name"], "mine");
    assert_eq!(r.body["data"]["description"], Value::Null);
    let copy_path = format!("/api/vaults/{dst}/copy");
    assert_invalid(&app.post(&copy_path, &u.key, json!({"name": "x".repeat(201)})).await, "name");
    assert_invalid(&app.post(&copy_path, &u.key, json!({"name": ""})).await, "name");
    assert_invalid(&app.post(&copy_path, &u.key, json!({"description": "d".repeat(2001)})).await, "description");
    let long = create(&app, &u.key, json!({"name": "n".repeat(200)})).await;
    let r = app.post(&format!("/api/vaults/{}/copy", long["id"].as_str().unwrap()), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["data"]["name"], format!("{} (copy)", "n".repeat(193)));
    assert_error(
        &app.post("/api/vaults/00000000-0000-0000-0000-000000000000/copy", &u.key, json!({})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );

    let r = send(&app, &mut seen, Method::GET, "/api/audit?limit=500", &u.key, None).await;
    assert!(r.text.contains("vault.copied"));
    assert_never_shown(&seen, &[&alpha, &old]);
}

async fn other_accounts_vaults_are_not_found(b: Backend) {
    let app = spawn(b).await;
    let owner = app.user().await;
    let other = app.user().await;
    let v = create(&app, &owner.key, json!({"name": "mine", "description": "private"})).await;
    let id = v["id"].as_str().unwrap();
    let base = format!("/api/vaults/{id}");
    let r = app
        .request(Method::PUT, &format!("{base}/secrets/TOKEN"), Some(&owner.key), Some(json!({"value": "owner-value"})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);

    let calls = [
        (Method::GET, base.clone(), None),
        (Method::PATCH, base.clone(), Some(json!({"name": "stolen"}))),
        (Method::DELETE, base.clone(), None),
        (Method::GET, format!("{base}/secrets"), None),
        (Method::PUT, format!("{base}/secrets/TOKEN"), Some(json!({"value": "overwritten"}))),
        (Method::PUT, format!("{base}/secrets/NEW"), Some(json!({"value": "planted"}))),
        (Method::DELETE, format!("{base}/secrets/TOKEN"), None),
        (Method::POST, format!("{base}/copy"), Some(json!({}))),
        (Method::POST, format!("{base}/copy"), Some(json!({"name": "loot"}))),
    ];
    for (m, p, body) in calls {
        let r = app.request(m.clone(), &p, Some(&other.key), body).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
        assert!(!r.text.contains("private"), "{m} {p}: {}", r.text);
    }
    assert_eq!(app.get("/api/vaults", &other.key).await.body["data"], json!([]), "no copy was made");
    let state = core_state(&app).await;
    let vault_id = id.parse().unwrap();
    assert!(
        acs::core::vaults::live_secret_values(&state, other.id.parse().unwrap(), vault_id, now_micros()).await.is_err()
    );

    assert_eq!(app.get(&base, &owner.key).await.body["data"], v, "unchanged");
    assert_eq!(live(&app, &owner.id, id, now_micros()).await["TOKEN"], "owner-value");
}
