//! Environments and their secrets (spec 2.4).

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::both;
use crate::common::{Backend, Resp, TestApp, assert_error, spawn};

both!(
    environment_crud,
    environment_bounds,
    repository_rules,
    allowed_hosts,
    fingerprint_follows_build_inputs,
    environment_secrets_are_write_only,
    secret_in_use,
    other_accounts_environments_are_not_found
);

/// Sends a request and keeps the response text, so a test can check that no
/// secret value ever came back.
pub async fn send(
    app: &TestApp,
    seen: &mut Vec<String>,
    m: Method,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> Resp {
    let r = app.request(m, path, Some(key), body).await;
    seen.push(format!("{:?} {}", r.headers, r.text));
    r
}

pub fn assert_never_shown(seen: &[String], values: &[&str]) {
    for text in seen {
        for v in values {
            assert!(!text.contains(v), "a secret value came back: {text}");
        }
    }
}

async fn create(app: &TestApp, key: &str, body: Value) -> Value {
    let r = app.post("/api/environments", key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"].clone()
}

async fn patch(app: &TestApp, key: &str, id: &str, body: Value) -> Resp {
    app.request(Method::PATCH, &format!("/api/environments/{id}"), Some(key), Some(body)).await
}

#[track_caller]
fn assert_invalid(r: &Resp, field: &str) {
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"][field].is_array(), "expected errors.{field}: {}", r.text);
}

async fn audit_actions(app: &TestApp, key: &str) -> Vec<String> {
    let r = app.get("/api/audit?limit=500", key).await;
    r.body["data"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap().to_owned()).collect()
}

async fn environment_crud(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let env = create(&app, &u.key, json!({"name": "  minimal  "})).await;
    assert_eq!(env["name"], "minimal", "names are trimmed");
    assert_eq!(env["setup_timeout_seconds"], 120);
    assert_eq!(env["networking_type"], "unrestricted");
    assert_eq!(env["env_vars"], json!({}));
    assert_eq!(env["metadata"], json!({}));
    assert_eq!(env["packages"], json!({}));
    assert_eq!(env["repositories"], json!([]));
    assert_eq!(env["setup_script"], "");
    assert_eq!(env["networking_config"], json!({}));
    assert_eq!(env["build_fingerprint"].as_str().unwrap().len(), 64);
    for f in ["fingerprint_at", "inserted_at", "updated_at"] {
        assert!(env[f].is_string(), "{f}");
    }

    let full = json!({
        "name": "full",
        "env_vars": {"RUST_LOG": "debug", "_X1": ""},
        "metadata": {"team": "core", "n": 1},
        "packages": {"apt": ["jq"], "npm": ["typescript"]},
        "repositories": [{"url": "https://github.com/acme/app.git", "mount_path": "/workspace/app", "ref": "main"}],
        "setup_script": "make deps",
        "setup_timeout_seconds": 300,
        "networking_type": "limited",
        "networking_config": {"allowed_hosts": ["github.com", "*.npmjs.org"]}
    });
    let f = create(&app, &u.key, full.clone()).await;
    for k in ["env_vars", "metadata", "packages", "setup_script", "setup_timeout_seconds", "networking_type"] {
        assert_eq!(f[k], full[k], "{k}");
    }
    assert_eq!(f["networking_config"], full["networking_config"]);
    assert_eq!(f["repositories"][0]["url"], "https://github.com/acme/app.git");
    assert_eq!(f["repositories"][0]["ref"], "main");
    assert_eq!(f["repositories"][0]["secret_key"], Value::Null);
    let id = f["id"].as_str().unwrap().to_owned();

    let r = app.get(&format!("/api/environments/{id}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["data"], f, "read back as created");

    let r = app.get("/api/environments", &u.key).await;
    let list = r.body["data"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["id"], id.as_str(), "newest first");

    let r = patch(&app, &u.key, &id, json!({"name": "renamed", "setup_timeout_seconds": 60})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let p = &r.body["data"];
    assert_eq!(p["name"], "renamed");
    assert_eq!(p["setup_timeout_seconds"], 60);
    assert_eq!(p["packages"], full["packages"], "omitted fields are unchanged");
    assert_eq!(p["inserted_at"], f["inserted_at"]);
    assert_eq!(app.get(&format!("/api/environments/{id}"), &u.key).await.body["data"], *p);

    // A restricted key manages environments too (the spec reserves full scope for other routes).
    let r = app.post("/api/keys", &u.key, json!({"name": "narrow", "scope": "restricted"})).await;
    let narrow = r.body["data"]["api_key"].as_str().unwrap().to_owned();
    assert_eq!(app.post("/api/environments", &narrow, json!({"name": "n"})).await.status, StatusCode::CREATED);

    assert_eq!(app.delete(&format!("/api/environments/{id}"), &u.key).await.status, StatusCode::NO_CONTENT);
    assert_error(&app.get(&format!("/api/environments/{id}"), &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete(&format!("/api/environments/{id}"), &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.get("/api/environments/not-a-uuid", &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(
        &patch(&app, &u.key, &Uuid::new_v4().to_string(), json!({})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );

    let actions = audit_actions(&app, &u.key).await;
    for a in ["environment.created", "environment.updated", "environment.deleted"] {
        assert!(actions.iter().any(|x| x == a), "{a} in {actions:?}");
    }
}

async fn environment_bounds(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let post = |body: Value| app.post("/api/environments", &u.key, body);

    assert_invalid(&post(json!({})).await, "name");
    assert_invalid(&post(json!({"name": ""})).await, "name");
    assert_invalid(&post(json!({"name": "   "})).await, "name");
    assert_invalid(&post(json!({"name": 5})).await, "name");
    assert_eq!(post(json!({"name": "é".repeat(200)})).await.status, StatusCode::CREATED);
    assert_invalid(&post(json!({"name": "é".repeat(201)})).await, "name");

    for t in [1, 900] {
        let r = post(json!({"name": "t", "setup_timeout_seconds": t})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{t}: {}", r.text);
        assert_eq!(r.body["data"]["setup_timeout_seconds"], t);
    }
    for t in [json!(0), json!(901), json!(-1), json!("60"), json!(1.5)] {
        assert_invalid(&post(json!({"name": "t", "setup_timeout_seconds": t})).await, "setup_timeout_seconds");
    }

    let max = 256 * 1024;
    assert_eq!(post(json!({"name": "s", "setup_script": "x".repeat(max)})).await.status, StatusCode::CREATED);
    assert_invalid(&post(json!({"name": "s", "setup_script": "x".repeat(max + 1)})).await, "setup_script");

    let long_key = "K".repeat(256);
    let r = post(json!({"name": "v", "env_vars": {long_key.clone(): "x".repeat(32 * 1024)}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_invalid(&post(json!({"name": "v", "env_vars": {"K": "x".repeat(32 * 1024 + 1)}})).await, "env_vars.K");
    let too_long = format!("{long_key}K");
    assert_invalid(
        &post(json!({"name": "v", "env_vars": {too_long.clone(): "x"}})).await,
        &format!("env_vars.{too_long}"),
    );
    for bad in ["1A", "A-B", "A B", ""] {
        assert_invalid(&post(json!({"name": "v", "env_vars": {bad: "x"}})).await, &format!("env_vars.{bad}"));
    }
    assert_invalid(&post(json!({"name": "v", "env_vars": {"A": 1}})).await, "env_vars.A");

    assert_invalid(&post(json!({"name": "n", "networking_type": "open"})).await, "networking_type");
    assert_eq!(post(json!({"name": "n", "networking_type": "limited"})).await.status, StatusCode::CREATED);
    assert_invalid(&post(json!({"name": "m", "metadata": ["not", "an", "object"]})).await, "metadata");
    assert_invalid(&post(json!({"name": "m", "packages": "jq"})).await, "packages");

    // PATCH checks the merged result whole and changes nothing when refused.
    let env = create(&app, &u.key, json!({"name": "keep", "setup_timeout_seconds": 30})).await;
    let id = env["id"].as_str().unwrap();
    let r = patch(&app, &u.key, id, json!({"name": "x".repeat(201), "setup_script": "echo"})).await;
    assert_invalid(&r, "name");
    assert_invalid(&patch(&app, &u.key, id, json!({"setup_timeout_seconds": 901})).await, "setup_timeout_seconds");
    assert_invalid(&patch(&app, &u.key, id, json!({"name": ""})).await, "name");
    assert_eq!(app.get(&format!("/api/environments/{id}"), &u.key).await.body["data"], env);
    let r = patch(&app, &u.key, id, json!({"name": null, "setup_script": null})).await;
    assert_eq!(r.body["data"]["name"], "keep", "null leaves a field unchanged");
}

async fn repository_rules(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let with_repo = |repo: Value| app.post("/api/environments", &u.key, json!({"name": "r", "repositories": [repo]}));

    let ok = json!({"url": "https://git.example.com/a/b.git", "mount_path": "/workspace/b"});
    assert_eq!(with_repo(ok).await.status, StatusCode::CREATED);
    for url in [
        "http://git.example.com/a/b",
        "git@github.com:a/b.git",
        "ftp://git.example.com/a",
        "https://",
        "https://user:pass@git.example.com/a/b",
        "https://token@git.example.com/a/b",
        "https://exa mple.com/a",
        "github.com/a/b",
    ] {
        let r = with_repo(json!({"url": url, "mount_path": "/w"})).await;
        assert_invalid(&r, "repositories[0].url");
        assert!(!r.text.contains("pass@"), "credentials are not echoed: {}", r.text);
    }
    for path in ["w", "./w", "/w/../etc", "/..", ""] {
        assert_invalid(
            &with_repo(json!({"url": "https://h.io/r", "mount_path": path})).await,
            "repositories[0].mount_path",
        );
    }
    for r#ref in ["-u", "--upload-pack=touch /x", "a..b", "a b", ""] {
        let r = with_repo(json!({"url": "https://h.io/r", "mount_path": "/w", "ref": r#ref})).await;
        assert_invalid(&r, "repositories[0].ref");
    }
    assert_invalid(&with_repo(json!({"mount_path": "/w"})).await, "repositories[0].url");
    assert_invalid(&with_repo(json!({"url": "https://h.io/r"})).await, "repositories[0].mount_path");
    let r = app
        .post(
            "/api/environments",
            &u.key,
            json!({"name": "two", "repositories": [
                {"url": "https://h.io/a", "mount_path": "/w/a"},
                {"url": "https://h.io/b", "mount_path": "/w/a"}
            ]}),
        )
        .await;
    assert_invalid(&r, "repositories[1].mount_path");

    // On create there are no secrets yet, so no secret_key can name one.
    let private = json!({"url": "https://h.io/private", "mount_path": "/w/p", "secret_key": "GIT_TOKEN"});
    assert_invalid(&with_repo(private.clone()).await, "repositories[0].secret_key");

    let env = create(&app, &u.key, json!({"name": "p"})).await;
    let id = env["id"].as_str().unwrap();
    assert_invalid(
        &patch(&app, &u.key, id, json!({"repositories": [private.clone()]})).await,
        "repositories[0].secret_key",
    );
    let r = app
        .request(
            Method::PUT,
            &format!("/api/environments/{id}/secrets/GIT_TOKEN"),
            Some(&u.key),
            Some(json!({"value": "ghp_x"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = patch(&app, &u.key, id, json!({"repositories": [private]})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["repositories"][0]["secret_key"], "GIT_TOKEN");
    let other = json!({"url": "https://h.io/q", "mount_path": "/w/q", "secret_key": "OTHER"});
    assert_invalid(&patch(&app, &u.key, id, json!({"repositories": [other]})).await, "repositories[0].secret_key");
}

async fn allowed_hosts(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let with_config = |config: Value| {
        app.post(
            "/api/environments",
            &u.key,
            json!({"name": "n", "networking_type": "limited", "networking_config": config}),
        )
    };
    let label = "a".repeat(63);
    let max = format!("{label}.{label}.{label}.{}", "b".repeat(61));
    assert_eq!(max.len(), 253);
    let r = with_config(json!({"allowed_hosts": ["github.com", "*.pypi.org", "localhost", max.clone()]})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(with_config(json!({"allowed_hosts": []})).await.status, StatusCode::CREATED, "empty denies all");
    assert_eq!(with_config(json!({})).await.status, StatusCode::CREATED);

    assert_invalid(
        &with_config(json!({"allowed_hosts": [format!("{max}b")]})).await,
        "networking_config.allowed_hosts[0]",
    );
    for bad in [
        "https://github.com",
        "github.com:443",
        "github.com/x",
        "*",
        "a.*.com",
        "-a.com",
        "a..com",
        "10.0.0.1",
        "a_b.com",
    ] {
        let r = with_config(json!({"allowed_hosts": ["ok.com", bad]})).await;
        assert_invalid(&r, "networking_config.allowed_hosts[1]");
    }
    let r = with_config(json!({"allowed_hosts": ["ok.com"], "blocked_hosts": ["x.com"]})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"].as_object().unwrap().keys().all(|k| k.starts_with("networking_config")), "{}", r.text);
    assert_invalid(&with_config(json!({"allowed_hosts": "github.com"})).await, "networking_config.allowed_hosts");
}

async fn fingerprint_follows_build_inputs(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let env = create(&app, &u.key, json!({"name": "fp", "packages": {"apt": ["jq"]}})).await;
    let id = env["id"].as_str().unwrap();
    let fp = |v: &Value| (v["build_fingerprint"].as_str().unwrap().to_owned(), v["fingerprint_at"].clone());
    let start = fp(&env);

    for body in [
        json!({"name": "renamed"}),
        json!({"env_vars": {"A": "1"}}),
        json!({"metadata": {"k": "v"}}),
        json!({"setup_timeout_seconds": 10}),
        json!({"packages": {"apt": ["jq"]}}),
    ] {
        let r = patch(&app, &u.key, id, body.clone()).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(fp(&r.body["data"]), start, "{body} keeps the fingerprint and its time");
    }

    let mut last = start;
    for body in [
        json!({"setup_script": "echo hi"}),
        json!({"packages": {"apt": ["jq", "git"]}}),
        json!({"repositories": [{"url": "https://h.io/r", "mount_path": "/w"}]}),
        json!({"networking_type": "limited"}),
        json!({"networking_config": {"allowed_hosts": ["a.com"]}}),
    ] {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let r = patch(&app, &u.key, id, body.clone()).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let now = fp(&r.body["data"]);
        assert_ne!(now.0, last.0, "{body} changes the fingerprint");
        assert_ne!(now.1, last.1, "{body} moves fingerprint_at");
        last = now;
    }
    let r = app.get(&format!("/api/environments/{id}"), &u.key).await;
    assert_eq!(fp(&r.body["data"]), last);

    // The same inputs give the same fingerprint, whatever the key order.
    let a = create(&app, &u.key, json!({"name": "a", "packages": {"apt": ["x"], "npm": ["y"]}})).await;
    let b =
        create(&app, &u.key, json!({"name": "b", "packages": {"npm": ["y"], "apt": ["x"]}, "env_vars": {"Z": "1"}}))
            .await;
    assert_eq!(a["build_fingerprint"], b["build_fingerprint"]);
}

/// The (key, ciphertext) rows of a secrets table, read past the server.
pub async fn raw_secret_rows(app: &TestApp, table: &str) -> Vec<(String, String)> {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&app.db_url).await.unwrap();
    let sql = format!("SELECT key, ciphertext FROM {table} ORDER BY key");
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&pool).await.unwrap();
    pool.close().await;
    rows.iter().map(|r| (r.get("key"), r.get("ciphertext"))).collect()
}

async fn environment_secrets_are_write_only(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let mut seen = Vec::new();
    let first = format!("first-{}", Uuid::new_v4());
    let second = format!("second-{}", Uuid::new_v4());
    let other = format!("other-{}", Uuid::new_v4());
    let big = format!("big-{}", "v".repeat(64 * 1024 - 4));
    assert_eq!(big.len(), 64 * 1024);

    let r = send(&app, &mut seen, Method::POST, "/api/environments", &u.key, Some(json!({"name": "s"}))).await;
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    let secret = |k: &str| format!("/api/environments/{id}/secrets/{k}");

    let r = send(&app, &mut seen, Method::PUT, &secret("API_TOKEN"), &u.key, Some(json!({"value": first}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let s = &r.body["data"];
    assert_eq!(s["key"], "API_TOKEN");
    assert_eq!(s["environment_id"], id.as_str());
    assert!(s["inserted_at"].is_string() && s["updated_at"].is_string());
    assert!(s.get("value").is_none());
    let secret_id = s["id"].clone();

    let r = send(&app, &mut seen, Method::PUT, &secret("API_TOKEN"), &u.key, Some(json!({"value": second}))).await;
    assert_eq!(r.status, StatusCode::OK, "replaced: {}", r.text);
    assert_eq!(r.body["data"]["id"], secret_id);
    let r = send(&app, &mut seen, Method::PUT, &secret("BIG"), &u.key, Some(json!({"value": big}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = send(&app, &mut seen, Method::PUT, &secret("Z_OTHER"), &u.key, Some(json!({"value": other}))).await;
    assert_eq!(r.status, StatusCode::CREATED);

    let r = send(&app, &mut seen, Method::PUT, &secret("BIG"), &u.key, Some(json!({"value": format!("{big}x")}))).await;
    assert_invalid(&r, "value");
    assert_invalid(
        &send(&app, &mut seen, Method::PUT, &secret("E"), &u.key, Some(json!({"value": ""}))).await,
        "value",
    );
    assert_invalid(&send(&app, &mut seen, Method::PUT, &secret("E"), &u.key, Some(json!({}))).await, "value");
    for bad in ["1KEY", "A-B", "%C3%A9"] {
        let r = send(&app, &mut seen, Method::PUT, &secret(bad), &u.key, Some(json!({"value": "x"}))).await;
        assert_invalid(&r, "key");
    }
    let r = send(&app, &mut seen, Method::PUT, &secret(&"K".repeat(256)), &u.key, Some(json!({"value": "x"}))).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let r = send(&app, &mut seen, Method::PUT, &secret(&"K".repeat(257)), &u.key, Some(json!({"value": "x"}))).await;
    assert_invalid(&r, "key");

    let r = send(&app, &mut seen, Method::GET, &format!("/api/environments/{id}/secrets"), &u.key, None).await;
    let keys: Vec<&str> = r.body["data"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["API_TOKEN", "BIG", "K".repeat(256).as_str(), "Z_OTHER"]);
    send(&app, &mut seen, Method::GET, &format!("/api/environments/{id}"), &u.key, None).await;
    send(&app, &mut seen, Method::GET, "/api/environments", &u.key, None).await;
    send(&app, &mut seen, Method::GET, "/api/audit", &u.key, None).await;

    // At rest: sealed, never the value.
    let rows = raw_secret_rows(&app, "environment_secrets").await;
    assert_eq!(rows.len(), 4);
    for (key, ciphertext) in &rows {
        assert!(ciphertext.starts_with("v1:"), "{key}");
        for v in [&first, &second, &other, &big] {
            assert!(!ciphertext.contains(v.as_str()), "{key} stored in clear");
        }
    }
    // The server opens them again (what a sandbox start will use).
    let state = crate::vaults::core_state(&app).await;
    let values =
        acs::core::environments::secret_values(&state, u.id.parse().unwrap(), id.parse().unwrap()).await.unwrap();
    let values: std::collections::BTreeMap<_, _> = values.into_iter().collect();
    assert_eq!(values["API_TOKEN"], second);
    assert_eq!(values["BIG"], big);

    let r = send(&app, &mut seen, Method::DELETE, &secret("Z_OTHER"), &u.key, None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_error(
        &send(&app, &mut seen, Method::DELETE, &secret("Z_OTHER"), &u.key, None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &send(&app, &mut seen, Method::DELETE, &secret("1BAD"), &u.key, None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    let actions = audit_actions(&app, &u.key).await;
    assert!(actions.iter().any(|a| a == "environment.secret.set"));
    assert!(actions.iter().any(|a| a == "environment.secret.deleted"));

    // Deleting the environment deletes its secrets.
    let r = send(&app, &mut seen, Method::DELETE, &format!("/api/environments/{id}"), &u.key, None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert!(raw_secret_rows(&app, "environment_secrets").await.is_empty());
    let r = send(&app, &mut seen, Method::GET, &format!("/api/environments/{id}/secrets"), &u.key, None).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");

    assert_never_shown(&seen, &[&first, &second, &other, &big]);
}

async fn secret_in_use(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let env = create(&app, &u.key, json!({"name": "p"})).await;
    let id = env["id"].as_str().unwrap();
    let path = format!("/api/environments/{id}/secrets/GIT_TOKEN");
    let r = app.request(Method::PUT, &path, Some(&u.key), Some(json!({"value": "ghp_secret"}))).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let repos = json!([
        {"url": "https://h.io/public", "mount_path": "/w/a"},
        {"url": "https://h.io/private", "mount_path": "/w/b", "secret_key": "GIT_TOKEN"}
    ]);
    assert_eq!(patch(&app, &u.key, id, json!({"repositories": repos})).await.status, StatusCode::OK);

    let r = app.delete(&path, &u.key).await;
    assert_error(&r, StatusCode::CONFLICT, "secret_in_use");
    assert_eq!(r.body["repository"], "https://h.io/private");
    assert_eq!(r.body["mount_path"], "/w/b");
    assert!(r.body["message"].as_str().unwrap().contains("https://h.io/private"));
    assert!(!r.text.contains("ghp_secret"));
    assert_eq!(
        app.get(&format!("/api/environments/{id}/secrets"), &u.key).await.body["data"].as_array().unwrap().len(),
        1
    );

    // Replacing the value is fine; once no repository names it, it can go.
    let r = app.request(Method::PUT, &path, Some(&u.key), Some(json!({"value": "ghp_rotated"}))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(patch(&app, &u.key, id, json!({"repositories": []})).await.status, StatusCode::OK);
    assert_eq!(app.delete(&path, &u.key).await.status, StatusCode::NO_CONTENT);
}

async fn other_accounts_environments_are_not_found(b: Backend) {
    let app = spawn(b).await;
    let owner = app.user().await;
    let other = app.user().await;
    let env = create(&app, &owner.key, json!({"name": "mine", "setup_script": "echo"})).await;
    let id = env["id"].as_str().unwrap();
    let path = format!("/api/environments/{id}/secrets/TOKEN");
    let r = app.request(Method::PUT, &path, Some(&owner.key), Some(json!({"value": "owner-value"}))).await;
    assert_eq!(r.status, StatusCode::CREATED);

    let base = format!("/api/environments/{id}");
    let calls = [
        (Method::GET, base.clone(), None),
        (Method::PATCH, base.clone(), Some(json!({"name": "stolen"}))),
        (Method::DELETE, base.clone(), None),
        (Method::GET, format!("{base}/secrets"), None),
        (Method::PUT, path.clone(), Some(json!({"value": "overwritten"}))),
        (Method::PUT, format!("{base}/secrets/NEW"), Some(json!({"value": "planted"}))),
        (Method::DELETE, path.clone(), None),
    ];
    for (m, p, body) in calls {
        let r = app.request(m.clone(), &p, Some(&other.key), body).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
        assert!(!r.text.contains("mine"), "{m} {p}: {}", r.text);
    }
    assert_eq!(app.get("/api/environments", &other.key).await.body["data"], json!([]));
    let state = crate::vaults::core_state(&app).await;
    let env_id = id.parse().unwrap();
    assert!(acs::core::environments::secret_values(&state, other.id.parse().unwrap(), env_id).await.is_err());

    assert_eq!(app.get(&base, &owner.key).await.body["data"], env, "unchanged");
    let values = acs::core::environments::secret_values(&state, owner.id.parse().unwrap(), env_id).await.unwrap();
    assert_eq!(values, [("TOKEN".to_owned(), "owner-value".to_owned())]);
}
